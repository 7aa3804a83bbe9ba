// host/socket/box_descriptors.cpp — see box_descriptors.h.
#include "socket/box_descriptors.h"

#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

namespace radial::socket {

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

void close_box_connection(int fd) noexcept {
    if (fd < 0) return;
    ::shutdown(fd, SHUT_RDWR);
    int queued = 0;
    if (::ioctl(fd, FIONREAD, &queued) == 0 && queued == 0) {
        ::close(fd);
        return;
    }
    close_box_socket(fd);
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

ssize_t recv_from_box(int fd, void* buf, std::size_t n, int flags) noexcept {
    std::vector<int> fds;
    const ssize_t got = recv_with_rights(fd, buf, n, flags, fds);
    const int saved = errno;
    for (int one : fds) close_box_socket(one);
    errno = saved;
    return got;
}

} // namespace radial::socket
