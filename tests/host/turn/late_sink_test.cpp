// Sinks called after their call returned (docs/design.md §5.3): the hostile test plugin's
// `late-sinks` run, and a session's exec of it, in radiald's process and in a radial-plugin-host
// process (§5.13), under TurnSession (hostile_plugin_fixture.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hostile_plugin_fixture.h"

namespace radial::turn::test_hostile {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

struct LateSinks : HostilePluginFixture {};

// A plugin thread that calls the output and error sinks after its run returned, through the
// structs' addresses and through copies of them, reaches nothing of the turn: the calls are
// dropped (and said once), radiald (or its plugin's host process) does not crash, and the next
// turn runs.
TEST_P(LateSinks, SinksCalledAfterTheRunReturnedAreDropped) {
    const std::string go = dir / "go", done = dir / "done";
    const auto late_before = host::late_sink_calls();
    std::string out;
    const TerminalRecord rec = run("late-1", {"late-sinks", go, done}, "", &out);
    EXPECT_EQ(rec.status, TurnStatus::succeeded);
    // A hundred calls more, each on the socket the run used in a plugin host process (the last
    // one free): one that kept only its last calls' sinks has let go of the run's by then.
    for (int i = 0; i < 100; ++i) client->list_by_label("radial-none-");
    std::ofstream(go) << "go\n";
    ASSERT_TRUE(test::wait_until([&] { return fs::exists(done); }, 20s));
    {
        std::lock_guard lock(mutex);
        EXPECT_EQ(out, "on time\n");
    }
    EXPECT_THAT(rec.stdout_tail, Not(HasSubstr("LATE")));
    if (GetParam() == Isolation::in_process) {
        // 100 calls each: the output sink by address and by copy, the error sink the same.
        EXPECT_EQ(host::late_sink_calls() - late_before, 400u);
        EXPECT_EQ(logged("called the output sink of its run of box '" + rec.label +
                         "' after that call had returned"),
                  1u);
        EXPECT_EQ(logged("called the error sink of its run of box '" + rec.label + "'"), 1u);
    }
    // The session's exec the same way.
    const auto sessions = host::SessionClient::of(*client);
    ContainerSpec spec = session(sessions, "s2");
    fs::remove(go);
    fs::remove(done);
    spec.argv = {"late-sinks", go, done};
    std::string exec_out;
    const auto ended = sessions.exec(spec, [&](std::uint32_t, std::string_view b) {
        exec_out.append(b);
        return true;
    });
    EXPECT_EQ(ended.flags, std::uint32_t{RADIAL_RUN_EXITED});
    std::ofstream(go) << "go\n";
    ASSERT_TRUE(test::wait_until([&] { return fs::exists(done); }, 20s));
    EXPECT_EQ(exec_out, "on time\n");
    sessions.destroy(spec.label);

    std::string next;
    EXPECT_EQ(run("late-2", {"echo", "next"}, "", &next).status, TurnStatus::succeeded);
    EXPECT_EQ(next, "next\n");
    EXPECT_EQ(logged("started a new plugin host process"), 0u);
}

INSTANTIATE_TEST_SUITE_P(BothModes, LateSinks,
                         ::testing::Values(Isolation::in_process, Isolation::process), name_of);

} // namespace
} // namespace radial::turn::test_hostile
