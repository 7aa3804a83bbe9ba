// Modes and same-path workspaces with the real radiald, the docker plugin and the engine
// (docs/design.md §7.6).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "../../support/radiald_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

// read-only: the workspace cannot be written (its file is intact), nor the root filesystem.
TEST(WorkspaceModeLive, ReadOnlyRefusesWritesToTheWorkspaceAndTheRootFilesystem) {
    test::RadialdSetup s;
    test::TempDir ws("radial-ro");
    ws.write("f", "original\n");
    auto t = s.turn({"--workspace", ws.path(), "--mode", "read-only"},
                    {"sh", "-c",
                     "cat /work/f; echo changed > /work/f && echo wrote-ws; "
                     "touch /work/new && echo made-ws; touch /usr/local/x && echo wrote-root; "
                     "touch /tmp/x && echo tmp-ok; touch $HOME/x && echo home-ok"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "original\ntmp-ok\nhome-ok\n");
    EXPECT_THAT(t.result.err, HasSubstr("Read-only file system"));
    EXPECT_EQ(test::read_file(ws / "f"), "original\n");
    EXPECT_FALSE(std::filesystem::exists(ws / "new"));
}

// The operator's run.mode applies to a turn that names no mode.
TEST(WorkspaceModeLive, TheOperatorsDefaultModeApplies) {
    test::RadialdSetup s("mode = \"read-only\"\n");
    test::TempDir ws("radial-ro");
    auto t = s.turn({"--workspace", ws.path()}, {"sh", "-c", "touch /work/new && echo made-ws"});
    EXPECT_NE(t.result.exit_code, 0);
    EXPECT_THAT(t.result.out, Not(HasSubstr("made-ws")));
    EXPECT_FALSE(std::filesystem::exists(ws / "new"));
}

// workspace-write (the default): the workspace is writable, and so is the box's own layer — a
// write to /usr/local succeeds and is gone in the next turn.
TEST(WorkspaceModeLive, WorkspaceWriteInstallsIntoAPrivateLayerThatDiesWithTheBox) {
    test::RadialdSetup s;
    test::TempDir ws("radial-ww");
    auto first = s.turn({"--workspace", ws.path()},
                        {"sh", "-c",
                         "mkdir -p /usr/local/bin && echo installed > /usr/local/bin/tool && "
                         "cat /usr/local/bin/tool && echo kept > /work/out"});
    EXPECT_EQ(first.result.exit_code, 0) << first.result.err;
    EXPECT_EQ(first.result.out, "installed\n");
    EXPECT_EQ(test::read_file(ws / "out"), "kept\n");
    auto second = s.turn({"--workspace", ws.path()},
                         {"sh", "-c", "test -e /usr/local/bin/tool && echo still-there; cat out"});
    EXPECT_EQ(second.result.out, "kept\n") << second.result.err;
}

// same-path: the workspace appears at its absolute host path and the command starts there.
TEST(WorkspaceModeLive, SamePathMountsTheWorkspaceAtItsHostPath) {
    test::RadialdSetup s;
    test::TempDir ws("radial-sp");
    const std::string real = std::filesystem::canonical(ws.path()).string();
    auto t = s.turn({"--workspace", ws.path(), "--workspace-mount", "same-path"},
                    {"sh", "-c", "pwd; echo from-box > rel; test -e /work && echo has-work"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, real + "\n");
    EXPECT_EQ(test::read_file(ws / "rel"), "from-box\n");
    // The operator's default does the same; --workspace-mount /work overrides it.
    test::RadialdSetup op("workspaceMount = \"same-path\"\n");
    EXPECT_EQ(op.turn({"--workspace", ws.path()}, {"pwd"}).result.out, real + "\n");
    EXPECT_EQ(op.turn({"--workspace", ws.path(), "--workspace-mount", "/work"}, {"pwd"}).result.out,
              "/work\n");
}

} // namespace
} // namespace radial
