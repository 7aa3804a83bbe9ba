// The daemon on a full state file system (docs/design.md §17, C-18) and what a SIGKILLed daemon
// leaves on the host (nothing, after reconciliation): a real engine, a state directory on a tmpfs
// the test mounts itself (the live tests run as root).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../../support/small_disk.h"
#include "daemon_harness.h"
#include "docker_boxes.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::DaemonProcess;
using test::DaemonSetup;
using ::testing::HasSubstr;
using ::testing::Not;

bool has_turn(const nlohmann::json& list, const std::string& id) {
    for (const auto& t : list)
        if (t["turnId"] == id) return true;
    return false;
}

// 300 posts of 900 bytes, far more than the 320k state file system holds: posts records until the
// journal's disk is full, then prints 4 KB: the terminal record (its output tail) is then larger
// than the records refused last, and cannot fit in the room a refused record's transaction left in
// the journal's write-ahead log.
const std::string kFillTheDisk = R"(P=$(head -c 900 /dev/zero | tr '\0' x); i=0; n=0
while [ $i -lt 300 ]; do
  c=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "${RADIAL_TURN_SOCKET#unix://}" \
       -H "Authorization: Bearer $RADIAL_TURN_TOKEN" -d "{\"type\":\"result\",\"payload\":\"$P\"}" \
       http://r/v1/records)
  [ "$c" = 507 ] && n=$((n+1))
  i=$((i+1))
done
head -c 4000 /dev/zero | tr '\0' y; echo
echo "refused $n")";

TEST(DurabilityDaemonLive, C18_TheDaemonKeepsARecordItCannotJournalAndRetriesUntilThereIsSpace) {
    ASSERT_EQ(::geteuid(), 0u) << "mounting the test's tmpfs needs root";
    std::string inst = test::unique_instance_id("full");
    test::BoxCleanup cleanup{"radial-turn-" + inst + "-"};
    // minFreeBytes 0: no floor kept for outcomes (docs/design.md §9.6), so the box's records can
    // fill the file system and leave its terminal record nowhere to go. turnLogMaxBytes 0: the
    // turn's output log (§11.7), cut back after a write the full disk refused, would free the
    // space the test takes away.
    DaemonSetup s("instanceId = \"" + inst + "\"\nminFreeBytes = 0\nturnLogMaxBytes = 0\n",
                  "[run.docker]\npull = \"never\"\n");
    test::SmallDisk disk(s.state_dir(), "320k");
    ASSERT_TRUE(disk.ok()) << "mount tmpfs failed";
    std::string id = s.submit(test::shell_turn(kFillTheDisk));
    ASSERT_FALSE(id.empty());

    DaemonProcess d(s);
    // The box ends; the journal cannot take its record: it is pending, not running.
    nlohmann::json st;
    ASSERT_TRUE(test::wait_until(
        [&] {
            st = s.status();
            return has_turn(st["pending"], id);
        },
        120s))
        << st.dump() << d.log();
    EXPECT_FALSE(has_turn(st["running"], id)) << st.dump();
    EXPECT_THAT(d.log(), HasSubstr("waits in '" + s.state_dir() + "/pending/" + id + ".json'"));
    EXPECT_TRUE(s.terminal(id).is_null()) << "nothing journaled yet";

    // Space returns: the daemon journals the real outcome on its own and retires the request.
    ASSERT_TRUE(disk.grow("8m"));
    ASSERT_TRUE(s.wait_terminal({id}, 30s)) << d.log();
    auto rec = s.terminal(id);
    EXPECT_EQ(rec["status"], "succeeded") << rec;
    EXPECT_EQ(rec["exitCode"], 0) << rec;
    EXPECT_THAT(rec["outputTail"]["stdout"].get<std::string>(), HasSubstr("refused "));
    EXPECT_THAT(rec["outputTail"]["stdout"].get<std::string>(), Not(HasSubstr("refused 0\n")));
    EXPECT_TRUE(test::wait_until(
        [&] {
            return !fs::exists(s.state_dir() + "/pending/" + id + ".json") &&
                   !fs::exists(s.state_dir() + "/spool/queue/" + id + ".json");
        },
        10s));
    st = s.status();
    EXPECT_TRUE(st["pending"].empty()) << st.dump();
}

