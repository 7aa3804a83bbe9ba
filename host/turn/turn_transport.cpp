#include "turn/turn_transport.h"

#include <fmt/format.h>
#include <radial/runtime_plugin.h>

namespace radial::turn {

TransportSetting parse_transport_setting(std::string_view text) {
    if (text == "auto") return TransportSetting::automatic;
    if (text == "unix") return TransportSetting::unix_socket;
    if (text == "tcp") return TransportSetting::tcp;
    throw TransportError(
        fmt::format("run.turnTransport must be \"auto\", \"unix\" or \"tcp\", not \"{}\"", text));
}

ResolvedTransport resolve_transport(TransportSetting setting, bool can_pass_unix_socket,
                                    const std::string& runtime_id, const std::string& socket_host,
                                    const std::string& runtime_bind_host,
                                    const std::string& runtime_box_host) {
    ResolvedTransport r;
    if (setting == TransportSetting::unix_socket && !can_pass_unix_socket)
        throw TransportError(fmt::format(
            "run.turnTransport is \"unix\" but run.containerRuntime '{}' cannot pass a unix socket "
            "into its boxes (it does not report {}); set run.turnTransport to \"tcp\" or \"auto\"",
            runtime_id, RADIAL_CAP_UNIX_SOCKET_MOUNTS));
    bool use_unix = setting == TransportSetting::unix_socket ||
                    (setting == TransportSetting::automatic && can_pass_unix_socket);
    r.transport = use_unix ? Transport::unix_socket : Transport::tcp;
    if (!use_unix) {
        r.bind_host = !socket_host.empty()         ? socket_host
                      : !runtime_bind_host.empty() ? runtime_bind_host
                                                   : "127.0.0.1";
        r.box_host = !runtime_box_host.empty() ? runtime_box_host : r.bind_host;
    }
    return r;
}

} // namespace radial::turn
