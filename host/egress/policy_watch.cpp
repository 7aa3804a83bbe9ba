#include "egress/policy_watch.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

namespace radial::egress {

struct PolicyWatch::Subscriber {
    std::string name; // the file's name in the watched directory
    int event_fd = -1;
    ~Subscriber() {
        if (event_fd >= 0) ::close(event_fd);
    }
};

namespace {

// One inotify instance on a directory and the thread that reads it, telling each subscriber whose
// file an event names.
struct Watcher {
    std::string dir;
    int inotify = -1;
    int stop = -1; // an eventfd: the last subscriber is gone
    std::thread thread;
    std::mutex mutex; // subscribers
    std::set<std::shared_ptr<PolicyWatch::Subscriber>> subscribers;

    ~Watcher() {
        for (const int fd : {inotify, stop})
            if (fd >= 0) ::close(fd);
    }

    void tell(const std::string* name) {
        std::lock_guard lock(mutex);
        const std::uint64_t one = 1;
        for (const auto& s : subscribers)
            if (name == nullptr || *name == s->name) [[maybe_unused]]
                auto w = ::write(s->event_fd, &one, sizeof one);
    }

    void run() {
        alignas(inotify_event) char buf[4096];
        for (;;) {
            pollfd p[2] = {{inotify, POLLIN, 0}, {stop, POLLIN, 0}};
            if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
            if (p[1].revents != 0) return;
            if (p[0].revents == 0) continue;
            const ssize_t n = ::read(inotify, buf, sizeof buf);
            for (ssize_t at = 0; at < n;) {
                const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
                // An overflowed queue may have lost an event: every subscriber reads again.
                if ((e->mask & IN_Q_OVERFLOW) != 0) {
                    tell(nullptr);
                } else if (e->len > 0) {
                    const std::string name(e->name);
                    tell(&name);
                }
                at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
            }
        }
    }
};

std::mutex g_mutex; // g_watchers, and each watcher's start and end
std::map<std::string, std::shared_ptr<Watcher>>& watchers() {
    static auto* w = new std::map<std::string, std::shared_ptr<Watcher>>; // outlives every user
    return *w;
}

} // namespace

PolicyWatch::PolicyWatch(const std::string& policy_path) : sub_(std::make_shared<Subscriber>()) {
    const std::filesystem::path p(policy_path);
    const std::string dir = p.parent_path().string();
    sub_->name = p.filename().string();
    sub_->event_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    auto fail = [&] {
        throw std::runtime_error(
            fmt::format("watching the operator's policy in '{}': {}", dir, std::strerror(errno)));
    };
    if (sub_->event_fd < 0) fail();
    std::lock_guard lock(g_mutex);
    auto& w = watchers()[dir];
    if (!w) {
        auto made = std::make_shared<Watcher>();
        made->dir = dir;
        made->inotify = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        made->stop = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (made->inotify < 0 || made->stop < 0 ||
            ::inotify_add_watch(made->inotify, dir.c_str(),
                                IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM) < 0) {
            const int err = errno; // the erase may free memory, and free may set errno
            watchers().erase(dir);
            errno = err;
            fail();
        }
        try {
            made->thread = std::thread([raw = made.get()] { raw->run(); });
        } catch (const std::system_error& e) {
            watchers().erase(dir);
            throw std::runtime_error(
                fmt::format("watching the operator's policy in '{}': {}", dir, e.what()));
        }
        w = std::move(made);
    }
    std::lock_guard sl(w->mutex);
    w->subscribers.insert(sub_);
}

PolicyWatch::PolicyWatch(PolicyWatch&& o) noexcept = default;

PolicyWatch::~PolicyWatch() {
    if (!sub_) return;
    std::shared_ptr<Watcher> ended;
    {
        std::lock_guard lock(g_mutex);
        for (auto it = watchers().begin(); it != watchers().end(); ++it) {
            auto& w = it->second;
            std::lock_guard sl(w->mutex);
            if (w->subscribers.erase(sub_) == 0) continue;
            if (w->subscribers.empty()) {
                ended = std::move(w);
                watchers().erase(it);
            }
            break;
        }
    }
    if (ended) {
        const std::uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(ended->stop, &one, sizeof one);
        if (ended->thread.joinable()) ended->thread.join();
    }
}

int PolicyWatch::fd() const noexcept { return sub_ ? sub_->event_fd : -1; }

bool PolicyWatch::changed() noexcept {
    std::uint64_t n = 0;
    return sub_ && ::read(sub_->event_fd, &n, sizeof n) == static_cast<ssize_t>(sizeof n) && n > 0;
}

} // namespace radial::egress
