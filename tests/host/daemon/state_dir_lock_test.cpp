// One daemon per state directory (docs/design.md §8.6); `radiald turn` never beside one.
#include "daemon/state_dir_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "../../support/temp_dir.h"

namespace radial::daemon {
namespace {
using ::testing::HasSubstr;

std::string refusal(const std::string& dir, StateDirLock::Mode mode) {
    try {
        StateDirLock::acquire(dir, mode, "radiald reconcile");
    } catch (const LockError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(StateDirLock, ASecondExclusiveHolderIsRefusedWithTheDirectoryAndThePid) {
    test::TempDir d;
    auto held = StateDirLock::acquire(d.path(), StateDirLock::Mode::exclusive, "radiald run");
    EXPECT_EQ(refusal(d.path(), StateDirLock::Mode::exclusive),
              "state directory '" + d.path() + "' (run.stateDir) is in use by 'radiald run' (pid " +
                  std::to_string(::getpid()) +
                  "); stop it first, or give this one its own run.stateDir");
}

TEST(StateDirLock, ATurnBesideADaemonIsToldToSubmit) {
    test::TempDir d;
    auto held = StateDirLock::acquire(d.path(), StateDirLock::Mode::exclusive, "radiald run");
    EXPECT_THAT(refusal(d.path(), StateDirLock::Mode::shared),
                HasSubstr("is in use by 'radiald run' (pid " + std::to_string(::getpid()) +
                          "); submit the turn to that daemon with 'radiald submit'"));
}

TEST(StateDirLock, TurnsShareButADaemonWaitsForThem) {
    test::TempDir d;
    auto a = StateDirLock::acquire(d.path(), StateDirLock::Mode::shared, "radiald turn");
    auto b = StateDirLock::acquire(d.path(), StateDirLock::Mode::shared, "radiald turn");
    EXPECT_THAT(refusal(d.path(), StateDirLock::Mode::exclusive),
                HasSubstr("is in use by 'radiald turn' (pid " + std::to_string(::getpid())));
}

TEST(StateDirLock, ReleasedWithItsOwnerAndTheLineCleared) {
    test::TempDir d;
    {
        auto held = StateDirLock::acquire(d.path(), StateDirLock::Mode::exclusive, "radiald run");
        EXPECT_EQ(test::read_file(held.path()), std::to_string(::getpid()) + " radiald run\n");
        auto probe = StateDirLock::probe(d.path());
        ASSERT_TRUE(probe);
        EXPECT_TRUE(probe->exclusive);
        EXPECT_EQ(probe->command, "radiald run");
        EXPECT_EQ(probe->pids, std::vector<pid_t>{::getpid()});
    }
    EXPECT_EQ(test::read_file(d / kLockFile), "");
    EXPECT_FALSE(StateDirLock::probe(d.path()));
    EXPECT_NO_THROW(StateDirLock::acquire(d.path(), StateDirLock::Mode::exclusive, "radiald run"));
}

TEST(StateDirLock, CreatesAMissingStateDirectoryPrivate) {
    test::TempDir d;
    std::string dir = d / "a/b";
    auto held = StateDirLock::acquire(dir, StateDirLock::Mode::exclusive, "radiald run");
    EXPECT_EQ(std::filesystem::status(dir).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_all);
}

} // namespace
} // namespace radial::daemon
