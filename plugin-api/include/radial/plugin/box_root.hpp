// radial/plugin/box_root.hpp — the box-root extension ("radial.box-root/1", radial/box_root.h)
// for a runtime written with the C++ helper: derive the runtime from radial::plugin::BoxRoot too,
// and answer its id from extension():
//
//     const void* extension(std::string_view id) override {
//         return id == RADIAL_BOX_ROOT_EXTENSION_ID ? radial::plugin::box_root_extension()
//                                                   : nullptr;
//     }
//
// The helper refuses an answer with a host id of 0 (that root would be the host's) before the host
// sees it, and turns exceptions into statuses as for every other call.
#pragma once

#include <radial/box_root.h>

#include <radial/plugin/runtime.hpp>

namespace radial::plugin {

// The host ids a box's uid 0 and gid 0 are.
struct BoxRootIds {
    std::uint32_t host_uid = 0;
    std::uint32_t host_gid = 0;
};

class BoxRoot {
public:
    virtual ~BoxRoot() = default;
    // The host ids of a box's root when the box is root only inside a user namespace of its own;
    // throws Error(RADIAL_E_UNSUPPORTED, {}, why not and the fix) otherwise, and
    // Error(RADIAL_E_UNAVAILABLE) when the engine cannot be asked. [thread-safe]
    virtual BoxRootIds root_ids() = 0;
};

namespace detail {

inline std::int32_t box_root_ids(radial_runtime* rt, radial_box_root_ids* ids,
                                 const radial_error_sink* err) noexcept {
    if (ids == nullptr || ids->struct_size < sizeof(std::uint32_t)) return RADIAL_E_INVALID;
    return guarded(err, [&] {
        auto* answer = dynamic_cast<BoxRoot*>(&impl(rt));
        if (answer == nullptr)
            throw Error(RADIAL_E_UNSUPPORTED,
                        "this runtime answers radial.box-root/1 but does not implement "
                        "radial::plugin::BoxRoot");
        const BoxRootIds got = answer->root_ids();
        if (got.host_uid == 0 || got.host_gid == 0)
            throw Error(RADIAL_E_UNSUPPORTED,
                        "a box's root would be the host's root (host id 0), so boxes do not run "
                        "as root");
        radial_box_root_ids c{};
        c.struct_size = sizeof(c);
        c.host_uid = got.host_uid;
        c.host_gid = got.host_gid;
        copy_to_host(c, ids);
    });
}

} // namespace detail

// The extension table of every helper runtime that implements BoxRoot.
inline const radial_box_root_ext* box_root_extension() noexcept {
    static const radial_box_root_ext table = [] {
        radial_box_root_ext t{};
        t.struct_size = sizeof(t);
        t.root_ids = &detail::box_root_ids;
        return t;
    }();
    return &table;
}

} // namespace radial::plugin
