// The real radiald binary in daemon mode with the fake runtime (no engine): submit, the spool and
// inotify, concurrency, shutdown with its grace, the state-directory lock, the crash hook, status
// (docs/design.md §12.1-§5).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <radial/internal/unique_fd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>

#include "daemon/instance_claim.h"
#include "fake_daemon_setup.h"
#include "journal/sqlite_db.h"
#include "session/session_record.h"
#include "turn/box_id_lease.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using test::DaemonProcess;
using test::FakeSetup;
using test::peak_running;
using test::turn_file;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

std::size_t files_in(const std::string& dir) {
    std::error_code ec;
    std::size_t n = 0;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec))
        ++n;
    return n;
}

// A session's turn restating what the session's box got is that session's turn: the mode run.mode
// gave a session created without --mode, as an older radiald kept it (no mode in its record). One
// changing it is refused naming the effective value (docs/design.md §13.12).
TEST(RadialdSubmit, ASessionTurnRestatingItsSessionsModeIsAcceptedAndAChangeNamesIt) {
    FakeSetup s;
    fs::create_directories(session::sessions_dir(s.state_dir()));
    session::SessionRecord rec;
    rec.id = "s1";
    rec.label = "radial-session-x-s1";
    rec.image = "img";
    session::save_session(s.state_dir(), rec);
    const std::string turn = "session = \"s1\"\nargv = [\"true\"]\n";
    auto same = s.submit_raw(turn + "mode = \"workspace-write\"\n");
    EXPECT_EQ(same.exit_code, 0) << same.err;
    auto other = s.submit_raw(turn + "mode = \"read-only\"\n");
    EXPECT_NE(other.exit_code, 0) << other.out;
    EXPECT_THAT(other.err, HasSubstr("session 's1' was created with mode 'workspace-write'; a "
                                     "turn of it cannot change that"));
    auto workspace = s.submit_raw(turn + "workspace = \"" + s.dir().path() + "\"\n");
    EXPECT_THAT(workspace.err, HasSubstr("session 's1' was created with workspace none;"));
}

// run.mode = "read-only" is a ceiling: a request asking for workspace-write, or mounting a
// directory read-write, is refused at submit, never queued (it ran and wrote its workspace).
TEST(RadialdSubmit, ARequestWiderThanTheOperatorsModeIsRefused) {
    FakeSetup s("mode = \"read-only\"\n");
    auto wider = s.submit_raw(turn_file("[\"true\"]", "mode = \"workspace-write\"\n"));
    EXPECT_NE(wider.exit_code, 0) << wider.out;
    EXPECT_THAT(wider.err, HasSubstr("mode \"workspace-write\" is wider than run.mode"));
    EXPECT_EQ(files_in(s.state_dir() + "/spool/queue"), 0u);
    auto mount = s.submit_raw(turn_file(
        "[\"true\"]", "mounts = [{source = \"" + s.dir().path() + "\", target = \"/rw\"}]\n"));
    EXPECT_NE(mount.exit_code, 0) << mount.out;
    EXPECT_THAT(mount.err, HasSubstr("is read-write under run.mode = \"read-only\""));
    EXPECT_EQ(files_in(s.state_dir() + "/spool/queue"), 0u);
    auto narrow = s.submit_raw(turn_file("[\"true\"]", "mode = \"read-only\"\n"));
    EXPECT_EQ(narrow.exit_code, 0) << narrow.err;
}

