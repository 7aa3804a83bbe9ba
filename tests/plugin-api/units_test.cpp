#include <gtest/gtest.h>

#include <radial/units.hpp>

namespace radial::units {
namespace {

TEST(Units, Sizes) {
    EXPECT_EQ(parse_size_bytes("512"), 512u);
    EXPECT_EQ(parse_size_bytes("64k"), 64u << 10);
    EXPECT_EQ(parse_size_bytes("512m"), 512ull << 20);
    EXPECT_EQ(parse_size_bytes("2g"), 2ull << 30);
    EXPECT_EQ(parse_size_bytes("2GiB"), 2ull << 30);
    EXPECT_EQ(parse_size_bytes("1.5g"), 3ull << 29);
    EXPECT_EQ(parse_size_bytes(""), std::nullopt);
    EXPECT_EQ(parse_size_bytes("g"), std::nullopt);
    EXPECT_EQ(parse_size_bytes("2x"), std::nullopt);
    EXPECT_EQ(parse_size_bytes("-1"), std::nullopt);
    EXPECT_EQ(parse_size_bytes("99999999999999999999t"), std::nullopt);
}

TEST(Units, Durations) {
    EXPECT_EQ(parse_duration_ms("1500ms"), 1500u);
    EXPECT_EQ(parse_duration_ms("90s"), 90'000u);
    EXPECT_EQ(parse_duration_ms("90"), 90'000u);
    EXPECT_EQ(parse_duration_ms("5m"), 300'000u);
    EXPECT_EQ(parse_duration_ms("1h"), 3'600'000u);
    EXPECT_EQ(parse_duration_ms("1.5s"), 1500u);
    EXPECT_EQ(parse_duration_ms("soon"), std::nullopt);
    EXPECT_EQ(parse_duration_ms("5d"), std::nullopt);
}

TEST(Units, Cpus) {
    EXPECT_EQ(parse_cpus_milli("2"), 2000u);
    EXPECT_EQ(parse_cpus_milli("0.5"), 500u);
    EXPECT_EQ(parse_cpus_milli("1.25"), 1250u);
    EXPECT_EQ(parse_cpus_milli("2c"), std::nullopt);
}

} // namespace
} // namespace radial::units
