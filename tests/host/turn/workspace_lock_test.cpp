// One turn per workspace (turn/workspace_lock.h, docs/design.md §3.9): the lock lives in radiald's
// claim registry, where no other user reaches it, not on the workspace directory itself.
#include "turn/workspace_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <radial/internal/unique_fd.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

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

// The names in the registry's locks directory but the sweep's guard.
std::set<std::string> lock_files(const test::TempDir& registry) {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(registry / "workspaces"))
        if (e.path().filename() != ".sweep") out.insert(e.path().string());
    return out;
}

// A process that takes the lock of `ws` and, told so through a pipe, dies holding it (the kernel
// drops the lock; its file stays, as after a SIGKILLed radiald) or releases it and exits.
struct Holder {
    pid_t pid = -1;
    int tell = -1;
    Holder(const std::string& ws, const std::string& registry) {
        int ready[2], order[2];
        EXPECT_EQ(::pipe(ready), 0);
        EXPECT_EQ(::pipe(order), 0);
        pid = ::fork();
        if (pid == 0) {
            auto held = WorkspaceLock::try_acquire_workspace(ws, registry);
            char c = held ? 'y' : 'n';
            (void)!::write(ready[1], &c, 1);
            (void)!::read(order[0], &c, 1);
            if (c == 'd') ::_exit(0); // dies holding it: no release
            held.reset();
            ::_exit(0);
        }
        ::close(ready[1]);
        ::close(order[0]);
        char c = 0;
        EXPECT_EQ(::read(ready[0], &c, 1), 1);
        EXPECT_EQ(c, 'y') << "the holder could not take " << ws;
        ::close(ready[0]);
        tell = order[1];
    }
    void end(char how) {
        (void)!::write(tell, &how, 1);
        ::close(tell);
        int status = 0;
        EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    }
};

// Lock files pile up in the claim registry — a crashed holder's, the shared ones of the
// directories above every workspace — unless swept (docs/design.md §3.9). The sweep removes those
// no one holds and leaves every held one: another process's, this one's, and those held shared.
TEST(WorkspaceLock, ASweepRemovesOnlyTheLockFilesNoOneHolds) {
    test::TempDir root("radial-ws"), registry("radial-registry");
    for (const char* d : {"a", "b", "c"}) fs::create_directory(root / d);
    const std::string a = lock_file(registry, root / "a"), b = lock_file(registry, root / "b"),
                      c = lock_file(registry, root / "c"), up = lock_file(registry, root.path());
    Holder crashed(root / "c", registry.path());
    crashed.end('d');
    ASSERT_TRUE(fs::exists(c)) << "a holder that dies leaves its file";
    Holder other(root / "a", registry.path());
    auto own = WorkspaceLock::try_acquire_workspace(root / "b", registry.path());
    ASSERT_TRUE(own);
    const auto before = lock_files(registry);
    EXPECT_EQ(sweep_workspace_locks(registry.path()), 1u);
    auto left = before;
    left.erase(c);
    EXPECT_EQ(lock_files(registry), left) << "only the dead holder's file goes";
    // Held still: no second turn on either.
    EXPECT_FALSE(WorkspaceLock::try_acquire_workspace(root / "a", registry.path()));
    EXPECT_FALSE(WorkspaceLock::try_acquire_workspace(root / "b", registry.path()));
    EXPECT_TRUE(fs::exists(up)) << "the directory above them, held shared, stayed";
    other.end('r');
    own.reset();
    EXPECT_EQ(sweep_workspace_locks(registry.path()), left.size() - 2)
        << "the directories above them (their own files went with their releases)";
    EXPECT_TRUE(lock_files(registry).empty());
    EXPECT_FALSE(fs::exists(a) || fs::exists(b));
    EXPECT_TRUE(WorkspaceLock::try_acquire_workspace(root / "a", registry.path()));
}

// A sweep running beside turns taking and releasing their locks. Alone on its workspace, a turn
// is never refused: not for a lock only the sweep held, for the moment before removing its file
// (the files of the directories above it go whenever it released them). Two turns on one
// workspace never hold it together: a lock taken on a file removed meanwhile is taken again on
// the file now at the name.
TEST(WorkspaceLock, ASweepBesideTurnsNeitherRefusesOneNorLetsTwoHoldOneWorkspace) {
    test::TempDir root("radial-ws"), registry("radial-registry");
    fs::create_directory(root / "one");
    fs::create_directory(root / "solo");
    std::atomic<bool> stop{false};
    std::atomic<int> holding{0}, most{0}, refused_solo{0}, swept{0};
    // The sweeper gives the cpu up after each pass: flock is not fair, and a sweeper retaking the
    // guard at once could starve the lockers of a loaded machine.
    std::thread sweeper([&] {
        while (!stop) {
            swept += static_cast<int>(sweep_workspace_locks(registry.path()));
            ::sched_yield();
        }
    });
    for (int i = 0; i < 5000; ++i)
        if (!WorkspaceLock::try_acquire_workspace(root / "solo", registry.path())) ++refused_solo;
    auto contender = [&] {
        for (int i = 0; i < 500; ++i) {
            auto held = WorkspaceLock::try_acquire_workspace(root / "one", registry.path());
            if (!held) continue;
            const int now = ++holding;
            int seen = most.load();
            while (now > seen && !most.compare_exchange_weak(seen, now)) {
            }
            --holding;
        }
    };
    std::thread x(contender), y(contender);
    x.join();
    y.join();
    stop = true;
    sweeper.join();
    EXPECT_EQ(refused_solo.load(), 0) << "a turn alone on its workspace was refused";
    EXPECT_EQ(most.load(), 1) << "two turns held one workspace";
    EXPECT_GT(swept.load(), 0) << "the sweep never removed a file: the race was not run";
}

} // namespace
} // namespace radial::turn
