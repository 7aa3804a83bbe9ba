// tests/plugins/sandbox/session_script_test.cpp — the session scripts (plugins/sandbox/
// session_script.cpp) really run by /bin/sh, as `sbx exec -i NAME sh -s` runs them, with HOME in
// a temporary directory standing in for the sandbox user's home: the keeper ends an idle session
// and its processes with nobody else running, an exec's deadline holds inside the script, what
// an exec leaves running is ended, an ended session refuses its next exec. Each test tags its
// processes with its own label, so tests running side by side never end each other's.
#include "session_script.h"

#include <gtest/gtest.h>
#include <radial/support/cli_capture.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "../../support/host_processes.h"
#include "../../support/temp_dir.h"

namespace radial::sandbox {
namespace {

using namespace std::chrono_literals;
using radial::test::read_file;
using radial::test::TempDir;

class session_script : public ::testing::Test {
protected:
    session_script() : home_("radial-session-home") {
        label_ = "st" + std::to_string(::getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name();
    }
    ~session_script() override {
        // Nothing of this test's session outlives it: its keeper stops once the state is gone.
        if (auto pid = keeper_pid()) ::kill(pid, SIGKILL);
    }

    plugin_support::CliOutput run(const std::string& script) {
        std::string path = home_.write("script.sh", script);
        // In a session of its own, as in a sandbox: the capture ends the group it started.
        return plugin_support::capture_cli("/bin/sh", {"-c", "exec setsid -w sh -s < \"$0\"", path},
                                           {{"PATH", "/usr/bin:/bin"}, {"HOME", home_.path()}},
                                           std::chrono::seconds(60));
    }
    plugin_support::CliOutput setup(std::uint64_t idle_ms, std::uint64_t max_ms) {
        ContainerSpec s;
        s.label = label_;
        return run(sbx_session_setup_script(s, idle_ms, max_ms));
    }
    plugin_support::CliOutput exec(const std::string& command, std::vector<EnvVar> env = {},
                                   std::uint64_t timeout_ms = 0) {
        ContainerSpec e;
        e.label = label_;
        e.argv = {"sh", "-c", command};
        e.env = std::move(env);
        e.timeout_ms = timeout_ms;
        return run(sbx_session_exec_script(e, 1000));
    }
    std::string state() { return run(sbx_session_state_script()).out; }
    pid_t keeper_pid() {
        std::ifstream in(std::filesystem::path(home_.path()) / ".radial-session" / "keeper.pid");
        pid_t pid = 0;
        return in >> pid ? pid : 0;
    }
    // Running, not a zombie waiting for whichever process adopted it to reap it.
    static bool alive(pid_t pid) {
        if (pid <= 0 || ::kill(pid, 0) != 0) return false;
        const std::string rest = test::stat_after_name(pid);
        return !rest.empty() && rest[0] != 'Z';
    }
    static bool eventually(const std::function<bool()>& f, std::chrono::seconds budget) {
        const auto deadline = std::chrono::steady_clock::now() + budget;
        while (std::chrono::steady_clock::now() < deadline) {
            if (f()) return true;
            std::this_thread::sleep_for(100ms);
        }
        return f();
    }

    TempDir home_;
    std::string label_;
};

TEST_F(session_script, TheSetupStartsAKeeperAndTheSessionIsLive) {
    auto r = setup(0, 0);
    ASSERT_TRUE(r.ok()) << r.err;
    EXPECT_EQ(state(), "live\n");
    EXPECT_TRUE(alive(keeper_pid())) << "the keeper runs on after the setup's exec ended";
}

TEST_F(session_script, WhatAnExecWritesOutsideItsWorkdirIsThereForTheNext) {
    ASSERT_TRUE(setup(0, 0).ok());
    auto first = exec("echo v1 > \"$HOME/installed\"; echo done");
    EXPECT_TRUE(first.ok()) << first.err;
    EXPECT_EQ(first.out, "done\n");
    auto second = exec("cat \"$HOME/installed\"; exit 3");
    EXPECT_EQ(second.status.code, 3);
    EXPECT_EQ(second.out, "v1\n");
}

TEST_F(session_script, AnExecsVariablesAreItsOwnAndItsLeftoversAreEnded) {
    ASSERT_TRUE(setup(0, 0).ok());
    // The first exec leaves a process behind that would read the next exec's environment.
    auto first = exec("sleep 600 & echo $! > \"$HOME/left.pid\"; echo \"[$TOKEN]\"",
                      {{"TOKEN", "tok-of-exec-1", true}});
    EXPECT_EQ(first.out, "[tok-of-exec-1]\n");
    const pid_t left = std::stoi(read_file(home_ / "left.pid"));
    EXPECT_FALSE(alive(left)) << "what the exec left running was ended when it did";
    auto second = exec("echo \"[$TOKEN]\"");
    EXPECT_EQ(second.out, "[]\n");
    EXPECT_TRUE(alive(keeper_pid())) << "the sweep ends the exec's processes, not the keeper";
    EXPECT_EQ(read_file(home_.path() + "/.radial-session/keeper").find("tok-of-exec-1"),
              std::string::npos);
}

TEST_F(session_script, AnExecsDeadlineHoldsInsideTheScriptAndGives124) {
    ASSERT_TRUE(setup(0, 0).ok());
    const auto started = std::chrono::steady_clock::now();
    auto r = exec("echo started; trap '' TERM; sleep 600; echo not-reached", {}, 1000);
    EXPECT_EQ(r.status.code, 124) << r.err;
    EXPECT_EQ(r.out, "started\n");
    // TERM ignored: SIGKILL after the 1 s grace ends it; nothing of 600 s was waited for.
    EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
    EXPECT_EQ(state(), "live\n") << "an exec's timeout does not end the session";
    EXPECT_EQ(exec("echo after").out, "after\n");
}

TEST_F(session_script, AnIdleSessionEndsOnItsOwnAndRefusesItsNextExec) {
    ASSERT_TRUE(setup(1000, 0).ok());
    const pid_t keeper = keeper_pid();
    ASSERT_TRUE(alive(keeper));
    // Only the keeper runs now; no exec, no host: the session ends by itself.
    EXPECT_TRUE(eventually([&] { return state().starts_with("ended: it was idle"); }, 60s))
        << state();
    EXPECT_TRUE(eventually([&] { return !alive(keeper); }, 30s)) << "the keeper exits once done";
    auto refused = exec("echo should-not-run");
    EXPECT_EQ(refused.status.code, kSessionEndedExit);
    EXPECT_EQ(refused.out, "");
    EXPECT_NE(refused.err.find("has ended (it was idle"), std::string::npos) << refused.err;
}

TEST_F(session_script, TheMaximumLifetimeEndsARunningExec) {
    ASSERT_TRUE(setup(0, 2000).ok());
    const auto started = std::chrono::steady_clock::now();
    auto r = exec("echo started; sleep 600");
    EXPECT_EQ(r.status.code, 128 + SIGKILL) << r.err;
    EXPECT_EQ(r.out, "started\n");
    EXPECT_LT(std::chrono::steady_clock::now() - started, 60s);
    EXPECT_EQ(state(), "ended: its maximum lifetime passed\n");
}

TEST_F(session_script, ARunningExecIsNotIdleTime) {
    ASSERT_TRUE(setup(1000, 0).ok());
    auto r = exec("sleep 3; echo still-here");
    EXPECT_EQ(r.status.code, 0) << r.err;
    EXPECT_EQ(r.out, "still-here\n");
}

TEST_F(session_script, AKeeperThatDiedIsStartedAgainByTheNextExec) {
    ASSERT_TRUE(setup(0, 0).ok());
    const pid_t first = keeper_pid();
    ASSERT_TRUE(alive(first));
    ::kill(first, SIGKILL); // as sbx stopping an idle VM does to every process in it
    ASSERT_TRUE(eventually([&] { return !alive(first); }, 10s));
    EXPECT_EQ(exec("true").status.code, 0);
    EXPECT_NE(keeper_pid(), first);
    EXPECT_TRUE(alive(keeper_pid()));
}

// sbx stops an idle VM (and with it the keeper): the next exec judges the limits itself before
// anything of it runs. Time passing is written into the state, not waited for.
TEST_F(session_script, AnExecAfterTheVmStoppedPastALimitIsRefusedBeforeItRuns) {
    ASSERT_TRUE(setup(2000, 0).ok());
    ::kill(keeper_pid(), SIGKILL);
    const std::string dir = home_.path() + "/.radial-session/";
    std::ofstream(dir + "last") << (std::time(nullptr) - 100) << "\n";
    auto r = exec("echo ran > \"$HOME/ran\"", {{"TOKEN", "tok-after-idle", true}});
    EXPECT_EQ(r.status.code, kSessionEndedExit) << r.err;
    EXPECT_NE(r.err.find("(it was idle for 2 s)"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(home_.path() + "/ran")) << "the command never ran";
    EXPECT_EQ(state(), "ended: it was idle for 2 s\n");
}

TEST_F(session_script, AnExecAfterTheVmStoppedPastTheMaximumLifetimeIsRefused) {
    ASSERT_TRUE(setup(0, 60'000).ok());
    ::kill(keeper_pid(), SIGKILL);
    std::ofstream(home_.path() + "/.radial-session/max_at") << (std::time(nullptr) - 5) << "\n";
    auto late = exec("echo ran > \"$HOME/ran\"");
    EXPECT_EQ(late.status.code, kSessionEndedExit);
    EXPECT_FALSE(std::filesystem::exists(home_.path() + "/ran"));
    EXPECT_EQ(state(), "ended: its maximum lifetime passed\n");
}

// No process of an exec outlives it holding its secret: not the command's, not a watchdog's
// sleep (the command finished before the watchdog was told to stop), not what a parent forks
// while the sweep runs.
TEST_F(session_script, NothingOfAnExecOutlivesItWithItsSecret) {
    ASSERT_TRUE(setup(0, 0).ok());
    const std::string secret = "tok-" + std::to_string(::getpid()) + "-never-left";
    for (int i = 0; i < 20; ++i)
        EXPECT_EQ(exec("true", {{"TOKEN", secret, true}}, 60'000).status.code, 0);
    auto forker = exec("( while :; do sleep 300 & done ) >/dev/null 2>&1 & sleep 0.3; echo done",
                       {{"TOKEN", secret, true}});
    EXPECT_EQ(forker.out, "done\n");
    int holding = 0;
    // Every process, for this test's own secret and tag only (unique to it).
    for (pid_t pid : test::process_ids()) {
        const std::string env = test::read_proc_file("/proc/" + std::to_string(pid) + "/environ");
        if (env.find(secret) != std::string::npos ||
            env.find("RADIAL_SESSION_EXEC=" + label_) != std::string::npos)
            ++holding;
    }
    EXPECT_EQ(holding, 0) << "processes still hold the exec's secret or tag";
}

// The exec's variables are its command's alone: a variable named as the script's own cannot
// steer it, and the argv runs as a program, never as a shell builtin or function.
TEST_F(session_script, AnExecsVariablesAndArgvCannotSteerTheScript) {
    ASSERT_TRUE(setup(0, 0).ok());
    auto r = exec("sleep 600 & echo $! > \"$HOME/left.pid\"",
                  {{"radial_tag", "other", false}, {"d", "/nonexistent", false}});
    EXPECT_EQ(r.status.code, 0) << r.err;
    EXPECT_FALSE(alive(std::stoi(read_file(home_.path() + "/left.pid"))));
    ContainerSpec e;
    e.label = label_;
    e.argv = {"echo", "a\\tb"};
    auto echoed = run(sbx_session_exec_script(e, 1000));
    EXPECT_EQ(echoed.out, "a\\tb\n") << "/bin/echo, not the shell's builtin";
    e.argv = {"radial_sweep", "KILL", "RADIAL_SESSION_EXEC"};
    EXPECT_EQ(run(sbx_session_exec_script(e, 1000)).status.code, 127) << "no script function";
    e.argv = {"true"};
    e.workdir = "/no/such/dir";
    auto nowhere = run(sbx_session_exec_script(e, 1000));
    EXPECT_NE(nowhere.status.code, 0);
    EXPECT_FALSE(std::filesystem::exists(home_.path() + "/.radial-session/busy"))
        << "a failed cd leaves no exec marked running";
}

TEST_F(session_script, ATimeoutPrintsNothingOfTheShellsOwn) {
    ASSERT_TRUE(setup(0, 0).ok());
    auto r = exec("trap '' TERM; sleep 600", {}, 500);
    EXPECT_EQ(r.status.code, 124);
    EXPECT_EQ(r.err, "") << "no 'Killed' or 'Terminated' line in the turn's stderr";
}

TEST_F(session_script, AStateDirectoryThatIsGoneRefusesTheExec) {
    auto r = exec("echo should-not-run");
    EXPECT_EQ(r.status.code, kSessionEndedExit);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(state(), "gone\n");
}

} // namespace
} // namespace radial::sandbox
