// Startup reconciliation (docs/design.md §8.3, docs/design.md §8.4) against the real fake plugin
// .so: exact ownership (case C-04), reclaimed records with what was known, and a second pass with
// nothing to do.
#include "daemon/reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "../../support/temp_dir.h"
#include "journal/journal_sqlite.h"
#include "loader/plugin_loader.h"
#include "log/logger.h"
#include "time/clock.h"
#include "turn/terminal_record.h"
#include "turn/terminal_reserve.h"

namespace radial::daemon {
namespace {
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

struct ReconcileFixture : ::testing::Test {
    loader::LoadedPlugin plugin =
        loader::load_plugin(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_good/fake.so");
    host::RuntimeClient client =
        host::RuntimeClient::create(plugin.library, plugin.descriptor, {"run.fake", {}},
                                    plugin.path, "t", [](std::uint32_t, std::string_view) {});
    test::TempDir dir;
    config::HostConfig cfg = [this] {
        config::HostConfig c;
        c.state_dir = dir.path();
        c.instance_id = "inst1";
        c.container_runtime = "fake";
        return c;
    }();
    std::unique_ptr<journal::Journal> journal =
        journal::open_sqlite_journal(dir / "journal.sqlite3");
    Spool spool{dir.path()};
    std::vector<std::thread> boxes;
    std::vector<std::string> labels;
    std::vector<std::string> lines;

    void SetUp() override {
        log::set_sink([this](std::string_view l) { lines.emplace_back(l); });
    }
    void TearDown() override {
        for (const auto& l : labels) client.kill(l);
        for (auto& b : boxes) b.join();
        log::set_sink({});
    }

    // A box that runs until killed (the fake runtime's "sleep"), like a turn of a dead daemon.
    void start_box(const std::string& label) {
        labels.push_back(label);
        boxes.emplace_back([this, label] {
            ContainerSpec s;
            s.label = label;
            s.image = "img";
            s.argv = {"sleep", "60000"};
            client.run(s, [](std::uint32_t, std::string_view) { return true; });
        });
        for (int i = 0; i < 500; ++i) {
            auto l = client.list_by_label(label);
            if (std::find(l.begin(), l.end(), label) != l.end()) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        FAIL() << "box " << label << " never started";
    }
    std::vector<std::string> alive(const std::string& prefix) {
        return client.list_by_label(prefix);
    }
};

// C-04: a startup reconcile of inst1 removes only inst1's orphans — never inst10's, a foreign box
// or a live turn.
TEST_F(ReconcileFixture, C04_OwnershipIsAnExactPrefixNeverASubstring) {
    for (const auto* l : {"radial-turn-inst1-7", "radial-turn-inst1-70", "radial-turn-inst10-7",
                          "x-radial-turn-inst1-7", "radial-turnX-inst1-7"})
        start_box(l);
    auto killed = kill_orphan_boxes(cfg, client,
                                    [] { return std::set<std::string>{"radial-turn-inst1-70"}; });
    EXPECT_THAT(killed, ElementsAre("radial-turn-inst1-7"));
    EXPECT_THAT(alive(""), UnorderedElementsAre("radial-turn-inst1-70", "radial-turn-inst10-7",
                                                "x-radial-turn-inst1-7", "radial-turnX-inst1-7"));
}

// A runtime that lists every box whatever the prefix (the zoo's list-everything defect) gets each
// foreign label it lists warned about once, not once per prefix and listing of the removal's
// checks (docs/design.md §8.4).
TEST_F(ReconcileFixture, AForeignLabelAListingGivesIsWarnedAboutOnce) {
    loader::LoadedPlugin zoo = loader::load_plugin(std::string(RADIAL_ZOO_PLUGIN_ROOT) +
                                                   "/list_everything/zoo_list_everything.so");
    host::RuntimeClient loose =
        host::RuntimeClient::create(zoo.library, zoo.descriptor, {"run.zoo-list-everything", {}},
                                    zoo.path, "t", [](std::uint32_t, std::string_view) {});
    std::vector<std::thread> runs;
    for (const auto* label : {"foreign-box-1", "radial-turn-inst1-orphan"})
        runs.emplace_back([&loose, label] {
            ContainerSpec spec;
            spec.label = label;
            spec.image = "img";
            spec.argv = {"sleep", "600"};
            loose.run(spec, [](std::uint32_t, std::string_view) { return true; });
        });
    for (int i = 0; i < 2500 && loose.list_by_label("").size() < 2; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_EQ(loose.list_by_label("").size(), 2u);
    EXPECT_THAT(kill_orphan_boxes(cfg, loose, {}), ElementsAre("radial-turn-inst1-orphan"));
    loose.kill("foreign-box-1");
    for (auto& r : runs) r.join();
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [](const std::string& l) {
                                return l.find("listed box 'foreign-box-1'") != std::string::npos;
                            }),
              1);
}

TEST_F(ReconcileFixture, InFlightTurnsAreReclaimedWithWhatWasKnown) {
    journal->add_turn({"a", "radial-turn-inst1-a", "fake", "img", "result", "{}"},
                      journal::TurnState::queued);
    journal->set_state("a", journal::TurnState::claimed);
    journal->set_state("a", journal::TurnState::started);
    journal->append_record("a", "result", R"({"ok":1})");
    journal->append_record("a", "result", R"({"ok":2})");
    journal->add_turn({"b", "radial-turn-inst1-b", "fake", "img", "result", "{}"},
                      journal::TurnState::claimed);
    start_box("radial-turn-inst1-a");

    auto report = reconcile(cfg, client, *journal, spool);
    EXPECT_THAT(report.killed_boxes, ElementsAre("radial-turn-inst1-a"));
    EXPECT_THAT(report.reclaimed_turns, ElementsAre("a", "b"));
    EXPECT_THAT(alive("radial-turn-inst1-"), IsEmpty());

    auto a = journal->turn("a");
    EXPECT_EQ(a->status, "reclaimed");
    auto rec = nlohmann::json::parse(*a->terminal_json);
    EXPECT_EQ(rec["status"], "reclaimed");
    EXPECT_EQ(rec["recordsReceived"], 2);
    EXPECT_EQ(rec["label"], "radial-turn-inst1-a");
    EXPECT_EQ(rec["reason"],
              "the radiald running it stopped while its box ran; its box was still there and "
              "was removed by reconciliation (how its command ended is not known: runtime 'fake' "
              "cannot tell how a box ended)");
    auto started_ms = a->states[2].at_ms;
    EXPECT_EQ(rec["startedAt"], turn::format_timestamp(std::chrono::system_clock::time_point(
                                    std::chrono::milliseconds(started_ms))));
    auto b = nlohmann::json::parse(*journal->turn("b")->terminal_json);
    EXPECT_EQ(b["status"], "reclaimed");
    EXPECT_EQ(b["recordsReceived"], 0);
    EXPECT_EQ(b["reason"],
              "the radiald running it stopped after claiming it, before its box started");
}

// A turn whose box is not there any more must not be said to have had its box removed; nor,
// with nothing posted from it, to have had a box that ran: "started" is journaled before the box
// is made.
TEST_F(ReconcileFixture, AStartedTurnWhoseBoxIsGoneSaysSo) {
    journal->add_turn({"g", "radial-turn-inst1-g", "fake", "img", "result", "{}"},
                      journal::TurnState::started);
    journal->add_turn({"p", "radial-turn-inst1-p", "fake", "img", "result", "{}"},
                      journal::TurnState::started);
    journal->append_record("p", "result", "{}");
    auto report = reconcile(cfg, client, *journal, spool);
    EXPECT_THAT(report.killed_boxes, IsEmpty());
    EXPECT_THAT(report.reclaimed_turns, ElementsAre("g", "p"));
    auto rec = nlohmann::json::parse(*journal->turn("g")->terminal_json);
    EXPECT_EQ(rec["status"], "reclaimed");
    EXPECT_EQ(rec["reason"],
              "the radiald running it stopped after the turn started; no box of it was there when "
              "reconciliation looked: it may never have been made, or it ran and was removed (how "
              "its command ended is not known: runtime 'fake' cannot tell how a box ended)");
    rec = nlohmann::json::parse(*journal->turn("p")->terminal_json);
    EXPECT_EQ(rec["reason"],
              "the radiald running it stopped while its box ran (it posted 1 record(s)); its box "
              "was already gone when reconciliation looked (how its command ended is not known: "
              "runtime 'fake' cannot tell how a box ended)");
}

// A warm pool box's PID 1 ends at the box's own idle deadline, whatever the turn's exec did: its
// exit is not the command's, and the record must not carry it (docs/design.md §13.14, §8.4).
// A one-shot turn's ended box still gives its ending.
TEST_F(ReconcileFixture, AWarmTurnsRecordNeverTakesItsPoolBoxsEndingForItsCommands) {
    host::ConfigEntry ended;
    ended.key = "ended";
    ended.kind = RADIAL_CONFIG_STRING_ARRAY;
    ended.items = {"radial-pool-inst1-p=0", "radial-turn-inst1-o=3"};
    auto inspecting =
        host::RuntimeClient::create(plugin.library, plugin.descriptor, {"run.fake", {ended}},
                                    plugin.path, "t", [](std::uint32_t, std::string_view) {});
    journal->add_turn({"p", "radial-turn-inst1-p", "fake", "img", "result", "{}"},
                      journal::TurnState::started);
    journal->set_label("p", "radial-pool-inst1-p"); // claimed from the pool
    journal->add_turn({"o", "radial-turn-inst1-o", "fake", "img", "result", "{}"},
                      journal::TurnState::started);
    auto report = reconcile(cfg, inspecting, *journal, spool);
    EXPECT_THAT(report.reclaimed_turns, UnorderedElementsAre("p", "o"));
    auto pooled = nlohmann::json::parse(*journal->turn("p")->terminal_json);
    EXPECT_EQ(pooled["status"], "reclaimed");
    EXPECT_FALSE(pooled.contains("exitCode")) << pooled;
    EXPECT_EQ(pooled["reason"],
              "the radiald running it stopped while it ran as an exec in warm pool box "
              "'radial-pool-inst1-p'; the box had ended (exit 0), which is its own end, not the "
              "exec's; how its command ended is not known");
    auto own = nlohmann::json::parse(*journal->turn("o")->terminal_json);
    EXPECT_EQ(own["exitCode"], 3) << own;
}

// A turn's record is kept in its reserve before the journal takes it (docs/design.md §11.5): a
// crash after the journal took it, before the reserve went, leaves both. The journal's record
// stands, alone; the reserve goes with the residue.
TEST_F(ReconcileFixture, AKeptRecordOfATurnTheJournalEndedIsNotJournaledAgain) {
    journal->add_turn({"c", "radial-turn-inst1-c", "fake", "img", "result", "{}"},
                      journal::TurnState::started);
    journal->set_terminal("c", "succeeded", R"({"turnId":"c","status":"succeeded"})");
    {
        auto reserve = turn::TerminalReserve::create(cfg.state_dir, "c");
        turn::TerminalRecord kept;
        kept.turn_id = "c";
        kept.status = turn::TurnStatus::failed;
        ASSERT_EQ(reserve.keep(kept), "");
    }
    auto report = reconcile(cfg, client, *journal, spool);
    EXPECT_THAT(report.journaled_pending, IsEmpty());
    EXPECT_THAT(report.reclaimed_turns, IsEmpty());
    EXPECT_EQ(journal->turn("c")->status, "succeeded");
    EXPECT_EQ(*journal->turn("c")->terminal_json, R"({"turnId":"c","status":"succeeded"})");
    EXPECT_FALSE(turn::read_pending(cfg.state_dir, "c"));
}

// A box that ended with 124 after its turn's deadline was ended by radial-init at that deadline
// (docs/design.md §3.7): its record does not say the command ended by itself. One that ended
// with 124 before its deadline ended by itself, as one without a timeout does.
TEST_F(ReconcileFixture,
       ABoxThatEndedWithRadialInits124AfterItsDeadlineIsNotSaidToHaveEndedByItself) {
    host::ConfigEntry ended;
    ended.key = "ended";
    ended.kind = RADIAL_CONFIG_STRING_ARRAY;
    ended.items = {"radial-turn-inst1-late=124", "radial-turn-inst1-early=124",
                   "radial-turn-inst1-none=124"};
    auto inspecting =
        host::RuntimeClient::create(plugin.library, plugin.descriptor, {"run.fake", {ended}},
                                    plugin.path, "t", [](std::uint32_t, std::string_view) {});
    journal->add_turn(
        {"late", "radial-turn-inst1-late", "fake", "img", "result", R"({"timeoutMs":60000})"},
        journal::TurnState::started);
    journal->add_turn(
        {"early", "radial-turn-inst1-early", "fake", "img", "result", R"({"timeoutMs":36000000})"},
        journal::TurnState::started);
    journal->add_turn({"none", "radial-turn-inst1-none", "fake", "img", "result", "{}"},
                      journal::TurnState::started);
    // Reconciliation two hours after the turns started: past the minute, not the ten hours.
    time::ManualClock clock;
    clock.set_wall(std::chrono::system_clock::now() + std::chrono::hours(2));
    auto report = reconcile(cfg, inspecting, *journal, spool, clock);
    EXPECT_THAT(report.reclaimed_turns, UnorderedElementsAre("late", "early", "none"));
    auto late = nlohmann::json::parse(*journal->turn("late")->terminal_json);
    EXPECT_EQ(late["exitCode"], 124) << late;
    EXPECT_EQ(late["reason"],
              "the box had ended at the turn's deadline (exit 124: radial-init's exit when the "
              "timeout of 1m passed, as timeout(1); a command's own exit 124 before then would "
              "read the same, when the box ended not being known) before radiald came back; it "
              "was gone when reconciliation came to remove it");
    for (const char* id : {"early", "none"}) {
        auto rec = nlohmann::json::parse(*journal->turn(id)->terminal_json);
        EXPECT_EQ(rec["exitCode"], 124) << rec;
        EXPECT_THAT(rec["reason"].get<std::string>(),
                    ::testing::StartsWith("the box had ended by itself (exit 124)"))
            << rec;
    }
}

TEST_F(ReconcileFixture, QueuedTurnsStayQueuedAndASecondPassFindsNothingToDo) {
    SpooledRequest r;
    r.turn_id = "q";
    r.image = "img";
    r.argv = {"echo"};
    ASSERT_TRUE(spool.enqueue(r));
    journal->add_turn(queued_entry(r, cfg), journal::TurnState::queued);
    journal->add_turn({"s", "radial-turn-inst1-s", "fake", "img", "result", "{}"},
                      journal::TurnState::started);
    start_box("radial-turn-inst1-s");

    auto first = reconcile(cfg, client, *journal, spool);
    EXPECT_THAT(first.queue.runnable, ElementsAre("q"));
    EXPECT_FALSE(first.nothing_done());
    EXPECT_EQ(journal->turn("q")->states.back().state, journal::TurnState::queued);

    auto second = reconcile(cfg, client, *journal, spool);
    EXPECT_TRUE(second.nothing_done());
    EXPECT_THAT(second.queue.runnable, ElementsAre("q"));
}

} // namespace
} // namespace radial::daemon
