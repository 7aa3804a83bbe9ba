// host/daemon/stop_signals.h — the signals radiald handles on its loop rather than dying of them
// (SIGTERM and SIGINT stop the daemon, SIGHUP reloads it, SIGUSR1, SIGUSR2 and SIGALRM are logged
// and ignored, docs/design.md §12.3; `radiald turn` also takes SIGHUP and SIGQUIT, whose closed
// terminal must kill the box like Ctrl-C), delivered as bytes on a pipe (each byte the signal's
// number) so that a poll loop sees them beside its other events.
// The one mechanism for both: the handler only write(2)s one byte and keeps errno
// (async-signal-safe); counting and acting happen on the loop. A plugin's code runs in this
// process and may block these signals or reset their handlers: a keeper thread of radiald's own,
// which never calls a plugin, has them unblocked and puts the handlers back (docs/design.md §12.3).
#pragma once

#include <radial/internal/unique_fd.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <initializer_list>
#include <mutex>
#include <thread>
#include <vector>

namespace radial::daemon {

class StopSignals {
public:
    // Installs the handlers for `signals` (at most kMaxSignals), unblocks them on the calling
    // thread and starts the keeper thread (it inherits that mask); the previous handlers come back
    // when this is destroyed. One instance per process at a time. Throws DaemonError when the
    // pipe cannot be made, std::invalid_argument for more than kMaxSignals signals.
    static constexpr std::size_t kMaxSignals = 8;
    explicit StopSignals(std::initializer_list<int> signals = {SIGTERM, SIGINT});
    ~StopSignals();
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

    // Readable when a signal has arrived since the last take().
    int fd() const noexcept { return read_.get(); }

    // How many signals arrived since the last call (0 when none). Never blocks. [main loop only]
    int take() noexcept;

    // The signals that arrived since the last call, in order of arrival (empty when none). Never
    // blocks. [main loop only]
    std::vector<int> take_each();

    // Puts back what a plugin changed (docs/design.md §12.3): the handler of each of these
    // signals, and SIGPIPE's SIG_IGN when it was ignored at construction; and unblocks these
    // signals on the calling thread. Returns the signals whose handler it put back. The keeper
    // thread calls it every kKeepInterval; thread-safe.
    static constexpr std::chrono::milliseconds kKeepInterval{1000};
    std::vector<int> keep() const;

private:
    void keeper();
    internal::UniqueFd read_, write_;
    std::vector<int> signals_;
    sigset_t set_{};
    bool keep_pipe_ignored_ = false;
    std::mutex mutex_;
    std::condition_variable stop_cv_;
    bool stop_ = false; // guarded by mutex_
    std::thread keeper_;
};

} // namespace radial::daemon