// Posts of `size` bytes, `count` times, `pause` apart; prints how many got 507.
std::string posting(int count, int size, const std::string& pause) {
    return "P=$(head -c " + std::to_string(size) + R"( /dev/zero | tr '\0' x); i=0; n=0
while [ $i -lt )" +
           std::to_string(count) +
           R"( ]; do
  c=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "${RADIAL_TURN_SOCKET#unix://}" \
       -H "Authorization: Bearer $RADIAL_TURN_TOKEN" -d "{\"type\":\"result\",\"payload\":\"$P\"}" \
       http://r/v1/records)
  [ "$c" = 507 ] && n=$((n+1))
  i=$((i+1)); sleep )" +
           pause + R"(
done
echo "refused $n")";
}

// One box posting large records beside another turn (docs/design.md §9.6): its records stop at
// run.maxRecordBytesPerTurn, and the other turn keeps every record it posted, both outcomes are
// journaled, and the next submit is taken. (Before the per-turn caps the flood filled the state
// file system: the other turn's posts got 507 and submits failed.)
TEST(DurabilityDaemonLive, OneTurnsRecordsCannotStarveAnotherTurn) {
    ASSERT_EQ(::geteuid(), 0u) << "mounting the test's tmpfs needs root";
    std::string inst = test::unique_instance_id("starve");
    test::BoxCleanup cleanup{"radial-turn-" + inst + "-"};
    DaemonSetup s("instanceId = \"" + inst +
                      "\"\nmaxConcurrentTurns = 2\nminFreeBytes = \"512k\"\n"
                      "maxRecordBytesPerTurn = \"256k\"\n",
                  "[run.docker]\npull = \"never\"\n");
    test::SmallDisk disk(s.state_dir(), "8m");
    ASSERT_TRUE(disk.ok()) << "mount tmpfs failed";
    // 200 posts of 60 KB (12 MB): more than the whole file system.
    std::string flood = s.submit(test::shell_turn(posting(200, 60000, "0")));
    std::string quiet = s.submit(test::shell_turn(posting(30, 900, "0.1")));
    ASSERT_FALSE(flood.empty());
    ASSERT_FALSE(quiet.empty());
    DaemonProcess d(s);
    ASSERT_TRUE(s.wait_terminal({flood, quiet}, 180s)) << d.log();

    auto q = s.records(quiet);
    EXPECT_EQ(q["records"].size(), 30u) << d.log();
    EXPECT_THAT(q["terminal"]["outputTail"]["stdout"].get<std::string>(), HasSubstr("refused 0"));
    auto f = s.records(flood);
    EXPECT_EQ(f["terminal"]["status"], "succeeded") << f["terminal"];
    EXPECT_GT(f["terminal"].value("recordsRefused", 0), 100) << f["terminal"];
    EXPECT_LE(f["records"].size(), 256u * 1024 / 60000) << "the cap holds";
    EXPECT_TRUE(s.status()["pending"].empty()) << "both outcomes journaled at once";
    // The next turn is taken and runs.
    std::string next = s.submit(test::shell_turn("echo next"));
    ASSERT_FALSE(next.empty());
    ASSERT_TRUE(s.wait_terminal({next}, 60s)) << d.log();
    EXPECT_EQ(s.terminal(next)["status"], "succeeded");
}

