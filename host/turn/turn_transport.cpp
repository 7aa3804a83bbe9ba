#include "turn/turn_transport.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <radial/runtime_plugin.h>

namespace radial::turn {

bool is_loopback_literal(const std::string& host) {
    in_addr v4{};
    if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
    in6_addr v6{};
    return ::inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

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
        // A plugin's word widens the listening socket no further than loopback: any other
        // address is the operator's to choose (docs/design.md §9.3).
        if (socket_host.empty() && !runtime_bind_host.empty() &&
            !is_loopback_literal(runtime_bind_host))
            throw TransportError(fmt::format(
                "run.containerRuntime '{}' asks radiald to bind the turn socket on '{}', which is "
                "not a loopback address; radiald binds beyond loopback only where the operator "
                "says so: set run.turnSocketHost = \"{}\" to accept it (any host that reaches "
                "that address may then try a turn's token), or set run.turnTransport = \"unix\" "
                "where the runtime can pass a unix socket",
                runtime_id, runtime_bind_host, runtime_bind_host));
        r.bind_host = !socket_host.empty()         ? socket_host
                      : !runtime_bind_host.empty() ? runtime_bind_host
                                                   : "127.0.0.1";
        r.box_host = !runtime_box_host.empty() ? runtime_box_host : r.bind_host;
    }
    return r;
}

} // namespace radial::turn