// A user who may not read the state directory is told so, never that there is no journal
// (docs/design.md §12.4).
TEST(RadialdTurns, AUserWhoCannotReadTheJournalIsToldItIsAPermissionProblem) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (a command as another uid)";
    FakeSetup s;
    s.submit(turn_file("[\"echo\", \"hi\"]"));
    ASSERT_TRUE(fs::exists(s.state_dir() + "/journal.sqlite3"));
    // The config is readable by everyone; the state directory by root only.
    fs::permissions(s.dir().path(), fs::perms::owner_all | fs::perms::group_read |
                                        fs::perms::group_exec | fs::perms::others_read |
                                        fs::perms::others_exec);
    fs::permissions(s.config(), fs::perms::owner_read | fs::perms::owner_write |
                                    fs::perms::group_read | fs::perms::others_read);
    fs::permissions(s.state_dir(), fs::perms::owner_all);
    for (const char* command : {"turns", "records"}) {
        std::vector<std::string> argv{"setpriv",        "--reuid=65534", "--regid=65534",
                                      "--clear-groups", RADIALD_PATH,    command,
                                      "--config",       s.config()};
        if (std::string(command) == "records") argv.push_back("some-turn");
        auto r = test::run_process(argv, {}, 30s);
        EXPECT_EQ(r.exit_code, 1) << r.err;
        EXPECT_THAT(r.err, HasSubstr("cannot read the journal at '" + s.state_dir() +
                                     "/journal.sqlite3': Permission denied"));
        EXPECT_THAT(r.err, HasSubstr("uid 65534 may not read it"));
        EXPECT_THAT(r.err, Not(HasSubstr("no journal")));
    }
    // Root still reads it.
    auto r = test::run_process({RADIALD_PATH, "turns", "--config", s.config()}, {}, 30s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(RadialdSubmit, PrintsTheTurnIdAndJournalsItQueued) {
    FakeSetup s;
    std::string id = s.submit(turn_file("[\"echo\", \"hi\"]", "id = \"first-1\"\n"));
    EXPECT_EQ(id, "first-1");
    EXPECT_TRUE(fs::exists(s.state_dir() + "/spool/queue/first-1.json"));
    auto st = s.status();
    ASSERT_EQ(st["queued"].size(), 1u);
    EXPECT_EQ(st["queued"][0]["turnId"], "first-1");
    EXPECT_EQ(st["daemon"]["running"], false);
    // Instance identity: generated once, persisted, and the label uses it.
    std::string instance = st["instanceId"];
    EXPECT_THAT(instance, ::testing::MatchesRegex("[a-z0-9]{12}"));
    EXPECT_EQ(test::read_file(s.state_dir() + "/instance-id"), instance + "\n");
}

// A [redact] value a request's plain variable quotes is masked in the journal's first row too:
// the claim rewrites the row, but the first one stays in the journal's files (its WAL). Only the
// spool's copy, which the daemon runs, holds it (docs/design.md §10.2).
TEST(RadialdSubmit, ARedactValueTheRequestQuotesNeverReachesTheJournalsFiles) {
    const std::string value = "hunter2-redact-value-xyz";
    FakeSetup s("", "[redact]\nvalues = [\"" + value + "\"]\n");
    ASSERT_EQ(::chmod(s.config().c_str(), 0600), 0);
    std::string id = s.submit(
        turn_file("[\"echo\", \"hi\"]", "id = \"red-1\"\n[env]\nPLAIN = \"" + value + "\"\n"));
    ASSERT_EQ(id, "red-1");
    std::size_t journal_files = 0;
    for (const auto& e : fs::directory_iterator(s.state_dir())) {
        if (e.path().filename().string().rfind("journal", 0) != 0) continue;
        ++journal_files;
        EXPECT_EQ(test::read_file(e.path()).find(value), std::string::npos) << e.path();
    }
    EXPECT_GE(journal_files, 1u);
    EXPECT_NE(test::read_file(s.state_dir() + "/spool/queue/red-1.json").find(value),
              std::string::npos)
        << "the spool's copy is what runs";
    auto records = s.records("red-1");
    ASSERT_TRUE(records.is_object());
    EXPECT_EQ(records.dump().find(value), std::string::npos) << records;
}

// Submitted with no daemon to run it, the turn is queued (it runs once one starts), and submit
// says so, naming the state directory and the command that serves it; beside a daemon it does
// not.
// A submitted request waiting in the spool holds its turn id: `radiald turn` under that id is
// refused before anything of it is journaled, so the request is never taken for done and lost
// (docs/design.md §12.1).
TEST(RadialdSubmit, ATurnUnderTheIdOfAQueuedRequestIsRefusedAndTheRequestStays) {
    FakeSetup s;
    ASSERT_EQ(s.submit(turn_file("[\"echo\", \"hi\"]", "id = \"taken-1\"\n")), "taken-1");
    auto r = test::run_process({RADIALD_PATH, "turn", "--config", s.config(), "--image", "img",
                                "--turn-id", "taken-1", "--", "echo", "direct"},
                               {}, 30s);
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.err, HasSubstr("turn id 'taken-1' belongs to a request waiting in the daemon's "
                                 "spool"));
    EXPECT_THAT(r.err, HasSubstr("--turn-id"));
    EXPECT_TRUE(fs::exists(s.state_dir() + "/spool/queue/taken-1.json"));
    auto st = s.status();
    ASSERT_EQ(st["queued"].size(), 1u) << st.dump();
    EXPECT_EQ(st["queued"][0]["turnId"], "taken-1");
}

TEST(RadialdSubmit, WithNoDaemonTheTurnIsQueuedAndSubmitSaysNothingRunsItYet) {
    FakeSetup s;
    auto alone = s.submit_raw(turn_file("[\"echo\", \"hi\"]", "id = \"alone-1\"\n"));
    EXPECT_EQ(alone.exit_code, 0) << alone.err;
    EXPECT_EQ(alone.out, "alone-1\n");
    EXPECT_THAT(alone.err, HasSubstr("turn 'alone-1' is queued, but no daemon serves state "
                                     "directory '" +
                                     s.state_dir() + "'"));
    EXPECT_THAT(alone.err, HasSubstr("'radiald run'"));
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
    auto served = s.submit_raw(turn_file("[\"echo\", \"hi\"]", "id = \"served-1\"\n"));
    EXPECT_EQ(served.exit_code, 0) << served.err;
    EXPECT_EQ(served.out, "served-1\n");
    EXPECT_EQ(served.err, "");
}

TEST(RadialdSubmit, AnInvalidRequestIsRefusedWithPositionAndNeverEnqueued) {
    FakeSetup s;
    auto r = s.submit_raw("image = \"img\"\nargv = [\"echo\"]\ntimeout = \"later\"\n");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr(".toml:3:11: timeout: must be a duration from 1ms to 720h"));
    EXPECT_EQ(r.out, "");
    // A number says no unit: refused, as the integer is, not read as seconds.
    auto bare = s.submit_raw("image = \"img\"\nargv = [\"echo\"]\ntimeout = \"90\"\n");
    EXPECT_EQ(bare.exit_code, 1);
    EXPECT_THAT(bare.err, HasSubstr("timeout: \"90\" is a bare number (\"90s\" says its unit)"));
    EXPECT_EQ(files_in(s.state_dir() + "/spool/queue"), 0u);
    auto st = s.status();
    EXPECT_TRUE(st["queued"].empty());
    EXPECT_TRUE(st["recent"].empty());
}

