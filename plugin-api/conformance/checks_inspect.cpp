// The check of `inspect` (ABI 1.1, optional): what became of a box, read before it is removed, as
// reconciliation needs it after a crash (docs/design.md §8.4, §5.11). A plugin without `inspect`,
// or one that answers RADIAL_E_UNSUPPORTED, passes: radiald then records that it cannot tell.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "checks.h"

namespace radial::conformance {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string state_text(const host::BoxState& b) {
    switch (b.state) {
        case RADIAL_BOX_GONE: return "GONE";
        case RADIAL_BOX_RUNNING: return "RUNNING";
        case RADIAL_BOX_ENDED:
            return "ENDED (flags " + flags_text(b.flags) +
                   ((b.flags & RADIAL_RUN_EXITED) ? ", exit code " + std::to_string(b.exit_code)
                                                  : std::string()) +
                   ")";
        default: return "UNKNOWN";
    }
}

// Holds the run's first output chunk inside the sink until released: the box has then written its
// output, and may exit, while the plugin cannot yet have removed it (it is still delivering).
struct SinkGate {
    std::mutex mutex;
    std::condition_variable cv;
    bool entered = false;
    bool released = false;
};

} // namespace

CONFORMANCE_CHECK(inspect_reports_how_a_box_ended, Gate::ready,
                  "inspect (optional, ABI 1.1) reports an unknown label as GONE, a running box "
                  "as RUNNING, and a box whose workload exited by itself with 42 as ENDED with "
                  "EXITED and exit code 42 while its run has not removed it yet.") {
    if (!instance().has_inspect()) {
        std::cout << "  the plugin has no inspect: radiald records that it cannot tell how a "
                     "box found after a crash ended\n";
        return;
    }
    const std::string gone = label("inspect-none");
    host::BoxState g;
    try {
        g = instance().inspect(gone);
    } catch (...) {
        FAIL() << "inspect('" << gone
               << "') of a label no box has failed: " << describe_current_exception();
    }
    if (!g.supported) {
        std::cout << "  inspect answers UNSUPPORTED: radiald records that it cannot tell how a "
                     "box found after a crash ended\n";
        return;
    }
    EXPECT_EQ(g.state, RADIAL_BOX_GONE)
        << "inspect('" << gone << "') of a label no box has reported " << state_text(g);

    // A running box.
    {
        const std::string l = label("inspect-running");
        auto capture = std::make_shared<OutputCapture>();
        auto call = instance().start_run(shell_spec(l, "echo started; sleep 600"), capture);
        auto deadline = Clock::now() + budget();
        bool started = false;
        while (!started && Clock::now() < deadline) {
            {
                std::lock_guard lock(capture->mutex);
                started = capture->out.find("started") != std::string::npos;
            }
            if (!started && call.wait_for(50ms)) break;
        }
        if (started) {
            try {
                host::BoxState r = instance().inspect(l);
                EXPECT_EQ(r.state, RADIAL_BOX_RUNNING)
                    << "inspect('" << l << "') of a box that printed 'started' and sleeps "
                    << "reported " << state_text(r);
            } catch (...) {
                ADD_FAILURE() << "inspect('" << l
                              << "') of a running box failed: " << describe_current_exception();
            }
        } else {
            ADD_FAILURE() << "the box '" << l << "' never printed 'started'";
        }
        try {
            instance().kill(l);
        } catch (...) {
            ADD_FAILURE() << "kill('" << l << "') failed: " << describe_current_exception();
        }
        (void)finish(call, l, kill_wait());
    }

    // A box that exited by itself with 42: its run is held in the output sink, so it cannot
    // have removed the box yet.
    const std::string l = label("inspect-exited");
    auto capture = std::make_shared<OutputCapture>();
    auto gate = std::make_shared<SinkGate>();
    const auto hold = budget();
    capture->hook = [gate, hold](std::uint32_t, std::string_view) {
        std::unique_lock lock(gate->mutex);
        gate->entered = true;
        gate->cv.notify_all();
        // Bounded: a check that fails must not leave the plugin's run blocked for ever.
        gate->cv.wait_for(lock, hold, [&] { return gate->released; });
        return true;
    };
    auto release = [gate] {
        std::lock_guard lock(gate->mutex);
        gate->released = true;
        gate->cv.notify_all();
    };
    auto call = instance().start_run(shell_spec(l, "echo bye; exit 42"), capture);
    bool entered = false;
    {
        std::unique_lock lock(gate->mutex);
        entered = gate->cv.wait_for(lock, budget(), [&] { return gate->entered; });
    }
    if (!entered) {
        release();
        RunObservation o = finish(call, l, budget());
        FAIL() << "the box '" << l << "' running `echo bye; exit 42` delivered no output (its run "
               << outcome_text(o) << ")";
    }
    // The box may still be finishing its exit: wait until it is no longer RUNNING.
    host::BoxState e;
    std::string error;
    auto deadline = Clock::now() + budget();
    for (;;) {
        try {
            e = instance().inspect(l);
        } catch (...) {
            error = describe_current_exception();
            break;
        }
        if (e.state != RADIAL_BOX_RUNNING || Clock::now() >= deadline) break;
        std::this_thread::sleep_for(100ms);
    }
    release();
    RunObservation o = finish(call, l, budget());
    ASSERT_TRUE(error.empty()) << "inspect('" << l
                               << "') of a box that exited by itself failed: " << error;
    if (e.state == RADIAL_BOX_GONE) {
        // Allowed: a plugin may deliver output only after the box is gone, and then there is no
        // ended box to look at here.
        std::cout << "  the box was already gone while its output was delivered; inspect of an "
                     "ended box was not observed\n";
        return;
    }
    EXPECT_EQ(e.state, RADIAL_BOX_ENDED)
        << "inspect('" << l << "') of a box that ran `echo bye; exit 42` and ended reported "
        << state_text(e);
    EXPECT_TRUE(e.flags & RADIAL_RUN_EXITED)
        << "inspect('" << l << "') reported " << state_text(e) << "; expected EXITED with 42";
    EXPECT_EQ(e.exit_code, 42) << "inspect('" << l << "') reported " << state_text(e);
    EXPECT_FALSE(e.flags & RADIAL_RUN_OOM_KILLED)
        << "inspect('" << l << "') reported an OOM kill for `exit 42`";
    if (expect_ran(o, "the run of `echo bye; exit 42`")) {
        EXPECT_TRUE((o.outcome.flags & RADIAL_RUN_EXITED) && o.outcome.exit_code == 42)
            << "the run " << outcome_text(o) << "; expected exit 42";
    }
}

} // namespace radial::conformance