// After kill -9 of the daemon, its turn's socket directory, reserved record space and passwd stay
// behind; reconciliation removes them together with the turn's box.
TEST(DurabilityDaemonLive, ReconciliationRemovesEveryPerTurnResidueAfterASigkill) {
    std::string inst = test::unique_instance_id("res");
    std::string prefix = "radial-turn-" + inst + "-";
    test::BoxCleanup cleanup{prefix};
    DaemonSetup s("instanceId = \"" + inst + "\"\n", "[run.docker]\npull = \"never\"\n");
    std::string id = s.submit(test::shell_turn("sleep 600"));
    {
        DaemonProcess d(s);
        ASSERT_TRUE(test::wait_until(
            [&] {
                auto b = test::boxes_with_prefix(prefix);
                return !b.empty();
            },
            60s))
            << d.log();
        d.crash();
    }
    ASSERT_TRUE(fs::exists(s.state_dir() + "/turns/" + id)) << "the precondition: residue";
    // The box user's passwd and group (docs/design.md §8.7) are residue too.
    ASSERT_TRUE(fs::exists(s.state_dir() + "/identity/" + id + "/passwd"));
    ASSERT_TRUE(fs::exists(s.state_dir() + "/pending/" + id + ".json"));
    auto r = s.reconcile();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("reclaimed turn " + id));
    EXPECT_THAT(r.out, HasSubstr("path(s) left by ended turns"));
    EXPECT_FALSE(fs::exists(s.state_dir() + "/turns/" + id));
    EXPECT_FALSE(fs::exists(s.state_dir() + "/pending/" + id + ".json"));
    EXPECT_FALSE(fs::exists(s.state_dir() + "/identity/" + id));
    EXPECT_TRUE(fs::is_empty(s.state_dir() + "/turns"));
    EXPECT_TRUE(test::boxes_with_prefix(prefix).empty());
}

// C-19: the box ends on its own deadline with no radiald left: its PID 1 (radial-init) ends it,
// and a workload that ignores SIGTERM and tries to SIGKILL its init changes nothing.
TEST(DurabilityDaemonLive, C19_ABoxDiesOnTimeWithNobodyWatching) {
    std::string inst = test::unique_instance_id("dl");
    std::string prefix = "radial-turn-" + inst + "-";
    test::BoxCleanup cleanup{prefix};
    // radial-init's own grace is run.stopGrace plus killGrace (docs/design.md §13.1).
    DaemonSetup s("instanceId = \"" + inst + "\"\nstopGrace = \"1s\"\n",
                  "[run.docker]\npull = \"never\"\nkillGrace = \"2s\"\n");
    std::string id =
        s.submit(test::shell_turn("trap '' TERM; kill -KILL 1; kill -STOP 1; sleep 60") +
                 "timeout = \"3s\"\n");
    const std::string box = prefix + id;
    std::chrono::steady_clock::time_point started;
    {
        DaemonProcess d(s);
        ASSERT_TRUE(test::wait_until([&] { return test::box_state(box) == "running"; }, 60s))
            << d.log();
        started = std::chrono::steady_clock::now();
        d.crash(); // and nothing is started again
    }
    // 3 s timeout + 1 s stopGrace + 2 s killGrace + 5 s.
    const auto budget = std::chrono::duration_cast<std::chrono::milliseconds>(
        started + 11s - std::chrono::steady_clock::now());
    ASSERT_TRUE(test::wait_until([&] { return test::box_state(box) != "running"; }, budget))
        << "box " << box << " outlived its deadline with no radiald running";
    auto code = test::run_process({"docker", "inspect", "--format", "{{.State.ExitCode}}", box});
    EXPECT_EQ(code.out, "124\n") << "the timeout's exit status";

    // A later start claims only what it saw: the box had ended with radial-init's 124 after the
    // turn's deadline, so at that deadline, not by itself; it read how before removing it
    // (docs/design.md §8.4).
    auto r = s.reconcile();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto rec = s.terminal(id);
    EXPECT_EQ(rec["status"], "reclaimed") << rec;
    EXPECT_EQ(rec["exitCode"], 124) << rec;
    EXPECT_EQ(rec["reason"],
              "the box had ended at the turn's deadline (exit 124: radial-init's exit when the "
              "timeout of 3s passed, as timeout(1); a command's own exit 124 before then would "
              "read the same, when the box ended not being known) before radiald came back; "
              "reconciliation read how and removed it");
    EXPECT_EQ(test::box_state(box), "gone");
}

