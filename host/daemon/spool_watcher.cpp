#include "daemon/spool_watcher.h"

#include <fmt/format.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "daemon/spool.h"

namespace radial::daemon {

SpoolWatcher::SpoolWatcher(const std::string& dir)
    : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    auto failed = [&](const char* step) {
        const int err = errno;
        return SpoolError(fmt::format(
            "watching the spool '{}': {}: {}{}", dir, step, std::generic_category().message(err),
            err == EMFILE || err == ENOSPC
                ? "; raise fs.inotify.max_user_instances or max_user_watches (sysctl)"
                : ""));
    };
    if (!fd_) throw failed("inotify_init1");
    if (::inotify_add_watch(fd_.get(), dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR) < 0)
        throw failed("inotify_add_watch");
}

bool SpoolWatcher::drain() noexcept {
    bool relevant = false;
    alignas(struct inotify_event) char buf[8192];
    for (;;) {
        ssize_t n = ::read(fd_.get(), buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return relevant;
        for (char* p = buf; p < buf + n;) {
            auto* ev = reinterpret_cast<struct inotify_event*>(p);
            if (ev->mask & (IN_MOVED_TO | IN_CLOSE_WRITE | IN_Q_OVERFLOW)) relevant = true;
            p += sizeof(struct inotify_event) + ev->len;
        }
    }
}

} // namespace radial::daemon
