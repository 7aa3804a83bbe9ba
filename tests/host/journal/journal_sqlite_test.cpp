// tests/host/journal/journal_sqlite_test.cpp — the SQLite turn journal (docs/design.md §11): round
// trips, sequence numbers under concurrency, refusals (asserted verbatim), file modes, schema
// versions, and crash safety against a real SIGKILL.
#include "journal/journal_sqlite.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../../support/process_runner.h"
#include "../../support/small_disk.h"
#include "../../support/temp_dir.h"
#include "journal/journal_file.h"
#include "journal/sqlite_db.h"

namespace radial::journal {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// A clock the test sets: every journal timestamp is whatever `now_ms` holds at the time.
struct ManualClock {
    std::shared_ptr<std::atomic<std::int64_t>> now_ms =
        std::make_shared<std::atomic<std::int64_t>>(1'764'422'100'000);

    JournalClock fn() const {
        return [ms = now_ms] {
            return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms->load()));
        };
    }
    void set(std::int64_t ms) const { now_ms->store(ms); }
};

TurnEntry entry(const std::string& id) {
    return {id, "radial-turn-local-" + id, "docker", "radial/busybox:latest", "result",
            // Secret names only, with the caller's own spacing: the journal must keep it as given.
            R"({"argv": ["agent", "--turn"],  "secrets": ["MODEL_KEY", "FORGE_TOKEN"]})"};
}

// Runs `f` and returns the JournalError it throws; fails the test if it throws nothing.
template <class F>
JournalError error_from(F&& f) {
    try {
        f();
    } catch (const JournalError& e) {
        return e;
    }
    ADD_FAILURE() << "expected a JournalError";
    return JournalError(JournalErrc::storage, "<none thrown>");
}

// Runs `f` on a test thread: a JournalError becomes a test failure instead of std::terminate.
template <class F>
void on_thread(F&& f) {
    try {
        f();
    } catch (const JournalError& e) {
        ADD_FAILURE() << e.what();
    }
}

class JournalSqlite : public ::testing::Test {
protected:
    test::TempDir dir{"radial-journal"};
    std::string path = dir / "state/journal.sqlite3";
    ManualClock clock;
    std::unique_ptr<Journal> journal = open_sqlite_journal(path, clock.fn());
};

// --- round trip -----------------------------------------------------------------------------

TEST_F(JournalSqlite, ATurnRoundTripsWithEveryStateRecordAndItsTerminal) {
    journal->add_turn(entry("t1"), TurnState::queued);
    clock.set(1'764'422'100'010);
    journal->set_state("t1", TurnState::claimed);
    clock.set(1'764'422'100'020);
    journal->set_state("t1", TurnState::started);
    clock.set(1'764'422'100'030);
    EXPECT_EQ(journal->append_record("t1", "result", R"({"ok":true})"), 1u);
    clock.set(1'764'422'100'040);
    EXPECT_EQ(journal->append_record("t1", "result", R"({"ok":false,"why":"x"})"), 2u);
    clock.set(1'764'422'100'050);
    journal->set_terminal("t1", "succeeded", R"({"turnId":"t1","status":"succeeded"})");

    std::optional<TurnDetails> d = journal->turn("t1");
    ASSERT_TRUE(d.has_value());
    TurnEntry want = entry("t1");
    EXPECT_EQ(d->entry.turn_id, "t1");
    EXPECT_EQ(d->entry.label, want.label);
    EXPECT_EQ(d->entry.runtime, "docker");
    EXPECT_EQ(d->entry.image, "radial/busybox:latest");
    EXPECT_EQ(d->entry.record_type, "result");
    EXPECT_EQ(d->entry.request_json, want.request_json); // byte for byte: nothing added

    ASSERT_EQ(d->states.size(), 4u);
    EXPECT_EQ(d->states[0].state, TurnState::queued);
    EXPECT_EQ(d->states[0].at_ms, 1'764'422'100'000);
    EXPECT_EQ(d->states[1].state, TurnState::claimed);
    EXPECT_EQ(d->states[1].at_ms, 1'764'422'100'010);
    EXPECT_EQ(d->states[2].state, TurnState::started);
    EXPECT_EQ(d->states[2].at_ms, 1'764'422'100'020);
    EXPECT_EQ(d->states[3].state, TurnState::finished);
    EXPECT_EQ(d->states[3].at_ms, 1'764'422'100'050);

    ASSERT_EQ(d->records.size(), 2u);
    EXPECT_EQ(d->records[0].seq, 1u);
    EXPECT_EQ(d->records[0].type, "result");
    EXPECT_EQ(d->records[0].payload_json, R"({"ok":true})");
    EXPECT_EQ(d->records[0].received_at_ms, 1'764'422'100'030);
    EXPECT_EQ(d->records[1].seq, 2u);
    EXPECT_EQ(d->records[1].payload_json, R"({"ok":false,"why":"x"})");
    EXPECT_EQ(d->records[1].received_at_ms, 1'764'422'100'040);

    EXPECT_EQ(d->terminal_json, R"({"turnId":"t1","status":"succeeded"})");
    EXPECT_EQ(d->status, "succeeded");
}

TEST_F(JournalSqlite, AnUnknownTurnReadsAsNothing) {
    journal->add_turn(entry("t1"), TurnState::queued);
    EXPECT_FALSE(journal->turn("t2").has_value());
}

TEST_F(JournalSqlite, ATurnWithoutTerminalHasNoTerminalAndNoStatus) {
    journal->add_turn(entry("t1"), TurnState::started);
    auto d = journal->turn("t1");
    ASSERT_TRUE(d.has_value());
    EXPECT_FALSE(d->terminal_json.has_value());
    EXPECT_EQ(d->status, "");
    ASSERT_EQ(d->states.size(), 1u);
    EXPECT_EQ(d->states[0].state, TurnState::started);
}

