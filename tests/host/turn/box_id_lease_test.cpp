// Box ids leased per box (turn/box_id_lease.h): never two boxes on one id, freed when the box is
// gone, kept from reuse when a radiald was killed holding one, until reconciliation frees it.
#include "turn/box_id_lease.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>

#include "../../support/id_squatter.h"
#include "../../support/temp_dir.h"
#include "turn/turn_setup_error.h"

namespace radial::turn {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

// A range of this test process's own: the leases live in each test's directory, and the ids
// differ from every other test's that might run a process with one.
std::uint32_t range_start() {
    return 2100600000u + static_cast<std::uint32_t>(::getpid() % 100000) * 10u;
}

std::string refusal(const std::string& dir, std::uint32_t first, std::uint32_t last) {
    try {
        BoxIdLease::acquire(dir, first, last, "box-x", "/state");
    } catch (const TurnSetupError& e) {
        return e.what();
    }
    return "(no refusal)";
}

// Each test's own leases directory and range.
class BoxIdLeaseTest : public ::testing::Test {
protected:
    test::TempDir d{"radial-leases"};
    const std::string dir = d / "box-ids";
    const std::uint32_t first = range_start();
};

TEST_F(BoxIdLeaseTest, TwoBoxesNeverShareAnIdAndAFullRangeIsRefusedByName) {
    auto a = BoxIdLease::acquire(dir, first, first + 1, "box-a", "/state");
    auto b = BoxIdLease::acquire(dir, first, first + 1, "box-b", "/state");
    EXPECT_NE(a.id(), b.id());
    for (auto id : {a.id(), b.id()}) {
        EXPECT_GE(id, first);
        EXPECT_LE(id, first + 1);
    }
    EXPECT_THAT(refusal(dir, first, first + 1),
                HasSubstr(fmt::format("run.boxIdRange {}-{}: every id is taken (2 by boxes that "
                                      "run or are about to, 0 left by a radiald that was killed",
                                      first, first + 1)));
    EXPECT_EQ(std::filesystem::status(dir).permissions(),
              std::filesystem::perms(0755)); // made as the claim registry is
    // A lease another uid could open, it could flock: held shared, a kept lease would never be
    // freed; held at all, its id never given (fs/lock_file.h).
    for (auto id : {a.id(), b.id()})
        EXPECT_EQ(std::filesystem::status(dir + "/" + std::to_string(id)).permissions(),
                  std::filesystem::perms(0600));
}

TEST_F(BoxIdLeaseTest, AnIdIsFreeAgainOnceItsBoxIsGone) {
    const auto id = first;
    {
        auto a = BoxIdLease::acquire(dir, id, id, "box-a", "/state");
        EXPECT_EQ(a.id(), id);
        EXPECT_TRUE(std::filesystem::exists(dir + "/" + std::to_string(id)));
    }
    EXPECT_FALSE(std::filesystem::exists(dir + "/" + std::to_string(id)));
    auto b = BoxIdLease::acquire(dir, id, id, "box-b", "/state");
    EXPECT_EQ(b.id(), id);
}

// A radiald SIGKILLed holding a lease: its box may still run as the id, so the id is not given
// again until the reconciliation of that radiald's state directory frees it — and only once the
// box is not live.
TEST_F(BoxIdLeaseTest, AnIdHeldByAKilledRadialdWaitsForItsStateDirectorysReconciliation) {
    const std::string killed = d / "killed", other = d / "other";
    std::filesystem::create_directories(killed);
    std::filesystem::create_directories(other);
    const auto id = first;
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        auto lease = BoxIdLease::acquire(dir, id, id, "box-orphan", killed);
        (void)!::write(ready[1], "x", 1);
        for (;;) ::pause();
    }
    ::close(ready[1]);
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    ::close(ready[0]);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);

    EXPECT_THAT(
        refusal(dir, id, id),
        HasSubstr("(0 by boxes that run or are about to, 1 left by a radiald that was killed"));
    EXPECT_TRUE(release_stale_box_id_leases(dir, other, {}).empty());
    EXPECT_TRUE(release_stale_box_id_leases(dir, killed, {"box-orphan"}).empty());
    auto freed = release_stale_box_id_leases(dir, killed, {"box-live"});
    ASSERT_EQ(freed.size(), 1u);
    EXPECT_EQ(freed[0].id, id);
    EXPECT_EQ(freed[0].label, "box-orphan");
    EXPECT_EQ(BoxIdLease::acquire(dir, id, id, "box-next", "/state").id(), id);
}

