// Retention of the journal and the turn logs together (docs/design.md §11.6, §11.7): a turn the
// journal removes takes its log with it, and the logs' size bound removes ended turns' logs oldest
// first, never the log of a turn the journal holds in flight.
#include "turn/state_dir_upkeep.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include "../../support/small_disk.h"
#include "../../support/temp_dir.h"
#include "journal/journal_sqlite.h"
#include "log/logger.h"
#include "session/session_turn.h"
#include "turn/retention_clock.h"
#include "turn/turn_output_log.h"
#include "turn/turn_request.h"

namespace radial::turn {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

void make_aged_log(const std::string& state, const std::string& id, std::size_t bytes,
                   std::chrono::seconds age) {
    fs::create_directories(turn_log_dir(state));
    std::ofstream(turn_log_path(state, id), std::ios::binary) << std::string(bytes, 'x');
    fs::last_write_time(turn_log_path(state, id), fs::file_time_type::clock::now() - age);
}

TEST(PruneJournal, APrunedTurnsLogGoesWithItAndTheSizeBoundSparesARunningTurnsLog) {
    test::TempDir dir{"radial-upkeep"};
    const std::string state = dir.path();
    auto now = std::chrono::system_clock::now();
    auto clock_at = now - 2h; // the journal's clock, moved by the test
    auto journal =
        journal::open_sqlite_journal(state + "/journal.sqlite3", [&] { return clock_at; });
    auto add = [&](const std::string& id, journal::TurnState s) {
        journal->add_turn({id, "radial-turn-x-" + id, "fake", "img", "rt", "{}"}, s);
    };
    add("old", journal::TurnState::started);
    journal->set_terminal("old", "succeeded", "{}");
    clock_at = now;
    add("running", journal::TurnState::started);
    for (const char* id : {"mid", "recent"}) {
        add(id, journal::TurnState::started);
        journal->set_terminal(id, "succeeded", "{}");
    }
    make_aged_log(state, "old", 10, 400s);
    make_aged_log(state, "running", 100, 300s); // the oldest log, but still written
    make_aged_log(state, "mid", 100, 200s);
    make_aged_log(state, "recent", 40, 100s);

    config::HostConfig cfg;
    cfg.state_dir = state;
    cfg.journal_max_age_ms = 3'600'000; // "old" ended two hours ago
    cfg.journal_max_bytes = 0;
    cfg.turn_logs_max_bytes = 150;
    prune_journal(*journal, cfg, "recent");

    EXPECT_FALSE(journal->turn("old"));
    EXPECT_FALSE(fs::exists(turn_log_path(state, "old")));
    EXPECT_TRUE(fs::exists(turn_log_path(state, "running")));
    EXPECT_FALSE(fs::exists(turn_log_path(state, "mid"))); // 240 bytes > 150: the oldest ended one
    EXPECT_TRUE(fs::exists(turn_log_path(state, "recent"))); // 140 bytes: within the bound
    EXPECT_TRUE(journal->turn("mid")); // the size bound of the logs leaves the journal alone
}

// A journal whose clock and whose retention clocks the test moves: the wall clock (which stamps
// the journal's records too), CLOCK_BOOTTIME and the boot id.
struct SteppedClocks {
    test::TempDir dir{"radial-retain"};
    std::chrono::system_clock::time_point wall = std::chrono::system_clock::now();
    std::int64_t boottime_ms = 5'000;
    std::string boot = "boot-1";
    std::unique_ptr<journal::Journal> journal =
        journal::open_sqlite_journal(dir.path() + "/journal.sqlite3", [this] { return wall; });
    config::HostConfig cfg;
    SteppedClocks() {
        cfg.state_dir = dir.path();
        cfg.journal_max_age_ms = 3'600'000;
        cfg.journal_max_bytes = 0;
    }
    RetentionClocks clocks() {
        return {[this] {
                    return std::chrono::duration_cast<std::chrono::milliseconds>(
                               wall.time_since_epoch())
                        .count();
                },
                [this] { return boottime_ms; }, [this] { return boot; }};
    }
    // A turn that ends now, then the retention its end applies.
    void end_turn(const std::string& id) {
        journal->add_turn({id, "radial-turn-x-" + id, "fake", "img", "rt", "{}"},
                          journal::TurnState::started);
        journal->set_terminal(id, "succeeded", "{}");
        prune_journal(*journal, cfg, id, clocks());
    }
    void elapse(std::chrono::milliseconds d) {
        wall += d;
        boottime_ms += d.count();
    }
};

// The wall clock stepped a month forward between two turns' ends (an operator's `date -s`, NTP
// setting right a clock that was behind): measured on it, every finished turn was past
// journalMaxAge (1 h here) and the second turn's end removed them all. Ages count the time that
// elapsed on this boot; once an hour has, the first turn goes.
TEST(PruneJournal, AStepOfTheWallClockAgesNoTurn) {
    SteppedClocks c;
    c.end_turn("before");
    c.elapse(1s);
    c.wall += 24h * 30;
    c.end_turn("after");
    EXPECT_TRUE(c.journal->turn("before")) << "removed by a step of the wall clock";
    c.elapse(30min);
    c.end_turn("half-an-hour-on");
    EXPECT_TRUE(c.journal->turn("before"));
    c.elapse(31min);
    c.end_turn("an-hour-on");
    EXPECT_FALSE(c.journal->turn("before")) << "an hour elapsed: past journalMaxAge";
    EXPECT_TRUE(c.journal->turn("after"));
}

// A retention clock it cannot write (a state file system gone read-only) is read the same at
// every turn's end: the step, and the failure to record it, were said again each time. Said once.
TEST(RetentionClock, AStepItCannotRecordIsSaidOnce) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root: it mounts a tmpfs";
    test::TempDir dir{"radial-retain-ro"};
    const std::string state = dir / "state";
    test::SmallDisk disk(state, "1m");
    ASSERT_TRUE(disk.ok());
    std::int64_t wall = 1'700'000'000'000, boot = 5'000;
    const RetentionClocks clocks{[&] { return wall; }, [&] { return boot; },
                                 [] { return std::string("boot-1"); }};
    advance_retention_clock(state, clocks);
    ASSERT_EQ(::mount("tmpfs", state.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr), 0);
    std::vector<std::string> lines;
    log::set_sink([&](std::string_view l) { lines.emplace_back(l); });
    wall += 24 * 3'600'000; // a step forward
    for (int i = 0; i < 3; ++i) {
        wall += 1000;
        boot += 1000;
        advance_retention_clock(state, clocks);
    }
    wall += 48 * 3'600'000; // another step: news again
    advance_retention_clock(state, clocks);
    log::set_sink({});
    const auto said = [&](const std::string& what) {
        return std::count_if(lines.begin(), lines.end(), [&](const std::string& l) {
            return l.find(what) != std::string::npos;
        });
    };
    EXPECT_EQ(said("the wall clock stepped forward by 86400 s"), 1)
        << testing::PrintToString(lines);
    EXPECT_EQ(said("the wall clock stepped forward by 259200 s"), 1)
        << testing::PrintToString(lines);
    EXPECT_EQ(said("writing the retention clock"), 1) << testing::PrintToString(lines);
}

