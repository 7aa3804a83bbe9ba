// `radiald logs`' --since and --tail (docs/design.md §11.7), in process.
#include "cli/logs_command.h"

#include <gtest/gtest.h>

namespace radial::cli {
namespace {

TEST(LogsCommand, SinceTakesADurationBackFromNowOrAnRfc3339Time) {
    const std::int64_t now = 1'714'564'800'000; // 2024-05-01T12:00:00Z
    EXPECT_EQ(parse_since("10m", now), now - 600'000);
    EXPECT_EQ(parse_since("90s", now), now - 90'000);
    EXPECT_EQ(parse_since("2024-05-01T11:00:00Z", now), now - 3'600'000);
    EXPECT_EQ(parse_since("2024-05-01T13:30:00+02:00", now), now - 1'800'000);
    EXPECT_EQ(parse_since("1h", 1000), 0); // never before the epoch
    for (const char* bad : {"", "yesterday", "-10m", "10", "2024-05-01"})
        EXPECT_FALSE(parse_since(bad, now)) << bad;
}

TEST(LogsCommand, TailTakesAWholeNumberOfLinesOrAll) {
    ASSERT_TRUE(parse_tail("3"));
    EXPECT_EQ(*parse_tail("3"), std::optional<std::size_t>(3));
    EXPECT_EQ(*parse_tail("0"), std::optional<std::size_t>(0));
    ASSERT_TRUE(parse_tail("all"));
    EXPECT_FALSE(*parse_tail("all")); // every line
    for (const char* bad : {"", "-1", "3x", "ALL", "1e3", "12345678901"})
        EXPECT_FALSE(parse_tail(bad)) << bad;
}

} // namespace
} // namespace radial::cli
