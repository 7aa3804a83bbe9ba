// One turn's share of the state directory (docs/design.md §9.6): the per-turn caps on posted
// records, in count and bytes, and the floor kept free for every running turn's outcome.
#include "turn/record_quota.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include "../../support/temp_dir.h"

namespace radial::turn {
namespace {
using ::testing::HasSubstr;

TEST(RecordQuota, TheCountCapRefusesTheRecordPastItNamingTheKey) {
    test::TempDir dir{"radial-quota"};
    RecordQuota q(dir.path(), 3, 0, 0);
    for (int i = 0; i < 3; ++i) EXPECT_FALSE(q.admit(10)) << i;
    auto refused = q.admit(10);
    ASSERT_TRUE(refused);
    EXPECT_THAT(*refused, HasSubstr("run.maxRecordsPerTurn (3)"));
    // A record that was admitted but not stored gives its place back.
    q.release(10);
    EXPECT_FALSE(q.admit(10));
}

TEST(RecordQuota, TheByteCapCountsEveryBodyAndRefusesTheOneThatWouldPassIt) {
    test::TempDir dir{"radial-quota"};
    RecordQuota q(dir.path(), 0, 1000, 0);
    EXPECT_FALSE(q.admit(600));
    auto refused = q.admit(401);
    ASSERT_TRUE(refused);
    EXPECT_THAT(*refused, HasSubstr("run.maxRecordBytesPerTurn (1000 bytes, 600 used)"));
    EXPECT_FALSE(q.admit(400)); // exactly up to the cap
    EXPECT_TRUE(q.admit(1));
}

TEST(RecordQuota, RecordsNeverTakeTheFileSystemBelowHalfOfMinFreeBytes) {
    test::TempDir dir{"radial-quota"};
    struct statvfs st {};
    ASSERT_EQ(::statvfs(dir.path().c_str(), &st), 0);
    const std::uint64_t free_bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
    // A floor just above what is free: the reserve for the running turns' outcomes is kept.
    RecordQuota q(dir.path(), 0, 0, 2 * free_bytes + (2u << 20));
    auto refused = q.admit(1);
    ASSERT_TRUE(refused);
    EXPECT_THAT(*refused, HasSubstr("half of run.minFreeBytes"));
    EXPECT_THAT(*refused, ::testing::Not(HasSubstr(dir.path()))); // no host path to the box
    RecordQuota roomy(dir.path(), 0, 0, 2u << 20);
    EXPECT_FALSE(roomy.admit(1));
}

} // namespace
} // namespace radial::turn
