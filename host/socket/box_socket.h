// host/socket/box_socket.h — how a box reaches its turn socket (docs/design.md §3.3, §9.1): the
// variables that name the socket and carry the token, where a unix socket's directory appears in
// the box, and the modes that let the box's user connect to it.
#pragma once

#include <cstdint>
#include <radial/container_spec.hpp>
#include <string>

#include "socket/turn_socket_server.h"

namespace radial::socket {

// The environment variables a box gets to reach its turn socket (docs/design.md §3.3).
inline constexpr const char* kSocketEnv =
    "RADIAL_TURN_SOCKET"; // unix:///run/radial/turn.sock or tcp://host:port
inline constexpr const char* kTokenEnv = "RADIAL_TURN_TOKEN"; // the bearer token (a secret)
// Where a unix turn socket appears inside the box: its per-turn directory is mounted here.
inline constexpr const char* kBoxSocketDir = "/run/radial";
inline constexpr const char* kSocketFile = "turn.sock";

// Where a turn's unix socket is bound on the host: <state_dir>/turns/<turn_id>/turn.sock. Makes
// <state_dir>/turns if it is missing, mode 0700: only root enters it, and a box reaches its socket
// through a mount of its own directory. Throws std::filesystem::filesystem_error.
std::string turn_socket_path(const std::string& state_dir, const std::string& turn_id);

// Why the sockets of a one-shot turn of id `turn_id` cannot be bound under `state_dir` over the
// unix transport — the longest, <state_dir>/turns/<turn_id>/egress.sock, over kMaxUnixPathBytes
// — naming the fix; "" when they fit. Asked at submit and before any box, so that an id chosen
// too long is refused where it was given. Pure; thread-safe.
std::string turn_socket_path_problem(const std::string& state_dir, const std::string& turn_id);

// A bound turn socket, as its box is to reach it.
struct BoxSocket {
    Transport transport = Transport::unix_socket;
    std::string unix_dir;   // unix: the socket's directory on the host
    bool mount_dir = true;  // unix: false for a session's box, whose directory is mounted at create
    bool any_uid = false;   // unix: the box's user is not known here, so any uid in the box may
                            // connect (the directory 0711, the socket 0666); the 0700 turns
                            // directory still keeps every other local user out
    std::string box_host;   // tcp: the address the box dials
    std::uint16_t port = 0; // tcp: the bound port
    std::string token;      // the turn's bearer token, a secret variable in the box
};

// Puts `s` in `spec`: unix — the directory's modes (with any_uid), its mount at kBoxSocketDir
// (with mount_dir) and kSocketEnv naming the socket there; tcp — the port in host_ports and
// kSocketEnv naming box_host:port; both — kTokenEnv, marked secret. Not thread-safe on `spec`.
void place_turn_socket(const BoxSocket& s, ContainerSpec& spec);

} // namespace radial::socket
