// The real radiald daemon with run.pluginIsolation = "process" and the fake runtime's crashing
// behaviours (docs/design.md §5.13): a plugin that segfaults in run, corrupts its heap, or aborts
// in list_by_label ends only the calls in flight in its host process; each turn it ended gets a
// record saying so, and the daemon serves the next turn through a new process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "../../support/scope_exit.h"
#include "fake_daemon_setup.h"
#include "plugin_hosts.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using test::DaemonProcess;
using test::plugin_hosts_of;
using test::turn_file;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using namespace std::chrono_literals;

// The fake runtime in a radial-plugin-host process.
struct IsolatedSetup : test::FakeSetup {
    explicit IsolatedSetup(const std::string& run_keys = "", const std::string& tables = "")
        : FakeSetup("pluginIsolation = \"process\"\n" + run_keys, tables) {}
};

// How the record of a turn a crash ended reads: what crashed and how its process ended. Under a
// sanitizer the process reports the fault and exits with a status of its own instead of dying by
// the signal.
void expect_crash_record(const nlohmann::json& rec, const std::string& signal_text) {
    EXPECT_EQ(rec["status"], "error") << rec.dump();
    const std::string error = rec.value("error", "");
    EXPECT_THAT(error, HasSubstr("the runtime plugin crashed during run: its host process (pid "));
    EXPECT_THAT(error, AnyOf(HasSubstr(signal_text), HasSubstr("exited with status")));
    EXPECT_THAT(error, HasSubstr("radiald started a new one and removed its box '" +
                                 rec["label"].get<std::string>() + "'"));
}

// Neither radiald nor its plugin's host process can put the secrets they hold into a core file
// (docs/design.md §6.3): each has a core size limit of 0. That each is not dumpable either is
// NoCoreDumps's to show: a procfs need not let another process tell.
TEST(PluginIsolation, NeitherRadialdNorItsPluginHostCanDumpCore) {
    IsolatedSetup s;
    DaemonProcess d(s);
    const std::string t = s.submit(turn_file("[\"echo\", \"hi\"]"));
    ASSERT_TRUE(s.wait_terminal({t}, 30s)) << d.log();
    std::vector<pid_t> hosts;
    ASSERT_TRUE(test::wait_until(
        [&] {
            hosts = plugin_hosts_of(d.pid());
            return !hosts.empty();
        },
        30s))
        << d.log();
    for (const pid_t pid : {d.pid(), hosts.front()}) {
        // Both are alive: the daemon serves, and its plugin's host lives as long as it does.
        const std::string limits = "/proc/" + std::to_string(pid) + "/limits";
        EXPECT_THAT(test::read_file(limits), ::testing::ContainsRegex("Max core file size +0 +0 "))
            << pid;
    }
}

TEST(PluginIsolation, ASegfaultInRunEndsThatTurnAndTheDaemonServesTheNext) {
    IsolatedSetup s;
    DaemonProcess d(s);
    const std::string crash = s.submit(turn_file("[\"segv\"]"));
    ASSERT_TRUE(s.wait_terminal({crash}, 30s)) << d.log();
    expect_crash_record(s.terminal(crash), "signal 11 (Segmentation fault)");
    const std::string next = s.submit(turn_file("[\"echo\", \"still\", \"serving\"]"));
    ASSERT_TRUE(s.wait_terminal({next}, 30s)) << d.log();
    EXPECT_EQ(s.terminal(next)["status"], "succeeded") << d.log();
    EXPECT_THAT(d.log(), HasSubstr("started a new plugin host process"));
    EXPECT_EQ(s.status()["daemon"]["running"], true);
}

TEST(PluginIsolation, ACorruptedHeapEndsThatTurnAndTheDaemonServesTheNext) {
    IsolatedSetup s;
    DaemonProcess d(s);
    const std::string crash = s.submit(turn_file("[\"corrupt-heap\"]"));
    ASSERT_TRUE(s.wait_terminal({crash}, 30s)) << d.log();
    // What a corrupted heap ends in depends on what the allocator next touches: an abort or a
    // fault, both a signal.
    expect_crash_record(s.terminal(crash), "was killed by signal ");
    const std::string next = s.submit(turn_file("[\"echo\", \"after\"]"));
    ASSERT_TRUE(s.wait_terminal({next}, 30s)) << d.log();
    EXPECT_EQ(s.terminal(next)["status"], "succeeded") << d.log();
}

