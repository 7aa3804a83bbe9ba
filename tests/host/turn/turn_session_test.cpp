// TurnSession in process (docs/design.md §3, §14.2): the real fake runtime plugin (.so, loaded by
// the real loader), a real SQLite journal behind a decorator that can refuse any call, and a short
// host timeout grace. What only a real radiald process shows (signals, exit statuses, the record
// file) stays in tests/host/cli.
#include "turn/turn_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "../../support/faulty_journal.h"
#include "../../support/host_processes.h"
#include "../../support/temp_dir.h"
#include "journal/journal_sqlite.h"
#include "loader/plugin_loader.h"
#include "log/logger.h"
#include "turn/terminal_reserve.h"

namespace radial::turn {
namespace {
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

using test::FaultyJournal;

struct SessionFixture : ::testing::Test {
    test::TempDir dir{"radial-session"};
    loader::LoadedPlugin plugin =
        loader::load_plugin(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_good/fake.so");
    config::HostConfig cfg = [this] {
        config::HostConfig c;
        c.state_dir = dir / "state";
        c.instance_id = test::unique_instance_id("ts");
        c.min_free_bytes = 0;
        return c;
    }();
    std::unique_ptr<host::RuntimeClient> client;
    std::unique_ptr<FaultyJournal> journal;
    std::vector<std::string> lines;
    std::mutex lines_mutex;

    void SetUp() override {
        std::filesystem::create_directories(cfg.state_dir);
        log::set_sink([this](std::string_view l) {
            std::lock_guard lock(lines_mutex);
            lines.emplace_back(l);
        });
        journal = std::make_unique<FaultyJournal>(
            journal::open_sqlite_journal(cfg.state_dir + "/journal.sqlite3"));
        use_runtime({});
    }
    void TearDown() override { log::set_sink({}); }
    void use_runtime(std::vector<host::ConfigEntry> entries) {
        client = std::make_unique<host::RuntimeClient>(host::RuntimeClient::create(
            plugin.library, plugin.descriptor, {"run.fake", std::move(entries)}, plugin.path, "t",
            [](std::uint32_t, std::string_view) {}));
    }
    TurnEnvironment env() {
        TurnEnvironment e{cfg, *client, *journal, ResolvedTransport{}};
        e.host_timeout_grace = 200ms;
        return e;
    }
    static TurnRequest request(const std::string& id, std::vector<std::string> argv,
                               std::uint64_t timeout_ms = 0) {
        TurnRequest r;
        r.turn_id = id;
        r.image = "img";
        r.argv = std::move(argv);
        r.timeout_ms = timeout_ms;
        return r;
    }
    TerminalRecord run(TurnSession& s) {
        return s.run([this](std::uint32_t, std::string_view bytes) {
            std::lock_guard lock(lines_mutex);
            output += bytes;
        });
    }
    bool logged(const std::string& fragment) {
        std::lock_guard lock(lines_mutex);
        for (const auto& l : lines)
            if (l.find(fragment) != std::string::npos) return true;
        return false;
    }
    std::string stored_status(const std::string& id) {
        auto t = journal->turn(id);
        return t ? t->status : "(no turn)";
    }
    std::string output;
};

TEST_F(SessionFixture, ASucceededTurnIsJournaledClaimedStartedThenTerminal) {
    auto e = env();
    std::vector<std::string> points;
    e.checkpoint_for_test = [&](std::string_view p, const std::string&) {
        if (p != "output") points.emplace_back(p);
    };
    TurnSession s(e, request("ok-1", {"echo", "hello"}));
    auto rec = run(s);
    EXPECT_EQ(rec.status, TurnStatus::succeeded);
    EXPECT_EQ(output, "hello\n");
    EXPECT_EQ(stored_status("ok-1"), "succeeded");
    EXPECT_THAT(journal->calls(), ElementsAre("add_turn", "set_state:started", "set_terminal"));
    EXPECT_THAT(points, ElementsAre("claimed", "started", "terminal"));
    EXPECT_FALSE(read_pending(cfg.state_dir, "ok-1"));
}

// docs/design.md §3.6: the box's last bytes — here held back by the redactor until the box is
// gone, as the start of a secret would be — reach the caller before the line saying how the turn
// ended, and the output's drain runs before that line and before the terminal record.
TEST_F(SessionFixture, TheBoxsLastBytesComeBeforeTheOutcomesLine) {
    cfg.redact.values = {"Zq8-wX41-pL0k"};
    auto e = env();
    std::vector<std::string> events;
    log::set_sink([&](std::string_view l) {
        std::lock_guard lock(lines_mutex);
        if (l.find("succeeded") != std::string_view::npos) events.emplace_back("line");
    });
    TurnSession s(e, request("order-1", {"stderr-n", "tail", "Zq8-"}));
    s.set_output_drain([&] {
        std::lock_guard lock(lines_mutex);
        events.emplace_back("drain");
        // Nothing journaled as ended yet: the record waits for the drain's count.
        EXPECT_EQ(journal->turn("order-1")->status, "");
        return TerminalRecord::OutputDropped{0, 7};
    });
    auto rec = s.run([&](std::uint32_t, std::string_view bytes) {
        std::lock_guard lock(lines_mutex);
        events.emplace_back("out:" + std::string(bytes));
    });
    EXPECT_EQ(rec.status, TurnStatus::succeeded);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back(), "line");
    std::string out;
    for (const auto& ev : events)
        if (ev.rfind("out:", 0) == 0) out += ev.substr(4);
    EXPECT_EQ(out, "tail Zq8-");
    EXPECT_EQ(events.at(events.size() - 2), "drain");
    ASSERT_TRUE(rec.output_dropped);
    EXPECT_EQ(rec.output_dropped->stderr_bytes, 7u);
    EXPECT_THAT(*journal->turn("order-1")->terminal_json,
                ::testing::HasSubstr("\"outputDropped\""));
}

// docs/design.md §6.5: a runtime without resolve_image runs the image by name, records no
// digest and says so once; a pin in run.allowedImages is then refused, never run unchecked.
TEST_F(SessionFixture, WithoutResolveImageAPinIsRefusedAndAnUnpinnedImageRecordsNoDigest) {
    auto e = env();
    TurnSession s(e, request("nodigest-1", {"echo", "hi"}));
    auto rec = run(s);
    EXPECT_EQ(rec.status, TurnStatus::succeeded) << rec.error;
    EXPECT_EQ(rec.image_digest, "");
    EXPECT_EQ(rec.to_json().find("imageDigest"), std::string::npos);
    TurnSession again(e, request("nodigest-2", {"true"}));
    std::size_t said = 0;
    {
        std::lock_guard lock(lines_mutex);
        for (const auto& l : lines) said += l.find("cannot resolve images to digests") != l.npos;
    }
    // Once per process: an earlier test of this process may have said it already.
    EXPECT_LE(said, 1u) << "said per turn, not once";

    const std::string digest = "sha256:" + std::string(64, 'a');
    cfg.allowed_images = {"img@" + digest};
    try {
        TurnSession pinned(e, request("pinned-1", {"true"}));
        FAIL() << "a pinned image ran on a runtime that cannot resolve it";
    } catch (const RequestError& err) {
        EXPECT_EQ(std::string(err.what()),
                  "run.allowedImages pins image 'img' to a digest, but runtime 'fake' cannot "
                  "resolve an image to its digest (it offers no resolve_image); the turn is "
                  "refused rather than run unchecked — select a runtime that does, or allow the "
                  "image without a digest");
    }
}

TEST_F(SessionFixture, ATimeoutIsATimedOutRecordInTheJournal) {
    auto e = env();
    TurnSession s(e, request("slow-1", {"sleep", "60000"}, 100));
    auto rec = run(s);
    EXPECT_EQ(rec.status, TurnStatus::timed_out);
    EXPECT_EQ(rec.cli_exit_status(), 124);
    EXPECT_EQ(stored_status("slow-1"), "timed_out");
}

TEST_F(SessionFixture, ABoxTheRuntimeDoesNotTimeOutIsKilledAfterTheGrace) {
    auto e = env();
    TurnSession s(e, request("hang-1", {"hang", "60000"}, 100));
    auto rec = run(s);
    EXPECT_EQ(rec.status, TurnStatus::timed_out);
    EXPECT_EQ(stored_status("hang-1"), "timed_out");
    EXPECT_TRUE(logged("did not end the box"));
    EXPECT_TRUE(client->list_by_label("radial-turn-" + cfg.instance_id + "-").empty());
}

// Interrupt and shutdown stop a running box; the record says which (StopReason).
TEST_F(SessionFixture, InterruptKillsTheBoxAndShutdownRecordsKilled) {
    for (auto [why, status, reason] :
         {std::tuple{StopReason::interrupted, TurnStatus::failed, "interrupted"},
          std::tuple{StopReason::shutdown, TurnStatus::killed, "shutdown"}}) {
        const std::string id = std::string("stop-") + reason;
        auto e = env();
        std::atomic<bool> started{false};
        e.checkpoint_for_test = [&](std::string_view p, const std::string&) {
            if (p == "started") started = true;
        };
        TurnSession s(e, request(id, {"sleep", "60000"}));
        std::thread stopper([&] {
            ASSERT_TRUE(test::wait_until(
                [&] {
                    return started.load() &&
                           !client->list_by_label("radial-turn-" + cfg.instance_id + "-" + id)
                                .empty();
                },
                30s));
            s.interrupt(why);
        });
        auto rec = run(s);
        stopper.join();
        EXPECT_EQ(rec.status, status) << reason;
        EXPECT_EQ(rec.reason, reason);
        EXPECT_EQ(stored_status(id), to_string(status));
    }
}

// A stop that comes before the box starts: the box is never asked for.
TEST_F(SessionFixture, AStopBeforeTheBoxStartsRunsNothing) {
    auto e = env();
    TurnSession s(e, request("early-1", {"echo", "never"}));
    s.interrupt(StopReason::shutdown);
    auto rec = run(s);
    EXPECT_EQ(rec.status, TurnStatus::killed);
    EXPECT_EQ(rec.reason, "shutdown");
    EXPECT_EQ(output, "");
}

TEST_F(SessionFixture, ARefusedFieldIsAnErrorRecordAndNothingRuns) {
    host::ConfigEntry refuse;
    refuse.key = "refuse";
    refuse.kind = RADIAL_CONFIG_STRING_ARRAY;
    refuse.items = {"network"};
    use_runtime({refuse});
    cfg.network = "bridge";
    auto e = env();
    TurnSession s(e, request("refused-1", {"echo", "never"}));
    auto rec = run(s);
    EXPECT_EQ(rec.status, TurnStatus::error);
    EXPECT_THAT(rec.error, HasSubstr("runtime 'fake' refuses network: refused by test config"));
    EXPECT_EQ(output, "");
    EXPECT_EQ(stored_status("refused-1"), "error");
}

// §14.2: the only exception out of a session is the journal refusing the claim; nothing started.
TEST_F(SessionFixture, AJournalRefusingTheClaimThrowsAndNothingRuns) {
    journal->refuse("add_turn");
    auto e = env();
    bool started = false;
    e.checkpoint_for_test = [&](std::string_view p, const std::string&) {
        started = started || p == "started";
    };
    TurnSession s(e, request("unclaimed-1", {"echo", "never"}));
    EXPECT_THROW(run(s), journal::JournalError);
    EXPECT_FALSE(started);
    EXPECT_EQ(output, "");
    EXPECT_FALSE(journal->turn("unclaimed-1"));
}

TEST_F(SessionFixture, AJournalRefusingStartedIsAnErrorRecordAndTheBoxNeverStarts) {
    journal->refuse("set_state:started");
    auto e = env();
    TurnSession s(e, request("unstarted-1", {"echo", "never"}));
    auto rec = run(s);
    EXPECT_EQ(rec.status, TurnStatus::error);
    EXPECT_THAT(rec.error, HasSubstr("the box was not started"));
    EXPECT_EQ(output, "");
    EXPECT_EQ(stored_status("unstarted-1"), "error");
}

// Whatever radiald itself cannot go on with after the claim (a thread or memory it could not
// get; here a throw at a checkpoint, before the box and after it ended) ends the turn with
// one error record and no box; the turn is never left "started" with nobody to end it.
TEST_F(SessionFixture, AFailureOfRadialdItselfAfterTheClaimEndsTheTurnWithAnErrorRecord) {
    for (const std::string point : {"started", "terminal"}) {
        const std::string id = "inner-" + point;
        auto e = env();
        e.checkpoint_for_test = [&](std::string_view p, const std::string&) {
            if (p == point)
                throw std::system_error(EAGAIN, std::generic_category(), "no thread for the test");
        };
        TurnSession s(e, request(id, {"echo", "hello"}));
        TerminalRecord rec;
        ASSERT_NO_THROW(rec = run(s)) << point;
        EXPECT_EQ(rec.status, TurnStatus::error) << point;
        EXPECT_THAT(rec.error, HasSubstr("radiald could not go on with the turn")) << point;
        EXPECT_THAT(rec.error, HasSubstr("no thread for the test")) << point;
        EXPECT_EQ(stored_status(id), "error") << point;
        EXPECT_FALSE(read_pending(cfg.state_dir, id)) << point;
        EXPECT_TRUE(client->list_by_label("radial-turn-" + cfg.instance_id + "-" + id).empty())
            << point;
    }
}

// A link put on the workspace's path or a mount source's after the turn was checked (the owner
// renamed the directory and left a link to another tree in its place) ends the turn before its
// box: docker would mount wherever the link leads now.
TEST_F(SessionFixture, AHostPathRelinkedAfterTheCheckEndsTheTurnBeforeItsBox) {
    namespace fs = std::filesystem;
    for (const bool as_mount : {false, true}) {
        const std::string id = as_mount ? "relinked-mount" : "relinked-workspace";
        const std::string ws = dir / (id + "-dir"), elsewhere = dir / (id + "-elsewhere");
        fs::create_directories(ws);
        fs::create_directories(elsewhere);
        auto r = request(id, {"echo", "ran"});
        if (as_mount)
            r.mounts.push_back({ws, "/data", false});
        else
            r.workspace = ws;
        auto e = env();
        e.checkpoint_for_test = [&](std::string_view p, const std::string&) {
            if (p != "started") return;
            fs::rename(ws, dir / (id + "-moved"));
            fs::create_directory_symlink(elsewhere, ws);
        };
        output.clear();
        TurnSession s(e, r);
        auto rec = run(s);
        EXPECT_EQ(rec.status, TurnStatus::error) << id;
        EXPECT_THAT(rec.error, HasSubstr("is reached through a symbolic link now")) << id;
        EXPECT_THAT(rec.error, HasSubstr("the box was not started")) << id;
        EXPECT_EQ(output, "") << id;
    }
}

// A full disk at the end: the record still comes back, says `journalError`, and waits in the
// turn's reserve for whoever journals it later.
TEST_F(SessionFixture, AJournalRefusingTheTerminalKeepsItInTheReserve) {
    journal->refuse("set_terminal");
    auto e = env();
    TurnSession s(e, request("full-1", {"exit", "3"}));
    auto rec = run(s);
    EXPECT_EQ(rec.status, TurnStatus::failed);
    EXPECT_EQ(rec.exit_code, 3);
    EXPECT_THAT(rec.journal_error, HasSubstr("database or disk is full"));
    auto pending = read_pending(cfg.state_dir, "full-1");
    ASSERT_TRUE(pending);
    EXPECT_EQ(pending->status, "failed");
    EXPECT_EQ(stored_status("full-1"), "");
    EXPECT_TRUE(logged("waits in"));
}

} // namespace
} // namespace radial::turn
