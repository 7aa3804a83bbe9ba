// tests/plugins/support/cli_capture_test.cpp — short budgeted CLI calls
// (plugins/support/cli_capture.cpp): the budget holds against a CLI that never answers, a cancel
// descriptor interrupts a call, output is captured apart, a missing CLI is named.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <radial/support/cli_capture.h>
#include <radial/support/wake_event.h>
#include <signal.h>
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <radial/plugin/runtime.hpp>
#include <stdexcept>
#include <thread>

#include "../../support/host_processes.h"
#include "../../support/process_probe.h"
#include "../../support/temp_dir.h"

namespace radial::plugin_support {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

TEST(plugin_support_cli_capture, CapturesStdoutStderrAndTheExitCode) {
    CliOutput r = capture_cli("/bin/sh", {"-c", "printf out; printf err >&2; exit 3"}, {}, 5s);
    EXPECT_FALSE(r.timed_out);
    EXPECT_FALSE(r.cancelled);
    EXPECT_TRUE(r.status.exited);
    EXPECT_EQ(r.status.code, 3);
    EXPECT_EQ(r.out, "out");
    EXPECT_EQ(r.err, "err");
    EXPECT_FALSE(r.ok());
    EXPECT_TRUE(capture_cli("/bin/true", {}, {}, 5s).ok());
}

TEST(plugin_support_cli_capture, TheBudgetAppliesToACliThatNeverAnswers) {
    auto start = Clock::now();
    CliOutput r = capture_cli("/bin/sleep", {"30"}, {}, 300ms);
    auto took = Clock::now() - start;
    EXPECT_TRUE(r.timed_out);
    EXPECT_FALSE(r.ok());
    EXPECT_GE(took, 300ms);
    EXPECT_LT(took, 3s);
}

TEST(plugin_support_cli_capture, AGrandchildHoldingThePipesDoesNotHoldTheCall) {
    auto start = Clock::now();
    CliOutput r = capture_cli("/bin/sh", {"-c", "sleep 30 & echo started"}, {}, 20s);
    EXPECT_LT(Clock::now() - start, 5s);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.out, "started\n");
}

// A wrapper that hangs in a child of its own: the budget kills the wrapper's whole process group,
// so the child is not left running, reparented to init.
TEST(plugin_support_cli_capture, C17_ATimedOutCallKillsItsWholeProcessGroup) {
    test::TempDir d("radial-c17");
    std::string pid_file = d / "sleep.pid";
    CliOutput r =
        capture_cli("/bin/sh", {"-c", "sleep 3600 & echo $! > \"$0\"; wait", pid_file}, {}, 500ms);
    EXPECT_TRUE(r.timed_out);
    pid_t sleeper = test::pid_in(pid_file);
    ASSERT_GT(sleeper, 0);
    EXPECT_TRUE(test::process_gone_within(sleeper, "sleep", 5s)) << "pid " << sleeper;
}

// A client that exits leaving a child behind in its group (pipes not held): the child ends with
// the call.
TEST(plugin_support_cli_capture, C17_WhatACallLeavesInItsGroupEndsWithIt) {
    test::TempDir d("radial-c17");
    std::string pid_file = d / "sleep.pid";
    CliOutput r = capture_cli(
        "/bin/sh",
        {"-c", "sleep 3600 </dev/null >/dev/null 2>&1 & echo $! > \"$0\"; echo done", pid_file}, {},
        20s);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.out, "done\n");
    pid_t sleeper = test::pid_in(pid_file);
    ASSERT_GT(sleeper, 0);
    EXPECT_TRUE(test::process_gone_within(sleeper, "sleep", 5s)) << "pid " << sleeper;
}

TEST(plugin_support_cli_capture, TheCancelDescriptorInterruptsTheCall) {
    WakeEvent cancel;
    std::thread canceller([&] {
        std::this_thread::sleep_for(200ms);
        cancel.notify();
    });
    CaptureOptions options;
    options.cancel_fd = cancel.fd();
    auto start = Clock::now();
    CliOutput r = capture_cli("/bin/sleep", {"30"}, {}, 20s, options);
    canceller.join();
    EXPECT_LT(Clock::now() - start, 3s);
    EXPECT_TRUE(r.cancelled);
    EXPECT_FALSE(r.timed_out);
}

TEST(plugin_support_cli_capture, TheTickRunsWhileTheCallRuns) {
    // The call ends only once the third tick has made the file it waits for.
    test::TempDir dir("radial-cli-tick");
    const std::string go = dir / "go";
    int ticks = 0;
    CaptureOptions options;
    options.tick_every = 20ms;
    options.tick = [&] {
        if (++ticks == 3) dir.write("go", "");
    };
    CliOutput r =
        capture_cli("/bin/sh", {"-c", "while [ ! -e \"$0\" ]; do sleep 0.02; done; echo done", go},
                    {{"PATH", "/usr/bin:/bin"}}, 120s, options);
    ASSERT_TRUE(r.ok()) << r.err;
    EXPECT_EQ(r.out, "done\n");
    EXPECT_GE(ticks, 3);
}

