// Modes and same-path workspaces with the real radiald, the docker plugin and the engine
// (docs/design.md §7.6).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

// A workspace of a host user, as in production: radiald hands it to the box ids for the turn
// (a root-owned one is mounted as it is, and the box could not write it).
void owned_by_someone(const test::TempDir& ws) {
    ASSERT_EQ(::chown(ws.path().c_str(), 4242, 4242), 0);
    for (const auto& e : std::filesystem::directory_iterator(ws.path()))
        ASSERT_EQ(::chown(e.path().c_str(), 4242, 4242), 0);
}

// read-only: the workspace cannot be written (its file is intact), nor the root filesystem.
TEST(WorkspaceModeLive, ReadOnlyRefusesWritesToTheWorkspaceAndTheRootFilesystem) {
    test::RadialdSetup s;
    test::TempDir ws("radial-ro");
    ws.write("f", "original\n");
    owned_by_someone(ws);
    auto t = s.turn({"--workspace", ws.path(), "--mode", "read-only"},
                    {"sh", "-c",
                     "cat /work/f; echo changed > /work/f && echo wrote-ws; "
                     "touch /work/new && echo made-ws; touch /probe && echo wrote-root; "
                     "touch /tmp/x && echo tmp-ok; touch $HOME/x && echo home-ok"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "original\ntmp-ok\nhome-ok\n");
    EXPECT_THAT(t.result.err, HasSubstr("Read-only file system"));
    EXPECT_EQ(test::read_file(ws / "f"), "original\n");
    EXPECT_FALSE(std::filesystem::exists(ws / "new"));
}

// The operator's run.mode applies to a turn that names no mode, and a turn may not widen it: a
// `--mode workspace-write` under run.mode = "read-only" wrote the workspace.
TEST(WorkspaceModeLive, TheOperatorsDefaultModeAppliesAndNoTurnWidensIt) {
    test::RadialdSetup s("mode = \"read-only\"\n");
    test::TempDir ws("radial-ro");
    owned_by_someone(ws);
    auto t = s.turn({"--workspace", ws.path()}, {"sh", "-c", "touch /work/new && echo made-ws"});
    EXPECT_NE(t.result.exit_code, 0);
    EXPECT_THAT(t.result.out, Not(HasSubstr("made-ws")));
    EXPECT_FALSE(std::filesystem::exists(ws / "new"));
    auto wider = s.turn({"--workspace", ws.path(), "--mode", "workspace-write"},
                        {"sh", "-c", "touch /work/new && echo made-ws"});
    EXPECT_EQ(wider.result.exit_code, 125) << wider.result.err;
    EXPECT_THAT(wider.result.err, HasSubstr("is wider than run.mode = \"read-only\""));
    EXPECT_FALSE(std::filesystem::exists(ws / "new"));
}

// workspace-write (the default): the workspace is writable, and so is the box's own layer — a
// write to /usr/local succeeds and is gone in the next turn. The box user is never root, so it
// writes the layer only where the image lets any user write: this test's image (radial/busybox
// plus a world-writable /usr/local, built locally, never pulled) does.
TEST(WorkspaceModeLive, WorkspaceWriteInstallsIntoAPrivateLayerThatDiesWithTheBox) {
    const std::string image = "radial-test-ww:" + std::to_string(::getpid());
    const auto built =
        test::build_from_test_image(image, "RUN mkdir -p /usr/local && chmod 1777 /usr/local\n");
    ASSERT_EQ(built.exit_code, 0) << built.err;
    test::RadialdSetup s;
    test::TempDir ws("radial-ww");
    owned_by_someone(ws);
    auto first = s.turn({"--workspace", ws.path()},
                        {"sh", "-c",
                         "mkdir -p /usr/local/bin && echo installed > /usr/local/bin/tool && "
                         "cat /usr/local/bin/tool && echo kept > /work/out"},
                        {}, image);
    auto second =
        s.turn({"--workspace", ws.path()},
               {"sh", "-c", "test -e /usr/local/bin/tool && echo still-there; cat out"}, {}, image);
    auto read_only = s.turn({"--mode", "read-only"},
                            {"sh", "-c", "touch /usr/local/x && echo wrote-layer"}, {}, image);
    test::run_process({"docker", "rmi", "--force", image});
    EXPECT_EQ(first.result.exit_code, 0) << first.result.err;
    EXPECT_EQ(first.result.out, "installed\n");
    EXPECT_EQ(test::read_file(ws / "out"), "kept\n");
    EXPECT_EQ(second.result.out, "kept\n") << second.result.err;
    EXPECT_THAT(read_only.result.out, Not(HasSubstr("wrote-layer")));
    EXPECT_THAT(read_only.result.err, HasSubstr("Read-only file system"));
}

// same-path: the workspace appears at its absolute host path and the command starts there.
TEST(WorkspaceModeLive, SamePathMountsTheWorkspaceAtItsHostPath) {
    test::RadialdSetup s;
    test::TempDir ws("radial-sp");
    owned_by_someone(ws);
    const std::string real = std::filesystem::canonical(ws.path()).string();
    auto t =
        s.turn({"--workspace", ws.path(), "--workspace-mount", "same-path"},
               {"sh", "-c", "pwd; echo from-box > rel; grep -c \" /work \" /proc/mounts; true"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, real + "\n0\n") << "nothing is mounted at /work";
    EXPECT_EQ(test::read_file(ws / "rel"), "from-box\n");
    // The operator's default does the same; --workspace-mount /work overrides it.
    test::RadialdSetup op("workspaceMount = \"same-path\"\n");
    EXPECT_EQ(op.turn({"--workspace", ws.path()}, {"pwd"}).result.out, real + "\n");
    EXPECT_EQ(op.turn({"--workspace", ws.path(), "--workspace-mount", "/work"}, {"pwd"}).result.out,
              "/work\n");
}

} // namespace
} // namespace radial
