// Sessions end to end (docs/design.md §13.12): `radiald session create`, turns as execs in the
// session's box with `radiald turn --session`, `radiald session rm` — the real radiald, the real
// docker.so, the real engine.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../../support/box_id_leases.h"
#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/scope_exit.h"
#include "../../support/temp_dir.h"
#include "../daemon/docker_boxes.h"
#include "session_fixture.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::Session;
using ::testing::HasSubstr;
using ::testing::Not;

// What a turn installs outside the workspace is there for the session's next turn and for no
// other session; a turn's secret is in neither the next turn's environment nor the box's
// configuration; the workspace is the owner's after each turn; each record names the session.
TEST(SessionLive, ATurnsInstallStaysForTheSessionAndItsSecretLeavesWithTheTurn) {
    test::RadialdSetup setup;
    test::TempDir ws("radial-ws");
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    Session s(setup, {"--workspace", ws.path()}), other(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    ASSERT_EQ(other.created.exit_code, 0) << other.created.err;
    const std::string secret = "sess-secret-" + std::to_string(::getpid()) + "-0123456789";
    auto first = setup.turn({"--session", s.id, "--secret", "TOKEN_X"},
                            {"sh", "-c",
                             "mkdir -p /tmp/tool && echo v1 > /tmp/tool/bin; echo w > "
                             "/work/made; echo len=${#TOKEN_X}"},
                            {{"TOKEN_X", secret}});
    ASSERT_EQ(first.result.exit_code, 0) << first.result.err;
    EXPECT_EQ(first.result.out, "len=" + std::to_string(secret.size()) + "\n");
    EXPECT_EQ(first.record["session"], s.id);
    struct stat st {};
    ASSERT_EQ(::stat((ws / "made").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 65534u) << "the workspace was not handed back after the turn";

    auto second =
        setup.turn({"--session", s.id},
                   {"sh", "-c", "cat /tmp/tool/bin; echo \"[$TOKEN_X]\"; cat /work/made"});
    EXPECT_EQ(second.result.exit_code, 0) << second.result.err;
    EXPECT_EQ(second.result.out, "v1\n[]\nw\n");
    EXPECT_EQ(second.record["boxUser"], first.record["boxUser"]);
    auto elsewhere = setup.turn({"--session", other.id}, {"sh", "-c", "cat /tmp/tool/bin"});
    EXPECT_EQ(elsewhere.result.exit_code, 1);
    EXPECT_NE(elsewhere.record["boxUser"], first.record["boxUser"]);

    auto inspected = test::run_process({"docker", "inspect", s.box()});
    EXPECT_EQ(inspected.exit_code, 0) << s.box();
    EXPECT_THAT(inspected.out, Not(HasSubstr(secret)));
    EXPECT_THAT(inspected.out, Not(HasSubstr("TOKEN_X")));
}

// A session's box keeps the policy it was made under. Once the operator changes it (a tighter
// run.pidsLimit, run.memory, another workspace mode, a smaller home, the OCI runtime in
// [run.docker]), a turn of the session is refused naming the fix, rather than run in a box the new
// config would not make; under the config it was made with, it runs again.
TEST(SessionLive, ATurnOfASessionMadeUnderAnotherPolicyIsRefused) {
    test::RadialdSetup setup("pidsLimit = 256\n");
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    const std::string made_under = test::read_file(setup.config());
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"pidsLimit = 256", "pidsLimit = 64"},
          {"pidsLimit = 256", "pidsLimit = 256\nmemory = \"1g\""},
          {"pidsLimit = 256", "pidsLimit = 256\nmode = \"read-only\""},
          {"pidsLimit = 256", "pidsLimit = 256\nhomeSize = \"64m\""},
          {"[run.docker]\n", "[run.docker]\nociRuntime = \"runc\"\n"}}) {
        std::string changed = made_under;
        changed.replace(changed.find(from), from.size(), to);
        std::ofstream(setup.config()) << changed;
        auto t = setup.turn({"--session", s.id}, {"true"});
        EXPECT_EQ(t.result.exit_code, 125) << to << ": " << t.result.err;
        EXPECT_THAT(t.result.err, HasSubstr("was made under another policy")) << to;
        EXPECT_THAT(t.result.err, HasSubstr("radiald session rm " + s.id)) << to;
        EXPECT_THAT(t.result.err, HasSubstr("[run.docker]")) << to;
    }
    std::ofstream(setup.config()) << made_under;
    auto t = setup.turn({"--session", s.id}, {"echo", "same"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "same\n");
}

// run.boxIdRange moved away from a session's leased ids after it was made: those ids are checked
// against the host's accounts and processes no more, so a host process could run as them and read
// the box's secrets. A turn of the session is refused naming the fix; with the range given back,
// it runs again (docs/design.md §8.7).
TEST(SessionLive, ATurnOfASessionWhoseIdsLeftTheBoxIdRangeIsRefused) {
    test::RadialdSetup setup;
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    auto first = setup.turn({"--session", s.id}, {"id", "-u"});
    ASSERT_EQ(first.result.exit_code, 0) << first.result.err;
    const std::string user = first.record["boxUser"].get<std::string>();
    const std::uint64_t uid = std::stoull(user.substr(0, user.find(':')));
    const std::string made_under = test::read_file(setup.config());
    std::string moved = made_under;
    moved.insert(moved.find("[run]\n") + 6, "boxIdRange = \"" + std::to_string(uid + 1) + "-" +
                                                std::to_string(uid + 100) + "\"\n");
    std::ofstream(setup.config()) << moved;
    auto t = setup.turn({"--session", s.id}, {"id", "-u"});
    EXPECT_EQ(t.result.exit_code, 125) << t.result.err;
    EXPECT_THAT(t.result.err, HasSubstr("id " + std::to_string(uid) + " is outside"));
    EXPECT_THAT(t.result.err, HasSubstr("run.boxIdRange")) << t.result.err;
    EXPECT_THAT(t.result.err, HasSubstr("radiald session rm " + s.id)) << t.result.err;
    EXPECT_EQ(t.result.out, "");
    std::ofstream(setup.config()) << made_under;
    auto again = setup.turn({"--session", s.id}, {"id", "-u"});
    EXPECT_EQ(again.result.exit_code, 0) << again.result.err;
    EXPECT_EQ(again.result.out, std::to_string(uid) + "\n");
}

