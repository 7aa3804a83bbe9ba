// tests/plugins/docker/docker_cli_test.cpp — the short docker CLI calls
// (plugins/docker/docker_cli.cpp) against a scripted CLI: budgets, judging the probe by its output,
// tolerant removal.
#include "docker_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>

#include "../../support/process_probe.h"
#include "../../support/temp_dir.h"
#include "scripted_cli.h"

namespace radial::docker {
namespace {

using radial::test::ScriptedCli;
using Clock = std::chrono::steady_clock;

DockerCli cli_for(const ScriptedCli& fake, std::uint64_t budget_ms = 5000) {
    DockerSettings s;
    s.binary = fake.binary();
    s.preflight_timeout_ms = budget_ms;
    s.command_timeout_ms = budget_ms;
    return DockerCli(s);
}

// Runs `f`, expects radial::plugin::Error with `code`, returns its message.
template <class F>
std::string error_of(F&& f, std::int32_t code) {
    try {
        f();
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), code) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
}

// C-17: run.docker.binary is a wrapper that hangs in `sleep 3600`. The call fails naming its
// 3 s budget, and the wrapper's sleep does not outlive it.
TEST(docker_cli, C17_AHungBinaryFailsNamingTheBudgetAndLeavesNothing) {
    radial::test::TempDir d("radial-c17d");
    std::string pid_file = d / "sleep.pid";
    std::string wrapper =
        d.write("docker", "#!/bin/sh\nsleep 3600 &\necho $! > '" + pid_file + "'\nwait\n");
    ASSERT_EQ(::chmod(wrapper.c_str(), 0755), 0);
    DockerSettings s;
    s.binary = wrapper;
    s.preflight_timeout_ms = 3000;
    s.command_timeout_ms = 3000;
    auto start = Clock::now();
    std::string message = error_of([&] { DockerCli(s).server_version(); }, RADIAL_E_UNAVAILABLE);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(8));
    EXPECT_THAT(message, ::testing::HasSubstr("'docker info' did not answer within 3000 ms"));
    pid_t sleeper = radial::test::pid_in(pid_file);
    ASSERT_GT(sleeper, 0);
    EXPECT_TRUE(radial::test::process_gone_within(sleeper, "sleep", std::chrono::seconds(5)))
        << "pid " << sleeper;
    // The same for a short call (docker ps) with its own budget.
    std::filesystem::remove(pid_file);
    message = error_of([&] { DockerCli(s).list(); }, RADIAL_E_UNAVAILABLE);
    EXPECT_THAT(message, ::testing::HasSubstr("no answer within 3000 ms"));
    sleeper = radial::test::pid_in(pid_file);
    ASSERT_GT(sleeper, 0);
    EXPECT_TRUE(radial::test::process_gone_within(sleeper, "sleep", std::chrono::seconds(5)))
        << "pid " << sleeper;
}

TEST(docker_cli, ProbeReturnsTheServerVersion) {
    ScriptedCli fake;
    fake.answer("info", "\"20.10.24\"\n");
    EXPECT_EQ(cli_for(fake).server_version(), "20.10.24");
    EXPECT_EQ(fake.calls(), "info --format {{json .ServerVersion}}\n");
}

TEST(docker_cli, C07ProbeJudgesTheOutputNotTheExitStatus) {
    ScriptedCli fake;
    fake.answer("info", "\"\"\n",
                "Cannot connect to the Docker daemon at unix:///nonexistent.sock. Is the docker "
                "daemon running?\n",
                0);
    std::string message = error_of([&] { cli_for(fake).server_version(); }, RADIAL_E_UNAVAILABLE);
    EXPECT_EQ(message, "docker engine unreachable via '" + fake.binary() +
                           "' (default host): Cannot connect to the Docker daemon at "
                           "unix:///nonexistent.sock. Is the docker daemon running?; start dockerd "
                           "or fix run.docker.host");
}

TEST(docker_cli, C07AFailedProbeIsNeverCached) {
    ScriptedCli fake;
    DockerCli cli = cli_for(fake);
    fake.answer("info", "\"\"\n", "", 1);
    error_of([&] { cli.server_version(); }, RADIAL_E_UNAVAILABLE);
    fake.answer("info", "\"20.10.24\"\n");
    EXPECT_EQ(cli.server_version(), "20.10.24");
}

