// host/egress/box_stream.cpp — see box_stream.h. The handed socket comes from the box, so it is
// judged before anything is read from it: a socket of another kind (a unix socket with descriptors
// in flight, a pipe, a file, a listening socket) or one leaving the box's loopback is closed.
#include "egress/box_stream.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

namespace radial::egress::detail {

namespace {

bool option_is(int fd, int name, int want) {
    int v = 0;
    socklen_t len = sizeof v;
    return ::getsockopt(fd, SOL_SOCKET, name, &v, &len) == 0 && v == want;
}

bool loopback(const sockaddr_storage& s) {
    if (s.ss_family == AF_INET) {
        const auto& a = reinterpret_cast<const sockaddr_in&>(s);
        return (ntohl(a.sin_addr.s_addr) >> 24) == 127;
    }
    if (s.ss_family == AF_INET6) {
        const auto& a = reinterpret_cast<const sockaddr_in6&>(s);
        if (IN6_IS_ADDR_LOOPBACK(&a.sin6_addr)) return true;
        return IN6_IS_ADDR_V4MAPPED(&a.sin6_addr) && a.sin6_addr.s6_addr[12] == 127;
    }
    return false;
}

} // namespace

std::string box_loopback_tcp_refusal(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return "the handed descriptor is no socket";
    const bool inet = option_is(fd, SO_DOMAIN, AF_INET) || option_is(fd, SO_DOMAIN, AF_INET6);
    if (!inet || !option_is(fd, SO_TYPE, SOCK_STREAM) || !option_is(fd, SO_PROTOCOL, IPPROTO_TCP))
        return "the handed socket is not TCP";
    if (!option_is(fd, SO_ACCEPTCONN, 0)) return "the handed socket is a listening one";
    sockaddr_storage mine{}, peer{};
    socklen_t ml = sizeof mine, pl = sizeof peer;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &ml) != 0 ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0)
        return "the handed socket is not connected";
    if (!loopback(mine) || !loopback(peer)) return "the handed socket is not on the box's loopback";
    return {};
}

int take_box_stream(int unix_fd, std::chrono::steady_clock::time_point deadline,
                    const std::atomic<bool>& revoked, std::string& why, std::string& via) noexcept {
    using namespace std::chrono;
    for (;;) {
        if (revoked) return -1;
        // Real time: deadlines for real peers on real sockets (docs/design.md §12.7).
        const auto left = duration_cast<milliseconds>(deadline - steady_clock::now()).count();
        if (left <= 0) return -1;
        pollfd p{unix_fd, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 200)));
        if (n > 0) break;
        if (n < 0 && errno != EINTR) return -1;
    }
    char first = 1;
    const ssize_t peeked = ::recv(unix_fd, &first, 1, MSG_PEEK | MSG_DONTWAIT);
    if (peeked == 1 && first == kControl) {
        via = "control";
        return unix_fd;
    }
    // Closed, or a client speaking at once: the connection is the stream (its head is read next).
    if (peeked != 1 || first != kHandOver) {
        via = "socket";
        return unix_fd;
    }

    char marker = 1;
    std::vector<int> fds;
    if (recv_with_rights(unix_fd, &marker, 1, MSG_DONTWAIT, fds) != 1) {
        for (int fd : fds) close_box_socket(fd);
        return -1;
    }
    // More than one descriptor: all are closed here.
    if (fds.size() > 1) {
        for (int fd : fds) close_box_socket(fd);
        why = "the hand-over carried more than one descriptor";
        return -1;
    }
    if (fds.empty()) { // the runtime could not pass it (gVisor): relay through this connection
        const char s = kHandOverStream;
        via = "relayed";
        return ::send(unix_fd, &s, 1, MSG_NOSIGNAL) == 1 ? unix_fd : -1;
    }
    const int fd = fds.front();
    why = box_loopback_tcp_refusal(fd);
    if (!why.empty()) {
        close_box_socket(fd);
        return -1;
    }
    // The box may have left it non-blocking; the broker's relay waits on it with poll(2).
    if (const int fl = ::fcntl(fd, F_GETFL); fl >= 0 && (fl & O_NONBLOCK) != 0)
        ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    // A relay passes on segments as they come; Nagle would hold a reply's second write until
    // the box acknowledged the first (a delayed ACK: milliseconds per small request).
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    via = "handed";
    const char k = kHandOverKept;
    if (::send(unix_fd, &k, 1, MSG_NOSIGNAL) != 1) {
        close_box_socket(fd);
        return -1;
    }
    return fd;
}

} // namespace radial::egress::detail