// run.allowedImages pins reach a session's turns, not only its create: a digest the operator
// pins the image away from after the session was made (a withdrawn build) does not run on in its
// box; pinned to the digest the box was made from, the session runs again.
TEST(SessionLive, ATurnOfASessionWhoseImageDigestIsNoLongerPinnedIsRefused) {
    test::RadialdSetup setup;
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    const auto rec =
        nlohmann::json::parse(test::read_file(setup.state_dir() + "/sessions/" + s.id + ".json"));
    const std::string made_from = rec.value("imageDigest", "");
    ASSERT_EQ(made_from.rfind("sha256:", 0), 0u) << rec.dump();
    const std::string made_under = test::read_file(setup.config());
    auto pinned_to = [&](const std::string& digest) {
        std::string text = made_under;
        text.insert(text.find("[run]\n") + 6,
                    "allowedImages = [\"" RADIAL_TEST_IMAGE "@" + digest + "\"]\n");
        std::ofstream(setup.config()) << text;
    };
    pinned_to("sha256:" + std::string(64, '0'));
    auto t = setup.turn({"--session", s.id}, {"echo", "ran"});
    EXPECT_EQ(t.result.exit_code, 125) << t.result.err;
    EXPECT_THAT(t.result.err, HasSubstr("which run.allowedImages does not pin it to"));
    EXPECT_THAT(t.result.err, HasSubstr("radiald session rm " + s.id));
    EXPECT_THAT(t.result.out, Not(HasSubstr("ran")));
    pinned_to(made_from);
    auto again = setup.turn({"--session", s.id}, {"echo", "ran"});
    EXPECT_EQ(again.result.exit_code, 0) << again.result.err;
    EXPECT_EQ(again.result.out, "ran\n");
}

// What a command of the box's uid can do to the session's PID 1 without ptrace: queue it a
// SIGTERM claiming sender pid 0, as the engine's stop arrives (it ended the session), or lower its
// open-file limit so that it cannot open /proc (it then took the session for busy for ever and
// left orphans alive). The first changes nothing; the second ends the box. And no command runs
// with core dumps on: one would hold the turn's environment, in its working directory or the
// host's crash collector.
TEST(SessionLive, ABoxProcessCanNeitherFakeAStopNorBlindTheSessionsInitNorDumpCore) {
    test::RadialdSetup setup;
    test::TempDir ws("radial-ws");
    fs::copy_file(RADIAL_PID1_PROBE, ws / "probe");
    ASSERT_EQ(::chmod((ws / "probe").c_str(), 0755), 0);
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    Session s(setup, {"--workspace", ws.path()});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    const std::vector<std::string> core = {"awk", "/Max core file size/ {print $5, $6}",
                                           "/proc/self/limits"};
    auto limits = setup.turn({"--session", s.id}, core);
    EXPECT_EQ(limits.result.out, "1 1\n") << limits.result.err;
    auto one_shot = setup.turn({}, core);
    EXPECT_EQ(one_shot.result.out, "1 1\n") << one_shot.result.err;

    auto queued = setup.turn({"--session", s.id}, {"/work/probe", "queue-term"});
    EXPECT_EQ(queued.result.out, "queued: ok\n") << queued.result.err;
    auto after = setup.turn({"--session", s.id}, {"echo", "alive"});
    EXPECT_EQ(after.result.exit_code, 0) << after.result.err;
    EXPECT_EQ(after.result.out, "alive\n");

    // To 5: PID 1 (fds 0 to 3 its own) can list /proc but open no process's entry in it, while
    // the turn's processes run on (60 s, past the budget below).
    test::BackgroundProcess lowering({RADIALD_PATH, "turn", "--config", setup.config(), "--session",
                                      s.id, "--", "sh", "-c",
                                      "/work/probe lower-nofile 5 > /work/lowered; sleep 60"});
    ASSERT_TRUE(test::wait_until([&] { return fs::exists(ws / "lowered"); }, 60s));
    EXPECT_TRUE(test::wait_until([&] { return test::box_state(s.box()) != "running"; }, 30s))
        << "a blind PID 1 kept the session's box";
    EXPECT_EQ(test::read_file(ws / "lowered"), "lowered: ok\n");
    lowering.wait();
    Session other(setup, {"--workspace", ws.path()});
    ASSERT_EQ(other.created.exit_code, 0) << other.created.err;
    auto none = setup.turn({"--session", other.id}, {"/work/probe", "lower-nofile", "0"});
    EXPECT_EQ(none.result.out, "lowered: ok\n") << none.result.err;
    EXPECT_TRUE(test::wait_until([&] { return test::box_state(other.box()) != "running"; }, 60s))
        << "a PID 1 that cannot open /proc kept the session's box";
}

