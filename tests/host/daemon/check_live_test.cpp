// Checks beside turns (docs/design.md §4) against the real engine: `radiald check` runs a
// project's command without secrets or a turn socket and records it as a check; a check request
// naming a secret is refused on the CLI and at submit; a check box left by a SIGKILLed daemon is
// found by its own label prefix and reclaimed; and a request spooled by the previous release (no
// version, no kind) still runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon_harness.h"
#include "docker_boxes.h"

namespace radial {
namespace {
using namespace std::chrono_literals;
using test::DaemonProcess;
using test::DaemonSetup;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// `radiald turns --json`, one object per line, by id.
std::map<std::string, nlohmann::json> listed(const DaemonSetup& s) {
    auto r = test::run_process({RADIALD_PATH, "turns", "--config", s.config(), "--json"}, {}, 30s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, nlohmann::json> out;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) {
            auto j = nlohmann::json::parse(line);
            out[j["turnId"].get<std::string>()] = j;
        }
    return out;
}

TEST(CheckLive, ACheckRunsWithoutSecretsOrATurnSocketAndIsRecordedAsACheck) {
    std::string inst = test::unique_instance_id("k");
    std::string prefix = "radial-check-" + inst + "-";
    test::BoxCleanup cleanup{prefix};
    DaemonSetup s("instanceId = \"" + inst + "\"\n");
    std::string rec_file = s.dir().path() + "/check-record.json";
    auto r = test::run_process(
        {RADIALD_PATH, "check", "--config", s.config(), "--image", RADIAL_TEST_IMAGE, "--check-id",
         "lint-1", "--env", "CI=1", "--record-file", rec_file, "--", "sh", "-c",
         "echo ci=$CI; echo socket=${RADIAL_TURN_SOCKET:-none} token=${RADIAL_TURN_TOKEN:-none}; "
         "exit 3"},
        {}, 120s);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_EQ(r.out, "ci=1\nsocket=none token=none\n") << r.err;
    auto rec = nlohmann::json::parse(test::read_file(rec_file));
    EXPECT_EQ(rec["kind"], "check") << rec;
    EXPECT_EQ(rec["turnId"], "lint-1");
    EXPECT_EQ(rec["label"], prefix + "lint-1");
    EXPECT_EQ(rec["exitCode"], 3);
    EXPECT_THAT(test::boxes_with_prefix(prefix), IsEmpty());

    auto j = s.terminal("lint-1");
    EXPECT_EQ(j["kind"], "check") << j;
    auto all = listed(s);
    ASSERT_TRUE(all.count("lint-1"));
    EXPECT_EQ(all["lint-1"]["kind"], "check");
    EXPECT_EQ(all["lint-1"]["label"], prefix + "lint-1");

    // A turn beside it keeps its own kind, label and socket.
    auto t = test::run_process(
        {RADIALD_PATH, "turn", "--config", s.config(), "--image", RADIAL_TEST_IMAGE, "--turn-id",
         "agent-1", "--", "sh", "-c", "echo socket=${RADIAL_TURN_SOCKET:+set}"},
        {}, 120s);
    EXPECT_EQ(t.exit_code, 0) << t.err;
    EXPECT_EQ(t.out, "socket=set\n");
    all = listed(s);
    EXPECT_EQ(all["agent-1"]["kind"], "turn");
    EXPECT_EQ(all["agent-1"]["label"], "radial-turn-" + inst + "-agent-1");
    auto text = test::run_process({RADIALD_PATH, "turns", "--config", s.config()}, {}, 30s);
    EXPECT_THAT(text.out, HasSubstr(" KIND "));
    EXPECT_THAT(text.out, testing::ContainsRegex("lint-1 +check +finished"));
    EXPECT_THAT(text.out, testing::ContainsRegex("agent-1 +turn +finished"));
}

TEST(CheckLive, ACheckNamingASecretIsRefusedOnTheCliAndAtSubmit) {
    std::string inst = test::unique_instance_id("k");
    std::string prefix = "radial-check-" + inst + "-";
    test::BoxCleanup cleanup{prefix};
    DaemonSetup s("instanceId = \"" + inst + "\"\n");
    auto r = test::run_process({RADIALD_PATH, "check", "--config", s.config(), "--image",
                                RADIAL_TEST_IMAGE, "--secret", "GH_TOKEN", "--", "echo", "ran"},
                               {{"GH_TOKEN", "ghp_abcdefghijklmnop"}}, 60s);
    EXPECT_EQ(r.exit_code, 125);
    EXPECT_THAT(r.out, Not(HasSubstr("ran")));
    EXPECT_THAT(r.err, HasSubstr("--secret GH_TOKEN: a check carries no secrets; drop --secret, "
                                 "or run the command as a turn (radiald turn) if it needs one"));
    EXPECT_THAT(r.err, Not(HasSubstr("ghp_abcdefghijklmnop")));

    auto sub = s.submit_raw("kind = \"check\"\nimage = \"" RADIAL_TEST_IMAGE
                            "\"\nargv = [\"true\"]\nsecrets = [\"GH_TOKEN\"]\n");
    EXPECT_EQ(sub.exit_code, 1);
    EXPECT_THAT(sub.err, HasSubstr("secrets: a check carries no secrets (kind = \"check\" at "
                                   "line 1), but this one names 'GH_TOKEN'"));
    std::error_code ec;
    EXPECT_TRUE(std::filesystem::is_empty(s.state_dir() + "/spool/queue", ec) || ec)
        << "nothing was queued";
    EXPECT_THAT(test::boxes_with_prefix(prefix), IsEmpty());
}

// A check queued with the daemon runs in a box labelled radial-check-<instanceId>-<id>. SIGKILL
// the daemon while it runs: the next start removes that box before it takes new work and records
// the check as reclaimed, still a check.
TEST(CheckLive, ACheckBoxLeftByASigkilledDaemonIsReclaimedAtTheNextStart) {
    std::string inst = test::unique_instance_id("k");
    std::string checks = "radial-check-" + inst + "-", turns = "radial-turn-" + inst + "-";
    test::BoxCleanup c1{checks}, c2{turns};
    DaemonSetup s("instanceId = \"" + inst + "\"\n");
    std::string c = s.submit("kind = \"check\"\nimage = \"" RADIAL_TEST_IMAGE
                             "\"\nargv = [\"sleep\", \"600\"]\n");
    ASSERT_FALSE(c.empty());
    EXPECT_EQ(s.status()["queued"][0]["kind"], "check");
    {
        DaemonProcess d(s);
        ASSERT_TRUE(test::wait_until([&] { return test::box_state(checks + c) == "running"; }, 60s))
            << d.log();
        d.crash();
    }
    ASSERT_EQ(test::box_state(checks + c), "running")
        << "a SIGKILLed daemon leaves its box running";
    std::string t = s.submit("image = \"" RADIAL_TEST_IMAGE "\"\nargv = [\"echo\", \"next\"]\n");

    DaemonProcess again(s);
    ASSERT_TRUE(s.wait_terminal({c, t}, 60s)) << again.log();
    std::string log = again.log();
    auto removed = log.find("removed orphaned box '" + checks + c + "'");
    EXPECT_NE(removed, std::string::npos) << log;
    EXPECT_LT(removed, log.find("turn " + t + ": claimed")) << log;
    EXPECT_EQ(test::box_state(checks + c), "gone");
    auto rec = s.terminal(c);
    EXPECT_EQ(rec["status"], "reclaimed") << rec;
    EXPECT_EQ(rec["kind"], "check");
    EXPECT_EQ(rec["label"], checks + c);
    EXPECT_EQ(s.terminal(t)["status"], "succeeded");
    EXPECT_EQ(s.terminal(t)["kind"], "turn");
    again.signal(SIGTERM);
    EXPECT_EQ(again.wait_exit(30s), 0) << again.log();
    EXPECT_THAT(test::boxes_with_prefix(checks), IsEmpty());
}

// A request exactly as the previous release spooled it (no "version", no "kind") runs as a turn.
TEST(CheckLive, ARequestSpooledByThePreviousReleaseStillRuns) {
    std::string inst = test::unique_instance_id("k");
    std::string turns = "radial-turn-" + inst + "-";
    test::BoxCleanup cleanup{turns};
    DaemonSetup s("instanceId = \"" + inst + "\"\n");
    auto prepared = s.reconcile(); // creates the spool's directories
    ASSERT_EQ(prepared.exit_code, 0) << prepared.err;
    {
        std::ofstream f(s.state_dir() + "/spool/queue/old-1.json");
        f << R"({
  "turnId": "old-1",
  "image": ")" RADIAL_TEST_IMAGE R"(",
  "argv": ["sh", "-c", "echo old-$CI"],
  "env": {"CI": "one"},
  "secrets": [],
  "mounts": [],
  "recordType": "result"
}
)";
    }
    std::filesystem::permissions(s.state_dir() + "/spool/queue/old-1.json",
                                 std::filesystem::perms(0600));
    DaemonProcess d(s);
    ASSERT_TRUE(s.wait_terminal({"old-1"}, 60s)) << d.log();
    auto rec = s.terminal("old-1");
    EXPECT_EQ(rec["status"], "succeeded") << rec << d.log();
    EXPECT_EQ(rec["kind"], "turn");
    EXPECT_EQ(rec["outputTail"]["stdout"], "old-one\n");
    EXPECT_EQ(rec["label"], turns + "old-1");
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

} // namespace
} // namespace radial
