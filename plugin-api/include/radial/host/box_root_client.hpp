// radial/host/box_root_client.hpp — the host's side of the box-root extension
// ("radial.box-root/1", radial/box_root.h): whether a box of this runtime instance may run as
// root inside a user namespace of its own, and which host ids that root is.
//
// Errors as RuntimeClient's (RuntimeError with the plugin's status and message). Thread-safe.
#pragma once

#include <radial/box_root.h>

#include <cstdint>
#include <radial/host/runtime_client.hpp>
#include <string>
#include <variant>

namespace radial::host {

// The host ids of a box's uid 0 and gid 0 (both non-zero).
struct BoxRootIds {
    std::uint32_t host_uid = 0;
    std::uint32_t host_gid = 0;
    friend bool operator==(const BoxRootIds&, const BoxRootIds&) = default;
};

class BoxRootClient {
public:
    // Asks `client`'s runtime, under the client's call deadline. The ids when a box may run as
    // root in a namespace of its own; otherwise why not, as one sentence: the runtime's own
    // reason, or that it does not offer the extension. Throws RuntimeError for any other failure
    // (RADIAL_E_UNAVAILABLE: the engine could not be asked).
    static std::variant<BoxRootIds, std::string> ask(const RuntimeClient& client) {
        const auto& st = client.state_;
        const auto* ext = static_cast<const radial_box_root_ext*>(
            client.extension_table(RADIAL_BOX_ROOT_EXTENSION_ID));
        if (ext == nullptr || !RADIAL_HAS_FIELD(ext, radial_box_root_ext, root_ids) ||
            ext->root_ids == nullptr)
            return "runtime '" + st->info.id +
                   "' does not offer " RADIAL_BOX_ROOT_EXTENSION_ID
                   " (boxes that are root only in a user namespace of their own)";
        return client.bounded(
            "box root_ids",
            [ext](RuntimeClient::State& s) -> std::variant<BoxRootIds, std::string> {
                detail::ErrorCollector err;
                auto sink = err.sink();
                radial_box_root_ids ids{};
                ids.struct_size = sizeof(ids);
                const std::int32_t status = ext->root_ids(s.rt, &ids, sink);
                if (status == RADIAL_E_UNSUPPORTED) {
                    err.gate.close(); // the call returned: a late report must not race the read
                    return err.message.empty() ? std::string("the runtime says no reason")
                                               : err.message;
                }
                if (status != RADIAL_OK) err.raise(status, "box root_ids");
                // The extension's rule, checked here too: a root that is the host's is none.
                if (ids.host_uid == 0 || ids.host_gid == 0)
                    return std::string("the runtime answered host id 0 for a box's root");
                return BoxRootIds{ids.host_uid, ids.host_gid};
            });
    }
};

} // namespace radial::host