// With a fixed run.user, a session's box has the identity a one-shot turn's box has: the passwd and
// group entry, home and variables (a session's box had none of them).
TEST(SessionLive, WithAFixedRunUserASessionsTurnHasTheIdentityAOneShotTurnHas) {
    test::RadialdSetup setup("user = \"4321:4321\"\n");
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    const std::vector<std::string> who = {
        "sh", "-c",
        "id -un; id -gn; echo \"HOME=$HOME USER=$USER\"; grep -c '^[^:]*:[^:]*:4321:' "
        "/etc/passwd; test -d \"$HOME\" && test -w \"$HOME\" && echo HOME-WRITABLE"};
    auto one_shot = setup.turn({}, who);
    ASSERT_EQ(one_shot.result.exit_code, 0) << one_shot.result.err;
    EXPECT_THAT(one_shot.result.out, HasSubstr("\n1\nHOME-WRITABLE\n"));
    auto in_session = setup.turn({"--session", s.id}, who);
    EXPECT_EQ(in_session.result.exit_code, 0) << in_session.result.err;
    EXPECT_EQ(in_session.result.out, one_shot.result.out);
}

// A one-shot turn given the session's id as its turn id keeps to its own identity files: it wrote
// its passwd over the session box's mounted one, then removed it, and the session's user had no
// name from then on.
TEST(SessionLive, AOneShotTurnWithTheSessionsIdLeavesTheSessionsIdentityAlone) {
    test::RadialdSetup setup;
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    const std::vector<std::string> who = {"sh", "-c", "id -un; id -u"};
    auto before = setup.turn({"--session", s.id}, who);
    ASSERT_EQ(before.result.exit_code, 0) << before.result.err;
    auto one_shot = setup.turn({"--turn-id", s.id}, who);
    EXPECT_EQ(one_shot.result.exit_code, 0) << one_shot.result.err;
    EXPECT_NE(one_shot.result.out, before.result.out) << "the one-shot box had the session's uid";
    auto after = setup.turn({"--session", s.id}, who);
    EXPECT_EQ(after.result.exit_code, 0) << after.result.err;
    EXPECT_EQ(after.result.out, before.result.out);
}

// `session rm` removes the session's files only: a one-shot turn running with the session's id
// as its turn id keeps its identity files, which are its own (<stateDir>/identity/<id>).
TEST(SessionLive, SessionRmLeavesARunningTurnOfTheSameIdItsIdentity) {
    test::RadialdSetup setup;
    const std::string id = "same-" + std::to_string(::getpid());
    Session s(setup, {"--session-id", id});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    test::TempDir scratch("radial-same-id");
    test::BackgroundProcess turn(
        {RADIALD_PATH, "turn", "--config", setup.config(), "--image", RADIAL_TEST_IMAGE,
         "--turn-id", id, "--", "sh", "-c", "echo started; sleep 600"},
        scratch / "radiald.log", true);
    ASSERT_EQ(turn.read_line(), std::optional<std::string>("started"))
        << test::read_file(scratch / "radiald.log");
    const std::string passwd = setup.state_dir() + "/identity/" + id + "/passwd";
    ASSERT_TRUE(fs::exists(passwd)) << "the one-shot turn has no identity files to keep";
    auto rm = test::run_process({RADIALD_PATH, "session", "rm", "--config", setup.config(), id}, {},
                                120s);
    EXPECT_EQ(rm.exit_code, 0) << rm.err;
    if (rm.exit_code == 0) s.id.clear();
    EXPECT_TRUE(fs::exists(passwd)) << "session rm removed a running turn's identity files";
    turn.signal(SIGTERM);
    EXPECT_EQ(turn.wait(60s), 130) << test::read_file(scratch / "radiald.log");
}

// What a `session create` killed before its record was saved leaves — its lock, socket and
// identity directories — reconciliation removes, so the id can be used again (an identity
// directory that exists is never taken over).
TEST(SessionLive, ReconciliationRemovesWhatAKilledSessionCreateLeft) {
    test::RadialdSetup setup;
    const std::string id = "left-" + std::to_string(::getpid());
    const std::string sessions = setup.state_dir() + "/sessions/";
    for (const char* suffix : {".lock", ".run", ".identity"})
        fs::create_directories(sessions + id + suffix);
    test::TempDir dummy("radial-left");
    fs::copy_file(dummy.write("passwd", "root:x:0:0::/:/bin/sh\n"),
                  sessions + id + ".identity/passwd");
    auto r = test::run_process({RADIALD_PATH, "reconcile", "--config", setup.config()}, {}, 120s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const char* suffix : {".lock", ".run", ".identity"})
        EXPECT_FALSE(fs::exists(sessions + id + suffix)) << suffix << " stayed";
    Session s(setup, {"--session-id", id});
    EXPECT_EQ(s.created.exit_code, 0) << s.created.err;
}

// A session whose record cannot be read (damaged by hand, or not radiald's) keeps its box through
// reconciliation: the box is not taken for a stray, nor are its ids freed for the next box while
// it may still run them. Mended, the record's session runs again.
TEST(SessionLive, ReconciliationKeepsTheBoxOfASessionWhoseRecordCannotBeRead) {
    test::RadialdSetup setup;
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    const std::string record = setup.state_dir() + "/sessions/" + s.id + ".json";
    const std::string text = test::read_file(record);
    // Mended however the test ends, before ~Session's `session rm` reads it.
    test::ScopeExit mend([&] { std::ofstream(record) << text; });
    auto damaged = nlohmann::json::parse(text);
    damaged.erase("workdir");
    std::ofstream(record) << damaged.dump();
    const std::size_t leases = test::box_id_leases_of(setup.state_dir());
    ASSERT_GE(leases, 1u);
    auto r = test::run_process({RADIALD_PATH, "reconcile", "--config", setup.config()}, {}, 120s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("session box '" + s.box() + "' kept"));
    EXPECT_THAT(r.err, Not(HasSubstr("which no session names")));
    EXPECT_EQ(test::box_state(s.box()), "running");
    EXPECT_EQ(test::box_id_leases_of(setup.state_dir()), leases) << "the box's ids were freed";
    std::ofstream(record) << text;
    auto t = setup.turn({"--session", s.id}, {"echo", "kept"});
    EXPECT_EQ(t.result.out, "kept\n") << t.result.err;
}

