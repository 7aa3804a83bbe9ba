// tests/plugins/support/run_pump_test.cpp — the one run pump (plugin-api/support/run_pump.cpp),
// driven with fake box callbacks: each reason to stop, their precedence, the escalation from
// stop to force_kill, and output drained before run() returns (docs/design.md §5.12).
#include <gtest/gtest.h>
#include <radial/support/run_pump.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace radial::plugin_support {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A fake box: ends when `ended` is set (by the test, by its stop or by its force_kill), and
// records every call.
struct FakeBox {
    std::atomic<bool> ended{false};
    std::atomic<bool> stop_ends_it{true};
    std::atomic<bool> force_ends_it{true};
    std::mutex mutex;
    std::vector<std::string> calls;
    std::vector<std::chrono::milliseconds> stop_budgets;
    std::vector<Ending> stop_reasons;

    void record(std::string what) {
        std::lock_guard lock(mutex);
        calls.push_back(std::move(what));
    }
    std::size_t count(const std::string& what) {
        std::lock_guard lock(mutex);
        return static_cast<std::size_t>(std::count(calls.begin(), calls.end(), what));
    }

    PumpBox callbacks() {
        PumpBox b;
        b.ended = [this] { return ended.load(); };
        b.stop = [this](const StopRequest& s) {
            record(s.forced ? "stop-forced" : "stop");
            {
                std::lock_guard lock(mutex);
                stop_budgets.push_back(s.budget);
                stop_reasons.push_back(s.why);
            }
            if (stop_ends_it) ended = true;
            return false; // keep asking until the box has ended
        };
        b.force_kill = [this] {
            record("force_kill");
            if (force_ends_it) ended = true;
        };
        b.drain = [this](Ending e) { record(std::string("drain:") + ending_text(e)); };
        return b;
    }
};

PumpOptions quick() {
    PumpOptions o;
    o.kill_grace = 60s; // no force_kill unless a test wants one
    o.stop_every = 10ms;
    o.check_every = 10ms;
    return o;
}

TEST(plugin_support_run_pump, ABoxThatEndsOnItsOwnIsNeitherStoppedNorKilled) {
    ActiveRun active;
    FakeBox box;
    RunPump pump(active, quick(), box.callbacks());
    std::thread ender([&] {
        std::this_thread::sleep_for(20ms); // the box runs a while
        box.ended = true;
    });
    PumpResult r = pump.run();
    ender.join();
    EXPECT_EQ(r.ending, Ending::none);
    EXPECT_TRUE(r.box_ended);
    EXPECT_FALSE(r.forced);
    EXPECT_FALSE(r.output_aborted);
    EXPECT_EQ(box.count("stop"), 0u);
    EXPECT_EQ(box.count("force_kill"), 0u);
    EXPECT_EQ(box.count("drain:running"), 1u);
}

TEST(plugin_support_run_pump, AKillFromAnotherThreadStopsTheBox) {
    ActiveRun active;
    FakeBox box;
    RunPump pump(active, quick(), box.callbacks());
    std::thread killer([&] { active.request_kill(); });
    PumpResult r = pump.run();
    killer.join();
    EXPECT_EQ(r.ending, Ending::killed);
    EXPECT_TRUE(r.box_ended);
    EXPECT_EQ(box.count("stop"), 1u);
    EXPECT_EQ(box.count("force_kill"), 0u) << "the stop ended the box within the grace";
    EXPECT_EQ(box.count("drain:kill requested"), 1u);
}

TEST(plugin_support_run_pump, AnAbortingSinkStopsTheBox) {
    ActiveRun active;
    FakeBox box;
    RunPump pump(active, quick(), box.callbacks());
    std::thread sink([&] { pump.output_aborted(); });
    PumpResult r = pump.run();
    sink.join();
    EXPECT_EQ(r.ending, Ending::aborted);
    EXPECT_TRUE(r.output_aborted);
    EXPECT_TRUE(pump.aborted());
    EXPECT_EQ(box.count("stop"), 1u);
}

TEST(plugin_support_run_pump, TheDeadlineStopsTheBox) {
    ActiveRun active;
    FakeBox box;
    PumpOptions o = quick();
    o.deadline = Clock::now() + 30ms;
    RunPump pump(active, o, box.callbacks());
    PumpResult r = pump.run();
    EXPECT_EQ(r.ending, Ending::timed_out);
    EXPECT_EQ(box.count("stop"), 1u);
}