// A step backwards removes nothing either: the wall clock is an hour behind the turn's end, so
// however much time elapsed, that turn's age is measured on the earlier of the two.
TEST(PruneJournal, AStepBackwardsRemovesNothingEarly) {
    SteppedClocks c;
    c.end_turn("first");
    c.wall -= 3h;
    c.boottime_ms += 2 * 3'600'000;
    c.end_turn("second");
    EXPECT_TRUE(c.journal->turn("first"));
}

// A clock set a year ahead, then set right (a step backwards): the retention clock kept its lead,
// and a later step forward, up to that lead, counted in full — an operator's `date -s` two hours
// ahead removed a turn that had ended just now. Kept no further ahead than the wall clock, it
// counts only the time that elapsed.
TEST(PruneJournal, AStepBackwardsLeavesNoLeadForALaterStepForward) {
    SteppedClocks c;
    c.wall += 24h * 365;
    c.end_turn("in-the-wrong-year");
    c.wall -= 24h * 365;
    c.end_turn("now");
    c.elapse(1s);
    c.wall += 2h;
    c.end_turn("after-the-step");
    EXPECT_TRUE(c.journal->turn("now")) << "a step forward after a step backwards counted";
}

// After a reboot the time the machine was off is unknown: the wall clock counts again (never
// earlier than the retention clock was), and so does an unreadable retention clock.
TEST(PruneJournal, AfterARebootOrWithoutARetentionClockTheWallClockCounts) {
    // A reboot; a file that is no retention clock; one that parses but holds a time before the
    // epoch (negative: arithmetic on it made every session expire and kept every turn).
    for (const std::string& damage :
         {std::string("reboot"), std::string("garbage\n"),
          std::string("radial-retention-clock-1 boot-1 5000 -99999999999999 1\n")}) {
        SteppedClocks c;
        c.end_turn("old");
        c.wall += 2h;
        c.boottime_ms += 1'000;
        if (damage == "reboot") {
            c.boot = "boot-2";
            c.boottime_ms = 1'000;
        } else {
            std::ofstream(c.dir.path() + "/retention-clock", std::ios::trunc) << damage;
        }
        c.end_turn("new");
        EXPECT_FALSE(c.journal->turn("old")) << damage;
        EXPECT_TRUE(c.journal->turn("new"));
    }
}