// A session made under an earlier instance id (its generated instance-id file removed since, as
// an error of radiald's may suggest) keeps its box through reconciliation under the new id: the
// box is asked for by the label the session recorded, not taken for gone with its record removed
// and the box left running unowned. Its next turn runs there (docs/design.md §8.4).
TEST(SessionLive, ReconciliationKeepsTheBoxOfASessionMadeUnderAnEarlierInstanceId) {
    test::RadialdSetup setup;
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    const std::string box = s.box();
    ASSERT_TRUE(fs::remove(setup.state_dir() + "/instance-id"));
    auto r = test::run_process({RADIALD_PATH, "reconcile", "--config", setup.config()}, {}, 120s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::box_state(box), "running") << r.err;
    EXPECT_THAT(r.err, Not(HasSubstr("session " + s.id + ": its box is gone"))) << r.err;
    auto t = setup.turn({"--session", s.id}, {"echo", "kept"});
    EXPECT_EQ(t.result.out, "kept\n") << t.result.err;
    auto rm = test::run_process({RADIALD_PATH, "session", "rm", "--config", setup.config(), s.id},
                                {}, 120s);
    EXPECT_EQ(rm.exit_code, 0) << rm.err;
    if (rm.exit_code == 0) s.id.clear();
    EXPECT_EQ(test::box_state(box), "gone");
}

// A turn of a session posts a record through its turn socket, journaled as any turn's.
TEST(SessionLive, ASessionsTurnPostsARecordThatIsJournaled) {
    test::RadialdSetup setup;
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    for (int i = 0; i < 2; ++i) { // the socket directory serves each turn in turn
        auto t = setup.turn(
            {"--session", s.id},
            {"sh", "-c",
             "curl -s -o /dev/null -w '%{http_code}\\n' --unix-socket "
             "\"${RADIAL_TURN_SOCKET#unix://}\" -H \"Authorization: Bearer $RADIAL_TURN_TOKEN\" "
             "-H 'Content-Type: application/json' -d '{\"type\":\"result\",\"payload\":{\"n\":" +
                 std::to_string(i) + "}}' http://radial/v1/records"});
        EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
        EXPECT_EQ(t.result.out, "201\n") << t.result.err;
        auto j = setup.records(t.record["turnId"]);
        ASSERT_TRUE(j.is_object()) << t.record.dump();
        ASSERT_EQ(j["records"].size(), 1u) << j.dump();
        EXPECT_EQ(j["records"][0]["payload"]["n"], i);
    }
}

// One turn per session at a time: a second, while the first runs, is refused naming the rule.
TEST(SessionLive, ASecondTurnWhileOneRunsIsRefused) {
    test::RadialdSetup setup;
    test::TempDir scratch("radial-sess");
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    test::BackgroundProcess first(
        {RADIALD_PATH, "turn", "--config", setup.config(), "--session", s.id, "--", "sh", "-c",
         "echo started; while [ ! -e /tmp/go ]; do sleep 0.1; done"},
        scratch / "radiald.log", true);
    ASSERT_EQ(first.read_line(), std::optional<std::string>("started"))
        << test::read_file(scratch / "radiald.log");
    auto second = setup.turn({"--session", s.id}, {"touch", "/tmp/go"});
    EXPECT_EQ(second.result.exit_code, 125);
    EXPECT_THAT(second.result.err, HasSubstr("one turn per session at a time"));
    auto go = test::run_process({"docker", "exec", s.box(), "touch", "/tmp/go"}, {}, 60s);
    EXPECT_EQ(go.exit_code, 0) << go.err;
    EXPECT_EQ(first.wait(60s), 0) << test::read_file(scratch / "radiald.log");
}

// `session rm` while a turn runs in the session is refused (the turn would write the record back
// and blame its command for the box's end); an exec left running by a killed radiald is ended
// before the session's next turn starts, so nothing of it sees that turn.
TEST(SessionLive, RmWaitsForTheTurnAndALeftoverExecEndsBeforeTheNextTurn) {
    test::RadialdSetup setup;
    test::TempDir scratch("radial-sess");
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    {
        test::BackgroundProcess running(
            {RADIALD_PATH, "turn", "--config", setup.config(), "--session", s.id, "--", "sh", "-c",
             "echo started; while [ ! -e /tmp/go ]; do sleep 0.1; done"},
            scratch / "first.log", true);
        ASSERT_EQ(running.read_line(), std::optional<std::string>("started"));
        auto rm = test::run_process(
            {RADIALD_PATH, "session", "rm", "--config", setup.config(), s.id}, {}, 60s);
        EXPECT_EQ(rm.exit_code, 1);
        EXPECT_THAT(rm.err, HasSubstr("is running a turn"));
        EXPECT_EQ(test::box_state(s.box()), "running");
        ASSERT_EQ(
            test::run_process({"docker", "exec", s.box(), "touch", "/tmp/go"}, {}, 60s).exit_code,
            0);
        EXPECT_EQ(running.wait(60s), 0) << test::read_file(scratch / "first.log");
    }
    test::BackgroundProcess left({RADIALD_PATH, "turn", "--config", setup.config(), "--session",
                                  s.id, "--", "sh", "-c", "echo started; sleep 600"},
                                 scratch / "second.log", true);
    ASSERT_EQ(left.read_line(), std::optional<std::string>("started"));
    left.signal(SIGKILL);
    left.wait(30s);
    auto next = setup.turn({"--session", s.id}, {"sh", "-c", "ps -o args | grep -c '^sleep 600'"});
    EXPECT_EQ(next.result.exit_code, 1) << next.result.err; // grep -c counts 0 and fails
    EXPECT_EQ(next.result.out, "0\n") << "a killed turn's exec ran on beside the next turn";
}

