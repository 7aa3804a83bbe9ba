// `radiald run` with the real docker plugin and engine (docs/design.md §12 "Tests"): mixed turns
// under the concurrency cap, SIGKILL at chosen moments and restart, SIGTERM within the grace, a
// second daemon, an engine that disappears mid-turn.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "../../support/unix_socket_proxy.h"
#include "daemon_harness.h"
#include "docker_boxes.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::DaemonProcess;
using test::DaemonSetup;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// A docker setup with a fresh instance id, whose boxes (its turns' and its sessions') are removed
// when the test ends.
struct LiveSetup {
    std::string instance;
    test::BoxCleanup cleanup, sessions;
    DaemonSetup setup;
    LiveSetup(const std::string& stem, const std::string& run_keys = "",
              const std::string& tables = "")
        : instance(test::unique_instance_id(stem)),
          cleanup{"radial-turn-" + instance + "-"},
          sessions{"radial-session-" + instance + "-"},
          setup("instanceId = \"" + instance + "\"\n" + run_keys, tables) {}
    std::string prefix() const { return "radial-turn-" + instance + "-"; }
};

int peak_concurrency(const DaemonSetup& s, const std::vector<std::string>& ids) {
    std::vector<std::pair<std::string, int>> events;
    for (const auto& id : ids) {
        // The box's run, from the terminal record: a lower bound of claimed-to-finished overlap.
        auto t = s.terminal(id);
        events.push_back({t["startedAt"], +1});
        events.push_back({t["endedAt"], -1});
    }
    std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second < b.second;
    });
    int running = 0, peak = 0;
    for (const auto& [at, delta] : events) peak = std::max(peak, running += delta);
    return peak;
}

