// Daemon in process (docs/design.md §12.3): the real fake runtime plugin (.so, loaded by the real
// loader), a real SQLite journal behind a decorator that can refuse calls, a real spool, and a
// StopSignals on SIGTERM, which a test sends to its own process only (not SIGUSR2: the daemon logs
// and ignores that one). What only a real process shows — how it takes each signal, exit 70 when
// killed turns do not return, a crash at a checkpoint — stays in radiald_daemon_test.
#include "daemon/daemon.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include "../../support/faulty_journal.h"
#include "../../support/host_processes.h"
#include "../../support/temp_dir.h"
#include "journal/journal_sqlite.h"
#include "loader/plugin_loader.h"
#include "log/logger.h"
#include "time/clock.h"
#include "turn/terminal_reserve.h"

namespace radial::daemon {
namespace {
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

using test::FaultyJournal;

struct DaemonFixture : ::testing::Test {
    test::TempDir dir{"radial-daemon-inproc"};
    loader::LoadedPlugin plugin =
        loader::load_plugin(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_good/fake.so");
    config::HostConfig cfg = [this] {
        config::HostConfig c;
        c.state_dir = dir / "state";
        c.instance_id = test::unique_instance_id("dm");
        c.min_free_bytes = 0;
        c.max_concurrent_turns = 1;
        c.shutdown_grace_ms = 200;
        return c;
    }();
    host::RuntimeClient client =
        host::RuntimeClient::create(plugin.library, plugin.descriptor, {"run.fake", {}},
                                    plugin.path, "t", [](std::uint32_t, std::string_view) {});
    std::unique_ptr<FaultyJournal> journal;
    // Checkpoints as "<turn>:<point>", in the order they were passed.
    std::mutex points_mutex;
    std::vector<std::string> points;

    void SetUp() override {
        std::filesystem::create_directories(cfg.state_dir);
        log::set_sink([](std::string_view) {});
        journal = std::make_unique<FaultyJournal>(
            journal::open_sqlite_journal(cfg.state_dir + "/journal.sqlite3"));
    }
    void TearDown() override { log::set_sink({}); }

    DaemonSettings settings() {
        DaemonSettings s;
        s.pending_retry_interval = 50ms;
        s.host_timeout_grace = 200ms;
        s.checkpoint_for_test = [this](std::string_view p, const std::string& id) {
            if (p == "output" || p == "box-look") return;
            std::lock_guard lock(points_mutex);
            points.push_back(id + ":" + std::string(p));
        };
        return s;
    }
    // What `radiald submit` does: the request into the spool, then the queued journal entry.
    void submit(const std::string& id, std::vector<std::string> argv) {
        SpooledRequest r;
        r.turn_id = id;
        r.image = "img";
        r.argv = std::move(argv);
        ASSERT_TRUE(Spool(cfg.state_dir).enqueue(r));
        journal->add_turn(queued_entry(r, cfg), journal::TurnState::queued);
    }
    std::vector<std::string> points_of(const std::string& id) {
        std::lock_guard lock(points_mutex);
        std::vector<std::string> out;
        for (const auto& p : points)
            if (p.rfind(id + ":", 0) == 0) out.push_back(p.substr(id.size() + 1));
        return out;
    }
    bool passed(const std::string& id, const std::string& point) {
        auto p = points_of(id);
        return std::find(p.begin(), p.end(), point) != p.end();
    }
    std::string status_of(const std::string& id) {
        auto t = journal->turn(id);
        return t ? t->status : "(no turn)";
    }
    std::string state_of(const std::string& id) {
        auto t = journal->turn(id);
        return t && !t->states.empty() ? std::string(journal::to_string(t->states.back().state))
                                       : "(no turn)";
    }
    bool spooled(const std::string& id) {
        return std::filesystem::exists(Spool(cfg.state_dir).request_path(id));
    }
};

// The daemon on its own thread until the test stops it with SIGTERM (caught by `signals`).
struct Running {
    StopSignals signals{SIGTERM};
    Daemon daemon;
    std::future<int> exit;
    Running(DaemonFixture& f, DaemonSettings s)
        : daemon(f.cfg, f.client, *f.journal, turn::ResolvedTransport{}, std::move(s)),
          exit(std::async(std::launch::async, [this] { return daemon.run(signals); })) {}
    int stop() {
        ::kill(::getpid(), SIGTERM);
        return exit.get();
    }
};

TEST_F(DaemonFixture, ClaimsRunsAndRetiresEachTurnInOrder) {
    submit("first", {"echo", "one"});
    submit("second", {"exit", "3"});
    Running d(*this, settings());
    ASSERT_TRUE(test::wait_until(
        [&] { return passed("first", "retire") && passed("second", "retire"); }, 30s));
    EXPECT_EQ(d.stop(), 0);
    // The terminal record is journaled before the request leaves the spool.
    EXPECT_THAT(points_of("first"), ElementsAre("claimed", "started", "terminal", "retire"));
    EXPECT_THAT(points_of("second"), ElementsAre("claimed", "started", "terminal", "retire"));
    EXPECT_EQ(status_of("first"), "succeeded");
    EXPECT_EQ(status_of("second"), "failed");
    EXPECT_FALSE(spooled("first"));
    EXPECT_FALSE(spooled("second"));
}

// The look for a finished turn's box (an engine request, docs/design.md §12.2) is off the next
// turn's path: with one slot, the next queued turn is claimed while that look is under way.
TEST_F(DaemonFixture, TheNextTurnIsClaimedWhileTheLastOnesBoxIsLookedFor) {
    submit("a1", {"echo", "a"});
    submit("b1", {"echo", "b"});
    std::mutex m;
    std::condition_variable cv;
    std::set<std::string> claimed;
    std::map<std::string, bool> other_claimed_during_look;
    DaemonSettings s = settings();
    s.checkpoint_for_test = [&, base = s.checkpoint_for_test](std::string_view p,
                                                              const std::string& id) {
        base(p, id);
        std::unique_lock lock(m);
        if (p == "claimed") {
            claimed.insert(id);
            cv.notify_all();
        } else if (p == "box-look") {
            const std::string other = id == "a1" ? "b1" : "a1";
            other_claimed_during_look[id] =
                cv.wait_for(lock, 10s, [&] { return claimed.count(other) > 0; });
        }
    };
    Running d(*this, s);
    ASSERT_TRUE(
        test::wait_until([&] { return passed("a1", "retire") && passed("b1", "retire"); }, 30s));
    ASSERT_TRUE(test::wait_until(
        [&] {
            std::lock_guard lock(m);
            return other_claimed_during_look.size() == 2;
        },
        30s));
    EXPECT_EQ(d.stop(), 0);
    // Whichever ran first, the other was claimed while its box was being looked for.
    EXPECT_TRUE(other_claimed_during_look["a1"] && other_claimed_during_look["b1"]);
    EXPECT_EQ(status_of("a1"), "succeeded");
    EXPECT_EQ(status_of("b1"), "succeeded");
}

// Shutdown: no new claims; the running turn gets run.shutdownGrace, then its box is killed and its
// record says so; the queued turn stays queued, its request in the spool for the next start. The
// grace is an hour of the injected clock (docs/design.md §12.7): it ends when the test advances it.
TEST_F(DaemonFixture, ShutdownKillsTheRunningTurnAfterTheGraceAndLeavesTheQueue) {
    time::ManualClock clock;
    cfg.shutdown_grace_ms = 3'600'000;
    std::mutex lines_mutex;
    std::vector<std::string> lines;
    log::set_sink([&](std::string_view l) {
        std::lock_guard lock(lines_mutex);
        lines.emplace_back(l);
    });
    auto logged = [&](std::string_view what) {
        std::lock_guard lock(lines_mutex);
        return std::any_of(lines.begin(), lines.end(),
                           [&](const std::string& l) { return l.find(what) != l.npos; });
    };
    submit("long", {"sleep", "60000"});
    submit("later", {"echo", "never"});
    DaemonSettings s = settings();
    s.clock = &clock;
    Running d(*this, std::move(s));
    ASSERT_TRUE(test::wait_until([&] { return passed("long", "started"); }, 30s));
    ::kill(::getpid(), SIGTERM);
    ASSERT_TRUE(test::wait_until([&] { return logged("stopping: no new turns"); }, 30s));
    // However long this takes in real time, the clock has not reached the grace's end.
    EXPECT_EQ(d.exit.wait_for(300ms), std::future_status::timeout);
    EXPECT_EQ(status_of("long"), "");
    clock.advance(1h);
    ASSERT_EQ(d.exit.wait_for(30s), std::future_status::ready);
    EXPECT_EQ(d.exit.get(), 0);
    EXPECT_EQ(status_of("long"), "killed");
    EXPECT_EQ(state_of("later"), "queued");
    EXPECT_TRUE(spooled("later"));
    EXPECT_TRUE(points_of("later").empty());
    EXPECT_TRUE(client.list_by_label("radial-turn-" + cfg.instance_id + "-").empty());
}

// A terminal record the journal refuses stays in the turn's reserve and its request in the spool;
// once the journal takes it again, the daemon journals it at the next retry (an hour of the
// injected clock, docs/design.md §12.7) and only then retires the request.
TEST_F(DaemonFixture, ARefusedTerminalRecordIsRetriedBeforeTheRequestIsRetired) {
    time::ManualClock clock;
    journal->refuse("set_terminal");
    submit("full", {"echo", "x"});
    DaemonSettings s = settings();
    s.pending_retry_interval = 1h;
    s.clock = &clock;
    Running d(*this, std::move(s));
    ASSERT_TRUE(test::wait_until([&] { return passed("full", "terminal"); }, 30s));
    ASSERT_TRUE(test::wait_until(
        [&] { return turn::read_pending(cfg.state_dir, "full").has_value(); }, 30s));
    EXPECT_TRUE(spooled("full"));
    EXPECT_EQ(status_of("full"), "");
    journal->refuse("set_terminal", false);
    // Not before the retry interval has passed on the clock.
    EXPECT_FALSE(test::wait_until([&] { return status_of("full") == "succeeded"; }, 300ms));
    clock.advance(1h);
    EXPECT_TRUE(test::wait_until([&] { return status_of("full") == "succeeded"; }, 30s));
    EXPECT_TRUE(test::wait_until([&] { return !spooled("full"); }, 30s));
    EXPECT_FALSE(turn::read_pending(cfg.state_dir, "full"));
    EXPECT_EQ(d.stop(), 0);
}

// A queued turn that cannot run (here: a session this state directory has not) is refused with its
// reason. When the journal does not take that record, the request stays in the spool and the
// record, not the turn, is retried: the request was removed at once, and the turn was later refused
// again as "its request is gone from the spool", its real reason lost.
TEST_F(DaemonFixture, ARefusalTheJournalDidNotTakeKeepsItsRequestAndItsReason) {
    time::ManualClock clock;
    journal->refuse("set_terminal");
    SpooledRequest r;
    r.turn_id = "refused";
    r.image = "img";
    r.argv = {"echo", "x"};
    r.session = "no-such-session";
    ASSERT_TRUE(Spool(cfg.state_dir).enqueue(r));
    journal->add_turn(queued_entry(r, cfg), journal::TurnState::queued);
    DaemonSettings s = settings();
    s.pending_retry_interval = 1h;
    s.clock = &clock;
    Running d(*this, std::move(s));
    auto terminal_tried = [&] {
        const auto calls = journal->calls();
        return std::count(calls.begin(), calls.end(), "set_terminal");
    };
    ASSERT_TRUE(test::wait_until([&] { return terminal_tried() >= 1; }, 30s));
    EXPECT_TRUE(spooled("refused")) << "the request of a refusal the journal did not take is gone";
    EXPECT_EQ(state_of("refused"), "queued");
    journal->refuse("set_terminal", false);
    clock.advance(1h);
    ASSERT_TRUE(test::wait_until([&] { return status_of("refused") == "error"; }, 30s));
    const std::string record = journal->turn("refused")->terminal_json.value_or("");
    EXPECT_THAT(record, HasSubstr("session 'no-such-session' is not one of this state"));
    EXPECT_THAT(record, Not(HasSubstr("gone from the spool")));
    EXPECT_TRUE(test::wait_until([&] { return !spooled("refused"); }, 30s));
    EXPECT_EQ(d.stop(), 0);
}

// A request submitted with a secret's value in its command (the daemon learns the values only at
// the claim) is refused there, before any box: the engine would keep that command at rest
// (docs/design.md §6.3). Its journaled request and its record are masked, and its spooled copy,
// which held the value in clear, is gone.
TEST_F(DaemonFixture, ARequestQuotingASecretIsRefusedAtItsClaimAndMaskedEverywhere) {
    const std::string value = "value-of-the-deploy-key-0123";
    SpooledRequest r;
    r.turn_id = "masked";
    r.image = "img";
    r.argv = {"echo", value};
    r.secrets = {"DEPLOY_KEY"};
    ASSERT_TRUE(Spool(cfg.state_dir).enqueue(r));
    journal->add_turn(queued_entry(r, cfg), journal::TurnState::queued);
    DaemonSettings s = settings();
    s.env = [&](const std::string& name) -> std::optional<std::string> {
        if (name == "DEPLOY_KEY") return value;
        return std::nullopt;
    };
    Running d(*this, std::move(s));
    ASSERT_TRUE(test::wait_until([&] { return status_of("masked") == "error"; }, 30s));
    const auto t = journal->turn("masked");
    ASSERT_TRUE(t);
    const std::string record = t->terminal_json.value_or("");
    EXPECT_THAT(record, HasSubstr("argv[1] (a word of the command)"));
    EXPECT_THAT(record, HasSubstr("holds the value of secret DEPLOY_KEY"));
    EXPECT_THAT(record, Not(HasSubstr(value)));
    EXPECT_THAT(t->entry.request_json, HasSubstr("[REDACTED:DEPLOY_KEY]"));
    EXPECT_THAT(t->entry.request_json, Not(HasSubstr(value)));
    EXPECT_TRUE(test::wait_until([&] { return !spooled("masked"); }, 30s));
    const auto calls = journal->calls();
    EXPECT_EQ(std::find(calls.begin(), calls.end(), "set_state:claimed"), calls.end())
        << "a refused request was claimed";
    EXPECT_EQ(d.stop(), 0);
}

// The claim masks the request, then marks the turn claimed: a journal that refuses the masking (a
// full disk, another writer past the busy timeout) leaves the turn queued, to run later, and not
// claimed with no box ever running it.
TEST_F(DaemonFixture, ATurnWhoseRequestCouldNotBeMaskedStaysQueued) {
    journal->refuse("redact_request");
    SpooledRequest r;
    r.turn_id = "unmasked";
    r.image = "img";
    r.argv = {"echo", "x"};
    ASSERT_TRUE(Spool(cfg.state_dir).enqueue(r));
    journal->add_turn(queued_entry(r, cfg), journal::TurnState::queued);
    Running d(*this, settings());
    auto masking_tried = [&] {
        const auto calls = journal->calls();
        return std::find(calls.begin(), calls.end(), "redact_request") != calls.end();
    };
    ASSERT_TRUE(test::wait_until(masking_tried, 30s));
    EXPECT_EQ(state_of("unmasked"), "queued");
    EXPECT_EQ(d.stop(), 0);
    EXPECT_EQ(state_of("unmasked"), "queued");
}

// A turn whose claim the journal keeps refusing (a read-only or full disk) stays queued and is
// claimed again only after a wait that doubles with each failure, up to its most
// (docs/design.md §12.2): claimed again at once, it kept a core busy and logged an error per
// attempt for as long as the journal refused. Once the journal takes the claim, the turn runs.
TEST_F(DaemonFixture, ATurnWhoseClaimKeepsFailingWaitsLongerBeforeEachNewAttempt) {
    time::ManualClock clock;
    std::mutex lines_mutex;
    std::vector<std::string> lines;
    log::set_sink([&](std::string_view line) {
        std::lock_guard lock(lines_mutex);
        lines.emplace_back(line);
    });
    auto waits_logged = [&] {
        std::lock_guard lock(lines_mutex);
        return std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
            return l.find(
                       "turn ro: its attempt failed before it was recorded; not claimed "
                       "again for") != std::string::npos;
        });
    };
    journal->refuse("set_state:claimed");
    submit("ro", {"echo", "x"});
    DaemonSettings s = settings();
    s.clock = &clock;
    s.rescan_interval = 1h;
    s.claim_retry_first = 1s;
    s.claim_retry_most = 4s;
    Running d(*this, std::move(s));
    auto claims = [&] {
        const auto calls = journal->calls();
        return std::count(calls.begin(), calls.end(), "set_state:claimed");
    };
    // Each attempt: the claim is refused, the worker ends, the wait is set from the clock's now.
    auto attempt = [&](long n) {
        ASSERT_TRUE(test::wait_until([&] { return claims() == n; }, 30s)) << claims();
        ASSERT_TRUE(test::wait_until([&] { return waits_logged() == n; }, 30s)) << waits_logged();
    };
    attempt(1);
    EXPECT_FALSE(test::wait_until([&] { return claims() > 1; }, 300ms)) << "claimed again at once";
    for (auto [wait, n] : {std::pair{1s, 2L}, {2s, 3L}, {4s, 4L}, {4s, 5L}}) {
        clock.advance(wait - 1ms);
        EXPECT_FALSE(test::wait_until([&] { return claims() >= n; }, 300ms))
            << "claimed again before its wait of " << wait.count() << " s";
        clock.advance(1ms);
        attempt(n);
    }
    EXPECT_EQ(state_of("ro"), "queued");
    journal->refuse("set_state:claimed", false);
    clock.advance(4s);
    EXPECT_TRUE(test::wait_until([&] { return status_of("ro") == "succeeded"; }, 30s));
    EXPECT_EQ(d.stop(), 0);
}

} // namespace
} // namespace radial::daemon