TEST_F(JournalSqlite, EverythingSurvivesClosingAndReopening) {
    journal->add_turn(entry("t1"), TurnState::started);
    journal->append_record("t1", "result", "[1,2,3]");
    journal->set_terminal("t1", "failed", R"({"exitCode":3})");
    journal.reset();

    auto reopened = open_sqlite_journal(path, clock.fn());
    auto d = reopened->turn("t1");
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->entry.request_json, entry("t1").request_json);
    ASSERT_EQ(d->records.size(), 1u);
    EXPECT_EQ(d->records[0].payload_json, "[1,2,3]");
    EXPECT_EQ(d->status, "failed");
    EXPECT_EQ(d->terminal_json, R"({"exitCode":3})");
}

// A reader opening the journal while another process holds a write transaction (the daemon
// journaling a turn) reads at once, as WAL lets it: opening took the write lock to look at the
// schema, and `radiald turns` failed after 5 s with "database is locked".
TEST_F(JournalSqlite, OpeningAJournalOfThisSchemaTakesNoWriteLock) {
    journal->add_turn(entry("t1"), TurnState::started);
    SqliteDb writer(path);
    writer.exec("BEGIN IMMEDIATE");
    writer.exec("UPDATE turns SET state = state");
    std::unique_ptr<Journal> reader;
    EXPECT_NO_THROW(reader = open_sqlite_journal(path, clock.fn()));
    ASSERT_TRUE(reader);
    EXPECT_TRUE(reader->turn("t1").has_value());
    writer.exec("ROLLBACK");
}

// --- sequence numbers ------------------------------------------------------------------------

TEST_F(JournalSqlite, SequenceNumbersCountFromOnePerTurnAndTurnsDoNotShareThem) {
    journal->add_turn(entry("a"), TurnState::started);
    journal->add_turn(entry("b"), TurnState::started);
    std::vector<std::uint64_t> a, b;
    for (int i = 0; i < 4; ++i) {
        a.push_back(journal->append_record("a", "result", "{}"));
        b.push_back(journal->append_record("b", "result", "{}"));
        b.push_back(journal->append_record("b", "result", "{}"));
    }
    EXPECT_EQ(a, (std::vector<std::uint64_t>{1, 2, 3, 4}));
    EXPECT_EQ(b, (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
    auto da = journal->turn("a");
    ASSERT_TRUE(da.has_value());
    ASSERT_EQ(da->records.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(da->records[i].seq, i + 1);
}

// Checks that `records` are numbered exactly 1..n in order and that each payload is the one its
// appender was handed back that number for.
void expect_dense(const std::vector<StoredRecord>& records,
                  const std::vector<std::pair<std::uint64_t, std::string>>& returned) {
    ASSERT_EQ(records.size(), returned.size());
    for (std::size_t i = 0; i < records.size(); ++i) EXPECT_EQ(records[i].seq, i + 1);
    std::vector<std::pair<std::uint64_t, std::string>> sorted = returned;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i) {
        EXPECT_EQ(sorted[i].first, i + 1) << "sequence numbers are not dense and unique";
        EXPECT_EQ(records[i].payload_json, sorted[i].second);
    }
}

TEST_F(JournalSqlite, ConcurrentAppendsFromFourThreadsGetADenseUniqueSequence) {
    constexpr int kThreads = 4, kPerThread = 40;
    journal->add_turn(entry("t1"), TurnState::started);
    journal->add_turn(entry("other"), TurnState::queued);
    std::vector<std::vector<std::pair<std::uint64_t, std::string>>> got(kThreads);
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            while (!go.load()) std::this_thread::yield();
            on_thread([&] {
                for (int i = 0; i < kPerThread; ++i) {
                    std::string payload =
                        "{\"thread\":" + std::to_string(t) + ",\"i\":" + std::to_string(i) + "}";
                    got[t].emplace_back(journal->append_record("t1", "result", payload), payload);
                }
            });
        });
    // Meanwhile another thread moves a second turn through its states, as the turn thread would.
    threads.emplace_back([&] {
        while (!go.load()) std::this_thread::yield();
        on_thread([&] {
            journal->set_state("other", TurnState::claimed);
            journal->set_state("other", TurnState::started);
            journal->set_terminal("other", "succeeded", "{}");
        });
    });
    go = true;
    for (auto& th : threads) th.join();

    std::vector<std::pair<std::uint64_t, std::string>> all;
    for (auto& v : got) all.insert(all.end(), v.begin(), v.end());
    auto d = journal->turn("t1");
    ASSERT_TRUE(d.has_value());
    expect_dense(d->records, all);
    for (auto& v : got) // each thread saw its own appends numbered in the order it made them
        EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
    auto other = journal->turn("other");
    ASSERT_TRUE(other.has_value());
    EXPECT_EQ(other->states.size(), 4u);
    EXPECT_EQ(other->status, "succeeded");
}

TEST_F(JournalSqlite, TwoConnectionsToOneFileAlsoGetADenseUniqueSequence) {
    // Two opens of one file stand in for two processes: the write lock, not the mutex, decides.
    auto second = open_sqlite_journal(path);
    journal->add_turn(entry("t1"), TurnState::started);
    constexpr int kPerJournal = 30;
    std::vector<std::pair<std::uint64_t, std::string>> a, b;
    std::thread ta([&] {
        on_thread([&] {
            for (int i = 0; i < kPerJournal; ++i) {
                std::string p = "{\"a\":" + std::to_string(i) + "}";
                a.emplace_back(journal->append_record("t1", "result", p), p);
            }
        });
    });
    std::thread tb([&] {
        on_thread([&] {
            for (int i = 0; i < kPerJournal; ++i) {
                std::string p = "{\"b\":" + std::to_string(i) + "}";
                b.emplace_back(second->append_record("t1", "result", p), p);
            }
        });
    });
    ta.join();
    tb.join();
    a.insert(a.end(), b.begin(), b.end());
    auto d = second->turn("t1");
    ASSERT_TRUE(d.has_value());
    expect_dense(d->records, a);
}

