// Retention of the journal and the turn logs together (docs/design.md §11.6, §11.7): a turn the
// journal removes takes its log with it, and the logs' size bound removes ended turns' logs oldest
// first, never the log of a turn the journal holds in flight.
#include "turn/state_dir_upkeep.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../../support/temp_dir.h"
#include "journal/journal_sqlite.h"
#include "turn/turn_output_log.h"

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

} // namespace
} // namespace radial::turn