// A radiald SIGKILLed during a session's turn leaves the workspace the box uid's (the box is kept,
// and with it the hand-back's note). The session's next turn gives it back to its owner at the
// session's create once it ends, rather than take the box uid for the owner and keep it so.
TEST(SessionLive, AWorkspaceAKilledTurnLeftTheBoxUidsIsTheOwnersAfterTheNextTurn) {
    test::RadialdSetup setup;
    test::TempDir ws("radial-ws"), scratch("radial-sess");
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    Session s(setup, {"--workspace", ws.path()});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    test::BackgroundProcess left({RADIALD_PATH, "turn", "--config", setup.config(), "--session",
                                  s.id, "--", "sh", "-c", "echo started; sleep 600"},
                                 scratch / "left.log", true);
    ASSERT_EQ(left.read_line(), std::optional<std::string>("started"))
        << test::read_file(scratch / "left.log");
    left.signal(SIGKILL);
    left.wait(30s);
    struct stat st {};
    ASSERT_EQ(::stat(ws.path().c_str(), &st), 0);
    ASSERT_NE(st.st_uid, 65534u) << "the killed turn did not leave the workspace the box's";
    auto next = setup.turn({"--session", s.id}, {"sh", "-c", "echo x > /work/after"});
    ASSERT_EQ(next.result.exit_code, 0) << next.result.err;
    for (const std::string& p : {ws.path(), ws / "after"}) {
        ASSERT_EQ(::stat(p.c_str(), &st), 0) << p;
        EXPECT_EQ(st.st_uid, 65534u) << p << " was not given back to the workspace's owner";
        EXPECT_EQ(st.st_gid, 65534u) << p;
    }
    // The killed turn's note is done with once the next turn's exec ended and it handed the
    // workspace back: the turns after it no longer say its box may still write.
    EXPECT_THAT(next.result.err, HasSubstr("may still write")) << "the note was there before";
    EXPECT_TRUE(std::filesystem::is_empty(setup.state_dir() + "/handovers")); // handover_marker_dir
    auto third = setup.turn({"--session", s.id}, {"true"});
    ASSERT_EQ(third.result.exit_code, 0) << third.result.err;
    EXPECT_THAT(third.result.err, Not(HasSubstr("may still write"))) << third.result.err;
}