// --- refusals ---------------------------------------------------------------------------------

TEST_F(JournalSqlite, ARecordAfterTheTerminalIsRefused) {
    journal->add_turn(entry("t1"), TurnState::started);
    journal->append_record("t1", "result", "{}");
    journal->set_terminal("t1", "succeeded", "{}");
    JournalError e = error_from([&] { journal->append_record("t1", "result", "{}"); });
    EXPECT_EQ(e.code(), JournalErrc::turn_finished);
    EXPECT_EQ(std::string(e.what()),
              "appending a record to turn 't1' in '" + path +
                  "': turn 't1' already has its terminal record (status 'succeeded'); nothing is "
                  "written to a turn after its terminal record");
    EXPECT_EQ(journal->turn("t1")->records.size(), 1u);
}

TEST_F(JournalSqlite, ASecondTerminalAndALateStateAreRefused) {
    journal->add_turn(entry("t1"), TurnState::started);
    journal->set_terminal("t1", "timed_out", R"({"status":"timed_out"})");
    EXPECT_EQ(error_from([&] { journal->set_terminal("t1", "succeeded", "{}"); }).code(),
              JournalErrc::turn_finished);
    EXPECT_EQ(error_from([&] { journal->set_state("t1", TurnState::started); }).code(),
              JournalErrc::turn_finished);
    auto d = journal->turn("t1");
    EXPECT_EQ(d->status, "timed_out");
    EXPECT_EQ(d->terminal_json, R"({"status":"timed_out"})");
    EXPECT_EQ(d->states.size(), 2u);
}

// A turn that claimed a warm pool's box (docs/design.md §13.14): the journal names that box from
// then on, in the turn's details and its summary, until the turn is finished.
TEST_F(JournalSqlite, TheBoxOfATurnCanBeRenamedUntilItsTerminal) {
    journal->add_turn(entry("t1"), TurnState::claimed);
    journal->set_label("t1", "radial-pool-x-p1");
    EXPECT_EQ(journal->turn("t1")->entry.label, "radial-pool-x-p1");
    ASSERT_EQ(journal->in_flight().size(), 1u);
    EXPECT_EQ(journal->in_flight()[0].label, "radial-pool-x-p1");
    EXPECT_EQ(error_from([&] { journal->set_label("t1", ""); }).code(), JournalErrc::invalid_value);
    EXPECT_EQ(error_from([&] { journal->set_label("ghost", "b"); }).code(),
              JournalErrc::unknown_turn);
    journal->set_terminal("t1", "succeeded", "{}");
    EXPECT_EQ(error_from([&] { journal->set_label("t1", "other"); }).code(),
              JournalErrc::turn_finished);
    EXPECT_EQ(journal->turn("t1")->entry.label, "radial-pool-x-p1");
}

TEST_F(JournalSqlite, AnUnknownTurnIsRefused) {
    JournalError e = error_from([&] { journal->append_record("ghost", "result", "{}"); });
    EXPECT_EQ(e.code(), JournalErrc::unknown_turn);
    EXPECT_EQ(std::string(e.what()),
              "appending a record to turn 'ghost' in '" + path +
                  "': there is no turn 'ghost' in the journal; add it first");
    EXPECT_EQ(error_from([&] { journal->set_state("ghost", TurnState::started); }).code(),
              JournalErrc::unknown_turn);
    EXPECT_EQ(error_from([&] { journal->set_terminal("ghost", "error", "{}"); }).code(),
              JournalErrc::unknown_turn);
    EXPECT_TRUE(journal->recent_turns(10).empty());
}

TEST_F(JournalSqlite, ADuplicateTurnIdIsRefusedAndTheFirstTurnKept) {
    journal->add_turn(entry("t1"), TurnState::started);
    TurnEntry again = entry("t1");
    again.image = "other:image";
    JournalError e = error_from([&] { journal->add_turn(again, TurnState::queued); });
    EXPECT_EQ(e.code(), JournalErrc::duplicate_turn);
    EXPECT_EQ(std::string(e.what()), "adding turn 't1' to '" + path +
                                         "': turn 't1' already exists; turn ids must be unique");
    auto d = journal->turn("t1");
    EXPECT_EQ(d->entry.image, "radial/busybox:latest");
    EXPECT_EQ(d->states.size(), 1u);
}

TEST_F(JournalSqlite, StatesOnlyMoveForward) {
    journal->add_turn(entry("t1"), TurnState::started);
    JournalError back = error_from([&] { journal->set_state("t1", TurnState::claimed); });
    EXPECT_EQ(back.code(), JournalErrc::bad_transition);
    EXPECT_THAT(back.what(), HasSubstr("turn 't1' is already 'started'"));
    EXPECT_EQ(error_from([&] { journal->set_state("t1", TurnState::started); }).code(),
              JournalErrc::bad_transition);
    JournalError fin = error_from([&] { journal->set_state("t1", TurnState::finished); });
    EXPECT_EQ(fin.code(), JournalErrc::bad_transition);
    EXPECT_EQ(std::string(fin.what()),
              "setting the state of turn 't1' to 'finished' in '" + path +
                  "': a turn is finished only by its terminal record; use set_terminal");
    EXPECT_EQ(error_from([&] { journal->add_turn(entry("t2"), TurnState::finished); }).code(),
              JournalErrc::invalid_value);
    EXPECT_EQ(journal->turn("t1")->states.size(), 1u);
    EXPECT_FALSE(journal->turn("t2").has_value());
}

