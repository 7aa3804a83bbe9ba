#include "daemon/spool_watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace radial::daemon {

SpoolWatcher::SpoolWatcher(const std::string& dir)
    : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (!fd_) throw std::system_error(errno, std::generic_category(), "inotify_init1");
    if (::inotify_add_watch(fd_.get(), dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR) < 0)
        throw std::system_error(errno, std::generic_category(), "watching the spool '" + dir + "'");
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
