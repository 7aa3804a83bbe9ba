// host/turn/turn_runner.h — runs one turn through the selected runtime and produces its terminal
// record (docs/design.md §3).
//
// The host enforces the timeout as well as the plugin: a watchdog kills the box by label when the
// plugin has not returned `kHostTimeoutGrace` after the turn's timeout, and again after each
// further grace (at least 1 s) until it returns; so too after an interrupt whose kill the run
// outlived by a grace. A run that outlived kGiveUpAfterKills kills by a grace is given up on: the
// turn ends with an error record (call_abandoned) while the plugin's thread keeps the call
// (radial/host/run_call.hpp, docs/design.md §3.7). A refused field fails the
// turn before anything starts; superseded fields are logged once per run (docs/design.md §5.6).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <radial/container_spec.hpp>
#include <radial/host/runtime_client.hpp>
#include <radial/host/session_client.hpp>
#include <string>

#include "time/clock.h"
#include "turn/terminal_record.h"

namespace radial::turn {

inline constexpr std::chrono::milliseconds kHostTimeoutGrace{15'000};
// How many kills a run may outlive before the turn gives up on it (docs/design.md §3.7).
inline constexpr int kGiveUpAfterKills = 3;

// Why the host stops a running turn. interrupted: the operator asked (Ctrl-C on `radiald turn`):
// status failed, reason "interrupted". shutdown: the daemon's shutdown grace ran out
// (docs/design.md §12.3): status killed, reason "shutdown".
enum class StopReason { interrupted, shutdown };

class TurnRunner {
public:
    // `client` must outlive the runner. `turn_id` is recorded as given. `host_grace` is how long
    // after the spec's timeout the host waits for the plugin before killing the box itself.
    // With `session`, the spec is an exec in that session's box (spec.label names it), run with
    // session->exec instead of client.run; a kill still removes the box by label, and with it the
    // session. The record's times and the watchdog's budget are on `clock` (docs/design.md
    // §12.7), which must outlive the runner.
    TurnRunner(const host::RuntimeClient& client, ContainerSpec spec, std::string turn_id,
               std::chrono::milliseconds host_grace = kHostTimeoutGrace,
               std::optional<host::SessionClient> session = std::nullopt,
               const time::Clock& clock = time::system_clock());

    // Runs the turn to its end; blocks. Output chunks go to `on_output` as they arrive (return
    // false to stop the turn). Never throws for a runtime failure: that is a terminal record with
    // status error. Logs the start but not the outcome (log_outcome). Call once.
    TerminalRecord run(const host::OutputFn& on_output);

    // The call run() gave up on (its record has call_abandoned), or null: its plugin has not
    // returned, and may still use the box's workspace and ids (host::RunCall::when_returned).
    std::shared_ptr<host::RunCall> abandoned_call() const noexcept { return abandoned_; }

    // Asks a running turn to stop: the watchdog kills the box by label (the runtime's stop grace
    // first), and this returns at once. Safe from any thread, and before or after run(); the
    // record says why (see StopReason).
    void interrupt(StopReason why = StopReason::interrupted) noexcept;

private:
    // The watchdog's thread: kills the box on an interrupt, and when the run has not returned a
    // grace after the timeout or after that kill, then again after each further grace until it
    // returns — or, after kGiveUpAfterKills kills and a grace more, gives up on the run's call.
    void watch();
    // Counts a kill the watchdog sends (its thread only).
    void note_kill();

    const host::RuntimeClient& client_;
    std::optional<host::SessionClient> session_;
    ContainerSpec spec_;
    std::string turn_id_;
    std::chrono::milliseconds host_grace_;
    const time::Clock& clock_;
    std::atomic<bool> interrupted_{false};
    std::atomic<StopReason> stop_reason_{StopReason::interrupted};
    std::atomic<bool> watchdog_fired_{false};
    std::mutex mutex_;
    std::condition_variable done_cv_;
    bool done_ = false;
    std::shared_ptr<host::RunCall> call_; // the run's call once started; guarded by mutex_
    std::shared_ptr<host::RunCall> abandoned_;
    // The watchdog's kills and the first one's time: its own until it is joined.
    int kills_ = 0;
    time::SteadyPoint first_kill_{};
};

// The line that says how a run ended ("turn <id>: succeeded after 812 ms", or its error): logged
// after everything the box printed has reached the caller (docs/design.md §3.6).
void log_outcome(const TerminalRecord& rec);

} // namespace radial::turn