TEST_F(JournalSqlite, TextThatIsNotJsonIsRefused) {
    TurnEntry bad = entry("t1");
    bad.request_json = "{not json";
    JournalError e = error_from([&] { journal->add_turn(bad, TurnState::queued); });
    EXPECT_EQ(e.code(), JournalErrc::invalid_value);
    EXPECT_EQ(std::string(e.what()),
              "adding turn 't1' to '" + path + "': the request is not valid JSON; pass JSON text");
    journal->add_turn(entry("t1"), TurnState::started);
    EXPECT_EQ(error_from([&] { journal->append_record("t1", "result", "oops"); }).code(),
              JournalErrc::invalid_value);
    EXPECT_EQ(error_from([&] { journal->append_record("t1", "", "{}"); }).code(),
              JournalErrc::invalid_value);
    EXPECT_EQ(error_from([&] { journal->set_terminal("t1", "succeeded", ""); }).code(),
              JournalErrc::invalid_value);
    EXPECT_EQ(error_from([&] { journal->add_turn(entry(""), TurnState::queued); }).code(),
              JournalErrc::invalid_value);
    // Nothing of the refused calls was written: the next record is still number 1.
    EXPECT_EQ(journal->append_record("t1", "result", "{}"), 1u);
    EXPECT_FALSE(journal->turn("t1")->terminal_json.has_value());
}

// --- listings ---------------------------------------------------------------------------------

TEST_F(JournalSqlite, RecentTurnsAreNewestFirstAndLimited) {
    for (int i = 1; i <= 5; ++i) {
        clock.set(1000 * i);
        journal->add_turn(entry("t" + std::to_string(i)), TurnState::queued);
    }
    clock.set(5000); // same time as t5: insertion order decides
    journal->add_turn(entry("t6"), TurnState::queued);
    clock.set(9000);
    journal->set_state("t2", TurnState::started);
    journal->append_record("t2", "result", "{}");

    std::vector<TurnSummary> recent = journal->recent_turns(3);
    ASSERT_EQ(recent.size(), 3u);
    EXPECT_EQ(recent[0].turn_id, "t6");
    EXPECT_EQ(recent[1].turn_id, "t5");
    EXPECT_EQ(recent[2].turn_id, "t4");

    std::vector<TurnSummary> all = journal->recent_turns(100);
    ASSERT_EQ(all.size(), 6u);
    const TurnSummary& t2 = all[4];
    EXPECT_EQ(t2.turn_id, "t2");
    EXPECT_EQ(t2.label, "radial-turn-local-t2");
    EXPECT_EQ(t2.runtime, "docker");
    EXPECT_EQ(t2.image, "radial/busybox:latest");
    EXPECT_EQ(t2.state, TurnState::started);
    EXPECT_EQ(t2.status, "");
    EXPECT_EQ(t2.created_at_ms, 2000);
    EXPECT_EQ(t2.updated_at_ms, 9000);
    EXPECT_EQ(t2.record_count, 1u);
    EXPECT_EQ(all[5].record_count, 0u);
    EXPECT_TRUE(journal->recent_turns(0).empty());
}

std::vector<std::string> ids(const std::vector<TurnSummary>& turns) {
    std::vector<std::string> out;
    for (const auto& t : turns) out.push_back(t.turn_id);
    return out;
}

TEST_F(JournalSqlite, InFlightAndQueuedListTheRightTurnsOldestFirst) {
    clock.set(1000);
    journal->add_turn(entry("started-old"), TurnState::started);
    clock.set(2000);
    journal->add_turn(entry("queued-old"), TurnState::queued);
    clock.set(3000);
    journal->add_turn(entry("claimed"), TurnState::queued);
    journal->set_state("claimed", TurnState::claimed);
    clock.set(4000);
    journal->add_turn(entry("finished"), TurnState::started);
    journal->set_terminal("finished", "succeeded", "{}");
    clock.set(5000);
    journal->add_turn(entry("cancelled"), TurnState::queued);
    journal->set_terminal("cancelled", "error", R"({"reason":"cancelled"})");
    clock.set(6000);
    journal->add_turn(entry("queued-new"), TurnState::queued);

    EXPECT_EQ(ids(journal->in_flight()), (std::vector<std::string>{"started-old", "claimed"}));
    EXPECT_EQ(ids(journal->queued()), (std::vector<std::string>{"queued-old", "queued-new"}));
    auto flight = journal->in_flight();
    EXPECT_EQ(flight[0].state, TurnState::started);
    EXPECT_EQ(flight[1].state, TurnState::claimed);
}

// --- the file -----------------------------------------------------------------------------------

mode_t mode_of(const std::string& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
}

TEST_F(JournalSqlite, TheFileIs0600AndTheDirectoriesItCreated0700) {
    journal->add_turn(entry("t1"), TurnState::started); // something in the WAL
    EXPECT_EQ(mode_of(path), 0600u);
    EXPECT_EQ(mode_of(path + "-wal"), 0600u); // SQLite gives its side files the database's mode
    EXPECT_EQ(mode_of(dir / "state"), 0700u);

    std::string deep = dir / "a/b/c/journal.sqlite3";
    auto j = open_sqlite_journal(deep);
    EXPECT_EQ(mode_of(dir / "a"), 0700u);
    EXPECT_EQ(mode_of(dir / "a/b/c"), 0700u);
    EXPECT_EQ(mode_of(deep), 0600u);
}

TEST_F(JournalSqlite, AnExistingDirectoryKeepsItsMode) {
    std::filesystem::create_directory(dir / "shared");
    std::filesystem::permissions(dir / "shared", std::filesystem::perms(0755));
    auto j = open_sqlite_journal(dir / "shared/journal.sqlite3");
    EXPECT_EQ(mode_of(dir / "shared"), 0755u);
}

TEST_F(JournalSqlite, ItIsInWalModeAndCarriesItsSchemaVersionAndId) {
    journal.reset();
    SqliteDb db(path);
    EXPECT_EQ(db.query_text("PRAGMA journal_mode"), "wal");
    EXPECT_EQ(db.query_int("PRAGMA user_version"), kJournalSchemaVersion);
    EXPECT_EQ(db.query_int("PRAGMA application_id"), 0x52444C4A);
}