TEST(RadialdSubmit, ADuplicateIdIsRefused) {
    FakeSetup s;
    s.submit(turn_file("[\"echo\"]", "id = \"dup\"\n"));
    auto r = s.submit_raw(turn_file("[\"echo\"]", "id = \"dup\"\n"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("id: turn 'dup' is already in the journal"));
    EXPECT_EQ(s.status()["recent"].size(), 1u);
}

// An id whose turn could never bind its socket under this state directory is refused at submit,
// naming the longest id that fits; one byte shorter is queued. The docker runtime: its turns
// bind unix sockets (the fake's use tcp).
TEST(RadialdSubmit, AnIdTooLongForTheTurnsSocketIsRefused) {
    test::DaemonSetup s;
    const std::size_t fixed = s.state_dir().size() + std::string_view("/turns//egress.sock").size();
    ASSERT_LT(fixed, 107u);
    const std::size_t over = 107 - fixed + 1;
    ASSERT_LE(over, 64u) << "the state directory is too short to make an id that does not fit";
    auto r = s.submit_raw(test::shell_turn("true", "id = \"" + std::string(over, 'a') + "\"\n"));
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_THAT(r.err, HasSubstr("over the limit of 107 bytes of a socket address; give an id of "
                                 "at most " +
                                 std::to_string(over - 1) + " bytes"));
    EXPECT_EQ(files_in(s.state_dir() + "/spool/queue"), 0u);
    s.submit(test::shell_turn("true", "id = \"" + std::string(over - 1, 'a') + "\"\n"));
    EXPECT_EQ(files_in(s.state_dir() + "/spool/queue"), 1u);
}

// A journal that fails after the request is queued (another writer holding it past the busy
// timeout) does not make submit say it failed: the turn will run, so its id is printed and submit
// exits 0 with a warning; a caller who retried on a failure would run the turn twice.
TEST(RadialdSubmit, AQueuedTurnIsReportedQueuedWhenTheJournalFailsAfterwards) {
    FakeSetup s;
    s.submit(turn_file("[\"echo\"]", "id = \"before\"\n")); // the journal exists
    journal::SqliteDb writer(s.state_dir() + "/journal.sqlite3");
    writer.exec("BEGIN IMMEDIATE");
    writer.exec("UPDATE turns SET state = state");
    auto r = s.submit_raw(turn_file("[\"echo\"]", "id = \"while-busy\"\n"));
    writer.exec("ROLLBACK");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "while-busy\n");
    EXPECT_THAT(r.err, HasSubstr("turn 'while-busy' is queued, but the journal could not list it"));
    EXPECT_TRUE(fs::exists(s.state_dir() + "/spool/queue/while-busy.json"));
}

TEST(RadialdRun, RunsQueuedTurnsThenNewOnesAsTheyArrive) {
    FakeSetup s;
    std::string before = s.submit(turn_file("[\"echo\", \"before\"]"));
    DaemonProcess d(s);
    ASSERT_TRUE(s.wait_terminal({before}, 10s)) << d.log();
    EXPECT_EQ(s.terminal(before)["status"], "succeeded");
    EXPECT_EQ(s.terminal(before)["outputTail"]["stdout"], "before\n");
    // The safety rescan is 30 s away: a turn run within a few seconds was found through inotify.
    auto t0 = std::chrono::steady_clock::now();
    std::string after = s.submit(turn_file("[\"echo\", \"after\"]"));
    ASSERT_TRUE(s.wait_terminal({after}, 10s)) << d.log();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    // The request leaves the spool just after the terminal record is journaled: awaited.
    EXPECT_TRUE(
        test::wait_until([&] { return files_in(s.state_dir() + "/spool/queue") == 0; }, 10s));
    EXPECT_THAT(d.log(), HasSubstr("turn " + after + ": claimed"));
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
}

// A journal removed or replaced under a running daemon: it claims nothing more (a record it wrote
// would go where no later start finds it, and that start would call the turn lost, so it ran
// twice), says why, and exits 1 for its process manager to start it again.
TEST(RadialdRun, AJournalRemovedUnderTheDaemonStopsItBeforeItClaimsAgain) {
    FakeSetup s;
    std::string before = s.submit(turn_file("[\"echo\"]"));
    DaemonProcess d(s);
    ASSERT_TRUE(s.wait_terminal({before}, 10s)) << d.log();
    ASSERT_TRUE(fs::remove(s.state_dir() + "/journal.sqlite3"));
    for (const char* side : {"-wal", "-shm"}) fs::remove(s.state_dir() + "/journal.sqlite3" + side);
    // Submit makes a new journal at the path, and its spool file wakes the daemon.
    std::string after = s.submit(turn_file("[\"echo\", \"after\"]"));
    EXPECT_EQ(d.wait_exit(30s), 1) << d.log();
    // Which it saw depends on when its loop ran: before submit made the new journal, or after.
    EXPECT_THAT(
        d.log(),
        ::testing::AnyOf(HasSubstr("journal.sqlite3' is another file than the one radiald opened"),
                         HasSubstr("journal.sqlite3' was removed while radiald ran")));
    EXPECT_THAT(d.log(), Not(HasSubstr("turn " + after + ": claimed")));
    EXPECT_TRUE(fs::exists(s.state_dir() + "/spool/queue/" + after + ".json"));
    EXPECT_EQ(s.status()["queued"].size(), 1u) << "the next start runs it";
}

// Beside a running daemon the session readers list, and a command that would make, remove or
// commit a session's box is refused with what to do; it named `radiald submit`, which makes no
// session.
TEST(RadialdRun, SessionReadersRunBesideTheDaemonAndChangesSayHowToMakeThem) {
    FakeSetup s;
    std::string before = s.submit(turn_file("[\"echo\"]"));
    DaemonProcess d(s);
    ASSERT_TRUE(s.wait_terminal({before}, 10s)) << d.log();
    for (const char* reader : {"ls", "snapshots"}) {
        auto r = test::run_process({RADIALD_PATH, "session", reader, "--config", s.config()});
        EXPECT_EQ(r.exit_code, 0) << reader << ": " << r.err;
    }
    auto create = test::run_process(
        {RADIALD_PATH, "session", "create", "--config", s.config(), "--image", "img"});
    EXPECT_NE(create.exit_code, 0);
    EXPECT_THAT(create.err, HasSubstr("stop the daemon ('systemctl stop radiald')"));
    EXPECT_THAT(create.err, Not(HasSubstr("submit the turn to that daemon")));
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
}

// `session rm` of an id radiald never makes names no session: 1, as for one that is not there,
// not 125 (a failure of the host; docs/design.md §14.4).
TEST(RadialdSessionRm, AnIdRadialdNeverMakesIsNoSuchSession) {
    FakeSetup s;
    for (const char* id : {"BAD ID", "../x", "nope"}) {
        auto r = test::run_process({RADIALD_PATH, "session", "rm", "--config", s.config(), id});
        EXPECT_EQ(r.exit_code, 1) << id << ": " << r.err;
        EXPECT_THAT(r.err, HasSubstr("'radiald session ls'")) << id;
    }
}

