// The queue scan (docs/design.md §12.3, §4): spool and journal read together; nothing submitted is
// dropped without a terminal record.
#include "daemon/turn_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../../support/temp_dir.h"
#include "journal/journal_sqlite.h"
#include "log/logger.h"
#include "time/clock.h"

namespace radial::daemon {
namespace {
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct QueueFixture : ::testing::Test {
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
    TurnQueue queue{cfg, *journal, spool};

    void SetUp() override {
        log::set_sink([](std::string_view) {});
    }
    void TearDown() override { log::set_sink({}); }

    SpooledRequest request(const std::string& id) {
        SpooledRequest r;
        r.turn_id = id;
        r.image = "img";
        r.argv = {"echo", id};
        r.secrets = {"TOKEN"};
        return r;
    }
    // What `radiald submit` does.
    void submit(const std::string& id) {
        ASSERT_TRUE(spool.enqueue(request(id)));
        journal->add_turn(queued_entry(request(id), cfg), journal::TurnState::queued);
    }
    std::string status(const std::string& id) { return journal->turn(id)->status; }
};

TEST_F(QueueFixture, QueuedTurnsAreRunnableOldestFirst) {
    submit("b");
    submit("a");
    submit("c");
    auto scan = queue.scan({});
    EXPECT_THAT(scan.runnable, ElementsAre("b", "a", "c"));
    EXPECT_THAT(scan.lost, IsEmpty());
}

TEST_F(QueueFixture, ActiveTurnsAreLeftAlone) {
    submit("a");
    submit("b");
    EXPECT_THAT(queue.scan({"a"}).runnable, ElementsAre("b"));
}

TEST_F(QueueFixture, ARequestWithoutAJournalEntryIsJournaledQueued) {
    ASSERT_TRUE(spool.enqueue(request("dropped-in")));
    auto scan = queue.scan({});
    EXPECT_THAT(scan.admitted, ElementsAre("dropped-in"));
    EXPECT_THAT(scan.runnable, ElementsAre("dropped-in"));
    auto t = journal->turn("dropped-in");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->entry.label, "radial-turn-inst1-dropped-in");
    EXPECT_EQ(t->entry.runtime, "fake");
    auto req = nlohmann::json::parse(t->entry.request_json);
    EXPECT_EQ(req["env"], nlohmann::json::object());
    EXPECT_EQ(req["secrets"], nlohmann::json::parse(R"(["TOKEN"])"));
}

// A request the daemon finds before its submit journaled it is the usual race (the daemon's watch
// is quicker), logged at debug; one that waited in the spool longer is what the line is for, a
// submit that died between the two: info (docs/design.md §12.1).
TEST_F(QueueFixture, ARequestFoundBeforeItsSubmitJournaledItIsNoNewsUnlessItWaited) {
    std::vector<std::string> lines;
    log::set_sink([&](std::string_view l) { lines.emplace_back(l); });
    log::set_min_level(log::Level::debug);
    time::ManualClock clock;
    TurnQueue q{cfg, *journal, spool, clock};
    ASSERT_TRUE(spool.enqueue(request("fresh")));
    clock.set_wall(std::chrono::system_clock::now());
    EXPECT_THAT(q.scan({}).admitted, ElementsAre("fresh"));
    ASSERT_TRUE(spool.enqueue(request("waited")));
    clock.set_wall(std::chrono::system_clock::now() + std::chrono::minutes(1));
    EXPECT_THAT(q.scan({}).admitted, ElementsAre("waited"));
    log::set_min_level(log::Level::info);
    auto line_of = [&](const std::string& id) {
        for (const auto& l : lines)
            if (l.find("turn " + id + ": queued") != std::string::npos) return l;
        return std::string();
    };
    EXPECT_THAT(line_of("fresh"), HasSubstr("radiald[spool] debug: turn fresh: queued (its"));
    EXPECT_THAT(line_of("waited"), HasSubstr("radiald[spool] info: turn waited: queued (its"));
}

TEST_F(QueueFixture, TheRequestOfAFinishedTurnIsRemoved) {
    submit("a");
    journal->set_terminal("a", "succeeded", "{}");
    auto scan = queue.scan({});
    EXPECT_THAT(scan.cleared, ElementsAre("a"));
    EXPECT_THAT(scan.runnable, IsEmpty());
    EXPECT_THAT(spool.list(), IsEmpty());
}

// A turn run directly ('radiald turn') under the id of a request that waited in the spool, its
// submit's journal entry not yet written: the finished turn is not that request's, which never
// ran. It is set aside in rejected/ with an error naming why, never removed as done.
TEST_F(QueueFixture, ARequestWhoseIdADirectTurnTookIsSetAsideNotRemovedAsDone) {
    std::vector<std::string> lines;
    log::set_sink([&](std::string_view l) { lines.emplace_back(l); });
    ASSERT_TRUE(spool.enqueue(request("dupx")));
    journal->add_turn({"dupx", "radial-turn-inst1-dupx", "fake", "img", "result", "{}"},
                      journal::TurnState::claimed);
    journal->set_terminal("dupx", "failed", "{}");
    auto scan = queue.scan({});
    EXPECT_THAT(scan.cleared, IsEmpty());
    EXPECT_THAT(scan.rejected, ElementsAre("dupx"));
    EXPECT_THAT(spool.list(), IsEmpty());
    EXPECT_TRUE(std::filesystem::exists(dir.path() + "/spool/rejected/dupx.json"));
    bool said = false;
    for (const auto& l : lines)
        said = said || (l.find("error: turn dupx: request moved to") != std::string::npos &&
                        l.find("it never ran") != std::string::npos);
    EXPECT_TRUE(said) << "no error line";
}

TEST_F(QueueFixture, AnUnreadableRequestBecomesAnErrorRecord) {
    spool.ensure_dirs();
    std::ofstream(spool.request_path("junk")) << "not json";
    auto scan = queue.scan({});
    EXPECT_THAT(scan.rejected, ElementsAre("junk"));
    EXPECT_EQ(status("junk"), "error");
    EXPECT_THAT(*journal->turn("junk")->terminal_json, HasSubstr("the file is not a JSON object"));
    EXPECT_THAT(spool.list(), IsEmpty());
}

TEST_F(QueueFixture, AQueuedTurnWhoseRequestIsGoneGetsAnErrorRecord) {
    submit("a");
    spool.remove("a");
    auto scan = queue.scan({});
    EXPECT_THAT(scan.lost, ElementsAre("a"));
    EXPECT_EQ(status("a"), "error");
    EXPECT_THAT(*journal->turn("a")->terminal_json,
                HasSubstr("is gone from the spool; submit the turn again"));
}

TEST_F(QueueFixture, RefuseWritesTheMessageAndRemovesTheRequest) {
    submit("a");
    queue.refuse("a", "secret 'TOKEN' is not set");
    auto t = journal->turn("a");
    EXPECT_EQ(t->status, "error");
    auto rec = nlohmann::json::parse(*t->terminal_json);
    EXPECT_EQ(rec["error"], "secret 'TOKEN' is not set");
    EXPECT_EQ(rec["label"], "radial-turn-inst1-a");
    EXPECT_THAT(spool.list(), IsEmpty());
}

TEST_F(QueueFixture, ToTurnRequestTakesSecretValuesFromTheLookupOnly) {
    auto t = to_turn_request(request("a"), [](const std::string& n) -> std::optional<std::string> {
        return n == "TOKEN" ? std::optional<std::string>("tok-123456") : std::nullopt;
    });
    ASSERT_EQ(t.env.size(), 1u);
    EXPECT_EQ(t.env[0], (EnvVar{"TOKEN", "tok-123456", true}));
    try {
        to_turn_request(request("a"),
                        [](const std::string&) { return std::optional<std::string>(); });
        FAIL() << "no error";
    } catch (const turn::RequestError& e) {
        EXPECT_THAT(std::string(e.what()),
                    HasSubstr("secret 'TOKEN' is not set in radiald's environment"));
    }
}

} // namespace
} // namespace radial::daemon