// A journal written by the previous release (schema version 1, no kind column) opens, is
// migrated, keeps its turns as turns, and takes checks from then on.
TEST_F(JournalSqlite, AVersionOneJournalIsMigratedAndItsTurnsStayTurns) {
    journal.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
    {
        SqliteDb db(path);
        db.exec("PRAGMA application_id = 1380207690");
        db.exec(kJournalSchemaV1);
        db.exec(R"sql(
INSERT INTO turns (turn_id, label, runtime, image, record_type, request_json, state,
                   created_at_ms, updated_at_ms)
VALUES ('old', 'radial-turn-i-old', 'docker', 'img', 'result', '{}', 'queued', 1, 1);
INSERT INTO turn_states (turn_id, state, at_ms) VALUES ('old', 'queued', 1);
PRAGMA user_version = 1;
)sql");
    }
    journal = open_sqlite_journal(path);
    auto old = journal->turn("old");
    ASSERT_TRUE(old);
    EXPECT_EQ(old->entry.kind, "turn");
    EXPECT_EQ(old->entry.label, "radial-turn-i-old");
    TurnEntry check = entry("c1");
    check.kind = "check";
    journal->add_turn(check, TurnState::claimed);
    EXPECT_EQ(journal->turn("c1")->entry.kind, "check");
    auto recent = journal->recent_turns(10);
    ASSERT_EQ(recent.size(), 2u);
    EXPECT_EQ(recent[0].kind, "check");
    EXPECT_EQ(recent[1].kind, "turn");
    journal.reset();
    SqliteDb db(path);
    EXPECT_EQ(db.query_int("PRAGMA user_version"), kJournalSchemaVersion);
}

// --- opening without changing it (docs/design.md §3.2) -----------------------------------------

TEST_F(JournalSqlite, AnUnchangedOpenOfACurrentJournalIsTheJournal) {
    journal->add_turn(entry("t1"), TurnState::started);
    journal.reset();
    auto j = open_sqlite_journal_unchanged(path);
    ASSERT_TRUE(j);
    EXPECT_TRUE(j->turn("t1"));
    j->add_turn(entry("t2"), TurnState::claimed);
    EXPECT_TRUE(j->turn("t2"));
}

TEST_F(JournalSqlite, AnUnchangedOpenCreatesNoJournal) {
    const std::string missing = dir / "elsewhere/journal.sqlite3";
    EXPECT_FALSE(open_sqlite_journal_unchanged(missing));
    EXPECT_FALSE(std::filesystem::exists(dir / "elsewhere"));
}

TEST_F(JournalSqlite, AnUnchangedOpenLeavesAVersionOneJournalUnmigrated) {
    journal.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
    {
        SqliteDb db(path);
        db.exec("PRAGMA application_id = 1380207690");
        db.exec(kJournalSchemaV1);
        db.exec("PRAGMA user_version = 1");
    }
    EXPECT_FALSE(open_sqlite_journal_unchanged(path));
    SqliteDb db(path);
    EXPECT_EQ(db.query_int("PRAGMA user_version"), 1);
    EXPECT_EQ(db.query_text("PRAGMA journal_mode"), "delete");
}

TEST_F(JournalSqlite, AnUnchangedOpenRefusesWhatAnOpenRefuses) {
    journal->add_turn(entry("t1"), TurnState::started);
    journal.reset();
    {
        SqliteDb db(path);
        db.exec("PRAGMA user_version = 7");
    }
    JournalError e = error_from([&] { open_sqlite_journal_unchanged(path); });
    EXPECT_EQ(e.code(), JournalErrc::newer_schema);
    EXPECT_EQ(std::string(e.what()),
              std::string(error_from([&] { open_sqlite_journal(path); }).what()));
    const std::string empty = dir.write("empty.sqlite3", "");
    EXPECT_THAT(error_from([&] { open_sqlite_journal_unchanged(empty); }).what(),
                HasSubstr("the file is empty (0 bytes)"));
}

TEST_F(JournalSqlite, AKindThatIsNeitherTurnNorCheckIsRefused) {
    TurnEntry e = entry("k1");
    e.kind = "lint";
    EXPECT_EQ(error_from([&] { journal->add_turn(e, TurnState::queued); }).code(),
              JournalErrc::invalid_value);
    EXPECT_FALSE(journal->turn("k1"));
}

TEST_F(JournalSqlite, AJournalFromANewerRadialdIsRefusedAndLeftUntouched) {
    journal->add_turn(entry("t1"), TurnState::started);
    journal.reset();
    {
        SqliteDb db(path);
        db.exec("PRAGMA user_version = 7");
    }
    JournalError e = error_from([&] { open_sqlite_journal(path); });
    EXPECT_EQ(e.code(), JournalErrc::newer_schema);
    EXPECT_EQ(std::string(e.what()),
              "opening the journal '" + path +
                  "': it has schema version 7, this radiald understands up to 2; upgrade "
                  "radiald, or move the file aside to start an empty journal");
    SqliteDb db(path);
    EXPECT_EQ(db.query_int("PRAGMA user_version"), 7);
    EXPECT_EQ(db.query_int("SELECT count(*) FROM turns"), 1);
}

TEST_F(JournalSqlite, AForeignSqliteDatabaseIsRefusedAndLeftUntouched) {
    std::string other = dir / "other.sqlite3";
    {
        SqliteDb db(other);
        db.exec("CREATE TABLE mine (x INTEGER)");
    }
    JournalError e = error_from([&] { open_sqlite_journal(other); });
    EXPECT_EQ(e.code(), JournalErrc::storage);
    EXPECT_EQ(std::string(e.what()),
              "opening the journal '" + other +
                  "': the file is an SQLite database but not a radiald journal; move it aside or "
                  "set run.stateDir elsewhere");
    SqliteDb db(other);
    EXPECT_EQ(db.query_int("SELECT count(*) FROM sqlite_schema"), 1);
}

