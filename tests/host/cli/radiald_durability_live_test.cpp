// What survives a full state file system (docs/design.md §17, C-18): the state directory lives on a
// small tmpfs this test mounts itself (the live tests run as root), a real box fills it through its
// turn socket, and the turn's outcome must still reach the record file, `radiald status` and — once
// there is space again — the journal, without anything false on the way.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../../support/owned_instances.h"
#include "../../support/process_runner.h"
#include "../../support/small_disk.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

// `count` posts of a 900-byte record; prints each HTTP status on its own line.
std::string post_loop(int count) {
    return R"(P=$(head -c 900 /dev/zero | tr '\0' x); i=0
while [ $i -lt )" +
           std::to_string(count) + R"( ]; do
  curl -s -o /dev/null -w '%{http_code}\n' --unix-socket "${RADIAL_TURN_SOCKET#unix://}" \
       -H "Authorization: Bearer $RADIAL_TURN_TOKEN" -d "{\"type\":\"result\",\"payload\":\"$P\"}" \
       http://r/v1/records
  i=$((i+1))
done)";
}

struct Fixture {
    test::TempDir dir{"radial-c18"};
    // 8k over the journal's needs: the box user's passwd and group (docs/design.md §8.7) live there
    // too.
    test::SmallDisk disk{dir / "disk", "328k"};
    std::string state = dir / "disk/st";
    std::string config;

    // turnLogMaxBytes 0: the turn's output log (docs/design.md §11.7) would share the tiny disk
    // with the journal, and its writes, and its cut-back after a failed one, would move the point
    // at which the disk is full that these tests set up.
    explicit Fixture(const std::string& min_free = "64k") {
        config = dir.write("radiald.toml", "[run]\nstateDir = \"" + state +
                                               "\"\nturnLogMaxBytes = 0\nminFreeBytes = \"" +
                                               min_free + "\"\n[run.docker]\npull = \"never\"\n");
        test::record_state_dir(state); // its generated instance id names its boxes
    }
    test::ProcessResult radiald(std::vector<std::string> args) const {
        args.insert(args.begin(), RADIALD_PATH);
        args.insert(args.begin() + 2, {"--config", config});
        return test::run_process(args);
    }
    test::ProcessResult turn(const std::string& record, const std::string& script) const {
        return radiald({"turn", "--image", RADIAL_TEST_IMAGE, "--record-file", record, "--", "sh",
                        "-c", script});
    }
};

std::map<std::string, int> count_lines(const std::string& text) {
    std::map<std::string, int> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) ++out[line];
    return out;
}

