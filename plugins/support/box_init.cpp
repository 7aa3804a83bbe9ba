#include "support/box_init.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "support/settings_error.h"

namespace radial::plugin_support {

std::string default_box_init() {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&default_box_init), &info) == 0 ||
        info.dli_fname == nullptr)
        return {};
    std::error_code ec;
    auto path = std::filesystem::weakly_canonical(info.dli_fname, ec).parent_path().parent_path() /
                "radial-init";
    if (ec || ::access(path.c_str(), R_OK | X_OK) != 0 ||
        path.string().find(':') != std::string::npos)
        return {};
    return path.string();
}

std::string box_init_or_default(std::string configured, const radial::plugin::Host& host,
                                std::string_view runtime, std::string_view without) {
    if (configured.empty()) configured = default_box_init();
    if (configured.empty())
        host.warn("radial-init was not found beside the " + std::string(runtime) +
                  " plugin and run." + std::string(runtime) +
                  ".boxInit is not set: " + std::string(without));
    return configured;
}

std::optional<std::string> box_init_setting(radial::plugin::Config& config) {
    auto v = config.string("boxInit");
    if (!v) return std::nullopt;
    if (v->empty() || v->front() != '/' || v->find(':') != std::string::npos)
        refuse_setting(
            config, "boxInit",
            "'" + *v + "' is not an absolute path without ':'; give the path of radial-init");
    if (::access(v->c_str(), R_OK | X_OK) != 0)
        refuse_setting(
            config, "boxInit",
            "'" + *v + "' is not a readable executable file; give the path of radial-init");
    return v;
}

} // namespace radial::plugin_support
