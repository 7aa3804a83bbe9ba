// host/egress/egress_relay.cpp — see egress_relay.h.
#include "egress/egress_relay.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "egress/box_stream.h"

namespace radial::egress::detail {

namespace {

// Real time: deadlines for real peers on real sockets (docs/design.md §12.7).
using Clock = std::chrono::steady_clock;

// The most one splice(2) moves: a 1 MiB pipe's worth.
constexpr std::size_t kMostPerSplice = 1u << 20;
// Wake-ups in a row of a lane whose socket poll(2) called readable and which gave nothing; a
// spurious one is rare (another holder of a handed socket read first), thousands are a spin.
constexpr unsigned kMostIdleWakeups = 10000;

// One direction of a relay: socket -> pipe -> socket with splice(2), so the bytes never pass
// through the broker's memory.
struct Lane {
    int from = -1, to = -1;
    // `from` is the box's unix socket (no hand-over): read with recv_from_box, never spliced,
    // since a splice would leave the descriptors the box attached to the kernel to drop here.
    bool from_box_unix = false;
    int pipe[2] = {-1, -1};
    // What the pipe holds: 1 MiB asked for, as little as two pages when the user's pipe pages
    // are used up (pipe-user-pages-soft). A copy into it is never larger, so it never blocks.
    std::size_t capacity = 0;
    std::size_t queued = 0;
    bool open = true;
    ~Lane() {
        for (int fd : pipe)
            if (fd >= 0) ::close(fd);
    }
};

// TCP urgent (out-of-band) data stops splice(2) at its mark: there it moves nothing although
// poll(2) says the socket is readable, so the relay would spin on a box's (or a destination's)
// one urgent byte, or take the 0 a blocking socket returns for the stream's end and cut it. At
// the mark, recv(2) steps over the urgent byte (dropped, as any relay that copies with read(2)
// drops it) and reads what follows into the lane's pipe, which is empty between reads. Returns
// what splice would have: bytes moved, 0 at the stream's end, or -1 with errno (EAGAIN: none).
ssize_t past_urgent_mark(const Lane& l, std::size_t most, ssize_t spliced) {
    const int spliced_errno = errno;
    int at_mark = 0;
    if (::ioctl(l.from, SIOCATMARK, &at_mark) != 0 || at_mark == 0) {
        errno = spliced_errno;
        return spliced;
    }
    char buf[16 << 10]; // at most the pipe's capacity is read: the write below never blocks
    const ssize_t n = ::recv(l.from, buf, std::min({sizeof buf, most, l.capacity}), MSG_DONTWAIT);
    if (n <= 0) return n;
    if (::write(l.pipe[1], buf, static_cast<std::size_t>(n)) != n) return -1;
    return n;
}

// Moves at most `most` bytes from the box's unix socket into the lane's empty pipe through a
// buffer (recv_from_box closes what descriptors came with them). Returns what splice would have.
ssize_t from_box_unix(const Lane& l, std::size_t most) {
    char buf[64 << 10]; // at most the pipe's capacity is read: the write below never blocks
    const ssize_t n =
        recv_from_box(l.from, buf, std::min({sizeof buf, most, l.capacity}), MSG_DONTWAIT);
    if (n <= 0) return n;
    if (::write(l.pipe[1], buf, static_cast<std::size_t>(n)) != n) return -1;
    return n;
}

// What through_watch returns when the watch refused the bytes (none moved).
constexpr ssize_t kRefusedByWatch = -2;

// Moves at most `most` bytes into the lane's empty pipe through a buffer that `watch` reads first
// (`from_box`: the box's bytes). A plain recv(2) steps over a TCP urgent byte itself. Returns what
// splice would have, or kRefusedByWatch.
ssize_t through_watch(const Lane& l, std::size_t most, bool from_box, TlsHandshakeWatch& watch) {
    char buf[64 << 10]; // at most the pipe's capacity is read: the write below never blocks
    const std::size_t want = std::min({sizeof buf, most, l.capacity});
    const ssize_t n = l.from_box_unix ? recv_from_box(l.from, buf, want, MSG_DONTWAIT)
                                      : ::recv(l.from, buf, want, MSG_DONTWAIT);
    if (n <= 0) return n;
    const std::string_view got(buf, static_cast<std::size_t>(n));
    if (!(from_box ? watch.from_box(got) : watch.from_destination(got))) return kRefusedByWatch;
    if (::write(l.pipe[1], buf, static_cast<std::size_t>(n)) != n) return -1;
    return n;
}

// With the quota spent: whether `fd` is at its stream's end (a clean close, not a breach). Never
// reads a byte of data.
bool at_end(int fd) {
    char one;
    return ::recv(fd, &one, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

} // namespace

std::size_t take_quota(std::atomic<std::uint64_t>& total, std::uint64_t most,
                       std::size_t want) noexcept {
    std::uint64_t used = total.load();
    for (;;) {
        if (used >= most) return 0;
        const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(want, most - used));
        if (total.compare_exchange_weak(used, used + take)) return take;
    }
}

void give_back_quota(std::atomic<std::uint64_t>& total, std::size_t n) noexcept {
    if (n > 0) total.fetch_sub(n);
}

void relay(BrokerShared& shared, Connection& c, Receipt& r, std::uint64_t limit_out,
           TlsHandshakeWatch* watch) {
    const int up = c.upstream, box = c.client;
    Lane lanes[2];
    lanes[0].from = box; // from the box
    lanes[0].to = up;
    int domain = 0;
    socklen_t len = sizeof domain;
    lanes[0].from_box_unix =
        ::getsockopt(box, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_UNIX;
    lanes[1].from = up; // to the box
    lanes[1].to = box;
    for (auto& l : lanes) {
        if (::pipe2(l.pipe, O_CLOEXEC) != 0) {
            r.reason = fmt::format("broker error: pipe: {}", std::strerror(errno));
            return;
        }
        ::fcntl(l.pipe[1], F_SETPIPE_SZ, static_cast<int>(kMostPerSplice));
        const int size = ::fcntl(l.pipe[1], F_GETPIPE_SZ);
        if (size <= 0) {
            r.reason = fmt::format("broker error: pipe size: {}", std::strerror(errno));
            return;
        }
        l.capacity = static_cast<std::size_t>(size);
    }
    const auto& o = shared.options;
    // A plain request's box that is done sending is still watched, never read: a box that gives
    // up closes it, and the answer it no longer waits for must not hold the connection (and a
    // maxConnections slot) until the destination answers or the turn ends (docs/design.md §9.7).
    // A box that only ended its side (nc, a scripted client) still gets the answer: as a tunnel's,
    // the connection then ends when the destination is silent for half_closed_timeout. A handed
    // TCP socket's close looks the same as its half-close.
    const bool plain = limit_out != kUnlimitedBody;
    bool box_side_ended = false;
    if (limit_out == 0) lanes[0].open = false; // nothing more from the box: not read at all
    // A tunnel whose box ended its side: the destination may still answer; until it has been
    // silent for half_closed_timeout, and the box's socket is watched for its full close.
    std::optional<Clock::time_point> silent_since;
    unsigned idle_wakeups[2] = {0, 0};
    while ((lanes[0].open || lanes[1].open) && !shared.revoked) {
        const short box_events = lanes[0].open              ? POLLIN
                                 : plain && !box_side_ended ? POLLRDHUP
                                                            : 0; // its close is said anyway
        pollfd p[2] = {{box, box_events, 0}, {lanes[1].open ? up : -1, POLLIN, 0}};
        const int n = ::poll(p, 2, kRelaySliceMs);
        if ((n < 0 && errno != EINTR) || shared.revoked) break; // a revocation's cut: not the box
        if (!lanes[0].open && n > 0 && p[0].revents != 0) {
            if ((p[0].revents & (POLLHUP | POLLERR)) != 0) {
                r.reason = "the box closed the connection";
                return;
            }
            box_side_ended = true;
            if (!silent_since) silent_since = Clock::now();
        }
        if (silent_since && n > 0 && p[1].revents != 0) silent_since = Clock::now();
        if (silent_since && Clock::now() - *silent_since >= o.half_closed_timeout) {
            r.reason = fmt::format(
                "the box ended its side and the destination sent nothing for {} ms; closed",
                o.half_closed_timeout.count());
            return;
        }
        for (int i = 0; i < 2 && n > 0; ++i) {
            if (p[i].revents == 0 || (i == 0 && !lanes[0].open)) continue;
            Lane& l = lanes[i];
            std::atomic<std::uint64_t>& total = i == 0 ? shared.bytes_out : shared.bytes_in;
            const std::uint64_t quota = i == 0 ? o.ceiling.max_bytes_out : o.ceiling.max_bytes_in;
            const std::size_t want = static_cast<std::size_t>(
                std::min<std::uint64_t>(i == 0 ? limit_out : kUnlimitedBody, kMostPerSplice));
            const std::size_t most = take_quota(total, quota, want);
            if (most == 0) {
                if (at_end(l.from)) {
                    ::shutdown(l.to, SHUT_WR);
                    l.open = false;
                    if (i == 0) silent_since = Clock::now();
                    continue;
                }
                r.reason = fmt::format(
                    "the turn's quota of {} bytes {} was reached; connection "
                    "closed",
                    quota, i == 0 ? "from the box" : "to the box");
                return;
            }
            // A tunnel's handshake in the clear is read, both ways, until its watch is over.
            const bool watched = watch != nullptr && !watch->over();
            ssize_t got = watched           ? through_watch(l, most, i == 0, *watch)
                          : l.from_box_unix ? from_box_unix(l, most)
                                            : ::splice(l.from, nullptr, l.pipe[1], nullptr, most,
                                                       SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (got == kRefusedByWatch) {
                give_back_quota(total, most);
                r.verdict = "refused";
                r.reason = watch->why();
                return;
            }
            if (!watched && !l.from_box_unix && (got == 0 || (got < 0 && errno == EAGAIN)))
                got = past_urgent_mark(l, most, got);
            give_back_quota(total, got > 0 ? most - static_cast<std::size_t>(got) : most);
            if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
                // Readable yet nothing to read, over and over: whatever the cause, a relay that
                // would spin a core of the host for the box is closed instead.
                if (errno == EAGAIN && ++idle_wakeups[i] > kMostIdleWakeups) {
                    r.reason = "the connection kept waking the broker with nothing to read; closed";
                    return;
                }
                continue;
            }
            idle_wakeups[i] = 0;
            if (got <= 0) {
                if (i == 0 && plain) {
                    // Before its body was whole: the request is cut, nobody waits for its answer.
                    r.reason = "the box closed the connection inside its request body";
                    return;
                }
                ::shutdown(l.to, SHUT_WR);
                l.open = false;
                if (i == 0) silent_since = Clock::now();
                continue;
            }
            const auto g = static_cast<std::size_t>(got);
            if (i == 0 && limit_out != kUnlimitedBody) {
                limit_out -= g;
                if (limit_out == 0) lanes[0].open = false; // the body is whole
            }
            l.queued += g;
            while (l.queued > 0) {
                const ssize_t w =
                    ::splice(l.pipe[0], nullptr, l.to, nullptr, l.queued, SPLICE_F_MOVE);
                if (w < 0 && errno == EINTR) continue;
                // The box may make its handed socket non-blocking (a duplicate it keeps): wait
                // for room, as a blocking write would, a slice at a time.
                if (w < 0 && errno == EAGAIN && !shared.revoked && !c.policy_revoked) {
                    pollfd room{l.to, POLLOUT, 0};
                    ::poll(&room, 1, kRelaySliceMs);
                    continue;
                }
                if (w <= 0) {
                    lanes[0].open = lanes[1].open = false;
                    break;
                }
                l.queued -= static_cast<std::size_t>(w);
                (i == 0 ? r.bytes_out : r.bytes_in) += static_cast<std::size_t>(w);
            }
        }
    }
    r.reason = shared.revoked ? "revoked at the turn's end" : "closed";
}

} // namespace radial::egress::detail