// A session of 8 hours made now on `c`'s wall clock, with the lead its create keeps.
struct EightHourSession {
    SteppedClocks& c;
    session::SessionRecord rec;
    ClockLead lead;
    explicit EightHourSession(SteppedClocks& clocks) : c(clocks) {
        rec.id = "s1";
        rec.max_lifetime_ms = 8 * 3'600'000;
        rec.created_at_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(c.wall.time_since_epoch())
                .count();
        lead = current_clock_lead(c.cfg.state_dir, c.clocks());
    }
    // Whether a turn of it is refused now as past its maximum lifetime, its lead read as `kept`.
    bool ended(const ClockLead& kept) {
        try {
            session::check_session_lifetime(
                rec, elapsed_wall_time(c.cfg.state_dir, c.wall, kept, c.clocks()));
            return false;
        } catch (const RequestError&) {
            return true;
        }
    }
    bool ended() { return ended(lead); }
};

// A session's maximum lifetime is a deadline on the wall clock from its creation: a step forward
// of a month ended a session of 8 hours an hour in. It is compared with the time that elapsed.
TEST(RetentionClock, AStepOfTheWallClockEndsNoSessionEarly) {
    SteppedClocks c;
    EightHourSession s(c);
    c.elapse(1h);
    c.wall += 24h * 30;
    EXPECT_FALSE(s.ended()) << "ended by a step of the wall clock";
    c.elapse(7h);
    EXPECT_TRUE(s.ended()) << "eight hours elapsed";
}

// A session made after a step forward of the wall clock (a host booted with its clock behind, set
// right by NTP once radiald had read it): measured against the whole lead, it outlived its
// maximum lifetime by the step, for the rest of that boot. The lead kept at its create is taken
// off: only a step after it counts.
TEST(RetentionClock, ASessionMadeAfterAStepEndsOnTime) {
    SteppedClocks c;
    (void)advance_retention_clock(c.cfg.state_dir, c.clocks());
    c.elapse(1s);
    c.wall += 24h * 30; // the step, before the session
    EightHourSession s(c);
    ASSERT_EQ(s.lead.lead_ms, 30LL * 24 * 3'600'000);
    c.elapse(7h);
    EXPECT_FALSE(s.ended());
    c.elapse(1h);
    EXPECT_TRUE(s.ended()) << "eight hours elapsed since its create";
    // Kept in another boot: the whole lead is taken (the time off is unknown).
    EXPECT_FALSE(s.ended({s.lead.lead_ms, "another-boot"}));
}

} // namespace
} // namespace radial::turn
