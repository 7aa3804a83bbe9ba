// The real radiald binary in daemon mode with the fake runtime (no engine): the signals it hears
// (docs/design.md §12.3), those a plugin's mask or handlers would take from it, and the SIGHUP
// reload — what it applies, what it refuses whole, what it says needs a restart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "fake_daemon_setup.h"

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

// The daemon's config file, rewritten: `from` replaced by `to` (a test failure when absent).
void edit_config(const FakeSetup& s, const std::string& from, const std::string& to) {
    std::string text = test::read_file(s.config());
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, from.size(), to);
    std::ofstream(s.config(), std::ios::trunc) << text;
}

// SIGUSR1, SIGUSR2 and SIGALRM killed the daemon without a line (its boxes were then reclaimed at
// the next start); now each is logged and ignored, and the daemon goes on serving.
TEST(RadialdRun, SignalsItGivesNoMeaningAreLoggedAndIgnored) {
    FakeSetup s;
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
    for (auto [sig, name] :
         {std::pair{SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}, {SIGALRM, "SIGALRM"}}) {
        d.signal(sig);
        EXPECT_TRUE(d.wait_for_log(std::string(name) + " received: ignored", 10s)) << d.log();
        EXPECT_EQ(d.wait_exit(200ms), std::nullopt) << name << " ended it: " << d.log();
    }
    std::string id = s.submit(turn_file("[\"echo\", \"still here\"]"));
    ASSERT_TRUE(s.wait_terminal({id}, 10s)) << d.log();
    EXPECT_EQ(s.terminal(id)["outputTail"]["stdout"], "still here\n");
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// A plugin that blocks SIGTERM when it is loaded and created (every thread the daemon starts later
// inherited the mask: SIGTERM was never heard) and resets SIGUSR1 and the others to SIG_DFL in its
// run (SIGUSR1 then ended the daemon, exit 138, its turn left started): the daemon puts its own
// handling back, says so, and each signal still does what docs/design.md §12.3 says.
TEST(RadialdRun, APluginsSignalMaskOrHandlersNeitherDeafenNorKillTheDaemon) {
    FakeSetup s("", "[run.fake]\ntamperSignals = [\"create\", \"run\"]\n");
    DaemonProcess d(s, {{"RADIAL_FAKE_TAMPER_AT_LOAD", "1"}});
    ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
    // The daemon's handlers are in place before the plugin is loaded (startup_signals.h): their
    // reset is seen at the load too.
    EXPECT_THAT(d.log(), HasSubstr("changed radiald's signal handling when it was loaded (SIGHUP "
                                   "blocked, SIGINT blocked, SIGQUIT blocked, SIGTERM blocked, "
                                   "SIGUSR1's handler, SIGUSR2's handler, SIGPIPE's handler, "
                                   "SIGALRM's handler)"));
    EXPECT_THAT(d.log(), HasSubstr("changed radiald's signal handling when it was created ("));
    std::string id = s.submit(turn_file("[\"sleep\", \"600000\"]"));
    ASSERT_TRUE(d.wait_for_log("fake run of", 30s)) << d.log();
    // The run reset them: the daemon's keeper puts them back (within a second), then they come.
    ASSERT_TRUE(d.wait_for_log("SIGUSR1's handling was changed by code in radiald's process", 30s))
        << d.log();
    ASSERT_TRUE(d.wait_for_log("SIGALRM's handling was changed", 30s)) << d.log();
    for (auto [sig, name] : {std::pair{SIGUSR1, "SIGUSR1"}, {SIGALRM, "SIGALRM"}}) {
        d.signal(sig);
        EXPECT_TRUE(d.wait_for_log(std::string(name) + " received: ignored", 10s)) << d.log();
        EXPECT_EQ(d.wait_exit(200ms), std::nullopt) << name << " ended it: " << d.log();
    }
    d.signal(SIGTERM);
    ASSERT_TRUE(d.wait_for_log("stopping: no new turns", 30s)) << d.log();
    d.signal(SIGTERM); // the second kills the running turn now
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
    ASSERT_TRUE(s.wait_terminal({id}, 10s)) << d.log();
    EXPECT_EQ(s.terminal(id)["status"], "killed");
}

// Whether process `pid` catches every one of `signals` (/proc/PID/status's SigCgt).
bool catches(pid_t pid, std::initializer_list<int> signals) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status"); // hermetic-ok: its own daemon
    for (std::string line; std::getline(status, line);)
        if (line.rfind("SigCgt:", 0) == 0) {
            const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
            return std::all_of(signals.begin(), signals.end(),
                               [&](int s) { return (mask >> (s - 1)) & 1ULL; });
        }
    return false;
}