// A killed radiald's state directory that was deleted is never reconciled: once no process runs
// with the id, the lease is over and the id is given again.
TEST_F(BoxIdLeaseTest, AnIdLeftForAStateDirectoryThatIsGoneIsGivenAgain) {
    const std::string state = d / "state";
    std::filesystem::create_directories(state);
    const auto id = first;
    BoxIdLease::acquire(dir, id, id, "box-orphan", state).keep_for_reconcile();
    EXPECT_THAT(refusal(dir, id, id), HasSubstr("1 left by a radiald that was killed"));
    std::filesystem::remove(state);
    auto again = BoxIdLease::acquire(dir, id, id, "box-next", "/state");
    EXPECT_EQ(again.id(), id);
    EXPECT_THAT(test::read_file(dir + "/" + std::to_string(id)), HasSubstr("\"box-next\""));
    EXPECT_THAT(test::read_file(dir + "/" + std::to_string(id)), Not(HasSubstr("box-orphan")));
}

// A lease the holder keeps for a box that may have outlived its turn is held like a killed one's,
// and a live holder's lease is never freed by a reconciliation.
TEST_F(BoxIdLeaseTest, AKeptLeaseIsFreedByReconciliationAndAHeldOneNever) {
    auto kept = BoxIdLease::acquire(dir, first, first + 1, "box-kept", "/state");
    auto held = BoxIdLease::acquire(dir, first, first + 1, "box-held", "/state");
    kept.keep_for_reconcile();
    auto freed = release_stale_box_id_leases(dir, "/state", {});
    ASSERT_EQ(freed.size(), 1u);
    EXPECT_EQ(freed[0].label, "box-kept");
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + std::to_string(held.id())));
}

// Reconciliation reads which boxes a killed radiald of its state directory leased ids for (it
// kills them by those labels, docs/design.md §8.4): only unheld leases of that state directory,
// and reading them frees nothing.
TEST_F(BoxIdLeaseTest, TheLabelsOfAKilledRadialdsLeasesAreReadWithoutFreeingThem) {
    auto kept = BoxIdLease::acquire(dir, first, first + 2, "box-kept", "/state");
    auto held = BoxIdLease::acquire(dir, first, first + 2, "box-held", "/state");
    auto other = BoxIdLease::acquire(dir, first, first + 2, "box-other", "/other");
    kept.keep_for_reconcile();
    other.keep_for_reconcile();
    EXPECT_THAT(unheld_box_id_lease_labels(dir, "/state"), ::testing::ElementsAre("box-kept"));
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + std::to_string(kept.id())));
    EXPECT_EQ(release_stale_box_id_leases(dir, "/state", {}).size(), 1u);
    EXPECT_THAT(unheld_box_id_lease_labels(dir, "/state"), ::testing::IsEmpty());
}

// An id some host process runs with (any pid namespace: a box whose radiald is gone) is skipped.
TEST_F(BoxIdLeaseTest, AnIdAProcessRunsWithIsNeverLeased) {
    test::IdSquatter squatter(first);
    ASSERT_TRUE(squatter.running());
    EXPECT_EQ(BoxIdLease::acquire(dir, first, first + 1, "box-a", "/state").id(), first + 1);
    EXPECT_THAT(refusal(dir, first, first), HasSubstr("(1 by boxes that run or are about to"));
}

// The leases' directory must be radiald's alone: another user could free or take ids.
TEST_F(BoxIdLeaseTest, ALeasesDirectoryOthersCanWriteIsRefusedByName) {
    std::filesystem::create_directories(dir);
    ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
    EXPECT_THAT(refusal(dir, first, first),
                HasSubstr("the box id leases directory '" + dir + "' belongs to uid"));
}

} // namespace
} // namespace radial::turn
