// The turn runner against the real fake plugin .so: statuses, refusals, the host-side timeout.
#include "turn/turn_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <mutex>
#include <thread>

#include "../../support/host_processes.h"
#include "loader/plugin_loader.h"
#include "log/logger.h"
#include "time/clock.h"

namespace radial::turn {
namespace {
using ::testing::HasSubstr;

struct Fixture : ::testing::Test {
    loader::LoadedPlugin plugin =
        loader::load_plugin(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_good/fake.so");
    std::vector<std::string> lines;
    std::mutex lines_mutex;
    void SetUp() override {
        log::set_sink([this](std::string_view l) {
            std::lock_guard lock(lines_mutex);
            lines.emplace_back(l);
        });
    }
    void TearDown() override { log::set_sink({}); }
    host::RuntimeClient client(host::ConfigSection cfg = {"run.fake", {}}) {
        return host::RuntimeClient::create(plugin.library, plugin.descriptor, cfg, plugin.path, "t",
                                           [](std::uint32_t, std::string_view) {});
    }
    // The fake runtime with `[run.fake] key = [field]`: it refuses, supersedes, … that field.
    host::RuntimeClient client_where(const std::string& key, const std::string& field) {
        host::ConfigEntry e;
        e.key = key;
        e.kind = RADIAL_CONFIG_STRING_ARRAY;
        e.items = {field};
        return client({"run.fake", {e}});
    }
    // The fake runtime whose first `n` kills fail.
    host::RuntimeClient client_failing_kills(std::int64_t n) {
        host::ConfigEntry fail;
        fail.key = "failKills";
        fail.kind = RADIAL_CONFIG_INT;
        fail.int_value = n;
        return client({"run.fake", {fail}});
    }
    // Moves `clock` an hour (the tests' grace) at each look until `ran` is ready, so that however
    // the watchdog's waits fall, each one ends; false when it is not within 20 s (scaled). Each
    // look gives the run a moment to return after the kill it was given: the watchdog gives up on
    // a run that outlives its third kill by a grace (docs/design.md §3.7).
    static bool advance_until_ready(time::ManualClock& clock, std::future<TerminalRecord>& ran) {
        return test::wait_until(
            [&] {
                clock.advance(std::chrono::hours(1));
                return ran.wait_for(test::scaled(std::chrono::milliseconds(200))) ==
                       std::future_status::ready;
            },
            std::chrono::seconds(20));
    }
    static ContainerSpec spec(std::vector<std::string> argv, std::uint64_t timeout_ms = 0) {
        ContainerSpec s;
        s.label = "radial-turn-local-t1";
        s.image = "img";
        s.argv = std::move(argv);
        s.timeout_ms = timeout_ms;
        return s;
    }
    static TerminalRecord run(const host::RuntimeClient& c, ContainerSpec s,
                              std::chrono::milliseconds grace = kHostTimeoutGrace) {
        TurnRunner r(c, std::move(s), "t1", grace);
        return r.run([](std::uint32_t, std::string_view) { return true; });
    }
};

TEST_F(Fixture, ExitZeroSucceeds) {
    auto c = client();
    auto rec = run(c, spec({"echo", "x"}));
    EXPECT_EQ(rec.status, TurnStatus::succeeded);
    EXPECT_EQ(rec.exit_code, 0);
    EXPECT_EQ(rec.runtime, "fake");
    EXPECT_EQ(rec.label, "radial-turn-local-t1");
    EXPECT_EQ(rec.cli_exit_status(), 0);
}

TEST_F(Fixture, NonZeroExitFailsWithThatCode) {
    auto c = client();
    auto rec = run(c, spec({"exit", "3"}));
    EXPECT_EQ(rec.status, TurnStatus::failed);
    EXPECT_EQ(rec.exit_code, 3);
    EXPECT_EQ(rec.cli_exit_status(), 3);
}

TEST_F(Fixture, PluginTimeoutIsTimedOut) {
    auto c = client();
    auto rec = run(c, spec({"sleep", "60000"}, 100));
    EXPECT_EQ(rec.status, TurnStatus::timed_out);
    EXPECT_EQ(rec.cli_exit_status(), 124);
}

// The watchdog's budget is on the injected clock (docs/design.md §12.7): a grace of an hour passes
// when the test advances the clock by it, and the record's duration is the clock's.
TEST_F(Fixture, HostKillsABoxThePluginFailsToTimeOut) {
    auto c = client();
    time::ManualClock clock;
    TurnRunner r(c, spec({"hang", "60000"}, 100), "t1", std::chrono::hours(1), std::nullopt, clock);
    auto t0 = std::chrono::steady_clock::now();
    auto ran = std::async(std::launch::async, [&] {
        return r.run([](std::uint32_t, std::string_view) { return true; });
    });
    for (int i = 0; i < 2000 && c.list_by_label("radial-turn-local-").empty(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_FALSE(c.list_by_label("radial-turn-local-").empty());
    // The plugin ignores its 100 ms timeout, and the clock has not reached the grace.
    EXPECT_EQ(ran.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
    clock.advance(std::chrono::hours(1) + std::chrono::milliseconds(100));
    ASSERT_EQ(ran.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
    const TerminalRecord rec = ran.get();
    EXPECT_EQ(rec.status, TurnStatus::timed_out);
    EXPECT_GE(rec.duration_ms, 3'600'100u);
    EXPECT_EQ(rec.ended_at - rec.started_at,
              std::chrono::hours(1) + std::chrono::milliseconds(100));
    std::lock_guard lock(lines_mutex);
    bool warned = false;
    for (const auto& l : lines)
        warned = warned || l.find("did not end the box") != std::string::npos;
    EXPECT_TRUE(warned);
}

// A kill the engine failed is not the end of it: the watchdog kills again after each further grace
// until the run returns, and says so each time.
TEST_F(Fixture, TheHostKillsAgainWhenItsKillFailed) {
    auto c = client_failing_kills(2);
    time::ManualClock clock;
    TurnRunner r(c, spec({"hang", "60000"}, 100), "t1", std::chrono::hours(1), std::nullopt, clock);
    auto ran = std::async(std::launch::async, [&] {
        return r.run([](std::uint32_t, std::string_view) { return true; });
    });
    ASSERT_TRUE(test::wait_until([&] { return !c.list_by_label("radial-turn-local-").empty(); },
                                 std::chrono::seconds(20)));
    ASSERT_TRUE(advance_until_ready(clock, ran))
        << "the run never returned: the failed kills were not tried again";
    EXPECT_EQ(ran.get().status, TurnStatus::timed_out);
    std::lock_guard lock(lines_mutex);
    auto logged = [&](const std::string& what) {
        return std::any_of(lines.begin(), lines.end(),
                           [&](const std::string& l) { return l.find(what) != std::string::npos; });
    };
    EXPECT_TRUE(logged("kill 'radial-turn-local-t1' failed (attempt 1)"));
    EXPECT_TRUE(logged("kill 'radial-turn-local-t1' failed (attempt 2)"));
    EXPECT_TRUE(
        logged("has not returned 3600000 ms after kill 'radial-turn-local-t1' (attempt 2)"));
    EXPECT_FALSE(logged("failed (attempt 3)")) << "the fake fails only its first two kills";
}

// The same for an interrupt's kill, in a turn without a timeout: the run outlived it by a grace,
// so the watchdog kills again, and the record says interrupted, not timed out.
TEST_F(Fixture, AnInterruptsFailedKillIsTriedAgain) {
    auto c = client_failing_kills(1);
    time::ManualClock clock;
    TurnRunner r(c, spec({"hang", "600000"}), "t1", std::chrono::hours(1), std::nullopt, clock);
    auto ran = std::async(std::launch::async, [&] {
        return r.run([](std::uint32_t, std::string_view) { return true; });
    });
    ASSERT_TRUE(test::wait_until([&] { return !c.list_by_label("radial-turn-local-").empty(); },
                                 std::chrono::seconds(20)));
    r.interrupt(); // its kill fails
    EXPECT_EQ(ran.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
    ASSERT_TRUE(advance_until_ready(clock, ran))
        << "the run never returned: the interrupt's failed kill was not tried again";
    const TerminalRecord rec = ran.get();
    EXPECT_EQ(rec.status, TurnStatus::failed);
    EXPECT_EQ(rec.reason, "interrupted");
    std::lock_guard lock(lines_mutex);
    EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
        return l.find("did not end the box 3600000 ms after the interrupt's kill") !=
               std::string::npos;
    }));
}

// A runtime that cannot say its capabilities when the turn asks (its engine gone for a moment) is
// a turn with status error, never an exception out of run() past its running watchdog (which
// ended the process).
TEST_F(Fixture, ACapabilitiesFailureIsAnErrorRecordNotACrash) {
    host::ConfigEntry fail;
    fail.key = "failCapabilities";
    fail.kind = RADIAL_CONFIG_BOOL;
    fail.int_value = 1;
    auto c = client({"run.fake", {fail}});
    auto s = spec({"echo", "x"}, 60000);
    s.stop_grace_ms = 5000;
    const TerminalRecord rec = run(c, s);
    EXPECT_EQ(rec.status, TurnStatus::error);
    EXPECT_THAT(rec.error, HasSubstr("the engine did not answer"));
}

TEST_F(Fixture, RefusedFieldIsAnErrorBeforeAnythingRuns) {
    auto c = client_where("refuse", "network");
    auto s = spec({"echo", "x"});
    s.network = "bridge";
    auto rec = run(c, s);
    EXPECT_EQ(rec.status, TurnStatus::error);
    EXPECT_EQ(rec.error, "runtime 'fake' refuses network: refused by test config");
    EXPECT_EQ(rec.cli_exit_status(), 125);
}

// A disposition the ABI does not define (runtime_plugin.h: unknown reads as unsupported) is no
// promise: the field counts as refused, and the turn does not run without its bound.
TEST_F(Fixture, AnUnknownDispositionIsARefusal) {
    auto c = client_where("unknown", "memory");
    auto s = spec({"echo", "x"});
    s.memory_bytes = 256u << 20;
    auto rec = run(c, s);
    EXPECT_EQ(rec.status, TurnStatus::error);
    EXPECT_EQ(rec.error,
              "runtime 'fake' refuses memory: the plugin reported disposition 7, which this host "
              "does not know");
}

TEST_F(Fixture, SupersededFieldsAreLoggedForTheRun) {
    auto c = client_where("supersede", "pidsLimit");
    auto s = spec({"echo", "x"});
    s.pids_limit = 10;
    EXPECT_EQ(run(c, s).status, TurnStatus::succeeded);
    std::lock_guard lock(lines_mutex);
    int count = 0;
    for (const auto& l : lines)
        count += l.find("runtime 'fake' supersedes pidsLimit: superseded by test config") !=
                 std::string::npos;
    EXPECT_EQ(count, 1);
}

TEST_F(Fixture, RuntimeErrorIsAnErrorRecordWithItsMessage) {
    auto c = client();
    auto rec = run(c, spec({"no-such-command"}));
    EXPECT_EQ(rec.status, TurnStatus::error);
    EXPECT_THAT(rec.error, HasSubstr("fake runtime: unknown command 'no-such-command'"));
}

TEST_F(Fixture, InterruptKillsTheBox) {
    auto c = client();
    TurnRunner r(c, spec({"sleep", "60000"}), "t1");
    std::thread t([&] {
        for (int i = 0; i < 300 && c.list_by_label("radial-turn-local-").empty(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        r.interrupt();
    });
    auto rec = r.run([](std::uint32_t, std::string_view) { return true; });
    t.join();
    EXPECT_EQ(rec.status, TurnStatus::failed);
    EXPECT_EQ(rec.reason, "interrupted");
}

} // namespace
} // namespace radial::turn