// A child the plugin started, still running after the crash and holding every descriptor the
// host process had, does not hold the crash's record back (it would until the child ended).
// Neither a child the plugin spawned nor one it forked (which holds every call socket: no exec
// closes them) holds the crash back: the call ends when the process does, not when the last
// holder of its socket lets go.
TEST(PluginIsolation, AChildThePluginStartedDoesNotHoldTheCrashBack) {
    IsolatedSetup s;
    DaemonProcess d(s);
    for (const char* how : {"spawn-segv", "fork-segv"}) {
        SCOPED_TRACE(how);
        const auto t0 = std::chrono::steady_clock::now();
        const std::string crash = s.submit(turn_file("[\"" + std::string(how) + "\", \"90\"]"));
        ASSERT_TRUE(s.wait_terminal({crash}, 60s)) << d.log();
        EXPECT_LT(std::chrono::steady_clock::now() - t0, test::scaled(45s));
        expect_crash_record(s.terminal(crash), "signal 11 (Segmentation fault)");
    }
}

// A plugin that closes descriptors it does not own — its call sockets — and keeps running breaks
// the protocol: its turn's record says so, not that a signal from nowhere killed the process
// (radiald's own SIGKILL after 5 s), and the daemon serves the next turn through a new process.
TEST(PluginIsolation, APluginClosingItsCallSocketsIsSaidToHaveDoneSo) {
    IsolatedSetup s;
    DaemonProcess d(s);
    const std::string closed = s.submit(turn_file("[\"close-calls\"]"));
    ASSERT_TRUE(s.wait_terminal({closed}, 60s)) << d.log();
    const auto rec = s.terminal(closed);
    EXPECT_EQ(rec["status"], "error") << rec.dump();
    EXPECT_THAT(rec.value("error", ""),
                HasSubstr("broke the call protocol (closed the call's socket without a reply, "
                          "and kept running) and was killed"))
        << rec.dump();
    EXPECT_THAT(rec.value("error", ""), Not(HasSubstr("killed by signal 9"))) << rec.dump();
    const std::string next = s.submit(turn_file("[\"echo\", \"serving\"]"));
    ASSERT_TRUE(s.wait_terminal({next}, 60s)) << d.log();
    EXPECT_EQ(s.terminal(next)["status"], "succeeded") << d.log();
}

// What the plugin started in its host process's group ends with that process, as a child's
// leftovers do (docs/design.md §5.3): here when the daemon stops (a radiald SIGKILLed leaves its
// host process to end by itself at its control socket's end, and what that left stays).
TEST(PluginIsolation, WhatThePluginLeftInItsHostsGroupEndsWithTheHost) {
    test::TempDir marks("radial-child");
    const std::string pid_file = marks / "child.pid";
    // However the test ends (an ASSERT that returns early too), the plugin's `sleep 600` does not
    // outlive it: killed while it runs, known by its command line, so that a process that got its
    // pid since is left alone.
    test::ScopeExit end_child([&] {
        const pid_t pid = static_cast<pid_t>(std::atol(test::read_file(pid_file).c_str()));
        const std::string sleep_600 = std::string("sleep") + '\0' + "600" + '\0';
        if (pid > 0 && test::cmdline_of(pid) == sleep_600) ::kill(pid, SIGKILL);
    });
    IsolatedSetup s;
    pid_t child = 0;
    {
        DaemonProcess d(s);
        const std::string t = s.submit(turn_file("[\"spawn-child\", \"" + pid_file + "\"]"));
        ASSERT_TRUE(s.wait_terminal({t}, 60s)) << d.log();
        EXPECT_EQ(s.terminal(t)["status"], "succeeded") << d.log();
        child = static_cast<pid_t>(std::stol(test::read_file(pid_file)));
        ASSERT_GT(child, 0);
        ASSERT_EQ(::kill(child, 0), 0) << "the plugin's child is not running";
        d.signal(SIGTERM);
        EXPECT_EQ(d.wait_exit(60s), 0) << d.log();
    }
    auto gone = [child] {
        // hermetic-ok: the plugin's own child, by the pid it wrote; gone reads as empty
        const std::string stat = test::read_file("/proc/" + std::to_string(child) + "/stat");
        const auto close = stat.rfind(')');
        return stat.empty() ||
               (close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'Z');
    };
    EXPECT_TRUE(test::wait_until(gone, 30s)) << "the plugin's child outlived its host process";
}

