// tests/plugins/support/cli_capture_test.cpp — short budgeted CLI calls
// (plugins/support/cli_capture.cpp): the budget holds against a CLI that never answers, a cancel
// descriptor interrupts a call, output is captured apart, a missing CLI is named.
#include <gtest/gtest.h>
#include <radial/support/cli_capture.h>
#include <radial/support/wake_event.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <radial/plugin/runtime.hpp>
#include <stdexcept>
#include <thread>

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
        if (!test::read_file(pid_file).empty()) throw std::runtime_error("stop here");
    };
    EXPECT_THROW(capture_cli("/bin/sh", {"-c", "echo $$ > \"$0\"; exec sleep 60", pid_file},
                             {{"PATH", "/usr/bin:/bin"}}, 120s, options),
                 std::runtime_error);
    const pid_t pid = static_cast<pid_t>(std::stol(test::read_file(pid_file)));
    ASSERT_GT(pid, 0);
    // Killed and reaped before the exception left the call: no such process any more.
    EXPECT_NE(::kill(pid, 0), 0);
    EXPECT_EQ(errno, ESRCH);
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