TEST(RadialdRun, NeverRunsMoreThanMaxConcurrentTurns) {
    FakeSetup s("maxConcurrentTurns = 2\n");
    std::vector<std::string> ids;
    for (int i = 0; i < 6; ++i) ids.push_back(s.submit(turn_file("[\"sleep\", \"400\"]")));
    DaemonProcess d(s);
    ASSERT_TRUE(s.wait_terminal(ids, 20s)) << d.log();
    // From the journal: at no instant were more than two turns between claimed and finished.
    EXPECT_EQ(peak_running(s, ids), 2);
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(10s), 0);
}

// More turns at once than run.boxIdRange has ids: a turn claimed while every id was held ended in
// an error ('every id is taken') although nothing was wrong but the moment. Now it waits queued
// until a turn's end frees an id, says once why it waits, and every turn succeeds.
TEST(RadialdRun, ATurnWaitsQueuedForAFreeBoxIdRatherThanFailing) {
    FakeSetup s("maxConcurrentTurns = 3\nboxIdRange = \"3200010-3200011\"\n");
    std::vector<std::string> ids;
    for (int i = 0; i < 5; ++i) ids.push_back(s.submit(turn_file("[\"sleep\", \"300\"]")));
    DaemonProcess d(s);
    ASSERT_TRUE(s.wait_terminal(ids, 60s)) << d.log();
    EXPECT_LE(peak_running(s, ids), 2) << d.log(); // every turn succeeded, two ids at most
    EXPECT_THAT(d.log(), HasSubstr(": waits: run.boxIdRange 3200010-3200011: every id is taken"));
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
}

// Ids held elsewhere (another state directory's turn, here the test's own lease): the turn waits,
// `status` says how many wait and why, and once the id is freed the turn runs without waiting for
// the daemon's 30 s rescan (nothing of this daemon's is woken by another's turn ending).
TEST(RadialdRun, ATurnWaitingForAnIdHeldElsewhereIsShownAndRunsSoonAfterItIsFreed) {
    test::TempDir elsewhere("radial-else");
    std::optional<turn::BoxIdLease> held(
        turn::BoxIdLease::acquire(turn::box_id_lease_dir(daemon::default_claim_registry()), 3200020,
                                  3200020, "radial-turn-elsewhere-1", elsewhere.path()));
    FakeSetup s("boxIdRange = \"3200020-3200020\"\n");
    const std::string id = s.submit(turn_file("[\"echo\", \"ran\"]"));
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("turn " + id + ": waits: run.boxIdRange 3200020-3200020", 30s))
        << d.log();
    const auto status = [&] {
        return test::run_process({RADIALD_PATH, "status", "--config", s.config()}, {}, 60s).out;
    };
    ASSERT_TRUE(test::wait_until(
        [&] {
            return status().find("1 queued turn(s) wait for a free id of run.boxIdRange") !=
                   std::string::npos;
        },
        30s))
        << status();
    held.reset();
    ASSERT_TRUE(s.wait_terminal({id}, 20s)) << d.log();
    EXPECT_EQ(s.terminal(id)["status"], "succeeded");
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
}

// A local user listening on run.metrics' port before the daemon started kept it from starting
// (exit 1), and so every turn from running. It now runs its turns and says why
// it has no endpoint.
TEST(RadialdRun, AMetricsPortAnotherProcessHoldsKeepsNoTurnFromRunning) {
    const internal::UniqueFd squatter(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(squatter.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(squatter.get(), 4), 0);
    ASSERT_EQ(::getsockname(squatter.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
    const std::string port = std::to_string(ntohs(a.sin_port));
    FakeSetup s("metrics = \"127.0.0.1:" + port + "\"\n");
    const std::string id = s.submit(turn_file("[\"echo\", \"ran\"]"));
    DaemonProcess d(s);
    ASSERT_TRUE(s.wait_terminal({id}, 30s)) << d.log();
    EXPECT_EQ(s.terminal(id)["status"], "succeeded");
    EXPECT_THAT(d.log(), HasSubstr("run.metrics: cannot serve the metrics on '127.0.0.1:" + port +
                                   "': Address already in use"));
    EXPECT_THAT(d.log(), HasSubstr("the daemon runs its turns without the metrics endpoint"));
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
}

TEST(RadialdRun, SigtermLetsARunningTurnFinishWithinTheGraceAndExitsZero) {
    FakeSetup s("shutdownGrace = \"20s\"\n");
    std::string id = s.submit(turn_file("[\"sleep\", \"1500\"]"));
    std::string queued = s.submit(turn_file("[\"echo\", \"later\"]"));
    DaemonProcess d(s, {});
    ASSERT_TRUE(d.wait_for_log("turn " + id + ": starting box", 10s)) << d.log();
    ASSERT_TRUE(d.wait_for_log("turn " + queued + ": starting box", 10s)) << d.log();
    std::string third;
    d.signal(SIGTERM);
    ASSERT_TRUE(d.wait_for_log("stopping: no new turns", 5s)) << d.log();
    third = s.submit(turn_file("[\"echo\", \"not now\"]"));
    EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
    EXPECT_EQ(s.terminal(id)["status"], "succeeded");
    // Submitted after the signal: not claimed, still queued for the next start.
    auto st = s.status();
    ASSERT_EQ(st["queued"].size(), 1u);
    EXPECT_EQ(st["queued"][0]["turnId"], third);
    EXPECT_THAT(d.log(), HasSubstr("radiald[daemon] info: stopped"));
}

TEST(RadialdRun, WhenTheGraceRunsOutTheTurnIsKilledAndRecordedKilled) {
    FakeSetup s("shutdownGrace = \"1s\"\n");
    std::string id = s.submit(turn_file("[\"sleep\", \"60000\"]"));
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("turn " + id + ": starting box", 10s)) << d.log();
    auto t0 = std::chrono::steady_clock::now();
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(15s), 0) << d.log();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 8s);
    auto rec = s.terminal(id);
    EXPECT_EQ(rec["status"], "killed");
    EXPECT_EQ(rec["reason"], "shutdown");
    EXPECT_THAT(d.log(), HasSubstr("turn " + id + ": killing its box (shutdown)"));
}

