// host/daemon/spool_watcher.h — inotify on the spool's queue/ directory (docs/design.md §12.3): the
// daemon learns of a new request when it is renamed into place, instead of polling for it. The
// watch is a wake-up only; what to run is always decided by a full scan (turn_queue.h), so a lost
// or coalesced event costs nothing but latency until the next scan.
#pragma once

#include <radial/internal/unique_fd.h>

#include <string>

namespace radial::daemon {

class SpoolWatcher {
public:
    // Watches `dir` for files renamed in (IN_MOVED_TO) or written and closed (IN_CLOSE_WRITE).
    // Throws SpoolError (daemon/spool.h) naming the directory, the call that failed and its errno.
    explicit SpoolWatcher(const std::string& dir);

    // Readable when events are pending (for poll).
    int fd() const noexcept { return fd_.get(); }

    // Reads every pending event. Returns true when one of them could mean a new request (or the
    // kernel's queue overflowed). Never blocks, never throws.
    bool drain() noexcept;

private:
    internal::UniqueFd fd_;
};

} // namespace radial::daemon