TEST_F(JournalSqlite, AFileThatIsNotADatabaseIsRefused) {
    std::string junk = dir.write("junk.sqlite3", std::string(4096, 'x'));
    JournalError e = error_from([&] { open_sqlite_journal(junk); });
    EXPECT_EQ(e.code(), JournalErrc::storage);
    EXPECT_THAT(e.what(), HasSubstr("opening the journal '" + junk + "': "));
    EXPECT_THAT(e.what(), HasSubstr("file is not a database"));
    EXPECT_THAT(e.what(), HasSubstr("move it aside so radiald starts a new one"));
}

// A journal that lost its history must not be replaced by an empty one: that would reuse turn
// ids and make `radiald turns` say nothing ever ran.
TEST_F(JournalSqlite, AnEmptyJournalFileIsRefusedNamingItAndTheWayToRecover) {
    journal->add_turn(entry("t1"), TurnState::started);
    journal.reset();
    std::filesystem::resize_file(path, 0); // truncate -s 0
    JournalError e = error_from([&] { open_sqlite_journal(path); });
    EXPECT_EQ(e.code(), JournalErrc::storage);
    EXPECT_EQ(std::string(e.what()),
              "opening the journal '" + path +
                  "': the file is empty (0 bytes), but radiald only ever puts a complete "
                  "journal there, so its history was lost (truncated?); restore it from a "
                  "backup, or move it aside (with any 'journal.sqlite3-wal' beside it) to start "
                  "an empty journal, knowing that turn ids of the lost history may then be "
                  "reused");
    EXPECT_EQ(std::filesystem::file_size(path), 0u); // left as it was
}

TEST_F(JournalSqlite, AnEmptySqliteDatabaseAtTheJournalsPathIsRefused) {
    std::string other = dir / "empty.sqlite3";
    {
        // A valid SQLite file with a header but no application id and no tables.
        SqliteDb db(other);
        db.exec("CREATE TABLE scratch (x INTEGER); DROP TABLE scratch");
    }
    ASSERT_GT(std::filesystem::file_size(other), 0u);
    std::string before = test::read_file(other);
    JournalError e = error_from([&] { open_sqlite_journal(other); });
    EXPECT_EQ(e.code(), JournalErrc::storage);
    EXPECT_THAT(e.what(), HasSubstr("opening the journal '" + other +
                                    "': the file is an empty SQLite database, not a journal"));
    EXPECT_THAT(e.what(), HasSubstr("move it aside to start an empty journal"));
    EXPECT_EQ(test::read_file(other), before);
}

TEST_F(JournalSqlite, AMissingJournalIsCreatedCompleteAndLeavesNoTemporaryFile) {
    std::string fresh = dir / "fresh/journal.sqlite3";
    auto j = open_sqlite_journal(fresh);
    j->add_turn(entry("t1"), TurnState::queued);
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir / "fresh"))
        names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    // The WAL and its index belong to the open connection; nothing named .new-* stays behind.
    EXPECT_EQ(names, (std::vector<std::string>{"journal.sqlite3", "journal.sqlite3-shm",
                                               "journal.sqlite3-wal"}));
}

TEST(JournalOpen, ProcessesCreatingOneJournalAtOnceAllGetTheSameJournal) {
    test::TempDir dir("radial-journal");
    std::string path = dir / "journal.sqlite3";
    std::vector<std::thread> threads;
    std::atomic<int> added{0};
    for (int i = 0; i < 8; ++i)
        threads.emplace_back([&, i] {
            on_thread([&] {
                auto j = open_sqlite_journal(path);
                j->add_turn(entry("t" + std::to_string(i)), TurnState::queued);
                ++added;
            });
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(added.load(), 8);
    EXPECT_EQ(open_sqlite_journal(path)->recent_turns(100).size(), 8u);
}

TEST_F(JournalSqlite, ADirectoryThatCannotBeCreatedIsRefusedWithItsPath) {
    std::string file = dir.write("plain", "not a directory");
    JournalError e = error_from([&] { open_sqlite_journal(file + "/sub/journal.sqlite3"); });
    EXPECT_EQ(e.code(), JournalErrc::storage);
    EXPECT_EQ(std::string(e.what()), "opening the journal '" + file + "/sub/journal.sqlite3': '" +
                                         file +
                                         "' exists and is not a directory; move it aside or set "
                                         "run.stateDir to a directory");
}

// --- crash safety -----------------------------------------------------------------------------

TEST(JournalCrash, AKilledHostLeavesItsTurnInFlightWithItsRecords) {
    test::TempDir dir("radial-journal");
    std::string path = dir / "journal.sqlite3";
    test::BackgroundProcess child({JOURNAL_CRASH_CHILD, path, "t1", "settle"}, "/dev/null", true);
    std::optional<std::string> line = child.read_line();
    ASSERT_TRUE(line) << "the child exited before it was ready";
    ASSERT_EQ(*line, "ready");
    ASSERT_TRUE(child.running()) << "the child must still hold the journal open when killed";
    child.signal(SIGKILL);
    EXPECT_EQ(child.wait(), SIGKILL);
    EXPECT_FALSE(child.running());

    auto journal = open_sqlite_journal(path);
    std::vector<TurnSummary> flight = journal->in_flight();
    ASSERT_EQ(flight.size(), 1u);
    EXPECT_EQ(flight[0].turn_id, "t1");
    EXPECT_EQ(flight[0].state, TurnState::started);
    EXPECT_EQ(flight[0].record_count, 3u);
    auto d = journal->turn("t1");
    ASSERT_TRUE(d.has_value());
    EXPECT_FALSE(d->terminal_json.has_value());
    ASSERT_EQ(d->states.size(), 2u);
    EXPECT_EQ(d->states[0].state, TurnState::claimed);
    EXPECT_EQ(d->states[1].state, TurnState::started);
    ASSERT_EQ(d->records.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(d->records[i].seq, i + 1);
        EXPECT_EQ(d->records[i].payload_json, "{\"n\":" + std::to_string(i + 1) + "}");
    }
    // Reconciliation can then close the turn out.
    journal->set_terminal("t1", "error", R"({"reason":"reclaimed"})");
    EXPECT_TRUE(journal->in_flight().empty());
}

TEST(JournalCrash, AKillInTheMiddleOfWritingLosesNoReturnedRecordAndLeavesNoGap) {
    test::TempDir dir("radial-journal");
    std::string path = dir / "journal.sqlite3";
    test::BackgroundProcess child({JOURNAL_CRASH_CHILD, path, "t1", "stream"}, "/dev/null", true);
    std::uint64_t last_returned = 0;
    while (last_returned < 25)
        if (auto line = child.read_line())
            last_returned = std::stoull(*line);
        else
            break;
    ASSERT_EQ(last_returned, 25u) << "the child stopped appending early";
    ASSERT_TRUE(child.running());
    child.signal(SIGKILL); // lands while the child is appending as fast as it can
    EXPECT_EQ(child.wait(), SIGKILL);

    auto journal = open_sqlite_journal(path);
    auto d = journal->turn("t1");
    ASSERT_TRUE(d.has_value());
    // Every append that returned is on disk; a torn one is absent, never half there.
    ASSERT_GE(d->records.size(), last_returned);
    for (std::size_t i = 0; i < d->records.size(); ++i) {
        EXPECT_EQ(d->records[i].seq, i + 1);
        EXPECT_EQ(d->records[i].payload_json, "{\"n\":" + std::to_string(i + 1) + "}");
    }
    ASSERT_EQ(journal->in_flight().size(), 1u);
    // The journal is writable again and continues the sequence.
    EXPECT_EQ(journal->append_record("t1", "progress", "{}"), d->records.size() + 1);
}

} // namespace
} // namespace radial::journal