TEST(RadialdRun, ASecondSignalShortensTheGrace) {
    FakeSetup s("shutdownGrace = \"10m\"\n");
    std::string id = s.submit(turn_file("[\"sleep\", \"60000\"]"));
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("turn " + id + ": starting box", 10s)) << d.log();
    d.signal(SIGTERM);
    ASSERT_TRUE(d.wait_for_log("stopping: no new turns", 5s)) << d.log();
    d.signal(SIGINT);
    EXPECT_EQ(d.wait_exit(15s), 0) << d.log();
    EXPECT_EQ(s.terminal(id)["status"], "killed");
    EXPECT_THAT(d.log(), HasSubstr("second stop signal: killing the running turns now, without the "
                                   "rest of run.shutdownGrace (each box still has run.stopGrace"));
}

TEST(RadialdRun, ASecondDaemonOnTheSameStateDirectoryExitsWithAClearMessage) {
    FakeSetup s;
    DaemonProcess first(s);
    ASSERT_TRUE(first.wait_for_log("serving instance", 10s)) << first.log();
    auto second = test::run_process({RADIALD_PATH, "run", "--config", s.config()}, {}, 30s);
    EXPECT_EQ(second.exit_code, 1);
    EXPECT_EQ(second.err, "radiald[daemon] error: state directory '" + s.state_dir() +
                              "' (run.stateDir) is in use by 'radiald run' (pid " +
                              std::to_string(first.pid()) +
                              "); stop it first, or give this one its own run.stateDir\n");
    // Reconcile and `radiald turn` refuse too: either would take the daemon's live boxes for
    // orphans.
    auto rec = s.reconcile();
    EXPECT_EQ(rec.exit_code, 1);
    EXPECT_THAT(rec.err,
                HasSubstr("is in use by 'radiald run' (pid " + std::to_string(first.pid()) + ")"));
    auto turn = test::run_process(
        {RADIALD_PATH, "turn", "--config", s.config(), "--image", "img", "--", "echo"});
    EXPECT_EQ(turn.exit_code, 125);
    EXPECT_THAT(turn.err, HasSubstr("submit the turn to that daemon with 'radiald submit'"));
    auto st = s.status();
    EXPECT_EQ(st["daemon"]["running"], true);
    EXPECT_EQ(st["daemon"]["pids"], nlohmann::json::array({first.pid()}));
    first.signal(SIGTERM);
    EXPECT_EQ(first.wait_exit(10s), 0);
}

TEST(RadialdRun, AFailingPreflightStopsStartupWithTheRuntimesMessage) {
    FakeSetup s("", "[run.fake]\nfailPreflight = \"engine on fire\"\n");
    std::string id = s.submit(turn_file("[\"echo\"]"));
    auto r = test::run_process({RADIALD_PATH, "run", "--config", s.config()}, {}, 30s);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, "radiald[daemon] error: runtime 'fake' cannot run boxes: engine on fire\n");
    EXPECT_EQ(s.status()["queued"][0]["turnId"], id);
}

TEST(RadialdRun, SecretsComeFromTheDaemonsEnvironmentAndAMissingOneIsAnErrorRecord) {
    FakeSetup s;
    const std::string value = std::string("s3cr3t-") + "value-77";
    std::string with = s.submit(turn_file("[\"env\"]", "secrets = [\"MY_TOKEN\"]\n"));
    std::string without = s.submit(turn_file("[\"env\"]", "secrets = [\"NOT_SET_ANYWHERE\"]\n"));
    DaemonProcess d(s, {{"MY_TOKEN", value}});
    ASSERT_TRUE(s.wait_terminal({with, without}, 10s)) << d.log();
    auto ok = s.terminal(with);
    EXPECT_EQ(ok["status"], "succeeded");
    EXPECT_THAT(ok["outputTail"]["stdout"].get<std::string>(), HasSubstr("MY_TOKEN="));
    auto bad = s.terminal(without);
    EXPECT_EQ(bad["status"], "error");
    EXPECT_THAT(bad["error"].get<std::string>(),
                HasSubstr("secret 'NOT_SET_ANYWHERE' is not set in radiald's environment"));
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(10s), 0);
    // The value reached the box, and nothing radiald wrote holds it.
    for (const auto& f : fs::recursive_directory_iterator(s.dir().path())) {
        if (!f.is_regular_file()) continue;
        EXPECT_THAT(test::read_file(f.path()), Not(HasSubstr(value))) << f.path();
    }
}

// The crash hook stops every turn at "started"; SIGKILL there, start again: the three are
// reclaimed, the queued ones run, nothing submitted is missing.
TEST(RadialdRun, SigkillAfterStartThenRestartReclaimsAndRunsTheQueue) {
    FakeSetup s("maxConcurrentTurns = 3\n");
    std::vector<std::string> running, queued;
    for (int i = 0; i < 3; ++i) running.push_back(s.submit(turn_file("[\"echo\", \"x\"]")));
    {
        DaemonProcess d(s, {{"RADIAL_PAUSE_AT_FOR_TEST", "started"}});
        ASSERT_TRUE(d.wait_for_log("paused at 'started'", 10s, 3)) << d.log();
        for (int i = 0; i < 2; ++i) queued.push_back(s.submit(turn_file("[\"echo\", \"y\"]")));
        d.crash();
    }
    DaemonProcess again(s);
    std::vector<std::string> all = running;
    all.insert(all.end(), queued.begin(), queued.end());
    ASSERT_TRUE(s.wait_terminal(all, 15s)) << again.log();
    for (const auto& id : running) {
        auto rec = s.terminal(id);
        EXPECT_EQ(rec["status"], "reclaimed") << id;
        EXPECT_EQ(rec["recordsReceived"], 0);
    }
    for (const auto& id : queued) EXPECT_EQ(s.terminal(id)["status"], "succeeded") << id;
    // The request leaves the spool just after the terminal record is journaled: awaited.
    EXPECT_TRUE(
        test::wait_until([&] { return files_in(s.state_dir() + "/spool/queue") == 0; }, 10s));
    again.signal(SIGTERM);
    EXPECT_EQ(again.wait_exit(10s), 0);
}