// run.stopGrace (docs/design.md §13.1): SIGTERM first; a box that ends within the grace is never
// stopped, one that does not is stopped once the grace is over.
TEST(plugin_support_run_pump, AStopGraceTerminatesFirstAndStopsOnlyWhatOutlivesIt) {
    {
        ActiveRun active;
        FakeBox box;
        PumpOptions o = quick();
        o.stop_grace = 60s; // ended by the terminate: the grace is never waited out
        PumpBox b = box.callbacks();
        b.terminate = [&] {
            box.record("terminate");
            box.ended = true; // the command's trap ran and it exited
        };
        RunPump pump(active, o, std::move(b));
        active.request_kill();
        PumpResult r = pump.run();
        EXPECT_EQ(r.ending, Ending::killed);
        EXPECT_TRUE(r.ended_in_grace);
        EXPECT_TRUE(pump.ended_in_grace());
        EXPECT_EQ(box.count("terminate"), 1u);
        EXPECT_EQ(box.count("stop"), 0u);
    }
    {
        ActiveRun active;
        FakeBox box;
        PumpOptions o = quick();
        o.stop_grace = 50ms;
        o.deadline = Clock::now();
        PumpBox b = box.callbacks();
        b.terminate = [&] { box.record("terminate"); }; // the command ignores SIGTERM
        RunPump pump(active, o, std::move(b));
        const auto before = Clock::now();
        PumpResult r = pump.run();
        EXPECT_EQ(r.ending, Ending::timed_out);
        EXPECT_FALSE(r.ended_in_grace);
        EXPECT_EQ(box.count("terminate"), 1u);
        EXPECT_EQ(box.count("stop"), 1u) << "stopped once the grace was over";
        EXPECT_GE(Clock::now() - before, 50ms) << "not before the grace was over";
    }
    {
        ActiveRun active;
        FakeBox box;
        PumpOptions o = quick(); // no grace: stopped at once, never terminated
        PumpBox b = box.callbacks();
        b.terminate = [&] { box.record("terminate"); };
        RunPump pump(active, o, std::move(b));
        active.request_kill();
        PumpResult r = pump.run();
        EXPECT_FALSE(r.ended_in_grace);
        EXPECT_EQ(box.count("terminate"), 0u);
        EXPECT_EQ(box.count("stop"), 1u);
    }
}

TEST(plugin_support_run_pump, KillWinsOverAbortWhichWinsOverTimeout) {
    {
        ActiveRun active;
        FakeBox box;
        PumpOptions o = quick();
        o.deadline = Clock::now();
        RunPump pump(active, o, box.callbacks());
        active.request_kill();
        pump.output_aborted();
        PumpResult r = pump.run();
        EXPECT_EQ(r.ending, Ending::killed);
        EXPECT_TRUE(r.output_aborted) << "the sink's abort is still reported";
    }
    {
        ActiveRun active;
        FakeBox box;
        PumpOptions o = quick();
        o.deadline = Clock::now();
        RunPump pump(active, o, box.callbacks());
        pump.output_aborted();
        EXPECT_EQ(pump.run().ending, Ending::aborted);
    }
}

TEST(plugin_support_run_pump, ABoxSeenEndedIsNotTurnedIntoAKill) {
    ActiveRun active;
    FakeBox box;
    PumpOptions o = quick();
    o.deadline = Clock::now();
    RunPump pump(active, o, box.callbacks());
    pump.box_ended();
    active.request_kill();
    PumpResult r = pump.run();
    EXPECT_EQ(r.ending, Ending::none);
    EXPECT_EQ(box.count("stop"), 0u);
}

TEST(plugin_support_run_pump, TheFirstReasonFixesTheEnding) {
    ActiveRun active;
    FakeBox box;
    box.stop_ends_it = false;
    PumpOptions o = quick();
    o.kill_grace = 50ms;
    o.deadline = Clock::now();
    PumpBox callbacks = box.callbacks();
    auto inner_stop = callbacks.stop;
    // A kill arriving while the timed-out box is being stopped changes nothing.
    callbacks.stop = [&](const StopRequest& s) {
        active.request_kill();
        return inner_stop(s);
    };
    RunPump pump(active, o, std::move(callbacks));
    EXPECT_EQ(pump.run().ending, Ending::timed_out);
    std::lock_guard lock(box.mutex);
    ASSERT_FALSE(box.stop_reasons.empty());
    for (Ending why : box.stop_reasons) EXPECT_EQ(why, Ending::timed_out);
}

