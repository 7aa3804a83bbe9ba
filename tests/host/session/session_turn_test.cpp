// tests/host/session/session_turn_test.cpp — the unchecked mark of a session's turn
// (host/session/session_turn.h, docs/design.md §13.12): a turn that never started its exec
// leaves no mark, and one whose exec ended in an error of the runtime bars snapshots without
// looking at changes its exec may still be making. The real fake runtime plugin: it has no
// sessions, so a check that asked it would fail with that, not with the runtime's error.
#include "session/session_turn.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "../../support/temp_dir.h"
#include "loader/plugin_loader.h"
#include "text/utf8.h"
#include "turn/turn_setup_error.h"

namespace radial::session {
namespace {
using ::testing::HasSubstr;

// The state directory `state` with one session, "s1", as the tests below use it.
void save_test_session(const std::string& state) {
    std::filesystem::create_directories(state);
    SessionRecord r;
    r.id = "s1";
    r.label = "radial-session-test-s1";
    r.image = "img";
    save_session(state, r);
}

struct SessionTurnTest : ::testing::Test {
    test::TempDir dir{"radial-session-turn"};
    std::string state = dir / "state";
    loader::LoadedPlugin plugin =
        loader::load_plugin(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_good/fake.so");
    std::unique_ptr<host::RuntimeClient> client;
    redaction::SecretSet secrets{redaction::Secret{"TOKEN", "s3cret-value-123"}};
    redaction::Redactor redactor{secrets};
    time::SystemClock clock;

    void SetUp() override {
        save_test_session(state);
        client = std::make_unique<host::RuntimeClient>(
            host::RuntimeClient::create(plugin.library, plugin.descriptor, {"run.fake", {}},
                                        plugin.path, "t", [](std::uint32_t, std::string_view) {}));
    }
    SessionRecord record() const {
        auto r = load_session(state, "s1");
        EXPECT_TRUE(r);
        return r ? *r : SessionRecord{};
    }
    void end(const std::string& turn, std::string_view runtime_error,
             std::vector<std::string> argv = {"sh", "-c", "true"}) {
        ContainerSpec exec;
        exec.argv = std::move(argv);
        exec.env.push_back({"PLAIN", "header s3cret-value-123", false});
        exec.env.push_back({"TOKEN", "s3cret-value-123", true});
        end_session_turn(*client, state, "s1", turn, exec, {}, std::nullopt, runtime_error, secrets,
                         redactor, 0, clock);
    }
};

// A turn of a session whose box ended or is gone says how the session's id is freed ('session
// ls' still lists it); one the runtime only refused now (a paused box) does not.
TEST_F(SessionTurnTest, ATurnWhoseSessionBoxEndedNamesSessionRmFirst) {
    begin_session_turn(state, record(), "t1");
    turn::TerminalRecord gone;
    gone.error = "runtime 'docker': nothing of the exec ran: the session's box has ended";
    gone.exec_never_ran = gone.session_box_gone = true;
    abandon_session_turn(state, "s1", "t1", gone);
    EXPECT_THAT(gone.error, HasSubstr("box has ended. Remove the session with 'radiald session rm "
                                      "s1' (or 'radiald reconcile'), then create it again"));
    EXPECT_EQ(record().unchecked_turn, "");

    begin_session_turn(state, record(), "t2");
    turn::TerminalRecord paused;
    paused.error = "the session's box is paused";
    paused.exec_never_ran = true;
    abandon_session_turn(state, "s1", "t2", paused);
    EXPECT_EQ(paused.error, "the session's box is paused");
}

// The session's maximum lifetime is timed by its record, not by its box's start (which a restart
// of the box sets again): a turn past it is refused naming 'session rm'.
TEST(SessionLifetimeTest, ATurnPastTheRecordsLifetimeIsRefusedNamingSessionRm) {
    SessionRecord s;
    s.id = "life1";
    s.created_at_ms = 1'000'000;
    s.max_lifetime_ms = 60'000;
    const auto at = [](std::int64_t ms) {
        return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
    };
    EXPECT_NO_THROW(check_session_lifetime(s, at(1'059'999)));
    try {
        check_session_lifetime(s, at(1'060'000));
        ADD_FAILURE() << "a turn ran past its session's maximum lifetime";
    } catch (const turn::RequestError& e) {
        EXPECT_THAT(e.what(), HasSubstr("past its maximum lifetime"));
        EXPECT_THAT(e.what(), HasSubstr("'radiald session rm life1'"));
    }
    s.max_lifetime_ms = 0; // no maximum: nothing to hold it to
    EXPECT_NO_THROW(check_session_lifetime(s, at(99'000'000)));
}

// The session's box has the directory it was made with: a turn finding another at the path (moved
// or replaced, or a link to the old one) is refused, naming the fix.
TEST_F(SessionTurnTest, ATurnIsRefusedWhenTheWorkspaceIsNotTheSessionsDirectoryAnyMore) {
    const std::string ws = dir / "ws", old = dir / "ws.old";
    std::filesystem::create_directories(ws);
    SessionRecord s;
    s.id = "ws1";
    s.workspace = ws;
    s.workspace_id = workspace_identity(ws);
    ASSERT_NE(s.workspace_id, "");
    EXPECT_NO_THROW(check_session_workspace(s));
    std::filesystem::rename(ws, old);
    for (int kind = 0; kind < 3; ++kind) {
        std::filesystem::remove_all(ws);
        if (kind == 0) std::filesystem::create_directories(ws);            // another directory
        if (kind == 1) std::filesystem::create_directory_symlink(old, ws); // a link to the old
        // kind 2: gone
        try {
            check_session_workspace(s);
            ADD_FAILURE() << "a session turn ran on another directory than its box has (" << kind
                          << ")";
        } catch (const turn::RequestError& e) {
            EXPECT_THAT(e.what(), HasSubstr("not the directory the session was created with"));
            EXPECT_THAT(e.what(), HasSubstr("'radiald session rm ws1'"));
        }
    }
    std::filesystem::remove_all(ws);
    std::filesystem::rename(old, ws);
    EXPECT_NO_THROW(check_session_workspace(s)); // put back: the same directory
    s.workspace_id.clear();                      // a record made before the identity was kept
    std::filesystem::rename(ws, old);
    std::filesystem::create_directories(ws);
    EXPECT_NO_THROW(check_session_workspace(s));
}

TEST_F(SessionTurnTest, ATurnThatRanNothingLeavesNoMark) {
    begin_session_turn(state, record(), "t1");
    EXPECT_EQ(record().unchecked_turn, "t1");
    {
        turn::TerminalRecord ran;
        abandon_session_turn(state, "s1", "t1", ran);
    }
    EXPECT_EQ(record().unchecked_turn, "");
    EXPECT_EQ(record().no_snapshot_because, "");
    // The next turn finds nothing unchecked: it does not bar snapshots.
    begin_session_turn(state, record(), "t2");
    EXPECT_EQ(record().no_snapshot_because, "");
    // Another turn's mark is not this turn's to clear.
    {
        turn::TerminalRecord ran;
        abandon_session_turn(state, "s1", "t1", ran);
    }
    EXPECT_EQ(record().unchecked_turn, "t2");
    {
        turn::TerminalRecord ran;
        abandon_session_turn(state, "nope", "t2", ran); // no such session: nothing, no throw
    }
}

// The turn was bound to the record it loaded before it took the session's lock: a session made
// again under the same id meanwhile is another box, workspace and ids, and is refused.
TEST_F(SessionTurnTest, ASessionMadeAgainUnderItsIdWhileTheTurnStartedIsRefused) {
    const SessionRecord bound = record();
    SessionRecord again = bound;
    again.created_at_ms = bound.created_at_ms + 1;
    again.workspace = "/elsewhere";
    update_session(state, again);
    try {
        begin_session_turn(state, bound, "t1");
        ADD_FAILURE() << "a turn bound to the old session was let into the new one";
    } catch (const turn::TurnSetupError& e) {
        EXPECT_THAT(e.what(), HasSubstr("was removed and made again while this turn started"));
    }
    EXPECT_EQ(record().unchecked_turn, "") << "nothing marked";
    begin_session_turn(state, record(), "t1");
    EXPECT_EQ(record().unchecked_turn, "t1");
}

TEST_F(SessionTurnTest, AnExecEndedInARuntimeErrorBarsSnapshotsForGood) {
    begin_session_turn(state, record(), "t1");
    end("t1", "runtime 'fake': the engine stopped answering (s3cret-value-123)");
    const SessionRecord r = record();
    EXPECT_EQ(r.unchecked_turn, "");
    EXPECT_THAT(r.no_snapshot_because,
                HasSubstr("turn t1's exec ended in an error of the runtime"));
    EXPECT_THAT(r.no_snapshot_because, HasSubstr("the engine stopped answering"));
    EXPECT_THAT(r.no_snapshot_because, ::testing::Not(HasSubstr("s3cret-value-123")))
        << "the runtime's text is redacted";
    ASSERT_EQ(r.manifest.size(), 1u);
    EXPECT_EQ(r.manifest[0].turn, "t1");
    // A later turn that ends well does not lift it.
    begin_session_turn(state, record(), "t2");
    end("t2", "");
    EXPECT_THAT(record().no_snapshot_because, HasSubstr("turn t1's exec"));
}

// A runtime's long error is cut to fit the record, after a whole word ("…"), never mid-word nor
// mid-character; and it gives no advice about secrets, which this bar is not about.
TEST_F(SessionTurnTest, ALongRuntimeErrorIsCutAfterAWholeWord) {
    begin_session_turn(state, record(), "t1");
    std::string error = "runtime 'fake': ";
    for (int i = 0; i < 60; ++i) error += "déjà-vu word" + std::to_string(i) + " ";
    end("t1", error);
    const std::string why = record().no_snapshot_because;
    ASSERT_THAT(why, ::testing::EndsWith("…"));
    EXPECT_LE(why.size(), 400u + std::string_view("…").size());
    const std::string kept = why.substr(0, why.size() - std::string_view("…").size());
    // What precedes the cut is a whole word of the error: the error goes on with a space there.
    EXPECT_NE(error.find(kept.substr(kept.rfind("runtime 'fake': ")) + " "), std::string::npos)
        << why;
    EXPECT_THAT(why, ::testing::Not(HasSubstr("keep secrets out")));
}

// A cut never drops a whole character it could keep, and what the box chose cannot reach a
// terminal as a control: C1 controls and bytes that are not UTF-8 are escaped too.
TEST_F(SessionTurnTest, ACutKeepsEveryWholeCharacterAndControlsAreEscaped) {
    for (const std::string lead : {"runtime 'fake':", "runtime 'fake':x"}) {
        begin_session_turn(state, record(), "t1");
        std::string error = lead;
        for (int i = 0; i < 300; ++i) error += "é";
        end("t1", error);
        std::string why = record().no_snapshot_because;
        ASSERT_THAT(why, ::testing::EndsWith("…"));
        why.resize(why.size() - std::string_view("…").size());
        // Two-byte characters: a cut at 400 bytes keeps 399 or 400 of them, never 398.
        EXPECT_GE(why.size(), 399u) << lead;
        EXPECT_LE(why.size(), 400u) << lead;
        EXPECT_TRUE(text::is_valid_utf8(why)) << lead;
        SessionRecord r = record();
        r.no_snapshot_because.clear();
        update_session(state, r);
    }
    begin_session_turn(state, record(), "t2");
    end("t2",
        "runtime 'fake': \x1b]0;title\x07 \xc2\x9b"
        "31m \xff done");
    const std::string why = record().no_snapshot_because;
    EXPECT_THAT(why, HasSubstr("\\x1b]0;title\\x07 \\u{009b}31m \\xff done")) << why;
}

// The manifest outlives the turn (the record, a snapshot's record, `session snapshots --json`):
// what the turn quoted of its secrets is redacted there, as in the journal.
TEST_F(SessionTurnTest, TheManifestHoldsNoSecretTheTurnQuoted) {
    begin_session_turn(state, record(), "t1");
    end("t1", "runtime 'fake': lost", {"curl", "-H", "Authorization: s3cret-value-123", "x"});
    const SessionRecord r = record();
    ASSERT_EQ(r.manifest.size(), 1u);
    EXPECT_EQ(r.manifest[0].argv,
              (std::vector<std::string>{"curl", "-H", "Authorization: [REDACTED:TOKEN]", "x"}));
    EXPECT_EQ(r.manifest[0].env,
              (std::vector<std::string>{"PLAIN=header [REDACTED:TOKEN]", "TOKEN"}));
    EXPECT_EQ(test::read_file(state + "/sessions/s1.json").find("s3cret-value-123"),
              std::string::npos);
}

// A session record that is there but cannot be opened (no descriptor left, no memory; here a
// link that loops, which fails the same way under the sanitizers, whose runtime needs descriptors)
// is a fault to report, not a session that does not exist: the latter refuses the turn for good.
TEST_F(SessionTurnTest, ARecordThatCannotBeOpenedIsAFaultNotAMissingSession) {
    EXPECT_FALSE(load_session(state, "s2").has_value()) << "a record that is not there";
    std::filesystem::create_symlink("s3.json", sessions_dir(state) + "/s3.json");
    std::string said;
    try {
        EXPECT_FALSE(load_session(state, "s3").has_value()) << "taken for a missing session";
    } catch (const turn::TurnSetupError& e) {
        said = e.what();
    }
    EXPECT_THAT(said, HasSubstr("cannot read session record"));
    EXPECT_THAT(said, HasSubstr("Too many levels of symbolic links"));
}

// The labels reconciliation keeps leased: a record that cannot be read (not radiald's, or not
// now) counts by the label its id gives, rather than have its live box's ids freed.
TEST_F(SessionTurnTest, ARecordThatCannotBeReadKeepsItsBoxLabelLive) {
    config::HostConfig cfg;
    cfg.state_dir = state;
    cfg.instance_id = "test";
    { std::ofstream(sessions_dir(state) + "/s2.json") << "{ not json"; }
    const auto labels = session_labels(cfg);
    EXPECT_EQ(labels,
              (std::vector<std::string>{"radial-session-test-s1", session_label(cfg, "s2")}));
}

// A clock whose steady time moves a second each time it is read: a scan that reads it once per
// piece of a box's changes runs out of its budget after so many pieces, whatever the machine's
// speed.
class TickingClock final : public time::Clock {
public:
    time::SteadyPoint steady() const override {
        return time::SteadyPoint(std::chrono::seconds(++ticks_));
    }
    time::WallPoint wall() const override { return real_.wall(); }
    bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                    time::SteadyPoint deadline, const std::function<bool()>& pred) const override {
        return real_.wait_until(lock, cv, deadline, pred);
    }
    void sleep_until(time::SteadyPoint) const override {}
    std::chrono::milliseconds poll_timeout(time::SteadyPoint) const override {
        return std::chrono::milliseconds(0);
    }

private:
    mutable std::atomic<long> ticks_{0};
    time::SystemClock real_;
};

// The look for a turn's secrets in what its exec changed holds the session's lock: it is bounded
// by the turn's timeout (at least 10 s). A box that wrote more than that time reads bars the
// session's snapshots, saying so; within the budget the same changes pass (docs/design.md §13.12).
// A turn restating what its session's box got is that turn: the mode run.mode gave a session
// created without --mode, the workspace by another path; one changing it is refused naming the
// session's value, "none" for no workspace (docs/design.md §13.12).
TEST(BindRequestToSession, ARestatedModeOrWorkspacePassesAndARefusalNamesTheEffectiveValue) {
    test::TempDir dir{"radial-session-bind"};
    const std::string ws = dir / "ws";
    std::filesystem::create_directories(ws);
    SessionRecord s;
    s.id = "s1";
    s.image = "img";
    s.workspace = ws;
    // Created without --mode, by a radiald that kept it as given: the box got run.mode.
    for (const std::string kept : {"", "workspace-write"}) {
        s.mode = kept;
        turn::TurnRequest req;
        req.mode = "workspace-write";
        req.workspace = ws + "/./";
        req.image = "img";
        EXPECT_NO_THROW(bind_request_to_session(req, s, "workspace-write")) << kept;
        EXPECT_EQ(req.mode, "workspace-write");
        EXPECT_EQ(req.workspace, ws);
        turn::TurnRequest other;
        other.mode = "read-only";
        try {
            bind_request_to_session(other, s, "workspace-write");
            ADD_FAILURE() << "another mode passed: " << kept;
        } catch (const turn::RequestError& e) {
            EXPECT_THAT(e.what(), HasSubstr("was created with mode 'workspace-write'")) << kept;
        }
    }
    s.workspace.clear();
    turn::TurnRequest with_ws;
    with_ws.workspace = ws;
    try {
        bind_request_to_session(with_ws, s, "workspace-write");
        ADD_FAILURE() << "a workspace passed for a session without one";
    } catch (const turn::RequestError& e) {
        EXPECT_THAT(e.what(), HasSubstr("was created with workspace none;"));
    }
}

// The zoo runtime's box, whose changes are `bytes` read in 64 KiB pieces, and a turn's secret.
struct ZooChanges {
    loader::LoadedPlugin plugin;
    host::RuntimeClient client;
    redaction::SecretSet secrets{redaction::Secret{"TOKEN", "s3cret-value-123"}};
    redaction::Redactor redactor{secrets};
    ContainerSpec exec;
    explicit ZooChanges(std::int64_t bytes)
        : plugin(loader::load_plugin(std::string(RADIAL_ZOO_PLUGIN_ROOT) + "/good/zoo_good.so")),
          client(host::RuntimeClient::create(
              plugin.library, plugin.descriptor,
              host::ConfigSection{"run.zoo",
                                  {{"changeBytes", RADIAL_CONFIG_INT, "", bytes, 0, {}}}},
              plugin.path, "t", [](std::uint32_t, std::string_view) {})) {
        exec.argv = {"true"};
    }
};

TEST(SessionTurnScan, ChangesTheBudgetCannotReadBarSnapshots) {
    test::TempDir dir{"radial-session-scan"};
    const std::string state = dir / "state";
    save_test_session(state);
    ZooChanges zoo(64 * 65536);
    auto& [plugin, client, secrets, redactor, exec] = zoo;
    // 64 pieces read one tick each: a 10 s budget runs out; a 100 s one does not.
    for (const auto& [timeout_ms, barred] :
         {std::pair<std::uint64_t, bool>{5'000, true}, {100'000, false}}) {
        SCOPED_TRACE(timeout_ms);
        begin_session_turn(state, *load_session(state, "s1"), "t1");
        TickingClock ticking;
        exec.timeout_ms = timeout_ms;
        end_session_turn(client, state, "s1", "t1", exec, {}, 0, "", secrets, redactor, 0, ticking);
        const auto why = load_session(state, "s1")->no_snapshot_because;
        if (barred) {
            EXPECT_THAT(why, HasSubstr("could not be checked for its secrets within 10 s")) << why;
            EXPECT_THAT(why, HasSubstr("the box wrote more than that time reads")) << why;
            auto cleared = *load_session(state, "s1");
            cleared.no_snapshot_because.clear();
            update_session(state, cleared);
        } else {
            EXPECT_EQ(why, "");
        }
    }
}

// A turn without a timeout had no bound on the look at its changes: a daemon stopping waited for
// it past its kill budget (exit 70), holding the session's lock. It has 600 s now, and an interrupt
// of the turn (or the daemon's stop) ends it at once; either way the session takes no snapshot.
TEST(SessionTurnScan, AScanIsBoundedWithoutATimeoutAndEndsWhenTheTurnIsStopped) {
    test::TempDir dir{"radial-session-scan"};
    const std::string state = dir / "state";
    save_test_session(state);
    ZooChanges zoo(1024 * 65536);
    auto& [plugin, client, secrets, redactor, exec] = zoo;
    auto end_turn = [&](std::uint64_t timeout_ms, const std::atomic<bool>* stop) {
        begin_session_turn(state, *load_session(state, "s1"), "t1");
        TickingClock ticking;
        exec.timeout_ms = timeout_ms;
        end_session_turn(client, state, "s1", "t1", exec, {}, 0, "", secrets, redactor, 0, ticking,
                         stop);
        auto rec = *load_session(state, "s1");
        const std::string why = rec.no_snapshot_because;
        rec.no_snapshot_because.clear();
        update_session(state, rec);
        return why;
    };
    // 1024 pieces read one tick (a second) each: more than 600 s.
    EXPECT_THAT(end_turn(0, nullptr),
                HasSubstr("could not be checked for its secrets within 600 s"));
    // A budget that would read them all, but the turn was stopped.
    const std::atomic<bool> stopped{true};
    const std::string why = end_turn(10'000'000, &stopped);
    EXPECT_THAT(why, HasSubstr("were not all checked for its secrets: the turn was stopped"))
        << why;
    const std::atomic<bool> running{false};
    EXPECT_EQ(end_turn(10'000'000, &running), "");
}

// The look at a turn's changes starts a second before its exec by the wall clock, unless the wall
// clock was stepped meanwhile (either way, by more than that second): a change time then says
// nothing of when, and every change of the box is looked at.
TEST(ChangesWindow, StartsASecondBeforeTheExecUnlessTheWallClockWasStepped) {
    using namespace std::chrono;
    const time::WallPoint wall{milliseconds(1'700'000'000'000)};
    const time::SteadyPoint steady{seconds(500)};
    EXPECT_EQ(changes_window_start_ms(wall, steady, wall + seconds(30), steady + seconds(30)),
              1'699'999'999'000u);
    // Within the second's slack, either way.
    EXPECT_EQ(
        changes_window_start_ms(wall, steady, wall + milliseconds(30'900), steady + seconds(30)),
        1'699'999'999'000u);
    EXPECT_EQ(
        changes_window_start_ms(wall, steady, wall + milliseconds(29'100), steady + seconds(30)),
        1'699'999'999'000u);
    // Stepped back (changes made after it carry earlier times), or forward.
    EXPECT_EQ(changes_window_start_ms(wall, steady, wall + seconds(25), steady + seconds(30)), 0u);
    EXPECT_EQ(changes_window_start_ms(wall, steady, wall - hours(1), steady + seconds(30)), 0u);
    EXPECT_EQ(changes_window_start_ms(wall, steady, wall + hours(1), steady + seconds(30)), 0u);
    // An exec started in the epoch's first second looks at everything.
    EXPECT_EQ(
        changes_window_start_ms(time::WallPoint{milliseconds(500)}, steady,
                                time::WallPoint{milliseconds(600)}, steady + milliseconds(100)),
        0u);
}

} // namespace
} // namespace radial::session
