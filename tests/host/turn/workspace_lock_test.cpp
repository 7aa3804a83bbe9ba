// One turn per workspace (turn/workspace_lock.h, docs/design.md §3.9): the lock lives in radiald's
// claim registry, where no other user reaches it, not on the workspace directory itself.
#include "turn/workspace_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <radial/internal/unique_fd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <filesystem>

#include "../../support/temp_dir.h"

namespace radial::turn {
namespace {
namespace fs = std::filesystem;

// The lock file of directory `dir` in `registry`.
std::string lock_file(const test::TempDir& registry, const std::string& dir) {
    struct stat st {};
    EXPECT_EQ(::stat(dir.c_str(), &st), 0) << dir;
    return registry / ("workspaces/" + std::to_string(st.st_dev) + "-" + std::to_string(st.st_ino));
}

// Any local user who can read a workspace can flock(2) the directory, which the lock once was:
// such a lock holds no turn back now. Two turns still exclude each other, and the release frees
// the workspace and removes its lock file.
TEST(WorkspaceLock, ALockOnTheWorkspaceDirectoryItselfHoldsNoTurnBack) {
    test::TempDir ws("radial-ws"), registry("radial-registry");
    internal::UniqueFd dir(::open(ws.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir);
    ASSERT_EQ(::flock(dir.get(), LOCK_EX | LOCK_NB), 0);
    auto first = WorkspaceLock::try_acquire_workspace(ws.path(), registry.path());
    EXPECT_TRUE(first.has_value()) << "a lock any reader may take held the turn back";
    EXPECT_FALSE(WorkspaceLock::try_acquire_workspace(ws.path(), registry.path()).has_value())
        << "two turns held one workspace";
    ASSERT_TRUE(fs::exists(lock_file(registry, ws.path())));
    first.reset();
    EXPECT_FALSE(fs::exists(lock_file(registry, ws.path()))) << "the released lock's file stayed";
    EXPECT_TRUE(WorkspaceLock::try_acquire_workspace(ws.path(), registry.path()).has_value());
}

// One turn per workspace tree: a turn on a directory inside a running turn's workspace, or on one
// holding it, would be handed files the other is handed too, and take them back under it. Side by
// side siblings are fine. The directories above are their real ones, whatever path names the
// workspace: a relative one, or one through a link.
TEST(WorkspaceLock, NestedWorkspacesExcludeEachOtherAndSiblingsDoNot) {
    test::TempDir root("radial-ws"), registry("radial-registry");
    for (const char* d : {"p/sub/deeper", "p/other", "q"}) fs::create_directories(root / d);
    auto p = WorkspaceLock::try_acquire_workspace(root / "p", registry.path());
    ASSERT_TRUE(p.has_value());
    for (const std::string& d : {root / "p/sub", root / "p/sub/deeper", root.path()})
        EXPECT_FALSE(WorkspaceLock::try_acquire_workspace(d, registry.path()).has_value())
            << "'" << d << "' was taken beside a turn on 'p'";
    // Not held back by itself: the same directory written with a trailing '/'.
    p.reset();
    EXPECT_TRUE(WorkspaceLock::try_acquire_workspace(root / "q/", registry.path()).has_value());
    p = WorkspaceLock::try_acquire_workspace(root / "p", registry.path());
    ASSERT_TRUE(p.has_value());
    EXPECT_TRUE(WorkspaceLock::try_acquire_workspace(root / "q", registry.path()).has_value());
    p.reset();
    auto sub = WorkspaceLock::try_acquire_workspace(root / "p/sub", registry.path());
    auto other = WorkspaceLock::try_acquire_workspace(root / "p/other", registry.path());
    EXPECT_TRUE(sub.has_value());
    EXPECT_TRUE(other.has_value()) << "two siblings held each other back";
    EXPECT_FALSE(WorkspaceLock::try_acquire_workspace(root / "p", registry.path()).has_value())
        << "'p' was taken around turns inside it";
    sub.reset();
    other.reset();
    EXPECT_FALSE(fs::exists(lock_file(registry, root / "p/sub")))
        << "a released lock's file stayed";
    fs::create_directory_symlink(root / "p/sub", root / "q/link");
    auto held = WorkspaceLock::try_acquire_workspace(root / "p", registry.path());
    ASSERT_TRUE(held.has_value());
    EXPECT_FALSE(WorkspaceLock::try_acquire_workspace(root / "q/link", registry.path()).has_value())
        << "a link into 'p' was taken beside a turn on 'p'";
    const auto cwd = fs::current_path();
    fs::current_path(root / "p");
    const bool relative_taken =
        WorkspaceLock::try_acquire_workspace("sub", registry.path()).has_value();
    held.reset();
    const bool relative_free =
        WorkspaceLock::try_acquire_workspace("sub", registry.path()).has_value();
    fs::current_path(cwd);
    EXPECT_FALSE(relative_taken) << "a relative path inside 'p' was taken beside a turn on 'p'";
    EXPECT_TRUE(relative_free) << "a relative path could not be locked";
}

// The registry's directory of locks must be radiald's alone: one other users may write could let
// them take or free a workspace's lock.
TEST(WorkspaceLock, ALocksDirectoryOthersMayWriteIsRefused) {
    test::TempDir ws("radial-ws"), registry("radial-registry");
    fs::create_directory(registry / "workspaces");
    fs::permissions(registry / "workspaces", fs::perms::all);
    try {
        (void)WorkspaceLock::try_acquire_workspace(ws.path(), registry.path());
        ADD_FAILURE() << "a world-writable locks directory was used";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("writable by others"), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace radial::turn