// SIGKILL once the box is gone and its outcome known, before the journal takes the record (the
// "terminal" point): the turn ran to its end, and its record says how, from the reserve it was
// kept in (docs/design.md §11.5), not a guess that its box may never have been made (§8.4).
TEST(RadialdRun, SigkillBeforeTheRecordIsJournaledKeepsHowTheTurnEnded) {
    FakeSetup s;
    const std::string id = s.submit(turn_file("[\"exit\", \"7\"]"));
    {
        DaemonProcess d(s, {{"RADIAL_PAUSE_AT_FOR_TEST", "terminal"}});
        ASSERT_TRUE(d.wait_for_log("paused at 'terminal'", 10s)) << d.log();
        d.crash();
    }
    auto first = s.reconcile();
    EXPECT_EQ(first.exit_code, 0) << first.err;
    EXPECT_THAT(first.out, HasSubstr("journaled the kept terminal record of turn " + id));
    auto rec = s.terminal(id);
    EXPECT_EQ(rec["status"], "failed") << rec;
    EXPECT_EQ(rec["exitCode"], 7) << rec;
    EXPECT_FALSE(rec.contains("journalError")) << rec;
    EXPECT_FALSE(fs::exists(s.state_dir() + "/pending/" + id + ".json"));
    EXPECT_EQ(s.reconcile().out, "nothing to reconcile\n");
}

TEST(RadialdReconcile, PrintsWhatItDidAndThenNothing) {
    FakeSetup s;
    std::string id = s.submit(turn_file("[\"echo\"]"));
    {
        DaemonProcess d(s, {{"RADIAL_PAUSE_AT_FOR_TEST", "claimed"}});
        ASSERT_TRUE(d.wait_for_log("paused at 'claimed'", 10s)) << d.log();
        d.crash();
    }
    auto first = s.reconcile();
    EXPECT_EQ(first.exit_code, 0) << first.err;
    EXPECT_EQ(first.out,
              "reclaimed turn " + id + "\nremoved the request of finished turn " + id + "\n");
    EXPECT_EQ(s.terminal(id)["reason"],
              "the radiald running it stopped after claiming it, before its box started");
    auto second = s.reconcile();
    EXPECT_EQ(second.out, "nothing to reconcile\n");
}

TEST(RadialdStatus, ShowsQueuedRunningAndRecentTurns) {
    FakeSetup s("maxConcurrentTurns = 1\n");
    std::string run = s.submit(turn_file("[\"sleep\", \"60000\"]"));
    std::string wait = s.submit(turn_file("[\"echo\"]"));
    DaemonProcess d(s, {});
    ASSERT_TRUE(d.wait_for_log("turn " + run + ": starting box", 10s)) << d.log();
    auto st = s.status();
    ASSERT_EQ(st["running"].size(), 1u);
    EXPECT_EQ(st["running"][0]["turnId"], run);
    EXPECT_EQ(st["running"][0]["state"], "started");
    ASSERT_EQ(st["queued"].size(), 1u);
    EXPECT_EQ(st["queued"][0]["turnId"], wait);
    EXPECT_EQ(st["recent"].size(), 2u);
    auto text = test::run_process({RADIALD_PATH, "status", "--config", s.config()});
    EXPECT_EQ(text.exit_code, 0) << text.err;
    EXPECT_THAT(text.out,
                HasSubstr("daemon: running ('radiald run') pid " + std::to_string(d.pid())));
    EXPECT_THAT(text.out, HasSubstr("queued (1)\n"));
    EXPECT_THAT(text.out, HasSubstr("running (1)\n"));
    d.signal(SIGTERM);
    ASSERT_TRUE(d.wait_for_log("stopping: no new turns", 5s)) << d.log();
    d.signal(SIGTERM); // the second: no need to wait out the 30 s grace
    EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
}

TEST(RadialdTurn, UsesThePersistedInstanceId) {
    FakeSetup s;
    std::string queued = s.submit(turn_file("[\"echo\"]"));
    auto t = test::run_process({RADIALD_PATH, "turn", "--config", s.config(), "--image", "img",
                                "--turn-id", "adhoc", "--", "echo", "hi"});
    EXPECT_EQ(t.exit_code, 0) << t.err;
    std::string instance = s.status()["instanceId"];
    auto rec = s.records("adhoc");
    ASSERT_FALSE(rec.is_null());
    EXPECT_EQ(s.status()["queued"][0]["turnId"], queued);
    EXPECT_EQ(rec["terminal"]["label"], "radial-turn-" + instance + "-adhoc");
}

// docs/design.md §14.4: the commands other than `radiald turn` exit 2 for usage or config, 1 when
// they ran and what they were asked for failed — a journal that cannot be read, a spool that
// cannot be written, a turn that does not exist.
struct ExitStatusSetup : FakeSetup {
    using FakeSetup::FakeSetup;
    test::ProcessResult radiald(std::vector<std::string> args) const {
        args.insert(args.begin(), RADIALD_PATH);
        args.insert(args.begin() + 2, {"--config", config()});
        return test::run_process(args, {}, 30s);
    }
    // A journal file that is not an SQLite database.
    void break_journal() const {
        fs::create_directories(state_dir());
        dir().write("state/journal.sqlite3", "this is not a journal, and not empty either\n");
    }
    std::string request() const { return dir().write("request.toml", turn_file("[\"echo\"]")); }
};

