// tests/plugins/docker/docker_runtime_test.cpp — DockerRuntime (plugins/docker/docker_runtime.cpp)
// against a scripted CLI: exact ownership (C-04), dispositions, refusals before anything starts,
// and the endings of a run whose container never came to exist.
#include "docker_runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "config_builder.h"
#include "docker_run.h"
#include "scripted_cli.h"

namespace radial::docker {
namespace {

using radial::test::ConfigBuilder;
using radial::test::ScriptedCli;
using Clock = std::chrono::steady_clock;

const std::string kA(64, 'a'), kB(64, 'b'), kC(64, 'c'), kD(64, 'd'), kE(64, 'e');

std::unique_ptr<DockerRuntime> runtime_for(const ScriptedCli& fake) {
    ConfigBuilder b;
    b.str("binary", fake.binary()).str("killGrace", "2s").str("commandTimeout", "5s");
    radial::plugin::Config config(b.get());
    return std::make_unique<DockerRuntime>(radial::plugin::Host(), config);
}

void answer_c04_listing(const ScriptedCli& fake) {
    fake.answer("ps", kA + "\t\"radial-turn-inst1-7\"\n" + kB + "\t\"radial-turn-inst1-70\"\n" +
                          kC + "\t\"radial-turn-inst10-7\"\n" + kD +
                          "\t\"x-radial-turn-inst1-7\"\n" + kE + "\t\"radial-turn-inst1\"\n");
}

ContainerSpec spec(const std::string& label) {
    ContainerSpec s;
    s.label = label;
    s.image = "radial/busybox:latest";
    s.argv = {"true"};
    return s;
}

template <class F>
radial::plugin::Error error_of(F&& f) {
    try {
        f();
    } catch (const radial::plugin::Error& e) {
        return e;
    }
    ADD_FAILURE() << "no error";
    return radial::plugin::Error(RADIAL_OK, "");
}

TEST(docker_runtime, C04ListByLabelIsAnExactBytePrefix) {
    ScriptedCli fake;
    answer_c04_listing(fake);
    auto rt = runtime_for(fake);
    EXPECT_EQ(rt->list_by_label("radial-turn-inst1-"),
              (std::vector<std::string>{"radial-turn-inst1-7", "radial-turn-inst1-70"}));
    EXPECT_EQ(rt->list_by_label("radial-turn-inst10-"),
              (std::vector<std::string>{"radial-turn-inst10-7"}));
    EXPECT_TRUE(rt->list_by_label("radial-turn-inst2-").empty());
    EXPECT_EQ(fake.calls().find("name="), std::string::npos) << "never a name filter";
}

TEST(docker_runtime, C04KillRemovesOnlyTheExactLabel) {
    ScriptedCli fake;
    answer_c04_listing(fake);
    auto rt = runtime_for(fake);
    rt->kill("radial-turn-inst1-7");
    std::string calls = fake.calls();
    EXPECT_NE(calls.find("rm --force --volumes " + kA + "\n"), std::string::npos) << calls;
    for (const auto& other : {kB, kC, kD, kE})
        EXPECT_EQ(calls.find("rm --force --volumes " + kA + " " + other), std::string::npos);
}

TEST(docker_runtime, KillOfAnUnknownLabelSucceedsWithoutRemovingAnything) {
    ScriptedCli fake;
    answer_c04_listing(fake);
    auto rt = runtime_for(fake);
    EXPECT_NO_THROW(rt->kill("radial-turn-inst1-8"));
    EXPECT_EQ(fake.calls().find("rm "), std::string::npos) << fake.calls(); // no run: no --rm
}

TEST(docker_runtime, KillReportsAnUnreachableEngine) {
    ScriptedCli fake;
    fake.answer("ps", "", "Cannot connect to the Docker daemon at unix:///x.sock.\n", 1);
    auto rt = runtime_for(fake);
    auto e = error_of([&] { rt->kill("radial-turn-inst1-7"); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("Cannot connect"), std::string::npos) << e.what();
}

TEST(docker_runtime, DescribeHonoursEverythingButARootUser) {
    ScriptedCli fake;
    auto rt = runtime_for(fake);
    ContainerSpec s = spec("b");
    s.mounts = {{"/a", "/b", true}};
    s.env = {{"X", "1", false}};
    s.workdir = "/b";
    s.timeout_ms = 5;
    s.host_ports = {8080};
    s.pids_limit = 5;
    s.read_only_rootfs = Tristate::no;
    s.user = "1000";
    s.tmpfs = {{"/t", 0}};
    s.extra_hosts = {"h:127.0.0.1"};
    s.memory_bytes = 1 << 30;
    s.network = "host";
    s.cpus_milli = 500;
    auto dispositions = rt->describe(s);
    ASSERT_EQ(dispositions.size(), carried_fields(s).size());
    for (const auto& d : dispositions) {
        EXPECT_EQ(d.disposition, RADIAL_DISP_HONOURED) << field_name(d.field);
        if (d.field == RADIAL_FIELD_HOST_PORTS) {
            EXPECT_FALSE(d.note.empty());
        }
    }
    s.user = "0:0";
    bool refused = false;
    for (const auto& d : rt->describe(s))
        if (d.field == RADIAL_FIELD_USER) {
            refused = d.disposition == RADIAL_DISP_REFUSED;
            EXPECT_NE(d.note.find("never runs a box as root"), std::string::npos) << d.note;
        }
    EXPECT_TRUE(refused);
}

TEST(docker_runtime, CapabilitiesAreTheDockerOnes) {
    ScriptedCli fake;
    EXPECT_EQ(runtime_for(fake)->capabilities(),
              (std::vector<std::string>{RADIAL_CAP_UNIX_SOCKET_MOUNTS, RADIAL_CAP_NAMED_NETWORKS,
                                        RADIAL_CAP_HOST_UID_MOUNTS}));
}

TEST(docker_runtime, AnInvalidSpecStartsNothing) {
    ScriptedCli fake;
    auto rt = runtime_for(fake);
    ContainerSpec s = spec("b");
    s.env = {{"DOCKER_HOST", "tcp://127.0.0.1:1", false}};
    radial::plugin::Output out(nullptr);
    auto e = error_of([&] { rt->run(s, out); });
    EXPECT_EQ(e.code(), RADIAL_E_INVALID);
    EXPECT_EQ(e.key(), "env[0]");
    EXPECT_EQ(fake.calls(), "");
}

TEST(docker_runtime, AMissingMountSourceIsNotFoundAndStartsNothing) {
    ScriptedCli fake;
    auto rt = runtime_for(fake);
    ContainerSpec s = spec("b");
    s.mounts = {{"/nonexistent/radial-src", "/work", false}};
    radial::plugin::Output out(nullptr);
    auto e = error_of([&] { rt->run(s, out); });
    EXPECT_EQ(e.code(), RADIAL_E_NOT_FOUND);
    EXPECT_EQ(e.key(), "mounts[0]");
    EXPECT_EQ(fake.calls(), "");
}

TEST(docker_runtime, C09DockerFailingBeforeTheContainerExistsIsAnErrorNotAnExitCode) {
    ScriptedCli fake;
    fake.answer("run", "",
                "Unable to find image 'does-not-exist.invalid/x:1' locally\ndocker: Error response "
                "from daemon: No such image: does-not-exist.invalid/x:1\n\nRun 'docker run --help' "
                "for more information\n",
                125);
    auto rt = runtime_for(fake);
    ContainerSpec s = spec("radial-turn-c09");
    s.image = "does-not-exist.invalid/x:1";
    int chunks = 0;
    radial_output_sink sink{sizeof(radial_output_sink), &chunks,
                            [](void* ctx, std::uint32_t, const std::uint8_t*, std::size_t) {
                                ++*static_cast<int*>(ctx);
                                return 0;
                            }};
    radial::plugin::Output out(&sink);
    auto e = error_of([&] { rt->run(s, out); });
    EXPECT_EQ(e.code(), RADIAL_E_NOT_FOUND);
    EXPECT_EQ(std::string(e.what()),
              "starting box 'radial-turn-c09' from image 'does-not-exist.invalid/x:1': docker run "
              "failed before the container started: Unable to find image "
              "'does-not-exist.invalid/x:1' locally / docker: Error response from daemon: No such "
              "image: does-not-exist.invalid/x:1; build or load image "
              "'does-not-exist.invalid/x:1', or check its name and run.docker.pull");
    EXPECT_EQ(chunks, 0) << "docker's own chatter is not the workload's output";
}

TEST(docker_runtime, TimeoutBeforeTheContainerExistsStopsTheClient) {
    ScriptedCli fake; // `docker run` hangs as if pulling; the cidfile is never written
    fake.hang("run", 30);
    auto rt = runtime_for(fake);
    ContainerSpec s = spec("radial-turn-pull");
    s.timeout_ms = 300;
    radial::plugin::Output out(nullptr);
    auto start = Clock::now();
    radial::plugin::RunResult r = rt->run(s, out);
    EXPECT_EQ(r.flags, RADIAL_RUN_TIMED_OUT);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
    // Nothing was created, and the absence was checked twice by exact label lookup.
    std::string calls = fake.calls();
    std::size_t ps = 0;
    for (std::size_t at = calls.find("\nps "); at != std::string::npos;
         at = calls.find("\nps ", at + 1))
        ++ps;
    EXPECT_EQ(ps, 2u) << calls;
    EXPECT_EQ(calls.find("\nrm "), std::string::npos) << calls;
}

TEST(docker_runtime, KillFromAnotherThreadBeforeTheContainerExists) {
    ScriptedCli fake;
    fake.hang("run", 30);
    auto rt = runtime_for(fake);
    radial::plugin::RunResult r;
    std::thread runner([&] {
        radial::plugin::Output out(nullptr);
        r = rt->run(spec("radial-turn-kill"), out);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto start = Clock::now();
    rt->kill("radial-turn-kill"); // waits for the run's teardown
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
    runner.join();
    EXPECT_EQ(r.flags, RADIAL_RUN_KILLED);
}

TEST(docker_runtime, AKillBeforeTheClientStartsStartsNothing) {
    ScriptedCli fake;
    DockerSettings settings;
    settings.binary = fake.binary();
    DockerCli cli(settings);
    ActiveRun active;
    active.request_kill();
    radial::plugin::Output out(nullptr);
    radial::plugin::RunResult r = run_box(cli, radial::plugin::Host(), spec("b"), out, active);
    EXPECT_EQ(r.flags, RADIAL_RUN_KILLED);
    EXPECT_EQ(fake.calls(), "") << "no docker client was started";
}

TEST(docker_runtime, ConcurrentRunsOfOneLabelAreRefused) {
    ScriptedCli fake;
    fake.hang("run", 30);
    auto rt = runtime_for(fake);
    std::thread runner([&] {
        radial::plugin::Output out(nullptr);
        rt->run(spec("radial-turn-dup"), out);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    radial::plugin::Output out(nullptr);
    auto e = error_of([&] { rt->run(spec("radial-turn-dup"), out); });
    EXPECT_EQ(e.code(), RADIAL_E_INVALID);
    EXPECT_EQ(e.key(), "label");
    rt->kill("radial-turn-dup");
    runner.join();
}

} // namespace
} // namespace radial::docker
