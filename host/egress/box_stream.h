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

namespace radial::egress::detail {

// The byte that announces a hand-over, and the broker's two answers to it.
inline constexpr char kHandOver = '\0';
inline constexpr char kHandOverKept = 'K';   // the broker serves the handed socket; close yours
inline constexpr char kHandOverStream = 'S'; // no socket arrived: relay through this connection

// Returns the descriptor the box's bytes come through: `unix_fd` itself, or the handed-over socket
// (then the caller owns it, and `unix_fd` may be closed). -1 with `why` when the hand-over carried
// anything but one connected loopback TCP socket (the descriptor is closed, nothing is answered),
// or when nothing arrived by `deadline` or the broker was revoked (`why` empty: nothing was sent).
// Never throws.
// `via` says which: "handed", "relayed" (a hand-over without a descriptor) or "socket".
int take_box_stream(int unix_fd, std::chrono::steady_clock::time_point deadline,
                    const std::atomic<bool>& revoked, std::string& why, std::string& via) noexcept;

// The most descriptors one message on a unix socket can carry (the kernel's SCM_MAX_FD).
inline constexpr std::size_t kMostRightsPerMessage = 253;

// recv(2) of at most `n` bytes from `fd`, a socket the box writes to, with `flags`; every
// descriptor the box attached to them is taken and closed with close_box_socket. A read that
// left them to the kernel (read(2), recv(2), splice(2), or a control buffer too small for them)
// would have it drop them on the reading thread, where the last close of a socket the box set to
// linger, with data its peer never reads, blocks that thread for as long as the box likes.
// Returns what recv(2) does. Never throws.
ssize_t recv_from_box(int fd, void* buf, std::size_t n, int flags = 0) noexcept;

// Empty when `fd` is a connected TCP socket between two loopback addresses (a box's own), else
// why not.
std::string box_loopback_tcp_refusal(int fd);

// Closes a descriptor the box handed over without ever blocking the caller long: the box may have
// set SO_LINGER on it (a duplicate it keeps can set it again at any time, also just after it was
// switched off) and left data unsent to a peer that reads nothing, and the close that drops the
// last reference would then wait out the linger. Lingering is switched off first, the close runs
// on a thread of its own (at most 64 at once; past them, or when no thread can start, inline), and
// a signal to that thread ends any wait after one second. Never throws.
void close_box_socket(int fd) noexcept;

// The closes close_box_socket started that have not returned yet. [thread-safe]
std::size_t box_socket_closes_in_flight() noexcept;

// close(fd) on the calling thread, its wait for a linger ended after a second by a signal to that
// thread (close_box_socket's closes; a test's own). Never throws.
void bounded_close(int fd) noexcept;

// Waits up to `budget` for the closes close_box_socket started, then joins every closing thread
// that finished, so none is still exiting when the process ends (a thread in its exit path as the
// process leaves is what LeakSanitizer's tracer can crash on), and leaves any still blocked
// detached. The broker calls it once its connections are closed. Never throws. [thread-safe]
void await_box_socket_closes(std::chrono::milliseconds budget) noexcept;

} // namespace radial::egress::detail