TEST(plugin_support_run_pump, AStopThatNeverWorksIsRepeatedThenForcedAfterTheGrace) {
    ActiveRun active;
    FakeBox box;
    box.stop_ends_it = false;
    PumpOptions o = quick();
    o.kill_grace = 300ms;
    o.stop_budget = 60s;
    o.stop_every = 1ms;
    PumpBox callbacks = box.callbacks();
    auto inner_stop = callbacks.stop;
    // A hung stop: every call takes its whole budget and achieves nothing.
    std::mutex m;
    std::condition_variable never;
    callbacks.stop = [&](const StopRequest& s) {
        bool r = inner_stop(s);
        std::unique_lock lock(m);
        never.wait_for(lock, s.budget, [] { return false; });
        return r;
    };
    RunPump pump(active, o, std::move(callbacks));
    active.request_kill();
    PumpResult r = pump.run();
    EXPECT_EQ(r.ending, Ending::killed);
    EXPECT_TRUE(r.forced);
    EXPECT_TRUE(r.box_ended);
    EXPECT_EQ(box.count("force_kill"), 1u);
    EXPECT_GE(box.count("stop"), 1u);
    std::lock_guard lock(box.mutex);
    // Before force_kill each stop is cut to the grace, never handed the 60 s stop budget.
    for (std::size_t i = 0; i < box.calls.size() && box.calls[i] == "stop"; ++i)
        EXPECT_LE(box.stop_budgets[i], 300ms) << "stop call " << i;
    EXPECT_EQ(box.calls.back(), "drain:kill requested");
}

TEST(plugin_support_run_pump, AStopThatNeedsNoRepeatIsAskedOnce) {
    ActiveRun active;
    FakeBox box;
    std::atomic<int> stops{0};
    PumpBox callbacks = box.callbacks();
    callbacks.stop = [&](const StopRequest&) {
        // Asked three times at most: false twice, then true ("nothing more to ask").
        int n = ++stops;
        return n >= 3;
    };
    callbacks.ended = [&] { return box.ended.load(); };
    PumpOptions o = quick();
    o.stop_every = 1ms;
    o.kill_grace = 60s;
    RunPump pump(active, o, std::move(callbacks));
    active.request_kill();
    std::thread ender([&] {
        // The box ends well after its stop stopped being repeated.
        while (stops.load() < 3) std::this_thread::sleep_for(1ms);
        std::this_thread::sleep_for(30ms);
        box.ended = true;
    });
    PumpResult r = pump.run();
    ender.join();
    EXPECT_EQ(r.ending, Ending::killed);
    EXPECT_EQ(stops.load(), 3);
}

TEST(plugin_support_run_pump, ABoxThatSurvivesForceKillIsGivenUpAfterTheSettleBudget) {
    ActiveRun active;
    FakeBox box;
    box.stop_ends_it = false;
    box.force_ends_it = false;
    PumpOptions o = quick();
    o.kill_grace = 10ms;
    o.settle_budget = 20ms;
    RunPump pump(active, o, box.callbacks());
    active.request_kill();
    PumpResult r = pump.run();
    EXPECT_EQ(r.ending, Ending::killed);
    EXPECT_TRUE(r.forced);
    EXPECT_FALSE(r.box_ended) << "the caller's cleanup must make the box gone";
    EXPECT_EQ(box.count("drain:kill requested"), 0u);
}

TEST(plugin_support_run_pump, OutputWrittenBeforeTheBoxEndedIsAllReadBeforeRunReturns) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    ActiveRun active;
    FakeBox box;
    box.ended = true; // the box has already ended; its output is still in flight
    PumpOptions o = quick();
    o.drain_budget = 60s;
    PumpBox callbacks = box.callbacks();
    std::size_t got = 0;
    bool drained_after_eof = false;
    bool eof = false;
    callbacks.drain = [&](Ending) { drained_after_eof = eof; };
    RunPump pump(active, o, std::move(callbacks));
    pump.watch(p[0], [&] {
        char buf[4096];
        ssize_t n = ::read(p[0], buf, sizeof buf);
        if (n > 0) {
            got += static_cast<std::size_t>(n);
            return true;
        }
        eof = true;
        return false;
    });
    const std::size_t total = 1u << 20; // far more than a pipe holds
    std::thread writer([&] {
        std::string chunk(8192, 'x');
        for (std::size_t done = 0; done < total; done += chunk.size())
            ASSERT_EQ(::write(p[1], chunk.data(), chunk.size()),
                      static_cast<ssize_t>(chunk.size()));
        ::close(p[1]);
    });
    PumpResult r = pump.run();
    writer.join();
    ::close(p[0]);
    EXPECT_EQ(r.ending, Ending::none);
    EXPECT_EQ(got, total);
    EXPECT_TRUE(drained_after_eof) << "drain() comes after the sources ended";
}

TEST(plugin_support_run_pump, ASourceHeldOpenAfterTheBoxEndedIsDrainedOnlyWithinTheBudget) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    ActiveRun active;
    FakeBox box;
    box.ended = true;
    PumpOptions o = quick();
    o.drain_budget = 20ms;
    RunPump pump(active, o, box.callbacks());
    pump.watch(p[0], [&] {
        char buf[64];
        return ::read(p[0], buf, sizeof buf) > 0;
    });
    PumpResult r = pump.run(); // the write end stays open: a grandchild holding the pipe
    EXPECT_TRUE(r.box_ended);
    EXPECT_EQ(box.count("drain:running"), 1u);
    ::close(p[0]);
    ::close(p[1]);
}

} // namespace
} // namespace radial::plugin_support
