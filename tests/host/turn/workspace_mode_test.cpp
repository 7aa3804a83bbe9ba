// Modes and where the workspace appears (docs/design.md §7.6).
#include "turn/workspace_mode.h"

#include <gtest/gtest.h>

#include "../../support/instance_config.h"
#include "../../support/temp_dir.h"
#include "turn/turn_request.h"

namespace radial::turn {
namespace {

TurnRequest request(const std::string& workspace) {
    TurnRequest r;
    r.turn_id = "m-1";
    r.image = "img";
    r.workspace = workspace;
    r.argv = {"true"};
    return r;
}

TEST(WorkspaceMode, ParsesExactlyTheTwoModes) {
    EXPECT_EQ(parse_workspace_mode("read-only"), WorkspaceMode::read_only);
    EXPECT_EQ(parse_workspace_mode("workspace-write"), WorkspaceMode::workspace_write);
    for (const char* bad : {"", "readonly", "Read-Only", "danger-full-access", "read-only "})
        EXPECT_FALSE(parse_workspace_mode(bad)) << bad;
    EXPECT_FALSE(workspace_mount_problem("/work"));
    EXPECT_FALSE(workspace_mount_problem("same-path"));
    EXPECT_TRUE(workspace_mount_problem("/src"));
}

TEST(WorkspaceMode, TheRequestsModeNarrowsTheOperatorsDefault) {
    EXPECT_EQ(effective_mode("", "workspace-write"), WorkspaceMode::workspace_write);
    EXPECT_EQ(effective_mode("read-only", "workspace-write"), WorkspaceMode::read_only);
    EXPECT_EQ(effective_mode("", "read-only"), WorkspaceMode::read_only);
    EXPECT_EQ(effective_mode("read-only", "read-only"), WorkspaceMode::read_only);
    try {
        effective_mode("full", "read-only");
        ADD_FAILURE() << "an unknown mode was accepted";
    } catch (const RequestError& e) {
        EXPECT_NE(std::string(e.what()).find("mode 'full'"), std::string::npos) << e.what();
    }
}

// run.mode = "read-only" was only a default: a request naming workspace-write, or mounting the
// workspace's directory again read-write, undid the operator's word that no box writes its
// workspace or the engine's disk.
TEST(WorkspaceMode, ARequestMayNotWidenTheOperatorsReadOnlyMode) {
    try {
        effective_mode("workspace-write", "read-only");
        ADD_FAILURE() << "a request widened run.mode";
    } catch (const RequestError& e) {
        EXPECT_STREQ(e.what(),
                     "mode \"workspace-write\" is wider than run.mode = \"read-only\", "
                     "which a request may narrow but never widen; name no mode (or "
                     "\"read-only\"), or have the operator set run.mode = "
                     "\"workspace-write\"");
    }
    // Through the spec every command builds: a turn, a request at submit, a session's turn.
    test::TempDir ws;
    auto r = request(ws.path());
    r.mode = "workspace-write";
    auto cfg = test::instance_config();
    cfg.mode = "read-only";
    EXPECT_THROW(build_container_spec(r, cfg), RequestError);
    r.mode.clear();
    EXPECT_EQ(build_container_spec(r, cfg).read_only_rootfs, Tristate::yes);
    // Nor through a mount of its own: the workspace's directory again, read-write.
    r.mounts = {{ws.path(), "/rw", false}};
    try {
        build_container_spec(r, cfg);
        ADD_FAILURE() << "a read-write mount under run.mode = \"read-only\"";
    } catch (const RequestError& e) {
        EXPECT_NE(std::string(e.what()).find("mounts[0] ('" + ws.path() +
                                             "' at '/rw') is "
                                             "read-write under run.mode = \"read-only\""),
                  std::string::npos)
            << e.what();
    }
    r.mounts[0].read_only = true;
    const auto spec = build_container_spec(r, cfg);
    ASSERT_EQ(spec.mounts.size(), 2u);
    EXPECT_TRUE(spec.mounts[1].read_only);
}

TEST(WorkspaceMode, WorkspaceWriteIsTheDefaultWithAWritableLayer) {
    test::TempDir ws;
    auto s = build_container_spec(request(ws.path()), test::instance_config());
    ASSERT_EQ(s.mounts.size(), 1u);
    EXPECT_EQ(s.mounts[0], (Mount{ws.path(), "/work", false}));
    EXPECT_EQ(s.read_only_rootfs, Tristate::no);
}

TEST(WorkspaceMode, ReadOnlyMountsTheWorkspaceAndTheRootFilesystemReadOnly) {
    test::TempDir ws;
    auto r = request(ws.path());
    r.mode = "read-only";
    r.mounts = {{ws.path(), "/extra", false}};
    auto s = build_container_spec(r, test::instance_config());
    ASSERT_EQ(s.mounts.size(), 2u);
    EXPECT_EQ(s.mounts[0], (Mount{ws.path(), "/work", true}));
    EXPECT_FALSE(s.mounts[1].read_only) << "a further mount keeps its own flag";
    EXPECT_EQ(s.read_only_rootfs, Tristate::yes);
    // The operator's default applies to a request that names no mode, and to a turn without a
    // workspace.
    auto c = test::instance_config();
    c.mode = "read-only";
    EXPECT_EQ(build_container_spec(request(""), c).read_only_rootfs, Tristate::yes);
    auto bad = request("");
    bad.mode = "writable";
    EXPECT_THROW(build_container_spec(bad, c), RequestError);
}

TEST(WorkspaceMode, SamePathMountsTheWorkspaceAtItsHostPathAndStartsThere) {
    test::TempDir ws;
    auto r = request(ws.path() + "/./");
    r.workspace_mount = "same-path";
    auto s = build_container_spec(r, test::instance_config());
    ASSERT_EQ(s.mounts.size(), 1u);
    EXPECT_EQ(s.mounts[0], (Mount{ws.path(), ws.path(), false}));
    EXPECT_EQ(s.workdir, ws.path());
    // The operator's default, and a further mount that would take its place.
    auto c = test::instance_config();
    c.workspace_mount = "same-path";
    r.workspace_mount.clear();
    r.mounts = {{ws.path(), ws.path(), true}};
    EXPECT_THROW(build_container_spec(r, c), RequestError);
    r.mounts.clear();
    r.workspace_mount = "/work";
    EXPECT_EQ(build_container_spec(r, c).workdir, "/work");
    r.workspace_mount = "/elsewhere";
    EXPECT_THROW(build_container_spec(r, c), RequestError);
}

} // namespace
} // namespace radial::turn
