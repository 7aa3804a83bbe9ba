// radial/support/run_pump.h — the one model every run follows from its box's start to its box
// having ended: wait for the first reason to stop, escalate a stop, drain the output
// (docs/design.md §5.12).
#pragma once

#include <radial/support/run_ending.h>
#include <radial/support/run_registry.h>
#include <radial/support/wake_event.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <vector>

namespace radial::plugin_support {

// The budgets of one run's pump. Durations too large for the clock saturate ("never").
struct PumpOptions {
    using Clock = std::chrono::steady_clock;
    // The run's timeout; time_point::max() for none.
    Clock::time_point deadline = Clock::time_point::max();
    // From the first reason to stop: with PumpBox::terminate, the box is first asked to end by
    // itself (SIGTERM) and given this long before the first stop (run.stopGrace, radial_spec_stop);
    // zero: stopped at once.
    std::chrono::milliseconds stop_grace{0};
    // From the first stop request to force_kill when the box has not ended by then.
    std::chrono::milliseconds kill_grace{10'000};
    // The budget handed to each stop call once force_kill has happened (before it, each call's
    // budget is also cut to the time left until force_kill, at least 200 ms).
    std::chrono::milliseconds stop_budget{30'000};
    // A stop call that returned false is repeated this often while the box has not ended.
    std::chrono::milliseconds stop_every{1'000};
    // After force_kill, how long the pump still waits for the box to end before it gives up
    // (PumpResult::box_ended false; the runtime's cleanup then removes what is left).
    std::chrono::milliseconds settle_budget{10'000};
    // After the box ended, how long watched sources are still read before the pump stops
    // waiting for their end (something the box left behind may hold them open).
    std::chrono::milliseconds drain_budget{2'000};
    // box.ended() is asked after every wake-up and at least this often; zero: only on wake-ups.
    std::chrono::milliseconds check_every{0};
    // A descriptor that becomes readable when the box may have ended (e.g. a pidfd), or -1.
    int box_fd = -1;
};

// One call of PumpBox::stop.
struct StopRequest {
    Ending why = Ending::none; // the reason the run is being ended (never none)
    // The longest the call may take: the callback must honour it (the pump cannot interrupt it).
    std::chrono::milliseconds budget{0};
    bool forced = false; // force_kill has happened already
    bool first = true;   // the first stop call of this run
};

// The runtime-specific side of a run, called only from the thread running RunPump::run.
struct PumpBox {
    // Non-blocking (or bounded by the runtime's own call budget): has the box ended? Optional:
    // without it only RunPump::box_ended() tells the pump.
    std::function<bool()> ended;
    // Asks the box's command to end by itself (SIGTERM), once, at the first reason to stop when
    // PumpOptions::stop_grace is not zero. Bounded by the runtime's call budget; what it throws is
    // the runtime's to log (the pump then stops the box as without a grace). Optional.
    std::function<void()> terminate;
    // Asks the box to stop (graceful first: e.g. remove it, which ends its workload); see
    // StopRequest. Returns true when nothing more needs asking, false to be called again after
    // stop_every while the box has not ended. Required.
    std::function<bool(const StopRequest&)> stop;
    // Ends what still runs of the box at once (SIGKILL a client, close a stream); called once,
    // kill_grace after the first stop. Must not block. Required.
    std::function<void()> force_kill;
    // Called once the box ended and the watched sources are drained, with the run's ending: the
    // place to read output that only a finished box can give. Optional.
    std::function<void(Ending)> drain;
};

// What the pump saw. `ending` none: the box ended on its own, before any reason to stop.
struct PumpResult {
    Ending ending = Ending::none;
    bool output_aborted = false;
    // False only when force_kill did not end the box within settle_budget.
    bool box_ended = false;
    bool forced = false; // force_kill was called
    // The box ended within the stop grace after terminate(), before any stop.
    bool ended_in_grace = false;
};

// Waits for the first reason a run stops — the box ended, a kill (ActiveRun's wake fd), the output
// sink aborting, the deadline — and drives `box` accordingly; reads the watched output sources
// meanwhile and drains them after the box ended, so no output written before the end is lost.
// Precedence: a box already seen ended ends the run as itself (a reason arriving with it does not
// turn an exit into a kill); otherwise kill > output aborted > timeout, checked before the box is
// asked again. The first reason fixes the ending; later ones change nothing.
// Threading: run() on one thread (the one calling `box` and the source callbacks);
// output_aborted() and box_ended() from any thread. Not reusable: one run() per pump.
class RunPump {
public:
    // Throws radial::plugin::Error(RADIAL_E_INTERNAL) when no eventfd can be made.
    RunPump(ActiveRun& active, PumpOptions options, PumpBox box);
    RunPump(const RunPump&) = delete;
    RunPump& operator=(const RunPump&) = delete;

    // Before run(): read `fd` whenever it is readable (or hung up) by calling `on_readable`, which
    // returns false once the source ended (the pump then stops watching it; the caller owns and
    // closes the fd).
    void watch(int fd, std::function<bool()> on_readable);

    // The output sink asked to stop: the run ends as aborted. Idempotent; never blocks. [any
    // thread]
    void output_aborted() noexcept;
    bool aborted() const noexcept { return aborted_.load(); }
    // The ending fixed so far (none until a reason to stop arrived). [any thread]
    Ending ending() const noexcept { return ending_.load(); }
    // Whether the box ended within the stop grace (PumpResult::ended_in_grace). [any thread]
    bool ended_in_grace() const noexcept { return in_grace_.load(); }
    // The box ended (e.g. its output stream reached its end). Idempotent; never blocks. [any
    // thread]
    void box_ended() noexcept;

    // Blocks until the box ended and its sources are drained (or force_kill failed to end it
    // within settle_budget). Exceptions thrown by the callbacks or a failing poll() propagate;
    // the caller's cleanup then makes the box gone.
    PumpResult run();

private:
    struct Source {
        int fd;
        std::function<bool()> on_readable;
    };

    ActiveRun& active_;
    PumpOptions options_;
    PumpBox box_;
    std::vector<Source> sources_;
    WakeEvent news_;
    std::atomic<bool> aborted_{false};
    std::atomic<bool> ended_{false};
    std::atomic<Ending> ending_{Ending::none};
    std::atomic<bool> in_grace_{false};
};

} // namespace radial::plugin_support