// What a call does for a crashed process — create the instance again in a new one, remove the box
// of the run the crash ended — is bounded by run.pluginCallTimeout: a plugin whose create hangs
// after the crash held the run, and every call after it, for ever.
TEST(PluginIsolation, ACreateThatHangsAfterACrashEndsTheTurnWithinTheCallTimeout) {
    test::TempDir marks("radial-marks");
    const std::string mark = marks / "crashed";
    IsolatedSetup s("pluginCallTimeout = \"2s\"\n",
                    "[run.fake]\nhangCreateWhile = \"" + mark + "\"\n");
    DaemonProcess d(s);
    const std::string crash = s.submit(turn_file("[\"mark-segv\", \"" + mark + "\"]"));
    const bool ended = s.wait_terminal({crash}, 60s);
    fs::remove(mark); // frees a create still waiting, whatever happened
    ASSERT_TRUE(ended) << d.log();
    const auto rec = s.terminal(crash);
    EXPECT_EQ(rec["status"], "error") << rec.dump();
    EXPECT_THAT(rec.value("error", ""), HasSubstr("the runtime plugin crashed during run"));
    EXPECT_THAT(rec.value("error", ""),
                HasSubstr("creating the instance again after a crash did not return within "
                          "2000 ms and was killed"));
    const std::string next = s.submit(turn_file("[\"echo\", \"serving\"]"));
    ASSERT_TRUE(s.wait_terminal({next}, 60s)) << d.log();
    EXPECT_EQ(s.terminal(next)["status"], "succeeded") << d.log();
}

// The plugin file replaced after radiald checked it is not what a restarted host process runs:
// the turns are queued while the file is the fake's, the file is swapped for one that is no
// plugin at all while the first runs, and the crash after it restarts the host process.
TEST(PluginIsolation, ARestartedHostRunsTheFileRadialdCheckedNotOneSwappedIn) {
    IsolatedSetup s("maxConcurrentTurns = 1\n");
    const std::string first = s.submit(turn_file("[\"sleep\", \"2000\"]"));
    const std::string crash = s.submit(turn_file("[\"segv\"]"));
    const std::string next = s.submit(turn_file("[\"echo\", \"checked\"]"));
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("fake run of", 30s)) << d.log();
    const std::string path = test::FakeSetup::plugin_dir() + "/fake.so";
    fs::copy_file("/bin/true", path + ".new", fs::copy_options::overwrite_existing);
    fs::rename(path + ".new", path);
    ASSERT_TRUE(s.wait_terminal({first, crash, next}, 60s)) << d.log();
    expect_crash_record(s.terminal(crash), "signal 11 (Segmentation fault)");
    EXPECT_EQ(s.terminal(next)["status"], "succeeded") << d.log();
    // The fake's own file again, for the tests after this one.
    fs::copy_file(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_good/fake.so", path + ".new",
                  fs::copy_options::overwrite_existing);
    fs::rename(path + ".new", path);
}

// The daemon asks list_by_label for a turn's box once the turn has ended; that call aborting the
// plugin leaves the turn's own record as it was and the daemon serving.
// A plugin that writes frames of its own on its call socket: a reply that lacks the run's fields,
// a name for a sink index past the table (0xff: below zero as a signed char), a reply nested a
// million levels deep (read whole, it overflowed radiald's stack), more error reports than a call
// may make. Each ends that turn with an error, its host process and its box; the daemon serves
// the next through a new one.
TEST(PluginIsolation, AForgedFrameEndsThatTurnAndTheDaemonServesTheNext) {
    IsolatedSetup s;
    DaemonProcess d(s);
    for (const char* forge : {"forge-reply", "forge-name", "forge-deep", "forge-errors"}) {
        const std::string forged = s.submit(turn_file(std::string("[\"") + forge + "\"]"));
        ASSERT_TRUE(s.wait_terminal({forged}, 30s)) << forge << "\n" << d.log();
        const auto rec = s.terminal(forged);
        EXPECT_EQ(rec["status"], "error") << rec.dump();
        EXPECT_THAT(rec.value("error", ""),
                    AnyOf(HasSubstr("answered run without a valid 'flags'"),
                          HasSubstr("the runtime plugin crashed during run")))
            << rec.dump();
        // The run may still be under way in the process that was ended: its box goes at once.
        EXPECT_THAT(rec.value("error", ""),
                    HasSubstr("removed its box '" + rec.value("label", "") + "'"))
            << rec.dump();
        const std::string next = s.submit(turn_file("[\"echo\", \"still\", \"serving\"]"));
        ASSERT_TRUE(s.wait_terminal({next}, 30s)) << d.log();
        EXPECT_EQ(s.terminal(next)["status"], "succeeded") << forge << "\n" << d.log();
        EXPECT_EQ(s.status()["daemon"]["running"], true) << forge;
    }
}

TEST(PluginIsolation, AnAbortInListByLabelLeavesTheDaemonServing) {
    IsolatedSetup s;
    DaemonProcess d(s);
    const std::string first = s.submit(turn_file("[\"echo\", \"one\"]", "id = \"abort-list-1\"\n"));
    ASSERT_TRUE(s.wait_terminal({first}, 30s)) << d.log();
    EXPECT_EQ(s.terminal(first)["status"], "succeeded") << d.log();
    ASSERT_TRUE(d.wait_for_log("the runtime plugin crashed during list_by_label", 30s)) << d.log();
    EXPECT_THAT(d.log(), AnyOf(HasSubstr("signal 6 (Aborted)"), HasSubstr("exited with status")));
    const std::string next = s.submit(turn_file("[\"echo\", \"two\"]"));
    ASSERT_TRUE(s.wait_terminal({next}, 30s)) << d.log();
    EXPECT_EQ(s.terminal(next)["status"], "succeeded") << d.log();
}

