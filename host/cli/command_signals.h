// host/cli/command_signals.h — the stop signals of a command that changes the host or the engine:
// `radiald turn` and the session commands (`session create`, `rm`, `snapshot`, `snapshot-rm`;
// docs/design.md §13.12, §12.3). SIGINT, SIGTERM, SIGHUP and SIGQUIT are caught for as long as a
// CommandSignals lives, through daemon::StopSignals, on a thread of its own: the handler only notes
// the signal. A session command looks at its safe points whether one came, so that it finishes or
// undoes its step instead of dying between two of them with a box, a lease or a record half made
// (a signal that arrives during a blocking engine call is seen once the call returns); a turn
// interrupts its box at once (Options::on_first_stop).
#pragma once

#include <atomic>
#include <functional>
#include <stdexcept>
#include <string>

#include "cli/exit_status.h"
#include "daemon/signal_watch.h"
#include "daemon/stop_signals.h"

namespace radial::cli {

// A second stop signal ends the command at once (the signal's default action, after a line naming
// what may be left for `radiald reconcile`): a step that waits long — a lock another command
// holds, an engine that does not answer — must not make it stoppable by SIGKILL alone. SIGUSR1,
// SIGUSR2 and SIGALRM are logged and ignored, as `radiald turn` does (docs/design.md §12.3).
class CommandSignals {
public:
    struct Options {
        // The log lines' component, and what they begin with ("turn t1: "; may be empty).
        std::string component = "session";
        std::string subject;
        // Called on the signal thread for the first stop signal, in place of the line saying the
        // command stops at the end of its step; it logs what it does itself.
        std::function<void(int signo)> on_first_stop;
        // A second stop signal ends the command at once; false: it is ignored (a turn, whose
        // first signal already kills its box, waits for that to finish).
        bool second_stop_ends = true;
    };

    // Catches the signals on a thread of its own; the previous handlers come back when this is
    // destroyed (which first ends the thread: on_first_stop is not called after). Throws
    // daemon::DaemonError when they cannot be caught. One at a time per process.
    CommandSignals() : CommandSignals(Options{}) {}
    explicit CommandSignals(Options options);
    ~CommandSignals();
    CommandSignals(const CommandSignals&) = delete;
    CommandSignals& operator=(const CommandSignals&) = delete;

    // The first stop signal that arrived since construction, 0 when none. Never blocks.
    // [thread-safe]
    int stop_asked() const noexcept { return first_.load(); }

    // Ends the signal thread (a signal it took is handled first): stop_asked() is final from
    // here. The handlers stay until destruction. Idempotent. [not from on_first_stop]
    void stop() noexcept { watch_.stop(); }

    // "SIGTERM" for SIGTERM.
    static std::string name(int signo) { return daemon::signal_name(signo); }

private:
    void heard(int signo);
    Options options_;
    daemon::StopSignals signals_;
    std::atomic<int> first_{0};
    daemon::SignalWatch watch_; // last: its thread uses the members above
};

// Thrown at a safe point once a stop signal came: what the command made is undone on its way out,
// as for any failure of the step.
class Interrupted : public std::runtime_error {
public:
    explicit Interrupted(int signo)
        : std::runtime_error("interrupted by " + CommandSignals::name(signo)), signo_(signo) {}
    int signo() const noexcept { return signo_; }

private:
    int signo_;
};

// Throws Interrupted when a stop signal came.
void stop_if_asked(CommandSignals& signals);

// For a command whose change is short and best finished (`session rm`, `session snapshot-rm`):
// runs `command` to its end whatever stop signal comes meanwhile, then says which came and that
// `what` was finished first, and returns `command`'s exit status. When the signals cannot be
// caught, logs why and returns exit_status_for(`kind`) before `command` runs.
int finish_despite_signals(const std::string& what, CommandKind kind,
                           const std::function<int()>& command);

} // namespace radial::cli