// The packaged unit is Type=simple: a `systemctl reload` or stop may come while the daemon still
// starts (its runtime's create here hangs until the test lets it go). SIGHUP and SIGUSR1 killed
// it then, silently (exit 129, 138); now SIGHUP is the loop's reload once it serves, SIGUSR1 is
// ignored, and SIGTERM stops the start with a line (docs/design.md §12.3).
TEST(RadialdRun, SignalsWhileItStartsAreHeardNotDiedOf) {
    test::TempDir marks("radial-marks");
    const std::string mark = marks / "starting";
    std::ofstream(mark) << "x";
    FakeSetup s("", "[run.fake]\nhangCreateWhile = \"" + mark + "\"\n");
    {
        DaemonProcess d(s);
        ASSERT_TRUE(test::wait_until(
            [&] {
                return catches(d.pid(), {SIGHUP, SIGUSR1});
            },
            30s))
            << d.log();
        d.signal(SIGUSR1);
        ASSERT_TRUE(d.wait_for_log("SIGUSR1 received while starting: ignored", 10s)) << d.log();
        d.signal(SIGHUP);
        ASSERT_TRUE(d.wait_for_log("SIGHUP received while starting", 10s)) << d.log();
        EXPECT_EQ(d.wait_exit(200ms), std::nullopt) << d.log();
        EXPECT_THAT(d.log(), Not(HasSubstr("serving instance"))) << "the start was over";
        fs::remove(mark);
        ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
        EXPECT_TRUE(d.wait_for_log("reload (SIGHUP): nothing changed", 10s)) << d.log();
        d.signal(SIGTERM);
        EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
    }
    std::ofstream(mark) << "x";
    DaemonProcess d(s);
    ASSERT_TRUE(test::wait_until([&] { return catches(d.pid(), {SIGTERM}); }, 30s)) << d.log();
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 128 + SIGTERM) << d.log();
    EXPECT_THAT(d.log(), HasSubstr("SIGTERM received while starting: radiald stops before it "
                                   "serves"));
    fs::remove(mark);
}

