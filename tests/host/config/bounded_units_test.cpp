// Every duration and size is range-checked where it is read, with a message naming the limit
// (docs/design.md §7.3).
#include "config/bounded_units.h"

#include <gtest/gtest.h>

#include "../../support/temp_dir.h"
#include "config/host_config.h"

namespace radial::config {
namespace {

TEST(BoundedUnits, SpellsLimitsExactly) {
    EXPECT_EQ(duration_text(units::kMaxDurationMs), "720h");
    EXPECT_EQ(duration_text(90'000), "90s");
    EXPECT_EQ(duration_text(1500), "1500ms");
    EXPECT_EQ(duration_text(0), "0s");
    EXPECT_EQ(size_text(units::kMaxSizeBytes), "1024t");
    EXPECT_EQ(size_text(256ull << 20), "256m");
    EXPECT_EQ(size_text(100), "100");
}

TEST(BoundedUnits, NamesTheLimitAValueIsPast) {
    std::uint64_t v = 7;
    EXPECT_EQ(duration_problem("2600000000000h", v, 1, units::kMaxDurationMs, "\"90s\""),
              "must be a duration from 1ms to 720h, such as \"90s\"; '2600000000000h' is more "
              "than the limit of 720h");
    EXPECT_EQ(v, 7u) << "untouched when refused";
    // Past 64 bits: not a number at all.
    EXPECT_EQ(duration_problem("99999999999999999999h", v, 1, units::kMaxDurationMs, "\"90s\""),
              "must be a duration from 1ms to 720h, such as \"90s\"; '99999999999999999999h' is "
              "not one");
    EXPECT_EQ(duration_problem("0s", v, 1, units::kMaxDurationMs, "\"90s\""),
              "must be a duration from 1ms to 720h, such as \"90s\"; '0s' is less than 1ms");
    EXPECT_EQ(duration_problem("720h", v, 1, units::kMaxDurationMs, "\"90s\""), "");
    EXPECT_EQ(v, units::kMaxDurationMs);
    EXPECT_EQ(size_problem("1025t", v, 0, units::kMaxSizeBytes, "\"2g\""),
              "must be a size from 0 to 1024t, such as \"2g\"; '1025t' is more than the limit of "
              "1024t");
}

std::string bounded_error_of(const std::string& file) {
    try {
        load(file, std::nullopt, "/opt/radial/bin");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

// Each [run] duration and size, past its limit, names the key, the value and the limit.
TEST(BoundedUnits, EveryRunDurationAndSizeIsRangeChecked) {
    test::TempDir d;
    const std::pair<const char*, const char*> cases[] = {
        {"stopGrace = \"2600000000000h\"", "run.stopGrace: must be a duration from 0s to 1h"},
        {"shutdownGrace = \"2600000000000h\"",
         "run.shutdownGrace: must be a duration from 0s to 24h"},
        {"pluginCallTimeout = \"2h\"", "run.pluginCallTimeout: must be a duration from 1ms to 1h"},
        {"memory = \"99999t\"", "run.memory: must be a size from 0 to 1024t"},
        {"memory = 9223372036854775807", "run.memory: must be a size from 0 to 1024t"},
        {"maxRecordBytes = \"2g\"", "run.maxRecordBytes: must be a size from 1 to 1g"},
        {"minFreeBytes = \"99999t\"", "run.minFreeBytes: must be a size from 0 to 1024t"},
        {"homeSize = \"99999t\"", "run.homeSize: must be a size from 1m to 1024t"},
    };
    for (const auto& [line, fragment] : cases) {
        auto f = d.write("c.toml", std::string("[run]\n") + line + "\n");
        const std::string error = bounded_error_of(f);
        EXPECT_NE(error.find(f + ":2:"), std::string::npos) << error;
        EXPECT_NE(error.find(fragment), std::string::npos) << line << ": " << error;
    }
    auto f = d.write("e.toml", "[run.egress]\nmaxBytesIn = \"99999t\"\n");
    EXPECT_NE(bounded_error_of(f).find("run.egress.maxBytesIn: must be a size from 1 to 1024t"),
              std::string::npos)
        << bounded_error_of(f);
}

} // namespace
} // namespace radial::config
