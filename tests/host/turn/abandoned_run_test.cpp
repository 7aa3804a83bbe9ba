// A run that never returns (docs/design.md §3.7): the hostile test plugin's `deaf` run, in
// radiald's process and in a radial-plugin-host process (§5.13), under TurnSession and TurnRunner
// with an injected clock (hostile_plugin_fixture.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../support/box_id_leases.h"
#include "hostile_plugin_fixture.h"

namespace radial::turn::test_hostile {
namespace {
using ::testing::HasSubstr;

struct AbandonedRun : HostilePluginFixture {};

// The run ignores its timeout and every kill, and never returns: after the watchdog's third kill
// and a grace more, the turn ends with an error record saying so, while the box keeps its
// workspace, its ids and the workspace's lock until the plugin returns — and then gives them back
// as any turn does. Other turns run meanwhile; the plugin's host process is not killed for it.
TEST_P(AbandonedRun, ARunThatNeverReturnsIsGivenUpAfterThreeKills) {
    const std::string ws = workspace("ws"), other = workspace("other");
    std::string out;
    auto ran = std::async(std::launch::async, [&] {
        return run("deaf-1", {"deaf", release}, ws, &out);
    });
    const ReleasedAtTheEnd released{release}; // before `ran` waits for the run, however it ends
    ASSERT_TRUE(test::wait_until(
        [&] {
            std::lock_guard lock(mutex);
            return out == "deaf run started\n";
        },
        20s));
    ASSERT_TRUE(advance_until_ready(ran)) << "the turn waits for the deaf run for ever";
    const TerminalRecord rec = ran.get();
    EXPECT_EQ(rec.status, TurnStatus::error);
    EXPECT_TRUE(rec.call_abandoned);
    EXPECT_EQ(rec.cli_exit_status(), 125);
    EXPECT_THAT(rec.error, HasSubstr("runtime 'hostile' did not return from its run of box '" +
                                     rec.label + "' after 3 kills over "));
    EXPECT_THAT(rec.error, HasSubstr("radiald gave up on the call: the box may still be running"));
    EXPECT_THAT(rec.error, HasSubstr("'radiald reconcile'"));
    const auto journaled = journal->turn("deaf-1");
    ASSERT_TRUE(journaled);
    EXPECT_EQ(journaled->status, "error");
    EXPECT_THAT(*journaled->terminal_json, HasSubstr("\"callAbandoned\": true"));
    EXPECT_EQ(logged("giving up on its run"), 1u);

    // The box may still write: the workspace stays the box's, its note and its ids stay.
    const uid_t box_uid = static_cast<uid_t>(std::stoul(rec.box_user));
    EXPECT_EQ(owner_of(ws), box_uid);
    EXPECT_TRUE(fs::exists(cfg.state_dir + "/handovers/deaf-1"));
    EXPECT_EQ(test::box_id_leases_of(cfg.state_dir), 1u);
    EXPECT_EQ(host::RunCall::abandoned(), 1u);

    // Another workspace's turn runs; one on this workspace is refused while the call is out.
    std::string next;
    EXPECT_EQ(run("next-1", {"echo", "still", "serving"}, other, &next).status,
              TurnStatus::succeeded);
    EXPECT_EQ(next, "still serving\n");
    const TerminalRecord refused = run("same-1", {"echo", "no"}, ws);
    EXPECT_EQ(refused.status, TurnStatus::error);
    EXPECT_THAT(refused.error, HasSubstr("is in use by another turn"));
    EXPECT_EQ(logged("started a new plugin host process"), 0u);

    // The plugin returns: the workspace is handed back, the note and the lease go, and the
    // workspace takes turns again.
    std::ofstream(release) << "go\n";
    ASSERT_TRUE(test::wait_until(
        [&] {
            return host::RunCall::abandoned() == 0 && owner_of(ws) == kOwner &&
                   !fs::exists(cfg.state_dir + "/handovers/deaf-1") &&
                   test::box_id_leases_of(cfg.state_dir) == 0;
        },
        20s));
    EXPECT_EQ(logged("' returned "), 1u);
    EXPECT_EQ(logged(" s after radiald gave up on it"), 1u);
    EXPECT_EQ(logged("turn deaf-1: the call radiald gave up on has returned"), 1u);
    EXPECT_EQ(run("after-1", {"echo", "after"}, ws).status, TurnStatus::succeeded);
    EXPECT_EQ(out, "deaf run started\n");
}

// A session's exec is given up on the same way, and its runner's record says exec.
TEST_P(AbandonedRun, ASessionExecThatNeverReturnsIsGivenUp) {
    const auto sessions = host::SessionClient::of(*client);
    ContainerSpec spec = session(sessions, "s1");
    spec.argv = {"deaf", release};
    spec.timeout_ms = 1000;
    TurnRunner runner(*client, spec, "exec-1", 1h, sessions, clock);
    auto ran = std::async(std::launch::async, [&] {
        return runner.run([](std::uint32_t, std::string_view) { return true; });
    });
    const ReleasedAtTheEnd released{release};
    ASSERT_TRUE(advance_until_ready(ran));
    const TerminalRecord rec = ran.get();
    EXPECT_TRUE(rec.call_abandoned);
    EXPECT_THAT(rec.error, HasSubstr("did not return from its exec of box '" + spec.label +
                                     "' after 3 kills"));
    ASSERT_TRUE(runner.abandoned_call());
    bool returned = false;
    std::ofstream(release) << "go\n";
    runner.abandoned_call()->when_returned([&] { returned = true; });
    ASSERT_TRUE(test::wait_until([] { return host::RunCall::abandoned() == 0; }, 20s));
    EXPECT_TRUE(returned);
    sessions.destroy(spec.label);
}

INSTANTIATE_TEST_SUITE_P(BothModes, AbandonedRun,
                         ::testing::Values(Isolation::in_process, Isolation::process), name_of);

} // namespace
} // namespace radial::turn::test_hostile
