// radiald uses a state directory only when it and its parents are changed by nobody but radiald's
// uid and root (config/state_dir_trust.h, docs/design.md §15): a directory another local user made
// or can write is refused, naming the path and the fix; /tmp's sticky bit is trusted. Needs root
// (chown); the suite runs as root.
#include "config/state_dir_trust.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "../../support/process_runner.h"
#include "../../support/temp_dir.h"
#include "config/host_config.h"

namespace radial::config {
namespace {
using ::testing::HasSubstr;

std::string refusal(const std::string& dir) {
    try {
        check_state_dir_trust(dir);
    } catch (const HostRefusalError& e) {
        return e.what();
    }
    return {};
}

TEST(StateDirTrust, OursUnderTmpIsTrusted) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir d("radial-sd"); // /tmp (sticky, 1777) / radial-sd-XXXX (0700, ours)
    std::filesystem::create_directory(d / "state");
    EXPECT_EQ(refusal(d / "state"), "");
}

TEST(StateDirTrust, ADirectoryAnotherUserOwnsOrCanWriteIsRefused) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir d("radial-sd");
    const std::string state = d / "state";
    std::filesystem::create_directory(state);
    ASSERT_EQ(::chown(state.c_str(), 4242, 4242), 0);
    EXPECT_THAT(refusal(state), HasSubstr("'" + state + "' belongs to uid 4242"));
    EXPECT_THAT(refusal(state), HasSubstr("run.stateDir"));
    ASSERT_EQ(::chown(state.c_str(), 0, 0), 0);
    ASSERT_EQ(::chmod(state.c_str(), 0770), 0);
    EXPECT_THAT(refusal(state), HasSubstr("with mode 770"));
    ASSERT_EQ(::chmod(state.c_str(), 0700), 0);
    EXPECT_EQ(refusal(state), "");
    // A parent others can write without the sticky bit: they could swap the state directory.
    ASSERT_EQ(::chmod(d.path().c_str(), 0777), 0);
    EXPECT_THAT(refusal(state), HasSubstr("'" + d.path() + "' belongs to uid 0 with mode 777"));
    ASSERT_EQ(::chmod(d.path().c_str(), 01777), 0);
    EXPECT_EQ(refusal(state), "") << "sticky, as /tmp";
    // A parent another user owns: they could rename the state directory away.
    ASSERT_EQ(::chmod(d.path().c_str(), 0755), 0);
    ASSERT_EQ(::chown(d.path().c_str(), 4242, 4242), 0);
    EXPECT_THAT(refusal(state), HasSubstr("belongs to uid 4242"));
    ASSERT_EQ(::chown(d.path().c_str(), 0, 0), 0);
}

// The whole command: `radiald turn` with a state directory another local user pre-created stops
// before it reads or writes anything there.
TEST(StateDirTrust, RadialdTurnRefusesAForeignStateDirectoryBeforeTouchingIt) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir d("radial-sd");
    const std::string state = d / "state";
    std::filesystem::create_directory(state);
    ASSERT_EQ(::chown(state.c_str(), 4242, 4242), 0);
    const std::string config =
        d.write("c.toml", "[run]\nstateDir = \"" + state + "\"\n[run.docker]\npull = \"never\"\n");
    auto r = test::run_process({RADIALD_PATH, "turn", "--config", config, "--image",
                                "radial/busybox:latest", "--", "true"});
    EXPECT_EQ(r.exit_code, 125) << r.err; // every failure before the box
    EXPECT_THAT(r.err, HasSubstr("is not radiald's alone"));
    EXPECT_TRUE(std::filesystem::is_empty(state)) << "radiald wrote into it";
}

} // namespace
} // namespace radial::config