TEST(DurabilityLive, C18_AFullStateDiskKeepsASucceededTurnsOutcome) {
    ASSERT_EQ(::geteuid(), 0u) << "mounting the test's tmpfs needs root";
    // minFreeBytes 0: no floor kept for outcomes (docs/design.md §9.6), so the box's records can
    // fill the file system and leave its terminal record nowhere to go.
    Fixture f("0");
    ASSERT_TRUE(f.disk.ok()) << "mount tmpfs failed";
    std::string record = f.dir / "rec.json"; // on another file system than the state directory

    auto r = f.turn(record, post_loop(300));
    // The turn's own status: the box exited 0.
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json rec = json::parse(test::read_file(record), nullptr, false);
    ASSERT_TRUE(rec.is_object()) << "no record file; stderr: " << r.err;
    EXPECT_EQ(rec["status"], "succeeded");
    EXPECT_EQ(rec["exitCode"], 0);
    ASSERT_TRUE(rec.contains("journalError")) << rec.dump() << r.err;
    EXPECT_THAT(rec["journalError"].get<std::string>(), HasSubstr("full"));
    EXPECT_THAT(r.err, HasSubstr("the journal is missing this turn's terminal record"));

    // Every post got 201 (stored) or 507 (not stored), and the disk did fill.
    auto codes = count_lines(r.out);
    EXPECT_EQ(codes["201"] + codes["507"], 300) << r.out;
    EXPECT_GT(codes["507"], 0) << r.out;
    const std::string id = rec["turnId"];

    // status: not running — ended, with its record pending.
    auto st = f.radiald({"status", "--json"});
    ASSERT_EQ(st.exit_code, 3) << st.err; // no daemon runs

    json sj = json::parse(st.out);
    EXPECT_TRUE(sj["running"].empty()) << st.out;
    ASSERT_EQ(sj["pending"].size(), 1u) << st.out;
    EXPECT_EQ(sj["pending"][0]["turnId"], id);
    EXPECT_EQ(sj["pending"][0]["status"], "succeeded");

    // Space returns; reconciliation journals the real outcome, not "reclaimed".
    ASSERT_TRUE(f.disk.grow("8m"));
    auto rc = f.radiald({"reconcile"});
    EXPECT_EQ(rc.exit_code, 0) << rc.err;
    EXPECT_THAT(rc.out, HasSubstr("journaled the kept terminal record of turn " + id));
    auto recs = f.radiald({"records", id, "--json"});
    ASSERT_EQ(recs.exit_code, 0) << recs.err;
    json rj = json::parse(recs.out);
    EXPECT_EQ(rj["terminal"]["status"], "succeeded") << recs.out;
    EXPECT_EQ(rj["terminal"]["exitCode"], 0);
    EXPECT_EQ(static_cast<int>(rj["records"].size()), codes["201"]);
    // Nothing of the turn is left on the state file system.
    EXPECT_FALSE(std::filesystem::exists(f.state + "/pending/" + id + ".json"));
    EXPECT_FALSE(std::filesystem::exists(f.state + "/turns/" + id));
    // And a later pass has nothing to say about it.
    auto again = f.radiald({"reconcile"});
    EXPECT_EQ(again.out, "nothing to reconcile\n") << again.err;
}

TEST(DurabilityLive, C18_ATurnIsNotStartedBelowTheFreeSpaceReserve) {
    ASSERT_EQ(::geteuid(), 0u) << "mounting the test's tmpfs needs root";
    Fixture f("1m"); // more than the whole 328k disk
    ASSERT_TRUE(f.disk.ok()) << "mount tmpfs failed";
    std::string record = f.dir / "rec.json";
    auto r = f.turn(record, "echo the box ran");
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.out, Not(HasSubstr("the box ran")));
    json rec = json::parse(test::read_file(record), nullptr, false);
    ASSERT_TRUE(rec.is_object()) << r.err;
    EXPECT_EQ(rec["status"], "error");
    EXPECT_THAT(rec["error"].get<std::string>(),
                HasSubstr("less than run.minFreeBytes (1048576 bytes); the turn was not started"));
    EXPECT_THAT(r.err, HasSubstr("run.minFreeBytes"));
}

// With no reserve configured and a disk already full, the journal refuses the turn before its box
// starts: the record file still says why, and nothing ran.
TEST(DurabilityLive, C18_ATurnTheJournalCannotTakeStillGetsItsRecordFile) {
    ASSERT_EQ(::geteuid(), 0u) << "mounting the test's tmpfs needs root";
    Fixture f("0");
    ASSERT_TRUE(f.disk.ok()) << "mount tmpfs failed";
    std::string record = f.dir / "rec.json";
    ASSERT_EQ(f.turn(record, "true").exit_code, 0); // the journal exists
    // Fill what is left of the disk.
    test::run_process({"sh", "-c", "cat /dev/zero > '" + f.state + "/filler'"});
    std::filesystem::remove(record);
    auto r = f.turn(record, "echo the box ran");
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.out, Not(HasSubstr("the box ran")));
    json rec = json::parse(test::read_file(record), nullptr, false);
    ASSERT_TRUE(rec.is_object()) << r.err;
    EXPECT_EQ(rec["status"], "error");
    // Whichever write SQLite tried first, the operating system's reason is named.
    EXPECT_THAT(rec["error"].get<std::string>(), HasSubstr("No space left on device"));
    EXPECT_THAT(rec["error"].get<std::string>(), HasSubstr(f.state + "/journal.sqlite3"));
}

} // namespace
} // namespace radial
