// host/turn/turn_transport.h — which kind of turn socket a turn gets, and where (docs/design.md
// §9.1).
//
// `auto` resolves to a unix socket when the selected runtime reports that it can pass one into the
// box (RADIAL_CAP_UNIX_SOCKET_MOUNTS), and to tcp otherwise — from the plugin's capabilities,
// never from its name. An explicit `unix` the runtime cannot honour is refused at startup: the
// alternative is ECONNREFUSED an hour into a turn.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "socket/turn_socket_server.h"

namespace radial::turn {

enum class TransportSetting { automatic, unix_socket, tcp };
using Transport = socket::Transport;

// An impossible transport configuration. what() names both keys and the fix.
class TransportError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Parses run.turnTransport ("auto", "unix", "tcp"); nullopt-like failure is a TransportError.
TransportSetting parse_transport_setting(std::string_view text);

struct ResolvedTransport {
    Transport transport = Transport::unix_socket;
    std::string bind_host; // tcp: the host address to bind
    std::string box_host;  // tcp: the name the box connects to
};

// Whether `host` is an IPv4 (127.0.0.0/8) or IPv6 (::1) loopback literal; names are not.
// [thread-safe]
bool is_loopback_literal(const std::string& host);

// Resolves the transport. `can_pass_unix_socket`: the runtime reported
// RADIAL_CAP_UNIX_SOCKET_MOUNTS. `socket_host`: run.turnSocketHost (empty: unset).
// `runtime_bind_host` / `runtime_box_host`: the runtime's tcp route (empty: not reported).
// The bind host is run.turnSocketHost, else the runtime's, else 127.0.0.1; the box host is the
// runtime's, else the bind host. Throws TransportError for `unix` with a runtime that cannot pass
// one, naming run.turnTransport and run.containerRuntime, and for a runtime bind host that is not
// a loopback literal while run.turnSocketHost is unset (docs/design.md §9.3).
ResolvedTransport resolve_transport(TransportSetting setting, bool can_pass_unix_socket,
                                    const std::string& runtime_id, const std::string& socket_host,
                                    const std::string& runtime_bind_host,
                                    const std::string& runtime_box_host);

} // namespace radial::turn
