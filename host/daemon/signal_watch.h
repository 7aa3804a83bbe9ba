// host/daemon/signal_watch.h — a thread that hears what a StopSignals delivers, for a command
// whose own thread is busy (a session command between its steps, `radiald turn` while its box
// runs, the daemon while it starts): docs/design.md §12.3.
#pragma once

#include <radial/internal/unique_fd.h>

#include <functional>
#include <string>
#include <thread>

#include "daemon/stop_signals.h"

namespace radial::daemon {

class SignalWatch {
public:
    // Calls `on_signal` on a thread of its own for each signal `signals` delivers, in order of
    // arrival, until stop(). `signals` must outlive this; nothing else may take its signals
    // meanwhile. Throws DaemonError when the thread's pipe cannot be made.
    SignalWatch(StopSignals& signals, std::function<void(int signo)> on_signal);
    // stop().
    ~SignalWatch();
    SignalWatch(const SignalWatch&) = delete;
    SignalWatch& operator=(const SignalWatch&) = delete;

    // Ends the thread; on_signal is not called after, and signals not yet taken stay on the
    // StopSignals' pipe for its next reader. Idempotent. [not from on_signal]
    void stop() noexcept;

private:
    StopSignals& signals_;
    std::function<void(int)> on_signal_;
    internal::UniqueFd done_read_, done_write_;
    std::thread thread_;
};

// "SIGTERM" for SIGTERM. [thread-safe]
std::string signal_name(int signo);

// Ends the process as `signo`'s default action would (its handler put back, the signal unblocked
// and raised): the exit status a process manager expects of it. [async-signal-unsafe; any thread]
[[noreturn]] void die_of(int signo);

} // namespace radial::daemon
