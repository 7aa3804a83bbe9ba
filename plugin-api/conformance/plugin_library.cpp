#include "plugin_library.h"

#include <dlfcn.h>

#include <filesystem>

namespace radial::conformance {

PluginLibrary PluginLibrary::load(const std::string& path) {
    PluginLibrary lib;
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(path, ec);
    lib.path = ec ? path : abs.lexically_normal().string();
    if (!std::filesystem::is_regular_file(lib.path, ec)) {
        lib.problem =
            "loading '" + lib.path + "': no such file; pass the plugin's .so with --plugin";
        return lib;
    }
    // RTLD_NOW surfaces unresolved symbols here rather than in the middle of a turn; RTLD_LOCAL
    // keeps the plugin's symbols out of the global namespace, as radiald loads it.
    void* handle = ::dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = ::dlerror();
        lib.problem = "loading '" + lib.path + "' with dlopen(RTLD_NOW | RTLD_LOCAL) failed: " +
                      (why != nullptr ? why : "unknown error") +
                      "; link the plugin with -z defs so that a missing symbol fails its build";
        return lib;
    }
    lib.handle = std::shared_ptr<void>(handle, [](void*) {});
    ::dlerror();
    void* sym = ::dlsym(handle, RADIAL_RT_ENTRY_SYMBOL);
    if (sym == nullptr) {
        lib.problem = "'" + lib.path + "' is not a radial runtime plugin: it does not export " +
                      RADIAL_RT_ENTRY_SYMBOL +
                      "; export it with RADIAL_EXPORT_RUNTIME(YourRuntime) and build the plugin "
                      "with radial_add_runtime_plugin()";
        return lib;
    }
    lib.entry = reinterpret_cast<radial_runtime_plugin_entry_fn>(sym);
    lib.descriptor = lib.entry();
    if (lib.descriptor == nullptr) {
        lib.problem = "the entry point " RADIAL_RT_ENTRY_SYMBOL " of '" + lib.path +
                      "' returned no descriptor (NULL)";
        return lib;
    }
    lib.entry_stable = lib.entry() == lib.descriptor;
    return lib;
}

} // namespace radial::conformance