// A crash ends every call in flight in the process, and only those: a turn running beside the
// one that crashed is ended with the same record; the turns after it run.
TEST(PluginIsolation, ACrashEndsTheTurnsInFlightBesideItAndNoOthers) {
    IsolatedSetup s("maxConcurrentTurns = 2\n");
    DaemonProcess d(s);
    const std::string beside = s.submit(turn_file("[\"sleep\", \"600000\"]"));
    ASSERT_TRUE(d.wait_for_log("fake run of 'radial-turn-", 30s)) << d.log();
    const std::string crash = s.submit(turn_file("[\"segv\"]"));
    ASSERT_TRUE(s.wait_terminal({crash, beside}, 60s)) << d.log();
    expect_crash_record(s.terminal(crash), "signal 11 (Segmentation fault)");
    expect_crash_record(s.terminal(beside), "signal 11 (Segmentation fault)");
    const std::string next = s.submit(turn_file("[\"echo\", \"three\"]"));
    ASSERT_TRUE(s.wait_terminal({next}, 30s)) << d.log();
    EXPECT_EQ(s.terminal(next)["status"], "succeeded") << d.log();
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// The output path crosses the process boundary whole: bytes, order and the exit code.
// Output and exit codes cross as in-process. So does one write of any size or stream id: a write
// over the wire's 64 MiB frame was dropped and the plugin told to stop (the turn failed), and a
// stream id was cut to its low byte (258 became 2, stderr, where in-process it is stdout).
TEST(PluginIsolation, OutputAndExitCodesCrossTheProcessBoundary) {
    IsolatedSetup s;
    DaemonProcess d(s);
    const std::string ok = s.submit(turn_file("[\"flood\", \"3000000\"]"));
    const std::string code = s.submit(turn_file("[\"exit\", \"7\"]"));
    const std::string big = s.submit(turn_file("[\"write-once\", \"1\", \"70000000\"]"));
    const std::string odd = s.submit(turn_file("[\"write-once\", \"258\", \"8\"]"));
    ASSERT_TRUE(s.wait_terminal({ok, code, big, odd}, 120s)) << d.log();
    EXPECT_EQ(s.terminal(ok)["status"], "succeeded");
    EXPECT_EQ(s.terminal(code)["exitCode"], 7) << s.terminal(code).dump();
    const auto whole = s.terminal(big);
    EXPECT_EQ(whole["status"], "succeeded") << whole.dump();
    const std::string tail = whole["outputTail"]["stdout"].get<std::string>();
    EXPECT_EQ(tail, std::string(tail.size() - 1, 'y') + "\n") << "the write did not arrive whole";
    const auto other = s.terminal(odd);
    EXPECT_EQ(other["outputTail"]["stdout"], "yyyyyyy\n") << other.dump();
    EXPECT_EQ(other["outputTail"]["stderr"], "") << other.dump();
    EXPECT_THAT(d.log(), Not(HasSubstr("crashed")));
    // The plugin ran in one host process of the daemon's, not in the daemon.
    EXPECT_EQ(plugin_hosts_of(d.pid()).size(), 1u);
}

} // namespace
} // namespace radial

namespace radial {
namespace {

// A plugin whose descriptor ends before get_extension, and one whose box-root table ends before
// root_ids, each with that function set to one that aborts: the plugin's host process read past
// struct_size and called it (create failed, or the box-root question crashed the host); now a
// field past a table's struct_size is absent there, as in-process, and the turn runs.
TEST(PluginIsolation, AFieldPastAPluginsStructSizeIsAbsentInItsHostProcess) {
    for (const std::string kind : {"short_descriptor", "short_box_root"}) {
        test::TempDir dir("radial-short");
        fs::create_directory(dir / "plugins");
        fs::copy_file(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/" + kind + "/short.so",
                      dir / "plugins/short.so");
        dir.write("radiald.toml", "[run]\ncontainerRuntime = \"short\"\npluginDir = \"" +
                                      (dir / "plugins") + "\"\nstateDir = \"" + (dir / "state") +
                                      "\"\npluginIsolation = \"process\"\n");
        auto r = test::run_process({RADIALD_PATH, "turn", "--config", dir / "radiald.toml",
                                    "--image", "img", "--", "anything"});
        EXPECT_EQ(r.exit_code, 0) << kind << ": " << r.err;
        EXPECT_EQ(r.out, "short\n") << kind;
        EXPECT_THAT(r.err, Not(HasSubstr("crashed"))) << kind;
    }
}

} // namespace
} // namespace radial
