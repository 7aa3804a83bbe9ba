// The host's bounds and the image's digest reach a real box (docs/design.md §6.4, §6.5): the
// cgroup the docker runtime gives the box holds radiald's defaults or the operator's values, and
// the record names the digest that ran, which an allowlist pin then admits or refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "../../support/radiald_runner.h"

namespace radial {
namespace {
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// cgroup v2's files, else v1's (this machine's engine runs cgroup v1).
const std::vector<std::string> kReadBounds = {
    "sh", "-c",
    "m=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat "
    "/sys/fs/cgroup/memory/memory.limit_in_bytes); p=$(cat /sys/fs/cgroup/pids.max 2>/dev/null "
    "|| cat /sys/fs/cgroup/pids/pids.max); echo memory=$m pids=$p"};

TEST(BoundsLive, ABoxUnderDockerHasTheHostsDefaultBounds) {
    test::RadialdSetup s;
    auto t = s.turn({}, kReadBounds);
    ASSERT_EQ(t.result.exit_code, 0) << t.result.out << t.result.err;
    EXPECT_EQ(t.result.out, "memory=2147483648 pids=256\n");
}

TEST(BoundsLive, ABoxUnderDockerHasTheOperatorsBounds) {
    test::RadialdSetup s("memory = \"64m\"\npidsLimit = 100\n");
    auto t = s.turn({}, kReadBounds);
    ASSERT_EQ(t.result.exit_code, 0) << t.result.out << t.result.err;
    EXPECT_EQ(t.result.out, "memory=67108864 pids=100\n");
}

// The box's create and removal are reported apart from its command (docs/design.md §13.2): a
// command of at least 300 ms leaves at most the rest of the turn's duration to the two.
TEST(PhaseTimesLive, TheRecordSaysHowLongTheBoxsCreateAndRemovalTook) {
    test::RadialdSetup s;
    auto t = s.turn({}, {"sleep", "0.3"});
    ASSERT_EQ(t.result.exit_code, 0) << t.result.err;
    ASSERT_TRUE(t.record.contains("createMs")) << t.record.dump();
    ASSERT_TRUE(t.record.contains("removeMs")) << t.record.dump();
    const auto create = t.record["createMs"].get<std::uint64_t>();
    const auto remove = t.record["removeMs"].get<std::uint64_t>();
    EXPECT_GT(create, 0u);
    EXPECT_LE(create + remove + 300, t.record["durationMs"].get<std::uint64_t>());
}

TEST(DigestLive, TheRecordNamesTheDigestThatRanAndAPinAdmitsOnlyIt) {
    std::string digest;
    {
        test::RadialdSetup s;
        auto t = s.turn({}, {"true"});
        ASSERT_EQ(t.result.exit_code, 0) << t.result.err;
        digest = t.record.value("imageDigest", std::string());
        EXPECT_THAT(digest, MatchesRegex("sha256:[0-9a-f]{64}"));
        EXPECT_EQ(t.record.value("image", std::string()), RADIAL_TEST_IMAGE);
    }
    {
        test::RadialdSetup s("allowedImages = [\"" + std::string(RADIAL_TEST_IMAGE) + "@" + digest +
                             "\"]\n");
        auto t = s.turn({}, {"true"});
        EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
        EXPECT_EQ(t.record.value("imageDigest", std::string()), digest);
    }
    {
        const std::string other = "sha256:" + std::string(64, '0');
        test::RadialdSetup s("allowedImages = [\"" + std::string(RADIAL_TEST_IMAGE) + "@" + other +
                             "\"]\n");
        auto t = s.turn({}, {"true"});
        EXPECT_NE(t.result.exit_code, 0);
        EXPECT_THAT(t.result.err,
                    HasSubstr("image '" + std::string(RADIAL_TEST_IMAGE) + "' is " + digest +
                              ", which run.allowedImages does not pin it "
                              "to (" +
                              other + ")"));
    }
}

} // namespace
} // namespace radial
