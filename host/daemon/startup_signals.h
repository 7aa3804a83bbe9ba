// host/daemon/startup_signals.h — the daemon's signals while it starts, before its loop hears
// them: reading the config, loading and preflighting the runtime, the hand-over recovery. Their
// handlers are installed first of all (daemon::StopSignals), so that no signal a process manager or
// an operator sends by habit kills a starting daemon without a line (docs/design.md §12.3): a
// `systemctl reload` just after `systemctl start` of the packaged unit (Type=simple) ended it with
// SIGHUP's default action, silently.
#pragma once

#include <atomic>

#include "daemon/signal_watch.h"
#include "daemon/stop_signals.h"

namespace radial::daemon {

// While it lives, a thread of its own takes the signals `signals` delivers: SIGTERM or SIGINT
// stops the start at once (a line, then the signal's default action: nothing is claimed yet, and
// the next start takes up whatever this one left, as after any death); SIGHUP is remembered and
// raised again by done(), so the loop reloads once it serves; SIGUSR1, SIGUSR2 and SIGALRM are
// logged and ignored.
class StartupSignals {
public:
    // Throws DaemonError when its thread's pipe cannot be made.
    explicit StartupSignals(StopSignals& signals);
    // done().
    ~StartupSignals();
    StartupSignals(const StartupSignals&) = delete;
    StartupSignals& operator=(const StartupSignals&) = delete;

    // Ends the thread; the caller's loop takes the signals from here. Raises a SIGHUP heard
    // meanwhile again (once), for that loop. Idempotent. [the thread that made this only]
    void done() noexcept;

private:
    std::atomic<bool> reload_{false}; // before watch_, which sets it
    SignalWatch watch_;
};

} // namespace radial::daemon
