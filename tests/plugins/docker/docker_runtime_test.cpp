// tests/plugins/docker/docker_runtime_test.cpp — DockerRuntime (plugins/docker/docker_runtime.cpp)
// against a scripted CLI: exact ownership (C-04), dispositions, refusals before anything starts,
// and the endings of a run whose container never came to exist.
#include "docker_runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "../support/config_builder.h"
#include "deadline.h"
#include "docker_run.h"
#include "early_kills.h"
#include "scripted_cli.h"

namespace radial::docker {
namespace {

using radial::test::ConfigBuilder;
using radial::test::ScriptedCli;
using Clock = std::chrono::steady_clock;

const std::string kA(64, 'a'), kB(64, 'b'), kC(64, 'c'), kD(64, 'd'), kE(64, 'e');

std::unique_ptr<DockerRuntime> runtime_for(const ScriptedCli& fake,
                                           radial::plugin::Host host = radial::plugin::Host(),
                                           std::uint64_t kill_grace_ms = 2000,
                                           std::uint64_t command_timeout_ms = 5000) {
    ConfigBuilder b;
    b.str("binary", fake.binary())
        .integer("killGrace", static_cast<std::int64_t>(kill_grace_ms))
        .integer("commandTimeout", static_cast<std::int64_t>(command_timeout_ms));
    radial::plugin::Config config(b.get());
    return std::make_unique<DockerRuntime>(host, config);
}

// The host's log, captured.
class LogCapture {
public:
    LogCapture() {
        h_.struct_size = sizeof h_;
        h_.ctx = this;
        h_.log = [](void* ctx, std::uint32_t, radial_str message) {
            auto* self = static_cast<LogCapture*>(ctx);
            std::lock_guard lock(self->mutex_);
            self->lines_.emplace_back(message.data, message.size);
        };
    }
    radial::plugin::Host host() const { return radial::plugin::Host(&h_); }
    std::string text() {
        std::lock_guard lock(mutex_);
        std::string all;
        for (const auto& l : lines_) all += l + "\n";
        return all;
    }

private:
    radial_host h_{};
    std::mutex mutex_;
    std::vector<std::string> lines_;
};

// The output of one run, and the sink that collects it.
struct Collected {
    std::string out, err;
    int chunks = 0;
    std::function<void(std::uint32_t)> hook;
};

radial::plugin::RunResult run_collecting(DockerRuntime& rt, const ContainerSpec& s, Collected& c) {
    radial_output_sink sink{
        sizeof(radial_output_sink), &c,
        [](void* ctx, std::uint32_t stream, const std::uint8_t* data, std::size_t size) {
            auto* col = static_cast<Collected*>(ctx);
            ++col->chunks;
            (stream == RADIAL_STREAM_STDOUT ? col->out : col->err)
                .append(reinterpret_cast<const char*>(data), size);
            if (col->hook) col->hook(stream);
            return 0;
        }};
    radial::plugin::Output out(&sink);
    return rt.run(s, out);
}

// docker inspect's {{json .State}} for a container that ran, or never started.
std::string state_json(bool started, bool oom = false, int exit_code = 0,
                       const std::string& error = "") {
    return std::string(R"({"Status":")") + (started ? "exited" : "created") + R"(","OOMKilled":)" +
           (oom ? "true" : "false") + R"(,"ExitCode":)" + std::to_string(exit_code) +
           R"(,"Error":")" + error + R"(","StartedAt":")" +
           (started ? "2026-11-29T14:12:21.208309192Z" : "0001-01-01T00:00:00Z") + "\"}\n";
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
    s.user = "1000:1000";
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
    for (const char* user : {"0:0", "+0", "+0:+0", "1000:0", "1000", "nobody", "root"}) {
        s.user = user;
        bool refused = false;
        for (const auto& d : rt->describe(s))
            if (d.field == RADIAL_FIELD_USER) {
                refused = d.disposition == RADIAL_DISP_REFUSED;
                EXPECT_NE(d.note.find("never runs a box as root"), std::string::npos) << d.note;
                EXPECT_NE(d.note.find("'" + std::string(user) + "'"), std::string::npos) << d.note;
            }
        EXPECT_TRUE(refused) << user;
    }
}

TEST(docker_runtime, CapabilitiesAreTheDockerOnes) {
    ScriptedCli fake;
    EXPECT_EQ(runtime_for(fake)->capabilities(),
              (std::vector<std::string>{RADIAL_CAP_UNIX_SOCKET_MOUNTS, RADIAL_CAP_NAMED_NETWORKS,
                                        RADIAL_CAP_HOST_UID_MOUNTS}));
}

std::unique_ptr<DockerRuntime> runtime_with_oci_runtime(const ScriptedCli& fake,
                                                        const std::string& oci_runtime) {
    ConfigBuilder b;
    b.str("binary", fake.binary()).str("ociRuntime", oci_runtime);
    radial::plugin::Config config(b.get());
    return std::make_unique<DockerRuntime>(radial::plugin::Host(), config);
}

TEST(docker_runtime, PreflightRefusesAnOciRuntimeTheEngineDoesNotList) {
    ScriptedCli fake;
    fake.answer("info", "\"20.10.24+dfsg1\"\n");
    fake.answer("info-runtimes",
                R"({"io.containerd.runc.v2":{"path":"runc"},"runc":{"path":"runc"}})"
                "\n");
    auto e = error_of([&] { runtime_with_oci_runtime(fake, "runsc")->preflight(); });
    EXPECT_EQ(e.code(), RADIAL_E_INVALID);
    EXPECT_EQ(e.key(), "ociRuntime");
    EXPECT_NE(std::string(e.what()).find("run.docker.ociRuntime = \"runsc\": the engine (default "
                                         "host) has no runtime of that name (it lists: "
                                         "io.containerd.runc.v2, runc)"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("scripts/setup.sh --with-gvisor"), std::string::npos);
}

TEST(docker_runtime, PreflightPassesAListedOciRuntimeAndAsksNothingWithoutOne) {
    ScriptedCli fake;
    fake.answer("info", "\"20.10.24+dfsg1\"\n");
    fake.answer("info-runtimes", R"({"runc":{"path":"runc"},"runsc":{"path":"/usr/bin/runsc"}})");
    EXPECT_NO_THROW(runtime_with_oci_runtime(fake, "runsc")->preflight());
    EXPECT_NE(fake.calls().find("info --format {{json .Runtimes}}"), std::string::npos)
        << fake.calls();
    ScriptedCli plain;
    plain.answer("info", "\"20.10.24+dfsg1\"\n");
    EXPECT_NO_THROW(runtime_for(plain)->preflight());
    EXPECT_EQ(plain.calls().find(".Runtimes"), std::string::npos) << plain.calls();
}

TEST(docker_runtime, PreflightWithAnOciRuntimeFailsClosedWhenTheEngineDoesNotSay) {
    ScriptedCli fake;
    fake.answer("info", "\"20.10.24+dfsg1\"\n");
    fake.answer("info-runtimes", "", "Cannot connect to the Docker daemon at unix:///x.sock.\n", 1);
    auto e = error_of([&] { runtime_with_oci_runtime(fake, "runsc")->preflight(); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("Cannot connect to the Docker daemon"), std::string::npos)
        << e.what();
    fake.answer("info-runtimes", "<no value>\n");
    e = error_of([&] { runtime_with_oci_runtime(fake, "runsc")->preflight(); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("no runtime list in its answer"), std::string::npos)
        << e.what();
}

TEST(docker_runtime, AnInvalidSpecStartsNothing) {
    ScriptedCli fake;
    auto rt = runtime_for(fake);
    ContainerSpec s = spec("b");
    s.env = {{"LD_PRELOAD", "/tmp/a.so\n", false}};
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
              "'does-not-exist.invalid/x:1' locally (docker build, docker load) or check its "
              "name; with run.docker.pull \"never\" or \"missing\" a local image is used without "
              "contacting a registry");
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

TEST(docker_runtime, C09AStartFailureAfterCreateIsAnErrorNotExit125) {
    ScriptedCli fake;
    fake.creates(kA);
    fake.answer("run", "",
                "docker: Error response from daemon: failed to create shim task: OCI runtime "
                "create failed: error mounting \"/tmp\" to rootfs at \"/etc/passwd\": not a "
                "directory: unknown.\n\nRun 'docker run --help' for more information\n",
                125);
    fake.answer("inspect",
                state_json(false, false, 127, "error mounting to rootfs: not a directory"));
    auto rt = runtime_for(fake);
    Collected c;
    auto e = error_of([&] { run_collecting(*rt, spec("radial-turn-start"), c); });
    EXPECT_EQ(e.code(), RADIAL_E_INTERNAL);
    EXPECT_EQ(std::string(e.what()),
              "starting box 'radial-turn-start' from image 'radial/busybox:latest': docker "
              "created the container but could not start it: error mounting to rootfs: not a "
              "directory; check the spec's mounts, workdir and user against the image, and "
              "dockerd's log");
    EXPECT_EQ(c.chunks, 0) << "docker's message is not the workload's output: " << c.err;
    std::string calls = fake.calls();
    EXPECT_NE(calls.find("inspect --type container --format {{json .State}} " + kA),
              std::string::npos)
        << calls;
    EXPECT_NE(calls.find("rm --force --volumes " + kA), std::string::npos) << "always removed";
}

TEST(docker_runtime, C09AWorkloadThatExits125IsAnExitCode) {
    ScriptedCli fake;
    fake.creates(kA);
    fake.answer("run", "out\n", "docker: forged by the workload\n", 125);
    fake.answer("inspect", state_json(true, false, 125));
    auto rt = runtime_for(fake);
    Collected c;
    radial::plugin::RunResult r = run_collecting(*rt, spec("radial-turn-125"), c);
    EXPECT_EQ(r.flags, RADIAL_RUN_EXITED);
    EXPECT_EQ(r.exit_code, 125);
    EXPECT_EQ(c.out, "out\n");
    EXPECT_EQ(c.err, "docker: forged by the workload\n");
}

// CASES C-16: a box removed from outside while it ran (its docker client exits 137, the engine no
// longer knows the container) is an error saying so, never the command's own exit 137.
TEST(docker_runtime, C16_ABoxRemovedFromOutsideIsAnErrorNotTheCommandsExit) {
    ScriptedCli fake;
    fake.creates(kA);
    fake.answer("run", "", "", 137);
    fake.answer("inspect", "", "Error response from daemon: No such container: " + kA + "\n", 1);
    auto rt = runtime_for(fake);
    Collected c;
    auto e = error_of([&] { run_collecting(*rt, spec("radial-turn-vanished"), c); });
    EXPECT_EQ(e.code(), RADIAL_E_INTERNAL);
    EXPECT_NE(std::string(e.what()).find("was removed while it ran by something other than this "
                                         "radiald"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("exited 137"), std::string::npos) << e.what();

    // Caught mid-removal: the engine still lists it, as "removing".
    ScriptedCli removing;
    removing.creates(kA);
    removing.answer("run", "", "", 137);
    removing.answer("inspect",
                    R"({"Status":"removing","Dead":false,"OOMKilled":false,"ExitCode":137,)"
                    R"("Error":"","StartedAt":"2026-12-01T01:23:44.810146087Z"})");
    auto rt2 = runtime_for(removing);
    auto e2 = error_of([&] { run_collecting(*rt2, spec("radial-turn-removing"), c); });
    EXPECT_NE(std::string(e2.what()).find("was removed while it ran"), std::string::npos)
        << e2.what();
}

TEST(docker_runtime, C09WithoutInspectOnlyDockersOwnExit125IsAFailedStart) {
    const std::string docker_says =
        "docker: Error response from daemon: failed to create shim task: boom.\n"
        "See 'docker run --help'.\n";
    {
        ScriptedCli fake;
        fake.creates(kA);
        fake.answer("run", "", docker_says, 125);
        fake.answer("inspect", "", "Error response from daemon: i/o timeout\n", 1);
        auto rt = runtime_for(fake);
        Collected c;
        auto e = error_of([&] { run_collecting(*rt, spec("radial-turn-noinspect"), c); });
        EXPECT_EQ(e.code(), RADIAL_E_INTERNAL);
        EXPECT_NE(std::string(e.what()).find("could not start it: docker: Error response from "
                                             "daemon: failed to create shim task: boom."),
                  std::string::npos)
            << e.what();
    }
    {
        ScriptedCli fake; // the workload printed to stdout: it ran, whatever its stderr says
        fake.creates(kA);
        fake.answer("run", "hello\n", docker_says, 125);
        fake.answer("inspect", "", "Error response from daemon: i/o timeout\n", 1);
        auto rt = runtime_for(fake);
        Collected c;
        radial::plugin::RunResult r = run_collecting(*rt, spec("radial-turn-noinspect2"), c);
        EXPECT_EQ(r.flags, RADIAL_RUN_EXITED);
        EXPECT_EQ(r.exit_code, 125);
        EXPECT_EQ(c.out, "hello\n");
    }
}

// The client lost its engine mid-run: its wait broke, it exited 125, and the engine answers
// neither inspect nor rm. How the workload ended is unknown: the runtime's error, not an exit 125.
TEST(docker_runtime, AClientThatLostItsEngineMidRunIsAnUnavailableErrorNotExit125) {
    ScriptedCli fake;
    fake.creates(kA);
    fake.answer("run", "up\n",
                "time=\"2026-12-01T01:29:58Z\" level=error msg=\"error waiting for container: "
                "unexpected EOF\"\n",
                125);
    const std::string gone =
        "error during connect: Get \"http://docker.sock/v1.50/containers\": EOF\n";
    fake.answer("inspect", "", gone, 1);
    fake.answer("rm", "", gone, 1);
    fake.answer("ps", "", gone, 1);
    auto rt = runtime_for(fake);
    Collected c;
    auto e = error_of([&] { run_collecting(*rt, spec("radial-turn-lost"), c); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("the engine stopped answering"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("error waiting for container"), std::string::npos)
        << e.what();
}

TEST(docker_runtime, OomKillIsReportedAndTheContainerRemovedAfterItsStateIsRead) {
    ScriptedCli fake;
    fake.creates(kA);
    fake.answer("run", "", "Killed\n", 137);
    fake.answer("inspect", state_json(true, true, 137));
    auto rt = runtime_for(fake);
    Collected c;
    radial::plugin::RunResult r = run_collecting(*rt, spec("radial-turn-oom"), c);
    EXPECT_EQ(r.flags, RADIAL_RUN_EXITED | RADIAL_RUN_OOM_KILLED);
    EXPECT_EQ(r.exit_code, 137);
    std::string calls = fake.calls();
    auto inspected = calls.find("inspect ");
    auto removed = calls.find("rm --force --volumes " + kA);
    ASSERT_NE(inspected, std::string::npos) << calls;
    ASSERT_NE(removed, std::string::npos) << calls;
    EXPECT_LT(inspected, removed);
    EXPECT_EQ(calls.find("run --rm"), std::string::npos) << "no --rm: the state is read first";
}

TEST(docker_runtime, ClientSensitiveEnvReachesTheEnvFileNotTheClientsEnvironment) {
    ScriptedCli fake;
    fake.creates(kA);
    fake.answer("inspect", state_json(true));
    auto rt = runtime_for(fake);
    ContainerSpec s = spec("radial-turn-env");
    s.env = {{"LD_PRELOAD", "/nonexistent/radial-evil.so", false},
             {"PATH", "/radial/bin:/usr/bin:/bin", false},
             {"HTTPS_PROXY", "http://127.0.0.1:9", true},
             {"GH_TOKEN", "ghp_FAKE0123456789abcdef", true}};
    Collected c;
    radial::plugin::RunResult r = run_collecting(*rt, s, c);
    EXPECT_EQ(r.flags, RADIAL_RUN_EXITED);
    std::string environ = fake.run_environ();
    EXPECT_EQ(environ.find("radial-evil.so"), std::string::npos) << environ;
    EXPECT_EQ(environ.find("/radial/bin"), std::string::npos) << environ;
    EXPECT_EQ(environ.find("127.0.0.1:9"), std::string::npos) << environ;
    EXPECT_NE(environ.find("GH_TOKEN=ghp_FAKE0123456789abcdef\n"), std::string::npos) << environ;
    EXPECT_EQ(fake.run_env_file(),
              "LD_PRELOAD=/nonexistent/radial-evil.so\nPATH=/radial/bin:/usr/bin:/bin\n"
              "HTTPS_PROXY=http://127.0.0.1:9\n");
    std::string calls = fake.calls();
    EXPECT_NE(calls.find(" --env-file /proc/self/fd/0 -e GH_TOKEN "), std::string::npos) << calls;
    for (const auto& e : s.env) EXPECT_EQ(calls.find(e.value), std::string::npos) << e.name;
}

TEST(docker_runtime, TheTimeoutIsEnforcedWhileTheOutputCallbackBlocks) {
    ScriptedCli fake;
    fake.creates(kA);
    fake.answer("run", "tick\n");
    fake.hang("run", 30); // after its output, the client neither exits nor is drained
    auto rt = runtime_for(fake);
    ContainerSpec s = spec("radial-turn-blocked");
    s.timeout_ms = 500;
    const auto start = Clock::now();
    std::optional<Clock::duration> removed_after;
    Collected c;
    c.hook = [&](std::uint32_t) {
        // The host is slow: this callback does not return until the box is being removed (or
        // 8 s have passed). Only a supervisor independent of this thread can remove it now.
        while (!removed_after && Clock::now() - start < std::chrono::seconds(8)) {
            if (fake.calls().find("rm --force --volumes " + kA) != std::string::npos)
                removed_after = Clock::now() - start;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    };
    radial::plugin::RunResult r = run_collecting(*rt, s, c);
    ASSERT_TRUE(removed_after.has_value()) << "no 'docker rm' while the callback blocked";
    EXPECT_LT(*removed_after, std::chrono::seconds(3));
    EXPECT_EQ(r.flags, RADIAL_RUN_TIMED_OUT);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(8)) << "the client is killed at killGrace";
}

TEST(docker_runtime, HugeTimeoutsMeanNoTimeoutWithoutOverflow) {
    const auto now = Clock::now();
    for (std::uint64_t ms :
         {std::numeric_limits<std::uint64_t>::max(), std::uint64_t{9'999'999'999'999},
          std::uint64_t{1} << 40, std::uint64_t{1} << 63}) {
        EXPECT_GT(deadline_after(now, ms), now + std::chrono::hours(24 * 365)) << ms;
        EXPECT_GT(budget_ms(ms), std::chrono::hours(24 * 365)) << ms;
        EXPECT_LE(budget_ms(ms), kLongestBudget) << ms;
    }
    EXPECT_EQ(deadline_after(now, std::numeric_limits<std::uint64_t>::max()),
              Clock::time_point::max());
    EXPECT_EQ(deadline_after(now, 1500), now + std::chrono::milliseconds(1500));
    EXPECT_EQ(budget_ms(1500), std::chrono::milliseconds(1500));
    EXPECT_EQ(deadline_after(Clock::time_point::max(), 0), Clock::time_point::max());

    for (std::uint64_t ms :
         {std::numeric_limits<std::uint64_t>::max(), std::uint64_t{9'999'999'999'999}}) {
        ScriptedCli fake;
        fake.creates(kA);
        fake.answer("run", "ran\n");
        fake.answer("inspect", state_json(true));
        auto rt = runtime_for(fake);
        ContainerSpec s = spec("radial-turn-huge");
        s.timeout_ms = ms;
        Collected c;
        radial::plugin::RunResult r = run_collecting(*rt, s, c);
        EXPECT_EQ(r.flags, RADIAL_RUN_EXITED) << ms << ": not timed out";
        EXPECT_EQ(c.out, "ran\n");
    }
}

TEST(docker_runtime, HugeKillGraceAndCommandTimeoutDoNotOverflowTheKillWait) {
    ScriptedCli fake;
    fake.hang("run", 30);
    LogCapture log;
    auto rt = runtime_for(fake, log.host(), 9'000'000'000'000'000'000u, 9'000'000'000'000'000'000u);
    radial::plugin::RunResult r;
    std::thread runner([&] {
        radial::plugin::Output out(nullptr);
        r = rt->run(spec("radial-turn-hugekill"), out);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    rt->kill("radial-turn-hugekill");
    runner.join();
    EXPECT_EQ(r.flags, RADIAL_RUN_KILLED);
    EXPECT_EQ(log.text().find("did not finish within"), std::string::npos) << log.text();
}

TEST(docker_runtime, AKillBeforeTheRunIsRememberedAndTheRunStartsNothing) {
    ScriptedCli fake; // no box with the label exists
    auto rt = runtime_for(fake);
    rt->kill("radial-turn-early");
    radial::plugin::Output out(nullptr);
    radial::plugin::RunResult r = rt->run(spec("radial-turn-early"), out);
    EXPECT_EQ(r.flags, RADIAL_RUN_KILLED);
    EXPECT_EQ(fake.calls().find("run "), std::string::npos) << fake.calls();
    // Taken once: a later run of that label is not killed again.
    fake.creates(kA);
    fake.answer("inspect", state_json(true));
    r = rt->run(spec("radial-turn-early"), out);
    EXPECT_EQ(r.flags, RADIAL_RUN_EXITED);
}

TEST(docker_runtime, AKillThatRemovedAnOrphanDoesNotStopALaterRun) {
    ScriptedCli fake;
    fake.answer("ps", kA + "\t\"radial-turn-orphan\"\n");
    auto rt = runtime_for(fake);
    rt->kill("radial-turn-orphan");
    EXPECT_NE(fake.calls().find("rm --force --volumes " + kA), std::string::npos);
    fake.answer("ps", "");
    fake.creates(kB);
    fake.answer("inspect", state_json(true));
    radial::plugin::Output out(nullptr);
    radial::plugin::RunResult r = rt->run(spec("radial-turn-orphan"), out);
    EXPECT_EQ(r.flags, RADIAL_RUN_EXITED);
}

TEST(docker_runtime, EarlyKillsExpireAndAreBounded) {
    EarlyKills kills(std::chrono::seconds(60), 3);
    const auto t0 = EarlyKills::Clock::now();
    kills.remember("a", t0);
    EXPECT_FALSE(kills.take("b", t0));
    EXPECT_TRUE(kills.take("a", t0 + std::chrono::seconds(59)));
    EXPECT_FALSE(kills.take("a", t0 + std::chrono::seconds(59))) << "taken once";
    kills.remember("a", t0);
    EXPECT_FALSE(kills.take("a", t0 + std::chrono::seconds(60))) << "expired";
    for (const char* l : {"1", "2", "3", "4"})
        kills.remember(l, t0 + std::chrono::seconds(l[0] - '0'));
    EXPECT_EQ(kills.size(), 3u);
    EXPECT_FALSE(kills.take("1", t0 + std::chrono::seconds(5))) << "the oldest was dropped";
    EXPECT_TRUE(kills.take("4", t0 + std::chrono::seconds(5)));
    kills.forget("2");
    EXPECT_FALSE(kills.take("2", t0 + std::chrono::seconds(5)));
}

TEST(docker_runtime, MissingImageMessagesAreNotFoundAndAnUnresolvableEngineIsUnavailable) {
    const std::pair<std::string, std::int32_t> cases[] = {
        {"Unable to find image 'x/y:1' locally\n", RADIAL_E_NOT_FOUND},
        {"Unable to find image 'x/y:1' locally\ndocker: Error response from daemon: Get "
         "\"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io on "
         "10.0.0.2:53: no such host.\n",
         RADIAL_E_NOT_FOUND},
        {"docker: error during connect: Post \"http://nohost:2375/v1.41/containers/create\": "
         "dial tcp: lookup nohost: no such host.\n",
         RADIAL_E_UNAVAILABLE}};
    for (const auto& [err, code] : cases) {
        ScriptedCli fake;
        fake.answer("run", "", err, 125);
        auto rt = runtime_for(fake);
        radial::plugin::Output out(nullptr);
        auto e = error_of([&] { rt->run(spec("radial-turn-img"), out); });
        EXPECT_EQ(e.code(), code) << err;
        if (code == RADIAL_E_NOT_FOUND) {
            EXPECT_NE(std::string(e.what()).find("build or load image 'radial/busybox:latest' "
                                                 "locally"),
                      std::string::npos)
                << e.what();
        }
    }
}

} // namespace
} // namespace radial::docker