// Two sessions on one workspace; a radiald SIGKILLed during the first's turn leaves its exec
// writing there. A turn of the second session ran beside it (only a one-shot turn was refused),
// took the first box's uid for the workspace's owner and left the tree that uid's. Now it is
// refused, as a one-shot turn is, naming the session and what ends its exec; the first session's
// own next turn runs (its exec's init ends what the killed one left). `session rm` of a session
// whose killed turn left the workspace its box's hands it back before the box's ids are freed.
TEST(SessionLive, ATurnDoesNotStartBesideAnotherSessionsOrphanedExecOnItsWorkspace) {
    test::RadialdSetup setup;
    test::TempDir ws("radial-ws"), scratch("radial-sess");
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    Session first(setup, {"--workspace", ws.path()}), second(setup, {"--workspace", ws.path()});
    ASSERT_EQ(first.created.exit_code, 0) << first.created.err;
    ASSERT_EQ(second.created.exit_code, 0) << second.created.err;
    auto orphan_an_exec = [&](const std::string& id) {
        test::BackgroundProcess left({RADIALD_PATH, "turn", "--config", setup.config(), "--session",
                                      first.id, "--turn-id", id, "--", "sh", "-c",
                                      "echo started; while :; do touch /work/tick; "
                                      "sleep 0.2; done"},
                                     scratch / (id + ".log"), true);
        ASSERT_EQ(left.read_line(), std::optional<std::string>("started"))
            << test::read_file(scratch / (id + ".log"));
        left.signal(SIGKILL);
        left.wait(30s);
    };
    orphan_an_exec("orphaned-1");
    for (const auto& flags : {std::vector<std::string>{"--session", second.id},
                              std::vector<std::string>{"--workspace", ws.path()}}) {
        auto beside = setup.turn(flags, {"sh", "-c", "echo x > /work/beside"});
        EXPECT_EQ(beside.result.exit_code, 125) << beside.result.err;
        EXPECT_THAT(beside.result.err,
                    HasSubstr("is still written by turn orphaned-1 in the box of session '" +
                              first.id + "'"))
            << beside.result.err;
        EXPECT_THAT(beside.result.err, HasSubstr("radiald session rm " + first.id));
    }
    EXPECT_FALSE(fs::exists(ws / "beside"));
    auto own = setup.turn({"--session", first.id}, {"true"});
    EXPECT_EQ(own.result.exit_code, 0) << own.result.err;
    struct stat st {};
    ASSERT_EQ(::stat(ws.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 65534u);

    orphan_an_exec("orphaned-2");
    ASSERT_EQ(::stat(ws.path().c_str(), &st), 0);
    ASSERT_NE(st.st_uid, 65534u) << "the killed turn did not leave the workspace the box's";
    auto rm = test::run_process(
        {RADIALD_PATH, "session", "rm", "--config", setup.config(), first.id}, {}, 120s);
    ASSERT_EQ(rm.exit_code, 0) << rm.err;
    first.id.clear(); // removed
    for (const std::string& p : {ws.path(), ws / "tick"}) {
        ASSERT_EQ(::stat(p.c_str(), &st), 0) << p;
        EXPECT_EQ(st.st_uid, 65534u) << p << " was left the removed box's uid";
    }
    auto after = setup.turn({"--session", second.id}, {"sh", "-c", "echo x > /work/after"});
    EXPECT_EQ(after.result.exit_code, 0) << after.result.err;
}

// A workspace that a box's uid holds at the session's create (a turn on it runs) is not taken for
// its owner: a later hand-back would give the files to whichever box is leased that uid next.
TEST(SessionLive, AWorkspaceABoxUidHoldsAtCreateIsNotRecordedAsItsOwner) {
    test::RadialdSetup setup;
    test::TempDir ws("radial-ws"), mine("radial-ws");
    ASSERT_EQ(::chown(ws.path().c_str(), 2'000'000'123, 2'000'000'123), 0);
    ASSERT_EQ(::chown(mine.path().c_str(), 65534, 65534), 0);
    Session boxed(setup, {"--workspace", ws.path()}), owned(setup, {"--workspace", mine.path()});
    ASSERT_EQ(boxed.created.exit_code, 0) << boxed.created.err;
    ASSERT_EQ(owned.created.exit_code, 0) << owned.created.err;
    auto owner_of = [&](const Session& s) {
        return nlohmann::json::parse(
                   test::read_file(setup.state_dir() + "/sessions/" + s.id + ".json"))
            .value("workspaceOwner", "?");
    };
    EXPECT_EQ(owner_of(boxed), "");
    EXPECT_EQ(owner_of(owned), "65534:65534");
}

// The session keeps which directory its workspace was at create: a turn finding another one at
// the path (the old one moved aside) is refused, naming `session rm`, and runs again once the
// directory is put back (docs/design.md §13.12).
TEST(SessionLive, ATurnFindingAnotherDirectoryAtTheWorkspacePathIsRefused) {
    test::RadialdSetup setup;
    test::TempDir base("radial-ws");
    const std::string ws = base / "ws", aside = base / "aside";
    fs::create_directories(ws);
    ASSERT_EQ(::chown(ws.c_str(), 65534, 65534), 0);
    Session s(setup, {"--workspace", ws});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    const auto record =
        nlohmann::json::parse(test::read_file(setup.state_dir() + "/sessions/" + s.id + ".json"));
    EXPECT_NE(record.value("workspaceId", ""), "") << record.dump();
    fs::rename(ws, aside);
    fs::create_directories(ws);
    auto refused = setup.turn({"--session", s.id}, {"true"});
    EXPECT_EQ(refused.result.exit_code, 125) << refused.result.err;
    EXPECT_THAT(refused.result.err, HasSubstr("is not the directory the session was created with"));
    EXPECT_THAT(refused.result.err, HasSubstr("'radiald session rm " + s.id + "'"));
    fs::remove(ws);
    fs::rename(aside, ws);
    auto ran = setup.turn({"--session", s.id}, {"true"});
    EXPECT_EQ(ran.result.exit_code, 0) << ran.result.err;
}

// The session's maximum lifetime ending under a turn kills its exec, and the record says so
// (killed, no exit code of the command's), not that the command failed with 143.
TEST(SessionLive, AMaximumLifetimeEndingUnderATurnKillsItsExec) {
    test::RadialdSetup setup;
    Session s(setup, {"--max-lifetime", "10s"});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    auto t = setup.turn({"--session", s.id}, {"sh", "-c", "echo a; sleep 120"});
    EXPECT_EQ(t.record["status"], "failed") << t.record.dump();
    EXPECT_EQ(t.record["reason"], "killed") << t.record.dump();
    EXPECT_FALSE(t.record.contains("exitCode")) << t.record.dump();
    EXPECT_THAT(t.result.err, HasSubstr("ended during the exec (its maximum lifetime passed"));
}

// A restart of the session's box (docker restart, an engine restarted with a restart policy)
// starts its PID 1's lifetime again: the session's is its record's, and a turn past it is
// refused naming `session rm`, though the box still runs.
TEST(SessionLive, ATurnPastTheRecordsLifetimeIsRefusedThoughItsBoxWasRestarted) {
    test::RadialdSetup setup;
    Session s(setup, {"--max-lifetime", "10s"});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    const auto rec =
        nlohmann::json::parse(test::read_file(setup.state_dir() + "/sessions/" + s.id + ".json"));
    const auto created = std::chrono::system_clock::time_point(
        std::chrono::milliseconds(rec.at("createdAtMs").get<std::int64_t>()));
    const auto past = [](std::chrono::system_clock::time_point t) {
        return [t] { return std::chrono::system_clock::now() >= t; };
    };
    // Restarted late in its life: its PID 1 then ends it 10 s after the restart, well past the
    // session's end, so the look at +11 s has at least 7 s in hand however slow the restart was.
    ASSERT_TRUE(test::wait_until(past(created + 8s), 60s));
    auto restarted = test::run_process({"docker", "restart", "-t", "1", s.box()}, {}, 60s);
    ASSERT_EQ(restarted.exit_code, 0) << restarted.err;
    ASSERT_TRUE(test::wait_until(past(created + 11s), 60s));
    ASSERT_EQ(
        test::run_process({"docker", "inspect", "-f", "{{.State.Running}}", s.box()}, {}, 60s).out,
        "true\n")
        << "the restarted box ended already: this test would show nothing";
    auto late = setup.turn({"--session", s.id}, {"echo", "ran-past-its-lifetime"});
    EXPECT_NE(late.result.exit_code, 0) << late.result.out;
    EXPECT_THAT(late.result.out, Not(HasSubstr("ran-past-its-lifetime")));
    EXPECT_THAT(late.result.err, HasSubstr("past its maximum lifetime"));
    EXPECT_THAT(late.result.err, HasSubstr("'radiald session rm " + s.id + "'"));
}

// The engine stopping or killing the session's box under an exec: the exec was killed, not by
// its command (whose 143 or 137 it showed before the engine marked the box stopped).
TEST(SessionLive, ABoxTheEngineStopsUnderATurnKillsItsExecNotItsCommand) {
    for (const std::vector<std::string>& stop :
         {std::vector<std::string>{"stop", "-t", "1"}, std::vector<std::string>{"kill"},
          std::vector<std::string>{"rm", "-f"}}) {
        test::RadialdSetup setup;
        test::TempDir scratch("radial-sess");
        Session s(setup, {});
        ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
        const std::string record = scratch / "record.json";
        test::BackgroundProcess turn(
            {RADIALD_PATH, "turn", "--config", setup.config(), "--session", s.id, "--record-file",
             record, "--", "sh", "-c", "echo started; sleep 600"},
            scratch / "radiald.log", true);
        ASSERT_EQ(turn.read_line(), std::optional<std::string>("started"))
            << test::read_file(scratch / "radiald.log");
        std::vector<std::string> docker{"docker"};
        docker.insert(docker.end(), stop.begin(), stop.end());
        docker.push_back(s.box());
        auto stopped = test::run_process(docker, {}, 60s);
        ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
        turn.wait(60s);
        const auto rec = nlohmann::json::parse(test::read_file(record));
        EXPECT_EQ(rec["reason"], "killed") << stop[0] << ": " << rec.dump();
        EXPECT_FALSE(rec.contains("exitCode")) << stop[0] << ": " << rec.dump();
    }
}

// An exec's timeout is a turn's (124), and the session lives on; `session rm` removes the box,
// after which the session is unknown.
TEST(SessionLive, ATimeoutEndsTheTurnNotTheSessionAndRmEndsTheSession) {
    test::RadialdSetup setup;
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    auto slow = setup.turn({"--session", s.id, "--timeout", "1s"}, {"sleep", "60"});
    EXPECT_EQ(slow.result.exit_code, 124) << slow.result.err;
    EXPECT_EQ(slow.record["status"], "timed_out");
    auto after = setup.turn({"--session", s.id}, {"echo", "alive"});
    EXPECT_EQ(after.result.out, "alive\n") << after.result.err;
    auto rm = test::run_process({RADIALD_PATH, "session", "rm", "--config", setup.config(), s.id},
                                {}, 60s);
    EXPECT_EQ(rm.exit_code, 0) << rm.err;
    EXPECT_EQ(test::box_state(s.box()), "gone") << "the box outlived 'session rm'";
    EXPECT_FALSE(fs::exists(setup.state_dir() + "/sessions/" + s.id + ".identity"))
        << "the session's identity files outlived 'session rm'";
    auto gone = setup.turn({"--session", s.id}, {"true"});
    EXPECT_EQ(gone.result.exit_code, 125);
    EXPECT_THAT(gone.result.err, HasSubstr("session '" + s.id + "' ended at "));
    EXPECT_THAT(gone.result.err, HasSubstr("(removed by 'radiald session rm')"));
    if (rm.exit_code == 0) s.id.clear();
}

// With radiald SIGKILLed mid-turn, the exec still ends at its deadline (radial-init in the box),
// and the session's box, idle then, ends at its idle timeout: nothing waits for a radiald.
TEST(SessionLive, WithRadialdKilledTheExecAndTheIdleSessionEndOnTheirOwnDeadlines) {
    test::RadialdSetup setup;
    test::TempDir scratch("radial-sess");
    Session s(setup, {"--idle-timeout", "10s"});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    test::BackgroundProcess turn(
        {RADIALD_PATH, "turn", "--config", setup.config(), "--session", s.id, "--timeout", "2s",
         "--", "sh", "-c", "echo started; sleep 600"},
        scratch / "radiald.log", true);
    ASSERT_EQ(turn.read_line(), std::optional<std::string>("started"))
        << test::read_file(scratch / "radiald.log");
    turn.signal(SIGKILL);
    turn.wait(30s);
    // The exec's turn gets a reclaimed record that says what is known: the box is the
    // session's, the exec's end is its own (a daemon's reconciliation of a live session).
    auto early =
        test::run_process({RADIALD_PATH, "reconcile", "--config", setup.config()}, {}, 120s);
    EXPECT_EQ(early.exit_code, 0) << early.err;
    auto turns = test::run_process(
        {RADIALD_PATH, "turns", "--config", setup.config(), "--json", "-n", "1"}, {}, 60s);
    // One JSON object per line.
    const auto listed =
        nlohmann::json::parse(turns.out.substr(0, turns.out.find('\n')), nullptr, false);
    ASSERT_TRUE(listed.is_object()) << turns.out;
    const auto reclaimed = setup.records(listed["turnId"]);
    ASSERT_TRUE(reclaimed.is_object());
    EXPECT_EQ(reclaimed["terminal"]["status"], "reclaimed");
    EXPECT_THAT(reclaimed["terminal"]["reason"].get<std::string>(),
                HasSubstr("as an exec in the box of session '" + s.id +
                          "'; the box, the session's, was kept"));
    EXPECT_EQ(reclaimed["terminal"]["session"], s.id);
    EXPECT_FALSE(reclaimed["terminal"].contains("exitCode"))
        << "the session box's state was given as the exec's";
    // 2 s timeout + kill grace + 10 s idle, with room for a loaded machine.
    EXPECT_TRUE(test::wait_until([&] { return test::box_state(s.box()) == "exited"; }, 90s))
        << "session box " << s.box() << " is " << test::box_state(s.box());
    // Reconciliation removes the ended session, and keeps a running one.
    Session running(setup, {});
    ASSERT_EQ(running.created.exit_code, 0) << running.created.err;
    auto r = test::run_process({RADIALD_PATH, "reconcile", "--config", setup.config()}, {}, 120s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("removed session " + s.id + " (its box had ended or was gone)"));
    EXPECT_EQ(test::box_state(s.box()), "gone");
    EXPECT_EQ(test::box_state(running.box()), "running");
    EXPECT_TRUE(fs::exists(setup.state_dir() + "/sessions/" + running.id + ".identity/passwd"))
        << "reconciliation took a running session's identity files for residue";
    EXPECT_FALSE(fs::exists(setup.state_dir() + "/sessions/" + s.id + ".identity"))
        << "the ended session's identity files stayed";
    auto again = setup.turn({"--session", running.id}, {"echo", "adopted"});
    EXPECT_EQ(again.result.out, "adopted\n") << again.result.err;
    if (test::box_state(s.box()) == "gone") s.id.clear(); // reconciliation removed it
}

// What a session's turn starts in the background and orphans (a server that forks away from its
// parent) runs until the turn ends, as in a box of its own: PID 1 ends only what a killed exec
// left. Then whether it ended with the turn: "ENDED", or "" when no turn ran.
std::string orphan_runs_until_the_turn_ends(const test::RadialdSetup& setup) {
    Session s(setup, {});
    EXPECT_EQ(s.created.exit_code, 0) << s.created.err;
    if (s.created.exit_code != 0) return "";
    auto t = setup.turn({"--session", s.id},
                        {"sh", "-c",
                         "(sleep 300 & echo $! > /tmp/bg); sleep 2; kill -0 $(cat /tmp/bg) && echo "
                         "ALIVE"});
    EXPECT_EQ(t.result.out, "ALIVE\n") << t.result.err;
    auto next = setup.turn({"--session", s.id},
                           {"sh", "-c", "kill -0 $(cat /tmp/bg) 2>/dev/null || echo ENDED"});
    return next.result.out;
}

TEST(SessionLive, WhatATurnOrphansRunsUntilTheTurnEnds) {
    test::RadialdSetup setup;
    EXPECT_EQ(orphan_runs_until_the_turn_ends(setup), "ENDED\n");
}

// The same under gVisor, which lets no process but PID 1 be a child subreaper: the exec's
// radial-init runs all the same (it refused to, exit 125), and the box's PID 1, finding that out,
// leaves a live turn's orphan alone.
TEST(SessionLive, UnderGvisorWhatATurnOrphansRunsUntilTheTurnEnds) {
    test::RadialdSetup setup("", "[run.docker]\nociRuntime = \"runsc\"\n");
    EXPECT_EQ(orphan_runs_until_the_turn_ends(setup), "ENDED\n");
}

// A turn's command that kills its exec's radial-init (the same uid) with radiald gone leaves no
// process behind: the box's PID 1 ends what came to it, and the box, idle, ends at its idle
// timeout. Before, the command's child ran on and kept the box from ever being idle.
// `how`: what the command does to its radial-init ($PPID), "kill -9" or "kill -STOP".
void a_killed_exec_init_leaves_nothing(const test::RadialdSetup& setup,
                                       const std::string& how = "kill -9") {
    test::TempDir scratch("radial-sess");
    Session s(setup, {"--idle-timeout", "10s"});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    test::BackgroundProcess turn(
        {RADIALD_PATH, "turn", "--config", setup.config(), "--session", s.id, "--timeout", "10m",
         "--", "sh", "-c",
         "mkfifo /tmp/go && echo started; read go < /tmp/go; " + how + " $PPID; exec sleep 600"},
        scratch / "radiald.log", true);
    ASSERT_EQ(turn.read_line(), std::optional<std::string>("started"))
        << test::read_file(scratch / "radiald.log");
    turn.signal(SIGKILL);
    turn.wait(30s);
    // radiald is gone; now the command kills its radial-init (a fifo the test opens lets it go).
    ASSERT_EQ(test::run_process({"docker", "exec", s.box(), "sh", "-c", "echo > /tmp/go"}, {}, 30s)
                  .exit_code,
              0);
    EXPECT_TRUE(test::wait_until(
        [&] {
            return test::run_process({"docker", "top", s.box()}).out.find("sleep 600") ==
                   std::string::npos;
        },
        30s))
        << "the command's process outlived its exec's radial-init";
    EXPECT_TRUE(test::wait_until([&] { return test::box_state(s.box()) == "exited"; }, 90s))
        << "session box " << s.box() << " is " << test::box_state(s.box());
}

TEST(SessionLive, ACommandThatKillsItsExecsInitLeavesNothingRunningWithRadialdDead) {
    test::RadialdSetup setup;
    a_killed_exec_init_leaves_nothing(setup);
}

// A command that stops its radial-init (SIGSTOP: the same uid may, though not ptrace it) would
// hold the turn's deadline and its own processes still forever with radiald dead: the box's PID 1
// kills an exec's process it finds stopped, and then what it held.
TEST(SessionLive, ACommandThatStopsItsExecsInitLeavesNothingRunningWithRadialdDead) {
    test::RadialdSetup setup;
    a_killed_exec_init_leaves_nothing(setup, "kill -STOP");
}

TEST(SessionLive, UnderGvisorACommandThatStopsItsExecsInitLeavesNothingRunningWithRadialdDead) {
    test::RadialdSetup setup("", "[run.docker]\nociRuntime = \"runsc\"\n");
    a_killed_exec_init_leaves_nothing(setup, "kill -STOP");
}

// The same under gVisor, where the box's PID 1 cannot tell a killed exec's leftovers from a live
// turn's background process by how they came to it: it ends what came to it once no exec runs.
TEST(SessionLive, UnderGvisorACommandThatKillsItsExecsInitLeavesNothingRunningWithRadialdDead) {
    test::RadialdSetup setup("", "[run.docker]\nociRuntime = \"runsc\"\n");
    a_killed_exec_init_leaves_nothing(setup);
}

} // namespace
} // namespace radial