TEST(RadialdExitStatus, AConfigErrorIsTwoForEveryReadingCommand) {
    ExitStatusSetup s("maxConcurentTurns = 3\n");
    for (std::vector<std::string> args : {std::vector<std::string>{"records", "t1"},
                                          {"turns"},
                                          {"status"},
                                          {"submit", s.request()},
                                          {"reconcile"},
                                          {"run"}}) {
        auto r = s.radiald(args);
        EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
        EXPECT_THAT(r.err, HasSubstr("radiald[config] error: " + s.config() + ":")) << args[0];
        EXPECT_THAT(r.err, HasSubstr(": run.maxConcurentTurns: unknown key")) << args[0];
    }
}

TEST(RadialdExitStatus, AnUnreadableJournalIsOne) {
    ExitStatusSetup s;
    s.break_journal();
    for (std::vector<std::string> args : {std::vector<std::string>{"records", "t1"},
                                          {"turns"},
                                          {"status"},
                                          {"submit", s.request()}}) {
        auto r = s.radiald(args);
        EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
        EXPECT_THAT(r.err, HasSubstr("radiald[journal] error: ")) << args[0];
        EXPECT_THAT(r.err, HasSubstr(s.state_dir() + "/journal.sqlite3")) << args[0];
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args[0] << ": " << r.err;
    }
}

TEST(RadialdExitStatus, AnUnknownTurnOrNoJournalIsOne) {
    ExitStatusSetup s;
    auto none = s.radiald({"records", "t1"});
    EXPECT_EQ(none.exit_code, 1) << none.err;
    EXPECT_THAT(none.err, HasSubstr("no journal at"));
    s.submit(turn_file("[\"echo\"]", "id = \"known\"\n"));
    auto unknown = s.radiald({"records", "unknown"});
    EXPECT_EQ(unknown.exit_code, 1) << unknown.err;
    EXPECT_THAT(unknown.err, HasSubstr("no turn 'unknown' in the journal"));
    EXPECT_EQ(s.radiald({"records", "known"}).exit_code, 0);
}

TEST(RadialdExitStatus, ASpoolThatCannotTakeTheRequestIsOneAndNothingIsJournaled) {
    ExitStatusSetup s;
    fs::create_directories(s.state_dir());
    s.dir().write("state/spool", "a file where the spool directory belongs\n");
    auto r = s.radiald({"submit", s.request()});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("radiald[spool] error: "));
    EXPECT_EQ(r.out, "");
}

