// radial/plugin/templates.hpp — the template extension ("radial.template/1", radial/template.h)
// for a runtime written with the C++ helper that keeps an image store of its own: derive the
// runtime from radial::plugin::Templates too, and answer its id from extension():
//
//     const void* extension(std::string_view id) override {
//         return id == RADIAL_TEMPLATE_EXTENSION_ID ? radial::plugin::template_extension()
//                                                   : nullptr;
//     }
//
// The helper checks the archive path (absolute, an existing regular file) before the runtime sees
// the call, and turns exceptions into statuses as for every other call.
#pragma once

#include <radial/template.h>
#include <sys/stat.h>

#include <chrono>
#include <radial/plugin/runtime.hpp>
#include <string>
#include <string_view>

namespace radial::plugin {

class Templates {
public:
    virtual ~Templates() = default;
    // Loads the `docker image save` archive at `archive` into the runtime's image store within
    // `budget` (0: the runtime's own bound); throws Error(RADIAL_E_TIMEOUT) past it, having ended
    // what it started, and Error(RADIAL_E_UNAVAILABLE) with the store's message otherwise.
    // [thread-safe]
    virtual void load_template(const std::string& archive, std::chrono::milliseconds budget) = 0;
};

namespace detail {

inline std::int32_t template_load(radial_runtime* rt, radial_str archive, std::uint64_t timeout_ms,
                                  const radial_error_sink* err) noexcept {
    return guarded(err, [&] {
        auto* store = dynamic_cast<Templates*>(&impl(rt));
        if (store == nullptr)
            throw Error(RADIAL_E_UNSUPPORTED,
                        "this runtime answers radial.template/1 but does not implement "
                        "radial::plugin::Templates");
        const std::string path(to_view(archive));
        struct stat st {};
        if (path.empty() || path.front() != '/' || ::stat(path.c_str(), &st) != 0 ||
            !S_ISREG(st.st_mode))
            throw Error(
                RADIAL_E_INVALID, "archive",
                "template archive '" + path + "' is not an absolute path to a regular file");
        store->load_template(path, std::chrono::milliseconds(timeout_ms));
    });
}

} // namespace detail

// The extension table of every helper runtime that implements Templates.
inline const radial_template_ext* template_extension() noexcept {
    static const radial_template_ext table = [] {
        radial_template_ext t{};
        t.struct_size = sizeof(t);
        t.load = &detail::template_load;
        return t;
    }();
    return &table;
}

} // namespace radial::plugin