TEST(RadialdDaemonLive, TwentyMixedTurnsEndWithTheRightRecordsAndNoContainerLeft) {
    LiveSetup l("mix", "maxConcurrentTurns = 4\n");
    std::map<std::string, std::string> kind;
    for (int i = 0; i < 5; ++i) {
        kind[l.setup.submit(test::shell_turn("echo ok-" + std::to_string(i)))] = "success";
        kind[l.setup.submit(test::shell_turn("echo failing >&2; exit 3"))] = "failure";
        kind[l.setup.submit(test::shell_turn("trap '' TERM; sleep 30", "timeout = \"2s\"\n"))] =
            "timeout";
        kind[l.setup.submit(
            test::shell_turn("yes xxxxxxxxxxxxxxx | head -c 3000000; echo tail-end"))] = "large";
    }
    ASSERT_EQ(kind.size(), 20u);
    DaemonProcess d(l.setup);
    std::vector<std::string> ids;
    for (const auto& [id, k] : kind) ids.push_back(id);
    ASSERT_TRUE(l.setup.wait_terminal(ids, 150s)) << d.log();
    for (const auto& [id, k] : kind) {
        auto rec = l.setup.terminal(id);
        if (k == "success") {
            EXPECT_EQ(rec["status"], "succeeded") << rec;
            EXPECT_THAT(rec["outputTail"]["stdout"].get<std::string>(),
                        ::testing::StartsWith("ok-"));
        } else if (k == "failure") {
            EXPECT_EQ(rec["status"], "failed") << rec;
            EXPECT_EQ(rec["exitCode"], 3);
            EXPECT_EQ(rec["outputTail"]["stderr"], "failing\n");
        } else if (k == "timeout") {
            EXPECT_EQ(rec["status"], "timed_out") << rec;
        } else {
            EXPECT_EQ(rec["status"], "succeeded") << rec;
            std::string tail = rec["outputTail"]["stdout"];
            EXPECT_EQ(tail.size(), 4096u);
            EXPECT_TRUE(tail.ends_with("xxx\nxxxxxxxxxxxxxxx\ntail-end\n"))
                << tail.substr(tail.size() - 64);
        }
    }
    EXPECT_LE(peak_concurrency(l.setup, ids), 4);
    EXPECT_GE(peak_concurrency(l.setup, ids), 2); // they did run side by side
    EXPECT_THAT(test::boxes_with_prefix(l.prefix()), IsEmpty());
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// SIGKILL with three turns held at a checkpoint, two more queued; start again: boxes gone, the
// three reclaimed (or, once their boxes ended, given the records of how they ended and not run
// again), the queued ones run, and every submitted turn has its terminal record.
class SigkillAt : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(SigkillAt, RestartReclaimsAndRunsTheQueue) {
    const auto& [point, script] = GetParam();
    LiveSetup l("kill", "maxConcurrentTurns = 3\n");
    std::vector<std::string> held, queued;
    for (int i = 0; i < 3; ++i) held.push_back(l.setup.submit(test::shell_turn(script)));
    {
        DaemonProcess d(l.setup, {{"RADIAL_PAUSE_AT_FOR_TEST", point}});
        ASSERT_TRUE(d.wait_for_log("paused at '" + point + "'", 60s, 3)) << d.log();
        for (int i = 0; i < 2; ++i)
            queued.push_back(l.setup.submit(test::shell_turn("echo queued")));
        if (point == "output") {
            EXPECT_EQ(test::boxes_with_prefix(l.prefix()).size(), 3u)
                << "the boxes run while paused";
        }
        d.crash();
    }
    DaemonProcess again(l.setup);
    std::vector<std::string> all = held;
    all.insert(all.end(), queued.begin(), queued.end());
    ASSERT_TRUE(l.setup.wait_terminal(all, 60s)) << again.log();
    for (const auto& id : held) {
        auto rec = l.setup.terminal(id);
        // At "retire" the terminal record was journaled before the kill; at "terminal" it was
        // kept in the turn's reserve once the box was gone (docs/design.md §11.5), and the
        // restart journals it: either way the turn is not run again, and its record is true.
        const bool ended = point == "retire" || point == "terminal";
        EXPECT_EQ(rec["status"], ended ? "succeeded" : "reclaimed") << rec;
        if (ended) {
            EXPECT_EQ(rec["outputTail"]["stdout"], "done\n") << rec;
        }
    }
    for (const auto& id : queued) EXPECT_EQ(l.setup.terminal(id)["status"], "succeeded") << id;
    for (const auto& id : held)
        EXPECT_THAT(again.log(), Not(HasSubstr("turn " + id + ": claimed")));
    EXPECT_TRUE(test::wait_until([&] { return test::boxes_with_prefix(l.prefix()).empty(); }, 10s));
    EXPECT_EQ(l.setup.status()["recent"].size(), 5u);
    again.signal(SIGTERM);
    EXPECT_EQ(again.wait_exit(30s), 0) << again.log();
}

INSTANTIATE_TEST_SUITE_P(
    Moments, SigkillAt,
    ::testing::Values(std::pair<std::string, std::string>{"claimed", "echo never"},
                      std::pair<std::string, std::string>{"started", "echo never"},
                      std::pair<std::string, std::string>{"output", "echo first; sleep 600"},
                      std::pair<std::string, std::string>{"terminal", "echo done"},
                      std::pair<std::string, std::string>{"retire", "echo done"}),
    [](const auto& info) { return info.param.first; });

// A submitted request's argv quotes a secret whose value only the daemon knows: the claim
// refuses it before any box (the engine would keep that argv at rest, docs/design.md §6.3), and
// its record, the journal's copy of the request, `radiald turns` and the daemon's log show the
// value masked; the spool's copy, which held it in clear, is gone.
TEST(RadialdDaemonLive, ASecretQuotedByASubmittedRequestIsRefusedAtItsClaimAndMasked) {
    LiveSetup l("sq");
    const std::string secret = "sk-queued-" + test::unique_instance_id("v");
    nlohmann::json argv = {"sh", "-c", "echo argv:" + secret};
    std::string id =
        l.setup.submit("image = \"" + std::string(RADIAL_TEST_IMAGE) + "\"\nargv = " + argv.dump() +
                       "\nsecrets = [\"QUEUED_SECRET\"]\n");
    const std::string spooled = l.setup.state_dir() + "/spool/queue/" + id + ".json";
    EXPECT_NE(test::read_file(spooled).find(secret), std::string::npos) << "as submitted";
    DaemonProcess d(l.setup, {{"QUEUED_SECRET", secret}});
    ASSERT_TRUE(l.setup.wait_terminal({id}, 120s)) << d.log();
    auto records = l.setup.records(id);
    ASSERT_TRUE(records.is_object());
    EXPECT_EQ(records["terminal"]["status"], "error") << records;
    EXPECT_THAT(records["terminal"].value("error", ""),
                HasSubstr("argv[2] (a word of the command) holds the value of secret "
                          "QUEUED_SECRET"));
    EXPECT_EQ(records.dump().find(secret), std::string::npos) << records.dump();
    auto turns =
        test::run_process({RADIALD_PATH, "turns", "--config", l.setup.config(), "--json"}, {}, 30s);
    EXPECT_EQ(turns.out.find(secret), std::string::npos) << turns.out;
    EXPECT_TRUE(test::wait_until([&] { return !fs::exists(spooled); }, 30s));
    EXPECT_EQ(d.log().find(secret), std::string::npos) << d.log();
    // A box is named by its label, which ends in the turn id.
    EXPECT_EQ(test::run_process({"docker", "ps", "-aq", "--filter", "name=" + id}).out, "")
        << "a box was made";
}

// The same request refused when the daemon claims it (its workspace went away after the submit):
// the refusal comes before any turn session masked the request, yet its record, the journal's
// copy and `radiald turns` show the secret masked (docs/design.md §10.1).
TEST(RadialdDaemonLive, ASecretQuotedByASubmittedRequestIsMaskedWhenItsClaimIsRefused) {
    LiveSetup l("sr");
    const std::string secret = "sk-refused-" + test::unique_instance_id("v");
    const std::string image = std::string("radial/busybox:") + secret;
    ASSERT_EQ(test::run_process({"docker", "tag", RADIAL_TEST_IMAGE, image}).exit_code, 0);
    test::TempDir parent("radial-ws");
    const std::string ws = parent / secret;
    ASSERT_TRUE(fs::create_directory(ws));
    std::string id = l.setup.submit("image = \"" + image + "\"\nargv = [\"true\"]\nworkspace = \"" +
                                    ws + "\"\nsecrets = [\"REFUSED_SECRET\"]\n");
    test::run_process({"docker", "rmi", image});
    fs::remove(ws);
    DaemonProcess d(l.setup, {{"REFUSED_SECRET", secret}});
    ASSERT_TRUE(l.setup.wait_terminal({id}, 120s)) << d.log();
    auto records = l.setup.records(id);
    ASSERT_TRUE(records.is_object());
    EXPECT_EQ(records["terminal"]["status"], "error") << records;
    EXPECT_THAT(records["terminal"].value("error", ""), HasSubstr("not an existing directory"));
    EXPECT_EQ(records["terminal"]["image"], "radial/busybox:[REDACTED:REFUSED_SECRET]") << records;
    EXPECT_EQ(records.dump().find(secret), std::string::npos) << records.dump();
    auto turns =
        test::run_process({RADIALD_PATH, "turns", "--config", l.setup.config(), "--json"}, {}, 30s);
    EXPECT_EQ(turns.out.find(secret), std::string::npos) << turns.out;
    EXPECT_THAT(turns.out, HasSubstr("radial/busybox:[REDACTED:REFUSED_SECRET]"));
    EXPECT_EQ(d.log().find(secret), std::string::npos) << d.log();
}

// Two queued turns on one workspace with room for both: the second waits for the first
// (turn/workspace_lock.h) instead of running beside it, and both succeed.
TEST(RadialdDaemonLive, TurnsOnOneWorkspaceRunOneAfterTheOther) {
    LiveSetup l("ws", "maxConcurrentTurns = 2\n");
    test::TempDir ws("radial-ws");
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    const std::string keys = "workspace = \"" + ws.path() + "\"\n";
    std::vector<std::string> ids;
    for (int i = 0; i < 2; ++i)
        ids.push_back(l.setup.submit(test::shell_turn("sleep 2; echo " + std::to_string(i), keys)));
    DaemonProcess d(l.setup);
    ASSERT_TRUE(l.setup.wait_terminal(ids, 120s)) << d.log();
    auto a = l.setup.terminal(ids[0]), b = l.setup.terminal(ids[1]);
    EXPECT_EQ(a["status"], "succeeded") << a;
    EXPECT_EQ(b["status"], "succeeded") << b;
    const bool a_first = a["startedAt"] < b["startedAt"];
    const auto& earlier = a_first ? a : b;
    const auto& later = a_first ? b : a;
    EXPECT_LE(earlier["endedAt"], later["startedAt"]) << "they overlapped: " << a << b;
}

// A session of `l`'s instance made with `radiald session create`; its id, or "" (the failure
// reported) when it could not be made.
std::string create_session(const LiveSetup& l) {
    auto created = test::run_process({RADIALD_PATH, "session", "create", "--config",
                                      l.setup.config(), "--image", RADIAL_TEST_IMAGE},
                                     {}, 120s);
    EXPECT_EQ(created.exit_code, 0) << created.err;
    return created.exit_code == 0 ? created.out.substr(0, created.out.find('\n')) : std::string();
}

// `radiald session rm ID`, expected to succeed.
void remove_session(const LiveSetup& l, const std::string& sid) {
    auto rm = test::run_process({RADIALD_PATH, "session", "rm", "--config", l.setup.config(), sid});
    EXPECT_EQ(rm.exit_code, 0) << rm.err;
}

// Requests naming a session (session = "ID") run as execs in its box, one after the other even
// with free slots: one turn per session at a time (docs/design.md §13.12). What the first left in
// the box the second finds.
TEST(RadialdDaemonLive, TurnsOfOneSessionRunInItsBoxOneAfterTheOther) {
    LiveSetup l("sess", "maxConcurrentTurns = 2\n");
    const std::string sid = create_session(l);
    ASSERT_FALSE(sid.empty());
    const std::string keys = "session = \"" + sid + "\"\n";
    const std::string script =
        "if [ -e /tmp/one ]; then echo second; else touch /tmp/one; sleep 2; echo first; fi";
    std::vector<std::string> ids = {l.setup.submit(test::shell_turn(script, keys)),
                                    l.setup.submit(test::shell_turn(script, keys))};
    DaemonProcess d(l.setup);
    ASSERT_TRUE(l.setup.wait_terminal(ids, 120s)) << d.log();
    auto a = l.setup.terminal(ids[0]), b = l.setup.terminal(ids[1]);
    EXPECT_EQ(a["status"], "succeeded") << a;
    EXPECT_EQ(b["status"], "succeeded") << b;
    EXPECT_EQ(a["session"], sid);
    EXPECT_EQ(b["session"], sid);
    std::set<std::string> said = {a["outputTail"]["stdout"], b["outputTail"]["stdout"]};
    EXPECT_EQ(said, (std::set<std::string>{"first\n", "second\n"}));
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
    remove_session(l, sid);
}

// A queued turn of a session that ended before it ran (removed here; at a daemon's stop, its box
// killed) was refused as naming "not one of this state directory's" sessions, its record labelled
// with a one-shot box that never existed. It says the session ended, when and why, and names the
// session's box.
TEST(RadialdDaemonLive, AQueuedTurnOfASessionThatEndedSaysSoAndNamesTheSessionsBox) {
    LiveSetup l("sgone");
    const std::string sid = create_session(l);
    ASSERT_FALSE(sid.empty());
    const std::string id =
        l.setup.submit(test::shell_turn("echo late", "session = \"" + sid + "\"\n"));
    remove_session(l, sid);
    DaemonProcess d(l.setup);
    ASSERT_TRUE(l.setup.wait_terminal({id}, 60s)) << d.log();
    const auto rec = l.setup.terminal(id);
    EXPECT_EQ(rec["status"], "error");
    EXPECT_THAT(rec.value("error", ""), HasSubstr("session '" + sid + "' ended at "));
    EXPECT_THAT(rec.value("error", ""), HasSubstr("(removed by 'radiald session rm')"));
    const std::string label = rec.value("label", "");
    EXPECT_TRUE(label.starts_with("radial-session-") && label.ends_with("-" + sid)) << label;
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// A daemon killed while a session's turn runs: the journal names the session's box (it named the
// one-shot label the turn's id gives, a box that never existed), so reconciliation finds it
// running and keeps it, and the record says so.
TEST(RadialdDaemonLive, AReclaimedSessionTurnNamesTheSessionsBoxAndSaysItWasKept) {
    LiveSetup l("srec");
    const std::string sid = create_session(l);
    ASSERT_FALSE(sid.empty());
    const std::string id = l.setup.submit(
        test::shell_turn("sleep 600", "session = \"" + sid + "\"\ntimeout = \"60s\"\n"));
    {
        DaemonProcess d(l.setup);
        ASSERT_TRUE(d.wait_for_log("turn " + id + ": starting box 'radial-session-", 120s))
            << d.log();
        d.crash();
    }
    auto r = l.setup.reconcile();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto rec = l.setup.terminal(id);
    EXPECT_EQ(rec["status"], "reclaimed") << rec;
    EXPECT_THAT(rec["label"].get<std::string>(), ::testing::StartsWith("radial-session-")) << rec;
    EXPECT_THAT(rec["reason"].get<std::string>(), HasSubstr("the box, the session's, was kept"))
        << rec;
    remove_session(l, sid);
}

// A session turn's request that names a workdir starts there, as a one-shot turn does; one that
// names none starts where the session's execs start (the workdir was dropped, so a relative command
// acted on the session's directory).
TEST(RadialdDaemonLive, ASessionTurnStartsInTheWorkdirItsRequestNames) {
    LiveSetup l("swd");
    const std::string sid = create_session(l);
    ASSERT_FALSE(sid.empty());
    const std::string keys = "session = \"" + sid + "\"\n";
    const std::string in_tmp =
        l.setup.submit(test::shell_turn("pwd", keys + "workdir = \"/tmp\"\n"));
    DaemonProcess d(l.setup);
    ASSERT_TRUE(l.setup.wait_terminal({in_tmp}, 120s)) << d.log();
    const std::string plain = l.setup.submit(test::shell_turn("pwd", keys));
    ASSERT_TRUE(l.setup.wait_terminal({plain}, 120s)) << d.log();
    auto a = l.setup.terminal(in_tmp), b = l.setup.terminal(plain);
    EXPECT_EQ(a["status"], "succeeded") << a;
    EXPECT_EQ(a["outputTail"]["stdout"], "/tmp\n") << a;
    EXPECT_EQ(b["status"], "succeeded") << b;
    EXPECT_NE(b["outputTail"]["stdout"], "/tmp\n") << b;
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
    remove_session(l, sid);
}

TEST(RadialdDaemonLive, SigtermWithARunningTurnFinishesItWithinTheGraceAndExitsZero) {
    LiveSetup l("term", "shutdownGrace = \"30s\"\n");
    std::string id = l.setup.submit(test::shell_turn("sleep 3; echo finished"));
    DaemonProcess d(l.setup);
    ASSERT_TRUE(test::wait_until([&] { return !test::boxes_with_prefix(l.prefix()).empty(); }, 30s))
        << d.log();
    auto t0 = std::chrono::steady_clock::now();
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
    auto rec = l.setup.terminal(id);
    EXPECT_EQ(rec["status"], "succeeded") << rec;
    EXPECT_EQ(rec["outputTail"]["stdout"], "finished\n");
    EXPECT_THAT(test::boxes_with_prefix(l.prefix()), IsEmpty());
}

TEST(RadialdDaemonLive, ASecondDaemonOnTheSameStateDirectoryExitsWithAClearMessage) {
    LiveSetup l("two");
    DaemonProcess first(l.setup);
    ASSERT_TRUE(first.wait_for_log("serving instance", 30s)) << first.log();
    auto second = test::run_process({RADIALD_PATH, "run", "--config", l.setup.config()}, {}, 60s);
    EXPECT_EQ(second.exit_code, 1);
    EXPECT_THAT(second.err, HasSubstr("state directory '" + l.setup.state_dir() +
                                      "' (run.stateDir) is in use by 'radiald run' (pid " +
                                      std::to_string(first.pid()) + ")"));
    first.signal(SIGTERM);
    EXPECT_EQ(first.wait_exit(30s), 0);
}

// The engine goes away mid-turn: the plugin reaches it through a proxy that is cut (every open
// connection closed, every new one refused, as a crashed engine would). Turns then end with
// `error`; with the proxy restored the daemon serves again, and its sweep removes the boxes the
// vanished engine left behind.
TEST(RadialdDaemonLive, AnEngineThatDisappearsMidTurnGivesErrorsAndTheDaemonKeepsServing) {
    test::TempDir sock("radial-eng");
    test::UnixSocketProxy proxy(sock / "docker.sock", "/var/run/docker.sock");
    const std::string engine = "unix://" + proxy.path();
    LiveSetup l("eng", "", "[run.docker]\nhost = \"" + engine + "\"\n");
    std::vector<std::string> mid = {l.setup.submit(test::shell_turn("echo up; sleep 600")),
                                    l.setup.submit(test::shell_turn("echo up; sleep 600"))};
    DaemonProcess d(l.setup);
    ASSERT_TRUE(
        test::wait_until([&] { return test::boxes_with_prefix(l.prefix()).size() == 2; }, 60s))
        << d.log();
    std::this_thread::sleep_for(1s);
    proxy.cut();
    ASSERT_TRUE(l.setup.wait_terminal(mid, 60s)) << d.log();
    for (const auto& id : mid) {
        auto rec = l.setup.terminal(id);
        EXPECT_EQ(rec["status"], "error") << rec;
        EXPECT_THAT(rec["error"].get<std::string>(), ::testing::StartsWith("runtime 'docker': "))
            << rec;
    }
    // The engine left both boxes behind (the runtime could not remove them).
    EXPECT_EQ(test::boxes_with_prefix(l.prefix()).size(), 2u);
    std::string during = l.setup.submit(test::shell_turn("echo during"));
    ASSERT_TRUE(l.setup.wait_terminal({during}, 60s)) << d.log();
    auto rec = l.setup.terminal(during);
    EXPECT_EQ(rec["status"], "error");
    EXPECT_THAT(rec["error"].get<std::string>(), HasSubstr(engine)) << "names the engine";

    proxy.restore();
    std::string after = l.setup.submit(test::shell_turn("echo after"));
    ASSERT_TRUE(l.setup.wait_terminal({after}, 60s)) << d.log();
    EXPECT_EQ(l.setup.terminal(after)["status"], "succeeded") << l.setup.terminal(after);
    // The boxes the engine "lost" are swept once it answers again.
    EXPECT_TRUE(test::wait_until([&] { return test::boxes_with_prefix(l.prefix()).empty(); }, 60s))
        << d.log();
    EXPECT_TRUE(d.wait_for_log("radiald[reconcile] info: sweep removed", 10s)) << d.log();
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

} // namespace
} // namespace radial