// --- retention (docs/design.md §11.6) -----------------------------------------------------------

namespace radial::journal {
namespace {

TEST_F(JournalSqlite, RetentionByAgeRemovesOldFinishedTurnsAndNeverAnUnfinishedOne) {
    clock.set(1'000);
    journal->add_turn(entry("old"), TurnState::started);
    journal->append_record("old", "result", "{\"n\":1}");
    journal->set_terminal("old", "succeeded", "{}");
    journal->add_turn(entry("running"), TurnState::started); // as old, but without its record
    clock.set(50'000);
    journal->add_turn(entry("new"), TurnState::started);
    journal->set_terminal("new", "failed", "{}");
    clock.set(60'000);

    // A turn the caller keeps (its request still spooled, or the turn just ended) stays.
    EXPECT_EQ(journal->prune(30'000, 0, [](const std::string& id) { return id == "old"; }), 0u);
    EXPECT_TRUE(journal->turn("old"));
    EXPECT_EQ(journal->prune(30'000, 0, nullptr), 1u);
    EXPECT_FALSE(journal->turn("old"));
    EXPECT_TRUE(journal->turn("running"));
    EXPECT_TRUE(journal->turn("new"));
    EXPECT_EQ(journal->prune(30'000, 0, nullptr), 0u); // nothing more to do
    EXPECT_EQ(journal->prune(0, 0, nullptr), 0u);      // no bound: nothing goes
}

TEST_F(JournalSqlite, RetentionBySizeRemovesTheTurnsThatEndedFirstUntilTheJournalFits) {
    const std::string big = "{\"blob\":\"" + std::string(64 * 1024, 'b') + "\"}";
    for (int i = 0; i < 40; ++i) {
        clock.set(1'000 + i);
        const std::string id = "t" + std::to_string(i);
        journal->add_turn(entry(id), TurnState::started);
        journal->append_record(id, "result", big);
        journal->set_terminal(id, "succeeded", "{}");
    }
    journal->add_turn(entry("running"), TurnState::started);
    for (int i = 0; i < 4; ++i) journal->append_record("running", "result", big);

    const std::uint64_t removed =
        journal->prune(0, 1u << 20, nullptr); // 1 MiB of pages in use at most
    EXPECT_GE(removed, 20u);
    EXPECT_LT(removed, 40u);
    EXPECT_FALSE(journal->turn("t0"));                       // the first to end went first
    EXPECT_TRUE(journal->turn("t39"));                       // the last to end stayed
    EXPECT_EQ(journal->turn("running")->records.size(), 4u); // never an unfinished turn
    // A bound only unfinished turns exceed removes every finished one and stops there.
    journal->prune(0, 1, [](const std::string& id) { return id == "t39"; });
    EXPECT_TRUE(journal->turn("t39")) << "kept";
    EXPECT_TRUE(journal->turn("running"));
    EXPECT_EQ(journal->recent_turns(100).size(), 2u);
}

// What the operator is told to do follows the operating system's reason where it says more than
// SQLite's code: a full file system (an I/O error with ENOSPC) is "full", not "check the disk for
// I/O errors", and a read-only one says so, not "check that radiald's user owns the journal".
TEST(JournalFile, AFullOrReadOnlyFileSystemIsNamedAsSuch) {
    test::TempDir dir("radial-jfs");
    const std::string mount = dir / "fs";
    test::SmallDisk disk(mount, "256k");
    ASSERT_TRUE(disk.ok()) << "mounting a tmpfs needs root: the suite runs as root";
    {
        auto kept = open_sqlite_journal(mount + "/journal.sqlite3"); // made while there is room
    }
    {
        std::ofstream fill(mount + "/fill", std::ios::binary);
        const std::string block(4096, 'x');
        while (fill.write(block.data(), block.size())) {
        }
    }
    for (const char* name : {"/new.sqlite3", "/journal.sqlite3"}) // a new one, the kept one
        try {
            auto j = open_sqlite_journal(mount + name);
            for (int i = 0; i < 64; ++i)
                j->add_turn({"t" + std::to_string(i), "l", "fake", "img", "result",
                             "{\"pad\": \"" + std::string(2048, 'r') + "\"}"},
                            TurnState::queued);
            ADD_FAILURE() << name << ": a full file system took the journal's turns";
        } catch (const JournalError& e) {
            EXPECT_THAT(e.what(), HasSubstr("the file system is full")) << e.what();
        }
    std::filesystem::remove(mount + "/fill");
    std::filesystem::remove(mount + "/new.sqlite3");
    ASSERT_EQ(::mount("tmpfs", mount.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr), 0);
    try {
        auto j = open_sqlite_journal(mount + "/other.sqlite3");
        ADD_FAILURE() << "a read-only file system took a new journal";
    } catch (const JournalError& e) {
        EXPECT_THAT(e.what(), HasSubstr("file system is read-only")) << e.what();
    }
}

// On a full file system the readers (turns, records, logs, status) still read a journal no
// radiald has open, where the read-write open fails at its side files — and also after such an
// open failed and left them, empty, behind (docs/design.md §11.5).
TEST(JournalFile, AJournalOnAFullFileSystemIsReadForReading) {
    test::TempDir dir("radial-jfull");
    const std::string mount = dir / "fs";
    test::SmallDisk disk(mount, "1m");
    ASSERT_TRUE(disk.ok()) << "mounting a tmpfs needs root: the suite runs as root";
    const std::string path = mount + "/journal.sqlite3";
    {
        auto j = open_sqlite_journal(path);
        j->add_turn({"t1", "l", "fake", "img", "result", "{}"}, TurnState::queued);
        j->set_terminal("t1", "succeeded", R"({"turnId":"t1","status":"succeeded"})");
    }
    ASSERT_FALSE(std::filesystem::exists(path + "-wal")) << "the last connection removes its log";
    {
        std::ofstream fill(mount + "/fill", std::ios::binary);
        const std::string block(4096, 'x');
        while (fill.write(block.data(), block.size())) {
        }
    }
    for (int round = 0; round < 2; ++round) {
        auto read = open_sqlite_journal_for_reading(path);
        const auto t1 = read->turn("t1");
        ASSERT_TRUE(t1) << round;
        EXPECT_EQ(t1->entry.turn_id, "t1");
        EXPECT_EQ(read->recent_turns(10).size(), 1u);
        EXPECT_THROW(read->add_turn({"t2", "l", "fake", "img", "result", "{}"}, TurnState::queued),
                     JournalError);
        // A writer's open fails on the full disk, leaving its side files; the next read still
        // works.
        EXPECT_THROW(open_sqlite_journal(path), JournalError) << "a read-write open on a full disk";
    }
}

// The readers (turns, records, logs, status) open the journal for reading: on a read-only file
// system (a backup mounted to be looked at) they read it, where the read-write open fails at its
// side files; writing through it fails. A journal whose write-ahead log still holds commits is
// refused there, naming the fix, rather than read without its last commits.
TEST(JournalFile, AJournalOnAReadOnlyFileSystemIsReadForReading) {
    test::TempDir dir("radial-jro");
    const std::string mount = dir / "fs";
    test::SmallDisk disk(mount, "1m");
    ASSERT_TRUE(disk.ok()) << "mounting a tmpfs needs root: the suite runs as root";
    const std::string path = mount + "/journal.sqlite3", pending = mount + "/pending.sqlite3";
    {
        auto j = open_sqlite_journal(path);
        j->add_turn({"t1", "l", "fake", "img", "result", "{}"}, TurnState::queued);
        j->set_terminal("t1", "succeeded", R"({"turnId":"t1","status":"succeeded"})");
        // A copy taken while the connection is open: its commits are still in its log.
        j->add_turn({"t2", "l", "fake", "img", "result", "{}"}, TurnState::queued);
        std::filesystem::copy_file(path, pending);
        std::filesystem::copy_file(path + "-wal", pending + "-wal");
    }
    ASSERT_EQ(::mount("tmpfs", mount.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr), 0);
    EXPECT_THROW(open_sqlite_journal(path), JournalError) << "the read-write open";
    auto read = open_sqlite_journal_for_reading(path);
    const auto t1 = read->turn("t1");
    ASSERT_TRUE(t1);
    EXPECT_EQ(t1->entry.turn_id, "t1");
    EXPECT_TRUE(read->turn("t2"));
    EXPECT_EQ(read->recent_turns(10).size(), 2u);
    EXPECT_THROW(read->add_turn({"t3", "l", "fake", "img", "result", "{}"}, TurnState::queued),
                 JournalError);
    try {
        open_sqlite_journal_for_reading(pending);
        ADD_FAILURE() << "a journal with commits in its log was read without them";
    } catch (const JournalError& e) {
        EXPECT_THAT(e.what(), HasSubstr("'pending.sqlite3-wal' is there")) << e.what();
        EXPECT_THAT(e.what(), HasSubstr("remount it read-write once")) << e.what();
    }
    // A journal a radiald has open through a path it may write (a read-only bind mount of a live
    // state directory): its side files are there, empty or not, and it is not read immutable.
    const std::string live = dir / "live", view = dir / "view";
    std::filesystem::create_directories(live);
    std::filesystem::create_directories(view);
    auto writer = open_sqlite_journal(live + "/journal.sqlite3");
    ASSERT_EQ(::mount(live.c_str(), view.c_str(), nullptr, MS_BIND, nullptr), 0);
    struct Unmount {
        std::string at;
        ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
    } unmount{view};
    ASSERT_EQ(::mount(nullptr, view.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr),
              0);
    try {
        open_sqlite_journal_for_reading(view + "/journal.sqlite3");
        ADD_FAILURE() << "a journal another connection has open was read as immutable";
    } catch (const JournalError& e) {
        EXPECT_THAT(e.what(), HasSubstr("a radiald has the journal open")) << e.what();
    }
}

} // namespace
} // namespace radial::journal