// C-22: a user who may not read the state directory asks `radiald status` while the daemon runs.
// "not running" would be a confident wrong answer: it must say it cannot tell, name the path and
// the permission, and exit non-zero — whether it trips over the instance id or over the lock.
TEST(RadialdStatus, C22_CannotTellIsNotNotRunning) {
    for (const std::string& keys : {std::string(), std::string("instanceId = \"c22\"\n")}) {
        FakeSetup s(keys);
        ASSERT_EQ(::chmod(s.dir().path().c_str(), 0755), 0);
        ASSERT_EQ(::chmod(s.config().c_str(), 0644), 0);
        DaemonProcess d(s);
        ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
        auto as_nobody =
            test::run_process({"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                               RADIALD_PATH, "status", "--config", s.config()},
                              {}, 30s);
        EXPECT_EQ(as_nobody.exit_code, 1) << as_nobody.out << as_nobody.err;
        EXPECT_THAT(as_nobody.out, Not(HasSubstr("not running")));
        EXPECT_THAT(as_nobody.err, HasSubstr(s.state_dir()));
        EXPECT_THAT(as_nobody.err, HasSubstr("Permission denied"));
        EXPECT_EQ(s.status()["daemon"]["running"], true) << "root can tell";
        d.signal(SIGTERM);
        EXPECT_EQ(d.wait_exit(30s), 0);
    }
}

// As `systemctl status`: a state directory no daemon holds is said to be so, and the exit status
// alone tells a script (3, docs/design.md §14.4); --json carries the same figures and status.
TEST(RadialdStatus, WithoutADaemonItSaysSoAndExitsThree) {
    FakeSetup s;
    s.submit(turn_file("[\"echo\"]"));
    auto text = test::run_process({RADIALD_PATH, "status", "--config", s.config()}, {}, 30s);
    EXPECT_EQ(text.exit_code, 3) << text.err;
    EXPECT_THAT(text.out, HasSubstr("daemon: not running\n"));
    EXPECT_THAT(text.out, HasSubstr("queued (1)\n"));
    auto json =
        test::run_process({RADIALD_PATH, "status", "--config", s.config(), "--json"}, {}, 30s);
    EXPECT_EQ(json.exit_code, 3) << json.err;
    EXPECT_EQ(nlohmann::json::parse(json.out)["daemon"]["running"], false);
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
    auto running = test::run_process({RADIALD_PATH, "status", "--config", s.config()}, {}, 30s);
    EXPECT_EQ(running.exit_code, 0) << running.err;
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// A `radiald turn` of `sleep 120` with the id `id`, run on a thread of its own, with no daemon.
struct OneShotTurn {
    const FakeSetup& setup;
    test::ProcessResult result;
    std::thread thread;
    std::string id;
    std::atomic<bool> ended{false};
    // The fake runtime's `sleep` counts milliseconds: the box runs 120 s unless signalled.
    OneShotTurn(const FakeSetup& s, std::string turn_id) : setup(s), id(std::move(turn_id)) {
        thread = std::thread([this] {
            result = test::run_process({RADIALD_PATH, "turn", "--config", setup.config(),
                                        "--turn-id", id, "--image", "img", "--", "sleep", "120000"},
                                       {}, 300s);
            ended = true;
        });
    }
    ~OneShotTurn() {
        if (thread.joinable()) thread.join();
    }
    // `radiald status` (its text) once the turn is under way (60 s at most), and the pids of the
    // radiald holding the state directory (status --json's daemon.pids).
    std::pair<std::string, std::vector<pid_t>> running() {
        for (int i = 0; i < 600; ++i) {
            if (ended) {
                thread.join();
                ADD_FAILURE() << "the turn ended before it showed as running (exit "
                              << result.exit_code << "): " << result.err;
                return {};
            }
            const auto json = nlohmann::json::parse(
                test::run_process({RADIALD_PATH, "status", "--config", setup.config(), "--json"},
                                  {}, 30s)
                    .out,
                nullptr, false);
            // The text asked after the turn is seen running: it runs for 120 s more.
            const auto is_this = [&](const nlohmann::json& t) {
                return t.value("turnId", "") == id;
            };
            if (!json.is_discarded() && json["daemon"].contains("pids") &&
                std::any_of(json["running"].begin(), json["running"].end(), is_this))
                return {
                    test::run_process({RADIALD_PATH, "status", "--config", setup.config()}, {}, 30s)
                        .out,
                    json["daemon"]["pids"].get<std::vector<pid_t>>()};
            std::this_thread::sleep_for(100ms);
        }
        ADD_FAILURE() << "the turn never showed as running";
        return {};
    }
    void signal(const std::vector<pid_t>& pids, int sig) {
        for (pid_t p : pids) ::kill(p, sig);
        if (thread.joinable()) thread.join();
    }
};

// Without a daemon, the turn a live `radiald turn` runs is its own, not one a killed radiald left
// for the next start to reclaim.
TEST(RadialdStatus, AOneShotTurnRunningNowIsNotCalledLeftForTheNextStart) {
    FakeSetup s;
    OneShotTurn turn(s, "live-1");
    const auto [out, pids] = turn.running();
    EXPECT_THAT(out, HasSubstr("in flight (a live radiald turn, check or session command runs its "
                               "own"));
    EXPECT_THAT(out, Not(HasSubstr("in flight (reclaimed at the next start)")));
    ASSERT_FALSE(pids.empty());
    turn.signal(pids, SIGTERM);
    EXPECT_EQ(turn.result.exit_code, 130) << turn.result.err;
}

// `logs -f` of a turn whose radiald was killed: nothing writes its log any more. It says so at
// once — though another turn's radiald holds the state directory meanwhile: the killed turn's own
// log tells — and ends once the turn is reclaimed.
TEST(RadialdLogs, FollowingATurnWhoseRadialdWasKilledSaysSoAndEndsWhenReclaimed) {
    FakeSetup s;
    OneShotTurn turn(s, "killed-1");
    const auto pids = turn.running().second;
    ASSERT_FALSE(pids.empty());
    turn.signal(pids, SIGKILL);
    OneShotTurn other(s, "other-1");
    const auto others = other.running().second;
    const std::string err = s.dir() / "follow.err";
    test::BackgroundProcess follower(
        {RADIALD_PATH, "logs", "--config", s.config(), "-f", "killed-1"}, err, true);
    EXPECT_TRUE(test::wait_until(
        [&] {
            return test::read_file(err).find("is no longer run by any radiald") !=
                   std::string::npos;
        },
        60s))
        << test::read_file(err);
    EXPECT_TRUE(follower.running()) << "it waits for the turn to be reclaimed";
    other.signal(others, SIGTERM);
    test::run_process({RADIALD_PATH, "reconcile", "--config", s.config()}, {}, 60s);
    EXPECT_EQ(follower.wait(60s), 0) << test::read_file(err);
}

// A daemon in a mount namespace of its own (as the packaged unit's PrivateTmp= and ProtectHome=
// give it) sees another directory, or none, where submit's shell sees a workspace root: submit
// refuses a workspace there, naming the root and the fix, instead of queuing a turn the daemon
// would refuse or run on another directory; under a root both see alike it is queued and runs
// (docs/design.md §12.5).
TEST(RadialdSubmit, AWorkspaceTheDaemonSeesOtherwiseIsRefusedAtSubmit) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (a mount namespace for the daemon)";
    test::TempDir roots("radial-roots");
    const std::string hidden = roots.path() + "/hidden", inner = hidden + "/inner",
                      shared = roots.path() + "/shared";
    for (const auto& d : {inner + "/ws", shared + "/ws"}) fs::create_directories(d);
    FakeSetup s("workspaceRoots = [\"" + hidden + "\", \"" + inner + "\", \"" + shared + "\"]\n");
    // A tmpfs over `hidden` in the daemon's namespace only: `hidden` is another directory there,
    // and `inner` none at all.
    DaemonProcess d(s, {},
                    {"unshare", "--mount", "--propagation", "private", "sh", "-c",
                     "mount -t tmpfs radial-test \"$0\" && exec \"$@\"", hidden});
    ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
    EXPECT_THAT(d.log(), HasSubstr("run.workspaceRoots '" + inner +
                                   "' is not a directory this radiald can see"));

    auto other = s.submit_raw(turn_file("[\"true\"]", "workspace = \"" + hidden + "\"\n"));
    EXPECT_EQ(other.exit_code, 1) << other.err;
    EXPECT_THAT(other.err,
                HasSubstr("workspace '" + hidden + "' is under run.workspaceRoots '" + hidden +
                          "', which the running radiald sees as another "
                          "directory than this command does"));
    auto none = s.submit_raw(turn_file("[\"true\"]", "workspace = \"" + inner + "/ws\"\n"));
    EXPECT_EQ(none.exit_code, 1) << none.err;
    EXPECT_THAT(none.err, HasSubstr("under run.workspaceRoots '" + inner +
                                    "', which the running radiald cannot see"));
    EXPECT_THAT(none.err, HasSubstr("such as /srv"));
    EXPECT_EQ(files_in(s.state_dir() + "/spool/queue"), 0u) << "nothing refused was queued";

    std::string ok =
        s.submit(turn_file("[\"echo\", \"seen\"]", "workspace = \"" + shared + "/ws\"\n"));
    ASSERT_TRUE(s.wait_terminal({ok}, 30s)) << d.log();
    EXPECT_EQ(s.terminal(ok)["status"], "succeeded") << s.terminal(ok).dump();
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

} // namespace
} // namespace radial