// The lines of `log` that name both `turn` and `what`.
std::size_t lines_naming(const std::string& log, const std::string& turn, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = 0; at < log.size();) {
        auto end = log.find('\n', at);
        if (end == std::string::npos) end = log.size();
        const std::string_view line(log.data() + at, end - at);
        if (line.find(turn) != std::string_view::npos && line.find(what) != std::string_view::npos)
            ++n;
        at = end + 1;
    }
    return n;
}

// A store of other turns' secrets that cannot be read (docs/design.md §13.12) ends each turn the
// daemon claims with an error record naming it — once per turn, not a claim retried in a loop —
// and, mended, the next turn runs.
TEST(DurabilityDaemonLive, AnUnreadableSecretStoreEndsEachTurnOnceNamingIt) {
    const std::string inst = test::unique_instance_id("fp");
    test::BoxCleanup cleanup{"radial-turn-" + inst + "-"};
    DaemonSetup s("instanceId = \"" + inst + "\"\n");
    DaemonProcess d(s);
    const std::string store = s.state_dir() + "/secret-fingerprints";
    ASSERT_TRUE(test::wait_until([&] { return fs::is_directory(s.state_dir()); }, 120s)) << d.log();
    { std::ofstream(store) << "not a directory"; }
    ASSERT_TRUE(fs::is_regular_file(store));
    const std::string refused = s.submit(test::shell_turn("echo ran"));
    ASSERT_TRUE(s.wait_terminal({refused}, 240s)) << d.log();
    const auto rec = s.terminal(refused);
    EXPECT_EQ(rec["status"], "error") << rec;
    EXPECT_THAT(rec.value("error", ""), HasSubstr(store)) << rec;
    fs::remove(store);
    const std::string after = s.submit(test::shell_turn("echo ran"));
    ASSERT_TRUE(s.wait_terminal({after}, 240s)) << d.log();
    EXPECT_EQ(s.terminal(after)["status"], "succeeded") << s.terminal(after);
    // The first turn was claimed and ended once: its error is not in the log over and over.
    EXPECT_LE(lines_naming(d.log(), refused, store), 1u) << d.log();
}

// The same class: a queued turn of a session whose record was damaged after it was submitted ends
// once with an error naming the record, where the daemon claimed it again without end before.
TEST(DurabilityDaemonLive, ATurnOfADamagedSessionEndsOnceNamingItsRecord) {
    const std::string inst = test::unique_instance_id("ds");
    test::BoxCleanup cleanup{"radial-session-" + inst + "-"};
    DaemonSetup s("instanceId = \"" + inst + "\"\n");
    auto created = test::run_process(
        {RADIALD_PATH, "session", "create", "--config", s.config(), "--image", RADIAL_TEST_IMAGE},
        {}, 120s);
    ASSERT_EQ(created.exit_code, 0) << created.err;
    const std::string id = created.out.substr(0, created.out.find('\n'));
    // Spooled while no daemon runs; the record is damaged before one claims it.
    const std::string turn = s.submit(test::shell_turn("echo ran", "session = \"" + id + "\"\n"));
    const std::string record = s.state_dir() + "/sessions/" + id + ".json";
    ASSERT_TRUE(fs::is_regular_file(record));
    { std::ofstream(record, std::ios::trunc) << "{ damaged"; }
    DaemonProcess d(s);
    ASSERT_TRUE(s.wait_terminal({turn}, 240s)) << d.log();
    const auto rec = s.terminal(turn);
    EXPECT_EQ(rec["status"], "error") << rec;
    EXPECT_THAT(rec.value("error", ""), HasSubstr(record)) << rec;
    EXPECT_EQ(lines_naming(d.log(), turn, record), 1u) << d.log();
}

} // namespace
} // namespace radial