// SIGHUP (the unit's ExecReload): the reloadable keys take their new values — the next claims
// see the new run.maxConcurrentTurns, the next stop the new run.shutdownGrace, an edit back to the
// starting value as well — and a key that needs a restart is named as such, at every reload until
// the restart (docs/design.md §12.3).
TEST(RadialdRun, SighupAppliesTheReloadableKeysAndNamesTheOnesThatNeedARestart) {
    FakeSetup s("maxConcurrentTurns = 1\n");
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
    edit_config(s, "maxConcurrentTurns = 1\n",
                "maxConcurrentTurns = 3\nshutdownGrace = \"7s\"\nmaxRecordBytes = \"2m\"\n");
    d.signal(SIGHUP);
    ASSERT_TRUE(d.wait_for_log("reload (SIGHUP): 2 key(s) applied, 1 waiting for a restart", 10s))
        << d.log();
    EXPECT_THAT(d.log(), HasSubstr("reload (SIGHUP): run.maxConcurrentTurns changed from 1 to 3"));
    EXPECT_THAT(d.log(),
                HasSubstr("reload (SIGHUP): run.shutdownGrace changed from 30000 ms to 7000 ms"));
    EXPECT_THAT(d.log(), HasSubstr("reload (SIGHUP): run.maxRecordBytes changed in '" + s.config() +
                                   "' but needs a restart to take effect"));
    EXPECT_EQ(d.wait_exit(200ms), std::nullopt) << d.log();

    // Three turns at once now, where one was the limit.
    std::vector<std::string> ids;
    for (int i = 0; i < 3; ++i) ids.push_back(s.submit(turn_file("[\"sleep\", \"2000\"]")));
    ASSERT_TRUE(s.wait_terminal(ids, 20s)) << d.log();
    EXPECT_EQ(peak_running(s, ids), 3);

    // Again, with nothing new: the applied keys are not reported again, the waiting one is.
    d.signal(SIGHUP);
    ASSERT_TRUE(d.wait_for_log("0 key(s) applied, 1 waiting for a restart", 10s)) << d.log();
    EXPECT_TRUE(d.wait_for_log("run.maxRecordBytes changed in", 1s, 2)) << d.log();
    const std::string log = d.log();
    EXPECT_EQ(log.find("run.maxConcurrentTurns changed"),
              log.rfind("run.maxConcurrentTurns changed"));

    // Back to the value it started with: applied too (it was taken for no change against the
    // starting file, and three turns went on running at once under a limit of one).
    edit_config(s, "maxConcurrentTurns = 3\n", "maxConcurrentTurns = 1\n");
    d.signal(SIGHUP);
    ASSERT_TRUE(d.wait_for_log("reload (SIGHUP): run.maxConcurrentTurns changed from 3 to 1", 10s))
        << d.log();
    EXPECT_TRUE(d.wait_for_log("1 key(s) applied, 1 waiting for a restart", 10s)) << d.log();

    d.signal(SIGTERM);
    EXPECT_TRUE(d.wait_for_log("0 running turn(s) have 7000 ms to finish", 10s)) << d.log();
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// A reload validates the file as the start does, as far as it can without loading a plugin: a
// run.boxIdRange holding a host account's ids changes nothing that runs (it was taken, the file's
// reloadable keys applied, and the restart that followed failed). A runtime the start did not
// find (a plugin may have been installed since) and a runtime's own table, which only the runtime
// checks, are named with the check that covers them now.
TEST(RadialdRun, AReloadRefusesWholeAFileTheNextStartWouldRefuse) {
    FakeSetup s("maxConcurrentTurns = 1\n");
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
    const std::string started = test::read_file(s.config());
    const auto reload = [&](const std::string& from, const std::string& to, std::size_t nth) {
        std::ofstream(s.config(), std::ios::trunc) << started;
        edit_config(s, "maxConcurrentTurns = 1\n", "maxConcurrentTurns = 3\n");
        edit_config(s, from, to);
        d.signal(SIGHUP);
        return d.wait_for_log("keeping the running config", 10s, nth);
    };
    EXPECT_TRUE(reload("maxConcurrentTurns = 3\n",
                       "maxConcurrentTurns = 3\nboxIdRange = "
                       "\"65534-65534\"\n",
                       1))
        << d.log();
    EXPECT_THAT(d.log(), HasSubstr("run.boxIdRange 65534-65534: host user '"));
    EXPECT_THAT(d.log(), Not(HasSubstr("run.maxConcurrentTurns changed"))) << "applied in part";

    std::ofstream(s.config(), std::ios::trunc) << started;
    edit_config(s, "containerRuntime = \"fake\"", "containerRuntime = \"nosuchruntime\"");
    d.signal(SIGHUP);
    EXPECT_TRUE(d.wait_for_log("run.containerRuntime changed in", 10s)) << d.log();
    EXPECT_THAT(d.log(), HasSubstr("run.containerRuntime 'nosuchruntime' is none of the runtimes "
                                   "found when the daemon started (fake)"));

    std::ofstream(s.config(), std::ios::trunc) << started << "[run.fake]\ncaps = []\n";
    d.signal(SIGHUP);
    EXPECT_TRUE(d.wait_for_log("reload (SIGHUP): run.fake.caps changed in", 10s)) << d.log();
    EXPECT_THAT(d.log(), HasSubstr("only the runtime checks it, then: 'radiald config check "
                                   "--config " +
                                   s.config() + "' checks it now"));
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// Without a pool, more turns at once than run.boxIdRange has ids was said nowhere: the turns past
// the range wait queued (ATurnWaitsQueuedForAFreeBoxIdRatherThanFailing). The start says so, and
// a reload that raises the limit past it.
TEST(RadialdRun, MoreTurnsAtOnceThanTheRangeHasIdsIsSaid) {
    FakeSetup s("maxConcurrentTurns = 3\nboxIdRange = \"3200000-3200001\"\n");
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
    const std::string said =
        "run.maxConcurrentTurns (3) is more than the 2 id(s) of "
        "run.boxIdRange 3200000-3200001";
    EXPECT_THAT(d.log(), HasSubstr(said));
    edit_config(s, "maxConcurrentTurns = 3\n", "maxConcurrentTurns = 2\n");
    d.signal(SIGHUP);
    ASSERT_TRUE(d.wait_for_log("run.maxConcurrentTurns changed from 3 to 2", 10s)) << d.log();
    edit_config(s, "maxConcurrentTurns = 2\n", "maxConcurrentTurns = 5\n");
    d.signal(SIGHUP);
    ASSERT_TRUE(d.wait_for_log("run.maxConcurrentTurns changed from 2 to 5", 10s)) << d.log();
    EXPECT_TRUE(
        d.wait_for_log("reload (SIGHUP): run.maxConcurrentTurns (5) is more than the 2 "
                       "id(s)",
                       10s))
        << d.log();
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// A config file replaced by a fifo: the reload refuses it at once and the daemon goes on serving.
// The refusal's masking opened the path again, blocking, so the daemon's loop waited for a writer
// (a turn submitted meanwhile stayed queued) until a signal interrupted the open.
TEST(RadialdRun, AReloadOfAConfigThatIsAFifoNowIsRefusedWithoutWaiting) {
    FakeSetup s;
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
    const std::string kept = s.config() + ".kept";
    fs::rename(s.config(), kept);
    ASSERT_EQ(::mkfifo(s.config().c_str(), 0600), 0);
    d.signal(SIGHUP);
    EXPECT_TRUE(d.wait_for_log("it is a fifo, not a regular file", 10s)) << d.log();
    fs::remove(s.config());
    fs::rename(kept, s.config());
    const std::string id = s.submit(turn_file("[\"echo\", \"served\"]"));
    ASSERT_TRUE(s.wait_terminal({id}, 30s)) << d.log();
    EXPECT_EQ(s.terminal(id)["status"], "succeeded");
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// run.logLevel is the daemon's from its start, and a SIGHUP changes it: at "warn" no info line
// (a turn claimed) is written, after the reload to "info" the next turn's are.
TEST(RadialdRun, TheLogLevelIsTheConfigsAndASighupChangesIt) {
    FakeSetup s("logLevel = \"warn\"\n");
    DaemonProcess d(s);
    std::string quiet = s.submit(turn_file("[\"echo\"]"));
    ASSERT_TRUE(s.wait_terminal({quiet}, 30s)) << d.log();
    EXPECT_THAT(d.log(), Not(HasSubstr("turn " + quiet + ": claimed")));
    EXPECT_THAT(d.log(), Not(HasSubstr("serving instance")));
    edit_config(s, "logLevel = \"warn\"\n", "logLevel = \"info\"\n");
    d.signal(SIGHUP);
    ASSERT_TRUE(d.wait_for_log("reload (SIGHUP): run.logLevel changed from warn to info", 10s))
        << d.log();
    std::string heard = s.submit(turn_file("[\"echo\"]"));
    ASSERT_TRUE(s.wait_terminal({heard}, 30s)) << d.log();
    EXPECT_TRUE(d.wait_for_log("turn " + heard + ": claimed", 5s)) << d.log();
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// A reload only reads: a run.stateDir changed in the file is named as needing a restart, and the
// directory it names is not created nor given an instance id (the reload settled the new file's
// instance id, which wrote <new stateDir>/instance-id while the daemon went on with the old one).
TEST(RadialdRun, ASighupWritesNothingInAChangedStateDirectory) {
    FakeSetup s;
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
    const std::string elsewhere = s.dir().path() + "/elsewhere";
    edit_config(s, "/state\"\n", "/elsewhere\"\n");
    d.signal(SIGHUP);
    ASSERT_TRUE(d.wait_for_log("0 key(s) applied, 1 waiting for a restart", 10s)) << d.log();
    EXPECT_THAT(d.log(), HasSubstr("run.stateDir changed in"));
    EXPECT_FALSE(fs::exists(elsewhere)) << "a reload created the new state directory";
    edit_config(s, "/elsewhere\"\n", "/state\"\n");
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// A file that no longer loads changes nothing: the error is logged, the daemon serves on.
TEST(RadialdRun, ASighupWithABrokenConfigKeepsTheRunningOne) {
    FakeSetup s("maxConcurrentTurns = 2\n");
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
    edit_config(s, "maxConcurrentTurns = 2\n", "maxConcurrentTurns = 0\n");
    d.signal(SIGHUP);
    ASSERT_TRUE(d.wait_for_log("keeping the running config", 10s)) << d.log();
    EXPECT_THAT(d.log(), HasSubstr("run.maxConcurrentTurns: must be a whole number of turns"));
    EXPECT_THAT(d.log(), Not(HasSubstr("changed from")));
    edit_config(s, "maxConcurrentTurns = 0\n", "maxConcurrentTurns = 2\n"); // submit reads it too
    std::string id = s.submit(turn_file("[\"echo\"]"));
    EXPECT_TRUE(s.wait_terminal({id}, 10s)) << d.log();
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// The reload's error masks the file's own secrets, as every command's config error does: a
// secret pasted into the wrong key is not written to the daemon's log.
TEST(RadialdRun, ASighupsConfigErrorMasksTheFilesSecrets) {
    FakeSetup s("stopGrace = \"10s\"\n", "[redact]\nvalues = [\"hunter2-secret\"]\n");
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 30s)) << d.log();
    edit_config(s, "stopGrace = \"10s\"\n", "stopGrace = \"hunter2-secret\"\n");
    d.signal(SIGHUP);
    ASSERT_TRUE(d.wait_for_log("keeping the running config", 10s)) << d.log();
    EXPECT_THAT(d.log(), HasSubstr("run.stopGrace: "));
    EXPECT_THAT(d.log(), HasSubstr("[REDACTED:redact.values.0]"));
    EXPECT_THAT(d.log(), Not(HasSubstr("hunter2-secret")));
    edit_config(s, "stopGrace = \"hunter2-secret\"\n", "stopGrace = \"10s\"\n");
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

} // namespace
} // namespace radial