TEST(docker_cli, ProbeBudgetAppliesToACliThatNeverAnswers) {
    ScriptedCli fake;
    fake.hang("info", 30);
    auto start = Clock::now();
    std::string message =
        error_of([&] { cli_for(fake, 300).server_version(); }, RADIAL_E_UNAVAILABLE);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
    EXPECT_NE(message.find("did not answer within 300 ms"), std::string::npos) << message;
}

TEST(docker_cli, ListBudgetApplies) {
    ScriptedCli fake;
    fake.hang("ps", 30);
    auto start = Clock::now();
    std::string message = error_of([&] { cli_for(fake, 300).list(); }, RADIAL_E_UNAVAILABLE);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
    EXPECT_NE(message.find("no answer within 300 ms"), std::string::npos) << message;
}

TEST(docker_cli, MissingBinaryIsUnavailableNamingIt) {
    DockerSettings s;
    s.binary = "/nonexistent/docker";
    std::string message = error_of([&] { DockerCli(s).server_version(); }, RADIAL_E_UNAVAILABLE);
    EXPECT_EQ(message,
              "starting the docker CLI '/nonexistent/docker': '/nonexistent/docker' is not an "
              "executable file; install the docker CLI or set run.docker.binary");
    s.binary = "radial-no-such-docker-cli";
    message = error_of([&] { DockerCli(s).list(); }, RADIAL_E_UNAVAILABLE);
    EXPECT_NE(message.find("not found in PATH"), std::string::npos) << message;
}

TEST(docker_cli, ListFailureCarriesDockersMessage) {
    ScriptedCli fake;
    fake.answer("ps", "", "Cannot connect to the Docker daemon at unix:///x.sock.\n", 1);
    std::string message = error_of([&] { cli_for(fake).list(); }, RADIAL_E_UNAVAILABLE);
    EXPECT_NE(message.find("Cannot connect to the Docker daemon at unix:///x.sock."),
              std::string::npos)
        << message;
}

TEST(docker_cli, IdsWithLabelCompareByteForByte) {
    ScriptedCli fake;
    const std::string a(64, 'a'), b(64, 'b'), c(64, 'c');
    fake.answer("ps", a + "\t\"radial-turn-inst1-7\"\n" + b + "\t\"radial-turn-inst1-70\"\n" + c +
                          "\t\"radial-turn-inst1-7\"\n");
    EXPECT_EQ(cli_for(fake).ids_with_label("radial-turn-inst1-7"),
              (std::vector<std::string>{a, c}));
    EXPECT_TRUE(cli_for(fake).ids_with_label("radial-turn-inst1-").empty());
}

TEST(docker_cli, RemovingAContainerAlreadyGoneIsNotAnError) {
    ScriptedCli fake;
    fake.answer("rm", "", "Error response from daemon: No such container: abc\n", 1);
    EXPECT_NO_THROW(cli_for(fake).remove({"abc"}, "box"));
    fake.answer("rm", "",
                "Error response from daemon: removal of container abc is already in progress\n", 1);
    EXPECT_NO_THROW(cli_for(fake).remove({"abc"}, "box"));
    EXPECT_NE(fake.calls().find("rm --force --volumes abc"), std::string::npos) << fake.calls();
}

TEST(docker_cli, OtherRemovalErrorsAreUnavailable) {
    ScriptedCli fake;
    fake.answer("rm", "", "Error response from daemon: permission denied\n", 1);
    std::string message =
        error_of([&] { cli_for(fake).remove({std::string(64, 'd')}, "radial-turn-x-1"); },
                 RADIAL_E_UNAVAILABLE);
    EXPECT_EQ(message,
              "removing box 'radial-turn-x-1' (container 'dddddddddddd') with 'docker rm' (engine "
              "default host): Error response from daemon: permission denied; check that dockerd "
              "is running, then remove it with 'docker rm -f'");
}

TEST(docker_cli, RemovingNothingRunsNothing) {
    ScriptedCli fake;
    cli_for(fake).remove({}, "box");
    EXPECT_EQ(fake.calls(), "");
}

} // namespace
} // namespace radial::docker