TEST(plugin_support_cli_capture, ATickThatThrowsEndsTheCallAndItsClient) {
    test::TempDir dir("radial-cli-tick-throws");
    const std::string pid_file = dir / "pid";
    CaptureOptions options;
    options.tick_every = 10ms;
    options.tick = [&] {
        if (test::pid_in(pid_file) > 0) throw std::runtime_error("stop here");
    };
    EXPECT_THROW(capture_cli("/bin/sh", {"-c", "echo $$ > \"$0\"; exec sleep 60", pid_file},
                             {{"PATH", "/usr/bin:/bin"}}, 120s, options),
                 std::runtime_error);
    const pid_t pid = test::pid_in(pid_file);
    ASSERT_GT(pid, 0);
    // Killed and reaped before the exception left the call: no such process any more.
    EXPECT_NE(::kill(pid, 0), 0);
    EXPECT_EQ(errno, ESRCH);
}

// CPU time this process has used so far (user and system).
std::chrono::microseconds cpu_used() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return std::chrono::seconds(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           std::chrono::microseconds(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Whether `pid` has ended (a zombie, or gone).
bool ended(pid_t pid) {
    const std::string state = test::stat_after_name(pid);
    return state.empty() || state[0] == 'Z';
}

// A script's start that leaves a process of a session of its own holding the pipes for `seconds`,
// its pid in "$0", and goes on only once that process has left the client's group (a kill of the
// group when the client ends would otherwise still reach it).
std::string leave_a_process(int seconds) {
    return "setsid sh -c 'echo $$ > \"$0\".tmp; mv \"$0\".tmp \"$0\"; exec sleep " +
           std::to_string(seconds) + "' \"$0\" & while [ ! -s \"$0\" ]; do sleep 0.01; done; ";
}

TEST(plugin_support_cli_capture, AClientThatEndedBeforeTheCancelIsReportedAsItEnded) {
    // The client says "hi", leaves a process of another session holding its pipes and exits 0
    // without writing again (nothing on the pipes tells the call it ended); the cancel comes only
    // after it ended. The call reports the exit, not a cancel.
    test::TempDir dir("radial-cli-ended-cancel");
    const std::string left_pid = dir / "left", client_pid = dir / "client";
    WakeEvent cancel;
    std::thread canceller([&] {
        // Bounded (a failure, not a hang): the cancel then comes early and the test fails.
        pid_t client = 0;
        test::wait_until([&] { return (client = test::pid_in(client_pid)) > 0; }, 60s);
        test::wait_until([&] { return ended(client); }, 60s);
        cancel.notify();
    });
    CaptureOptions options;
    options.cancel_fd = cancel.fd();
    CliOutput r = capture_cli(
        "/bin/sh",
        {"-c", "echo hi; " + leave_a_process(120) + "echo $$ > \"$1\".tmp; mv \"$1\".tmp \"$1\"",
         left_pid, client_pid},
        {{"PATH", "/usr/bin:/bin"}}, 120s, options);
    canceller.join();
    // This test's own process, in a session of its own; its pid was written before "hi".
    if (const pid_t left = test::pid_in(left_pid); left > 0) ::kill(left, SIGKILL);
    EXPECT_FALSE(r.cancelled);
    EXPECT_FALSE(r.timed_out);
    EXPECT_TRUE(r.ok()) << "exited " << r.status.exited << " code " << r.status.code;
    EXPECT_EQ(r.out, "hi\n");
}

TEST(plugin_support_cli_capture, APipeHeldPastTheBudgetIsWaitedForWithoutSpinning) {
    // The client ends at once; a process of another session holds its pipes past the budget. The
    // call ends at the budget with the client's status and has slept, not spun, meanwhile.
    test::TempDir dir("radial-cli-held-pipes");
    const std::string left_pid = dir / "left";
    const auto cpu_before = cpu_used();
    CliOutput r = capture_cli("/bin/sh", {"-c", leave_a_process(10) + "echo hi", left_pid},
                              {{"PATH", "/usr/bin:/bin"}}, 600ms);
    const auto cpu = cpu_used() - cpu_before;
    // Present whenever the call saw "hi"; after a timeout the process may not have been left at
    // all, and one left later ends by itself within 10 s.
    if (const pid_t left = test::pid_in(left_pid); left > 0) ::kill(left, SIGKILL);
    EXPECT_LT(cpu, 100ms) << "the wait for the held pipes spun";
    if (!r.timed_out) { // a loaded machine may not even have started the client within 600 ms
        EXPECT_TRUE(r.ok());
        EXPECT_EQ(r.out, "hi\n");
    }
}

TEST(plugin_support_cli_capture, ABudgetTooLargeForTheClockIsNoDeadline) {
    for (const auto budget :
         {std::chrono::milliseconds::max(), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                std::chrono::hours(24 * 365 * 1000))}) {
        CliOutput r = capture_cli("/bin/sh", {"-c", "echo hi"}, {}, budget);
        EXPECT_FALSE(r.timed_out);
        EXPECT_TRUE(r.ok());
        EXPECT_EQ(r.out, "hi\n");
    }
}

TEST(plugin_support_cli_capture, ACancelDescriptorThatIsNotOpenIsInvalid) {
    // Far above what this test has open (a low closed number would be the call's own pipes').
    const int fd = 900;
    ASSERT_EQ(::fcntl(fd, F_GETFD), -1);
    CaptureOptions options;
    options.cancel_fd = fd;
    try {
        capture_cli("/bin/sleep", {"120"}, {}, 120s, options);
        FAIL() << "took a closed cancel descriptor";
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), RADIAL_E_INVALID);
        EXPECT_NE(std::string(e.what()).find("cancel_fd " + std::to_string(fd)), std::string::npos)
            << e.what();
    }
}

