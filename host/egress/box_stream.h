// host/egress/box_stream.h — which stream of the box a connection to the egress broker's socket
// carries (docs/design.md §9.7, "the hand-over"). radial-init's endpoint may hand the broker the
// box's own loopback TCP connection (SCM_RIGHTS, after a single 0x00 byte) so the broker relays
// between it and the destination directly, one hop instead of two; anything else on the socket —
// a runtime that cannot pass descriptors (gVisor), or a client speaking HTTP at once — is served
// as the stream itself. Private to host/egress.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "socket/box_descriptors.h"

namespace radial::egress::detail {

// The byte that announces a hand-over, and the broker's two answers to it.
inline constexpr char kHandOver = '\0';
inline constexpr char kHandOverKept = 'K';   // the broker serves the handed socket; close yours
inline constexpr char kHandOverStream = 'S'; // no socket arrived: relay through this connection
// The byte radial-init opens its control connection with, for a turn that offers services
// (service_rendezvous.h): take_box_stream() leaves it unread and says via "control".
inline constexpr char kControl = '\1';

// Returns the descriptor the box's bytes come through: `unix_fd` itself, or the handed-over socket
// (then the caller owns it, and `unix_fd` may be closed). -1 with `why` when the hand-over carried
// anything but one connected loopback TCP socket (the descriptor is closed, nothing is answered),
// or when nothing arrived by `deadline` or the broker was revoked (`why` empty: nothing was sent).
// Never throws.
// `via` says which: "handed", "relayed" (a hand-over without a descriptor) or "socket"; or
// "control" (`unix_fd` returned, its kControl byte unread).
int take_box_stream(int unix_fd, std::chrono::steady_clock::time_point deadline,
                    const std::atomic<bool>& revoked, std::string& why, std::string& via) noexcept;

// Empty when `fd` is a connected TCP socket between two loopback addresses (a box's own), else
// why not.
std::string box_loopback_tcp_refusal(int fd);

// The bounded closes and reads of what the box hands over (socket/box_descriptors.h).
using radial::socket::await_box_socket_closes;
using radial::socket::bounded_close;
using radial::socket::box_socket_closes_in_flight;
using radial::socket::close_box_connection;
using radial::socket::close_box_socket;
using radial::socket::kMostRightsPerMessage;
using radial::socket::recv_from_box;
using radial::socket::recv_with_rights;

} // namespace radial::egress::detail
