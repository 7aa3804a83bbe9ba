// host/egress/box_stream.cpp — see box_stream.h. The handed socket comes from the box, so it is
// judged before anything is read from it: a socket of another kind (a unix socket with descriptors
// in flight, a pipe, a file, a listening socket) or one leaving the box's loopback is closed.
#include "egress/box_stream.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
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

namespace {

// The closing threads close_box_socket started and await_box_socket_closes has not joined yet.
struct Closers {
    std::mutex mutex;
    std::condition_variable done_cv;
    std::list<std::pair<std::thread, std::shared_ptr<std::atomic<bool>>>> threads;
};

// How long a close of a box's socket may wait out a linger the box set again after lingering was
// switched off (a duplicate it keeps can): then a signal ends the wait. The close still releases
// the descriptor; the kernel sends what is left on its own, as for any orphaned socket.
constexpr std::chrono::milliseconds kCloseBound{1000};
// Closing threads alive at once at most; past it a close runs in its caller (bounded the same),
// so a box that makes many such closes slows its own broker, not radiald.
constexpr std::size_t kMostClosers = 64;

// The signal that ends a held close: its handler does nothing, and is installed without
// SA_RESTART, so the kernel's linger wait returns.
int close_bound_signal() {
    static const int signo = [] {
        const int s = SIGRTMIN + 3;
        struct sigaction sa {};
        sa.sa_handler = [](int) {};
        ::sigemptyset(&sa.sa_mask);
        ::sigaction(s, &sa, nullptr);
        return s;
    }();
    return signo;
}

Closers& closers() {
    static Closers* c = new Closers; // never destroyed: a late closing thread may still use it
    return *c;
}

// Joins the closing threads that finished (their exit is moments away). Called with the mutex held.
void join_finished(Closers& c) {
    for (auto it = c.threads.begin(); it != c.threads.end();) {
        if (!it->second->load()) {
            ++it;
            continue;
        }
        it->first.join();
        it = c.threads.erase(it);
    }
}

} // namespace

// close(fd), interrupted after kCloseBound and every 100 ms after it (a signal that came just
// before the wait began would be lost on it) by a timer aimed at this thread alone.
void bounded_close(int fd) noexcept {
    const int signo = close_bound_signal();
    sigevent ev{};
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = signo;
    ev._sigev_un._tid = static_cast<pid_t>(::gettid());
    timer_t timer{};
    const bool armed = ::timer_create(CLOCK_MONOTONIC, &ev, &timer) == 0;
    sigset_t only{}, before{};
    ::sigemptyset(&only);
    ::sigaddset(&only, signo);
    ::pthread_sigmask(SIG_UNBLOCK, &only, &before);
    if (armed) {
        itimerspec when{};
        when.it_value.tv_sec = kCloseBound.count() / 1000;
        when.it_value.tv_nsec = (kCloseBound.count() % 1000) * 1'000'000;
        when.it_interval.tv_nsec = 100'000'000;
        ::timer_settime(timer, 0, &when, nullptr);
    }
    ::close(fd); // released even when interrupted (Linux)
    if (armed) ::timer_delete(timer);
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

void close_box_socket(int fd) noexcept {
    if (fd < 0) return;
    const linger off{0, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof off); // not a socket: nothing to do
    Closers& c = closers();
    try {
        std::unique_lock lock(c.mutex);
        join_finished(c); // keeps the list as short as the closes still running
        if (c.threads.size() < kMostClosers) {
            auto done = std::make_shared<std::atomic<bool>>(false);
            c.threads.emplace_back(std::thread([fd, done, &c] {
                                       bounded_close(fd);
                                       std::lock_guard l(c.mutex);
                                       done->store(true);
                                       c.done_cv.notify_all();
                                   }),
                                   done);
            return;
        }
    } catch (...) {
    }
    bounded_close(fd);
}

std::size_t box_socket_closes_in_flight() noexcept {
    Closers& c = closers();
    std::lock_guard lock(c.mutex);
    return static_cast<std::size_t>(std::count_if(c.threads.begin(), c.threads.end(),
                                                  [](const auto& t) { return !t.second->load(); }));
}

void await_box_socket_closes(std::chrono::milliseconds budget) noexcept {
    Closers& c = closers();
    std::unique_lock lock(c.mutex);
    c.done_cv.wait_for(lock, budget, [&] {
        return std::all_of(c.threads.begin(), c.threads.end(),
                           [](const auto& t) { return t.second->load(); });
    });
    join_finished(c);
}

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

namespace {

// recvmsg(2) with room for every descriptor one message can carry: they land in `fds` (the
// caller's to close), never dropped by the kernel on this thread (recv_from_box).
ssize_t recv_with_rights(int fd, void* buf, std::size_t n, int flags,
                         std::vector<int>& fds) noexcept {
    iovec iov{buf, n};
    alignas(cmsghdr) char control[CMSG_SPACE(kMostRightsPerMessage * sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t got = ::recvmsg(fd, &msg, flags | MSG_CMSG_CLOEXEC);
    if (got < 0) return got;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int one = -1;
            std::memcpy(&one, CMSG_DATA(c) + i * sizeof(int), sizeof one);
            fds.push_back(one);
        }
    }
    return got;
}

} // namespace

ssize_t recv_from_box(int fd, void* buf, std::size_t n, int flags) noexcept {
    std::vector<int> fds;
    const ssize_t got = recv_with_rights(fd, buf, n, flags, fds);
    const int saved = errno;
    for (int one : fds) close_box_socket(one);
    errno = saved;
    return got;
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
