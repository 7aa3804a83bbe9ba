// run.stopGrace end to end (docs/design.md §13.1): a timed-out turn's command gets SIGTERM and the
// grace to end by itself, so a harness's `trap … TERM` cleanup runs; one that ignores SIGTERM is
// killed once the grace is over; 0 kills at once. The real radiald, docker plugin and engine.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {

// A workspace the box's default user can write.
struct Workspace {
    test::TempDir dir{"radial-grace"};
    Workspace() { EXPECT_EQ(::chown(dir.path().c_str(), 65534, 65534), 0); }
};

const char* kTrapping =
    "trap 'echo cleaned > /work/trap.txt; exit 7' TERM; while :; do sleep 0.1; done";

TEST(StopGraceLive, ATimedOutCommandsTrapRunsWithinTheGrace) {
    Workspace ws;
    test::RadialdSetup s("stopGrace = \"20s\"\n");
    auto t = s.turn({"--workspace", ws.dir.path(), "--timeout", "2s"}, {"sh", "-c", kTrapping});
    EXPECT_EQ(t.record["status"], "timed_out") << t.result.err;
    EXPECT_EQ(test::read_file(ws.dir / "trap.txt"), "cleaned\n") << "the trap ran";
    EXPECT_EQ(t.record["stoppedInGrace"], true) << t.record.dump();
    // The command's own end, beside the timeout that asked for it.
    EXPECT_EQ(t.record.value("exitCode", -1), 7) << t.record.dump();
    EXPECT_LT(t.record["durationMs"].get<std::int64_t>(), 20'000) << "not the whole grace";
}

TEST(StopGraceLive, ACommandIgnoringSigtermIsKilledOnceTheGraceIsOver) {
    Workspace ws;
    test::RadialdSetup s("stopGrace = \"1s\"\n");
    auto t = s.turn({"--workspace", ws.dir.path(), "--timeout", "2s"},
                    {"sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"});
    EXPECT_EQ(t.record["status"], "timed_out") << t.result.err;
    EXPECT_EQ(t.record["stoppedInGrace"], false) << t.record.dump();
    EXPECT_FALSE(t.record.contains("exitCode")) << "killed, it had no exit of its own";
    EXPECT_GE(t.record["durationMs"].get<std::int64_t>(), 3'000) << "the grace was given";
}

// A turn stopped by radiald (Ctrl-C here; a daemon's shutdown the same way) gets the grace too:
// the trap runs, and the record says the box ended in it only when it did. The kill removed the
// box at once, and the record said it ended in the grace.
TEST(StopGraceLive, AStoppedTurnsCommandGetsTheGraceAndTheRecordTellsTheTruth) {
    for (const bool traps : {true, false}) {
        Workspace ws;
        test::RadialdSetup s("stopGrace = \"" + std::string(traps ? "20s" : "1s") + "\"\n");
        const std::string record = s.dir() / "record.json";
        test::BackgroundProcess turn(
            {RADIALD_PATH, "turn", "--config", s.config(), "--image", RADIAL_TEST_IMAGE,
             "--record-file", record, "--workspace", ws.dir.path(), "--", "sh", "-c",
             traps ? std::string("echo ready; ") + kTrapping
                   : "trap '' TERM; echo ready; while :; do sleep 0.1; done"},
            "/dev/null", true);
        ASSERT_EQ(turn.read_line(), "ready") << traps;
        turn.signal(SIGINT);
        EXPECT_EQ(turn.wait(), 130) << traps;
        const auto rec = nlohmann::json::parse(test::read_file(record));
        EXPECT_EQ(rec["reason"], "interrupted") << rec.dump();
        EXPECT_EQ(rec["stoppedInGrace"], traps) << rec.dump();
        EXPECT_EQ(rec.value("exitCode", -1), traps ? 7 : -1) << rec.dump();
        if (traps)
            EXPECT_EQ(test::read_file(ws.dir / "trap.txt"), "cleaned\n") << "the trap ran";
        else
            EXPECT_GE(rec["durationMs"].get<std::int64_t>(), 1'000) << "the grace was given";
    }
}

// (radial-init's own deadline still sends SIGTERM as the box is removed, so whether a trap gets
// to run then is a race, and not asserted.)
TEST(StopGraceLive, ZeroKillsAtOnceAndSaysNothingOfAGrace) {
    test::RadialdSetup s("stopGrace = \"0s\"\n");
    auto t = s.turn({"--timeout", "2s"}, {"sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"});
    EXPECT_EQ(t.record["status"], "timed_out") << t.result.err;
    EXPECT_FALSE(t.record.contains("stoppedInGrace")) << t.record.dump();
}

} // namespace
} // namespace radial