TEST(plugin_support_cli_capture, FindExecutableNamesTheToolAndTheSetting) {
    try {
        find_executable("radial-no-such-cli", "sbx CLI", "binary", "run.sandbox.binary");
        FAIL() << "found a missing CLI";
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
        EXPECT_EQ(e.key(), "binary");
        EXPECT_EQ(std::string(e.what()),
                  "starting the sbx CLI 'radial-no-such-cli': not found in PATH; install the sbx "
                  "CLI or set run.sandbox.binary");
    }
    EXPECT_EQ(find_executable("sh", "shell", "binary", "x").filename(), "sh");
    EXPECT_EQ(find_executable("/bin/sh", "shell", "binary", "x"), "/bin/sh");
}

TEST(plugin_support_cli_capture,
     FindExecutableNamesANonExecutableFileAndNeverReturnsARelativePath) {
    test::TempDir dir("radial-find-exe");
    const std::string plain = dir.write("docker", "#!/bin/sh\n"); // mode 0644
    for (const std::string& not_runnable : {plain, dir.path()}) {
        try {
            find_executable(not_runnable, "docker CLI", "binary", "run.docker.binary");
            ADD_FAILURE() << "took '" << not_runnable << "', which cannot be executed";
        } catch (const radial::plugin::Error& e) {
            EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
            EXPECT_NE(
                std::string(e.what()).find("'" + not_runnable + "' is not an executable file"),
                std::string::npos)
                << e.what();
        }
    }
    // A binary setting given relative to radiald's working directory is made absolute here, so
    // a client started in another working directory still runs the same file.
    const std::string relative = std::filesystem::relative("/bin/sh").string();
    ASSERT_NE(relative.find('/'), std::string::npos) << relative;
    const auto found = find_executable(relative, "shell", "binary", "x");
    EXPECT_TRUE(found.is_absolute()) << found;
}

TEST(plugin_support_cli_capture, OwnEnvironmentIsThisProcesssEnvironmentValueForValue) {
    ASSERT_EQ(::setenv("RADIAL_CLI_CAPTURE_TEST", "a=b c\n", 1), 0);
    const ChildProcess::Env env = own_environment();
    ::unsetenv("RADIAL_CLI_CAPTURE_TEST");
    ASSERT_EQ(env.count("RADIAL_CLI_CAPTURE_TEST"), 1u);
    EXPECT_EQ(env.at("RADIAL_CLI_CAPTURE_TEST"), "a=b c\n");
    ASSERT_EQ(env.count("PATH"), 1u);
    EXPECT_EQ(env.at("PATH"), std::getenv("PATH"));
    // A call given it sees what this process sees.
    ASSERT_EQ(::setenv("RADIAL_CLI_CAPTURE_SEEN", "seen by the call", 1), 0);
    CliOutput r = capture_cli("/bin/sh", {"-c", "printf %s \"$RADIAL_CLI_CAPTURE_SEEN\""},
                              own_environment(), 30s);
    ::unsetenv("RADIAL_CLI_CAPTURE_SEEN");
    ASSERT_TRUE(r.ok()) << r.err;
    EXPECT_EQ(r.out, "seen by the call");
}

} // namespace
} // namespace radial::plugin_support
