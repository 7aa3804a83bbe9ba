// host/socket/box_descriptors.h — descriptors that come from a box, closed and read without
// letting the box hold a thread of radiald's. A socket the box set to linger, with data its peer
// never reads, makes the close that drops its last reference wait out the linger; the box decides
// when radiald's close is that last one (a duplicate it keeps), and any descriptor it attaches to
// bytes on a unix socket (SCM_RIGHTS) is dropped by the kernel on the thread that reads them
// without room for them, or that closes the socket with them still queued (docs/design.md §9.7).
// Used by the egress broker and the turn socket. Thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <vector>

namespace radial::socket {

// The most descriptors one message on a unix socket can carry (the kernel's SCM_MAX_FD).
inline constexpr std::size_t kMostRightsPerMessage = 253;

// recv(2) of at most `n` bytes from `fd`, a socket the box writes to, with `flags`; every
// descriptor the box attached to them is taken and closed with close_box_socket. A read that
// left them to the kernel (read(2), recv(2), splice(2), or a control buffer too small for them)
// would have it drop them on the reading thread, where the last close of a socket the box set to
// linger, with data its peer never reads, blocks that thread for as long as the box likes.
// Returns what recv(2) does. Never throws.
ssize_t recv_from_box(int fd, void* buf, std::size_t n, int flags = 0) noexcept;

// recvmsg(2) as recv_from_box reads, the descriptors left in `fds` for the caller to close
// (close_box_socket) or keep. Never throws.
ssize_t recv_with_rights(int fd, void* buf, std::size_t n, int flags,
                         std::vector<int>& fds) noexcept;

// Closes a descriptor the box handed over without ever blocking the caller long: the box may have
// set SO_LINGER on it (a duplicate it keeps can set it again at any time, also just after it was
// switched off) and left data unsent to a peer that reads nothing, and the close that drops the
// last reference would then wait out the linger. Lingering is switched off first, the close runs
// on a thread of its own (at most 64 at once; past them, or when no thread can start, inline), and
// a signal to that thread ends any wait after one second. Never throws.
void close_box_socket(int fd) noexcept;

// Closes a connection a box (or any local peer) writes to: shut down first, so that nothing more
// can be queued on it (the peer's send fails), then closed here when nothing is queued — nothing
// queued, no descriptor queued — and with close_box_socket when bytes, and with them perhaps
// descriptors, still wait. Never throws.
void close_box_connection(int fd) noexcept;

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

} // namespace radial::socket
