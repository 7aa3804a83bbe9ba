// host/daemon/stop_signals.h — the signals radiald handles on its loop rather than dying of them
// (SIGTERM and SIGINT stop the daemon, SIGHUP reloads it, SIGUSR1, SIGUSR2 and SIGALRM are logged
// and ignored, docs/design.md §12.3; `radiald turn` also takes SIGHUP and SIGQUIT, whose closed
// terminal must kill the box like Ctrl-C), delivered as bytes on a pipe (each byte the signal's
// number) so that a poll loop sees them beside its other events.
// The one mechanism for both: the handler only write(2)s one byte and keeps errno
// (async-signal-safe); counting and acting happen on the loop. Signal masks are left alone, so the
// runtime's child processes inherit nothing unusual.
#pragma once

#include <radial/internal/unique_fd.h>
#include <signal.h>

#include <cstddef>
#include <initializer_list>
#include <vector>

namespace radial::daemon {

class StopSignals {
public:
    // Installs the handlers for `signals` (at most kMaxSignals); the previous handlers come back
    // when this is destroyed. One instance per process at a time. Throws DaemonError when
    // the pipe cannot be made, std::invalid_argument for more than kMaxSignals signals.
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

private:
    internal::UniqueFd read_, write_;
    std::vector<int> signals_;
};

} // namespace radial::daemon
