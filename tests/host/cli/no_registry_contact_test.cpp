// Tests never make the engine contact a registry (a pull sends a DNS query off the machine):
// the harnesses' configs default to pull = "never", a box that could make the engine pull fails
// its test before it starts, and no test source turns pulling on except where it says it does so
// on purpose (the marker "pulls-on-purpose" on the line).
#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "../../support/no_pull.h"
#include "../../support/radiald_runner.h"
#include "../daemon/daemon_harness.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(NoRegistryContact, HarnessConfigsNeverPullByDefault) {
    test::RadialdSetup plain;
    EXPECT_EQ(test::pull_policy(test::read_file(plain.config())), "never");
    test::RadialdSetup with_table("", "[run.docker]\nbinary = \"docker\"\n[redact]\nvalues = []\n");
    std::string text = test::read_file(with_table.config());
    EXPECT_EQ(test::pull_policy(text), "never") << text;
    EXPECT_THAT(text, HasSubstr("[run.docker]\npull = \"never\"\nbinary = \"docker\"\n"));
    test::DaemonSetup daemon("maxConcurrentTurns = 2\n");
    EXPECT_EQ(test::pull_policy(test::read_file(daemon.config())), "never");
    // A test that sets a policy keeps it; another runtime gets no [run.docker] table.
    test::RadialdSetup own("", "[run.docker]\npull = \"missing\"\n");
    EXPECT_EQ(test::pull_policy(test::read_file(own.config())), "missing");
    EXPECT_EQ(test::with_pull_never("containerRuntime = \"sandbox\"\n", "[run.sandbox]\n"),
              "[run.sandbox]\n");
}

TEST(NoRegistryContact, ABoxWithANonLocalImageWhilePullingIsEnabledFailsItsTest) {
    test::RadialdSetup pulling("", "[run.docker]\npull = \"missing\"\n");
    test::TurnRun t;
    EXPECT_NONFATAL_FAILURE(t = pulling.turn({}, {"true"}, {}, "does-not-exist.invalid/x:1"),
                            "the engine would contact a registry");
    EXPECT_EQ(t.result.exit_code, -1) << "radiald was started";
    EXPECT_TRUE(t.record.is_null());

    test::DaemonSetup daemon("", "[run.docker]\npull = \"always\"\n");
    EXPECT_NONFATAL_FAILURE(
        daemon.submit_raw("image = \"" RADIAL_TEST_IMAGE "\"\nargv = [\"true\"]\n"),
        "pull is \"always\"");
    EXPECT_FALSE(fs::exists(daemon.state_dir() + "/spool/queue") &&
                 !fs::is_empty(daemon.state_dir() + "/spool/queue"));
    // The local test image under "missing" is fine: nothing to pull.
    EXPECT_EQ(test::registry_contact_risk(test::read_file(pulling.config()), RADIAL_TEST_IMAGE),
              "");
}

TEST(NoRegistryContact, NoTestSourceTurnsPullingOn) {
    // Spellings that give a box a pull policy other than "never": a TOML key, the plugin's config
    // key, docker's flag.
    const std::regex enables(
        R"re((pull\s*=\s*\\?"(missing|always)|"pull"\s*,\s*"(missing|always)"|--pull[ =](missing|always)))re");
    const fs::path self = fs::path(__FILE__).filename();
    std::vector<std::string> found;
    std::size_t scanned = 0;
    for (const auto& e : fs::recursive_directory_iterator(RADIAL_SOURCE_DIR "/tests")) {
        if (!e.is_regular_file() || e.path().filename() == self ||
            e.path().filename() == "no_pull.h")
            continue;
        std::ifstream in(e.path());
        std::string line;
        for (int n = 1; std::getline(in, line); ++n)
            if (std::regex_search(line, enables) &&
                line.find("pulls-on-purpose") == std::string::npos)
                found.push_back(e.path().string() + ":" + std::to_string(n) + ": " + line);
        ++scanned;
    }
    EXPECT_GT(scanned, 50u) << "the scan saw the test tree";
    EXPECT_TRUE(found.empty())
        << "pulling turned on (mark the line pulls-on-purpose if the test is "
           "about pulling and never reaches a registry):\n"
        << ::testing::PrintToString(found);
    // The sandbox simulator's `docker run` never pulls either.
    EXPECT_THAT(test::read_file(RADIAL_SOURCE_DIR "/tests/fakes/sbx/sbx-docker-sim"),
                HasSubstr("docker run -d --pull never"));
}

} // namespace
} // namespace radial
