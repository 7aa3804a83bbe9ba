// tests/plugins/docker/docker_runtime_live_test.cpp — the real docker.so against the real engine
// (LIVE: needs dockerd and the test_image fixture). Loaded with dlopen and driven through its C
// descriptor, as radiald does. Cases C-02, C-03, C-04, C-06, C-07, C-09 of docs/design.md §17.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <thread>

#include "../../support/host_processes.h"
#include "../../support/temp_dir.h"
#include "loaded_docker_plugin.h"

namespace radial::test {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

int children_of_this_process() { return static_cast<int>(children_of(::getpid()).size()); }

long status_kib(const char* field) {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(field))
            return std::strtol(line.c_str() + std::strlen(field), nullptr, 10);
    return -1;
}

// Resets the peak RSS (VmHWM) to the current RSS and returns it, so that a later VmHWM measures
// only what happened since (earlier tests in the same process do not count).
long reset_peak_rss_kib() {
    std::ofstream("/proc/self/clear_refs") << "5";
    return status_kib("VmRSS:");
}

// The names of this process's containers, in any state: every name the tests here give has this
// process's pid in it, and callers look only for exact names they made.
std::set<std::string> container_names() {
    std::set<std::string> names;
    std::string out = shell("docker ps -a --filter name=" + std::to_string(::getpid()) +
                            " --format '{{.Names}}'");
    for (std::size_t at = 0; at < out.size();) {
        std::size_t end = out.find('\n', at);
        if (end == std::string::npos) end = out.size();
        if (end > at) names.insert(out.substr(at, end - at));
        at = end + 1;
    }
    return names;
}

bool box_exists(const std::string& label) { return container_names().count(label) != 0; }

bool eventually(const std::function<bool()>& f, std::chrono::milliseconds budget = 15s) {
    auto deadline = Clock::now() + budget;
    while (Clock::now() < deadline) {
        if (f()) return true;
        std::this_thread::sleep_for(100ms);
    }
    return f();
}

class docker_live : public ::testing::Test {
protected:
    // No registry here: a box never makes the engine pull (tests/support/no_pull.h).
    docker_live() { config_.str("pull", "never"); }
    void TearDown() override {
        std::string names;
        for (const auto& n : cleanup_) names += " '" + n + "'";
        if (!names.empty()) shell("docker rm -f" + names + " >/dev/null 2>&1");
    }

    // A label unique to this process, removed (as a container name) after the test.
    std::string label(const std::string& name) {
        std::string l = "rdt" + std::to_string(::getpid()) + "-" + name;
        cleanup_.push_back(l);
        return l;
    }
    ContainerSpec spec(const std::string& name, const std::string& script) {
        ContainerSpec s;
        s.label = label(name);
        s.image = RADIAL_TEST_IMAGE;
        s.argv = {"sh", "-c", script};
        s.timeout_ms = 60'000;
        return s;
    }
    DockerInstance& docker() {
        if (!docker_) docker_ = std::make_unique<DockerInstance>(config_);
        return *docker_;
    }

    ConfigBuilder config_;
    std::vector<std::string> cleanup_;

private:
    std::unique_ptr<DockerInstance> docker_;
};

TEST_F(docker_live, MarkerOutputStdoutStderrAndExitCode) {
    RunOutcome o =
        docker().run(spec("marker", "echo radial-marker-out; echo radial-marker-err >&2; exit 3"));
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_EXITED);
    EXPECT_EQ(o.result.exit_code, 3);
    EXPECT_EQ(o.out, "radial-marker-out\n");
    EXPECT_EQ(o.err, "radial-marker-err\n");
    EXPECT_GT(o.result.duration_ms, 0u);
    EXPECT_FALSE(box_exists(cleanup_.back()));
}

TEST_F(docker_live, OutputStreamsAsItArrives) {
    RunOutcome o = docker().run(spec("stream", "for n in 1 2 3; do echo $n; sleep 1; done"));
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.out, "1\n2\n3\n");
    EXPECT_GE(o.chunks, 3u);
    EXPECT_LT(o.first_chunk_seconds() + 1.5, o.seconds())
        << "first chunk at " << o.first_chunk_seconds() << " s, run took " << o.seconds() << " s";
}

TEST_F(docker_live, WriteInWorkAppearsOnTheHost) {
    TempDir work("radial-live-work");
    ASSERT_EQ(::chown(work.path().c_str(), 65534, 65534), 0);
    ContainerSpec s = spec("mountrw", "echo written-inside > /work/out.txt");
    s.mounts = {{work.path(), "/work", false}};
    s.workdir = "/work";
    RunOutcome o = docker().run(s);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.exit_code, 0) << o.err;
    EXPECT_EQ(read_file(work / "out.txt"), "written-inside\n");
    struct stat st {};
    ASSERT_EQ(::stat((work / "out.txt").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 65534u) << "the box runs as the non-root default user";
}

TEST_F(docker_live, ReadOnlyMountRefusesWritesAndTheFileIsIntact) {
    TempDir data("radial-live-ro");
    data.write("keep.txt", "original\n");
    ::chmod(data.path().c_str(), 0777);
    ::chmod((data / "keep.txt").c_str(), 0666);
    ContainerSpec s =
        spec("mountro", "echo changed > /data/keep.txt; echo rc=$?; cat /data/keep.txt");
    s.mounts = {{data.path(), "/data", true}};
    RunOutcome o = docker().run(s);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_NE(o.out.find("rc=1"), std::string::npos) << o.out;
    EXPECT_NE(o.err.find("Read-only file system"), std::string::npos) << o.err;
    EXPECT_EQ(read_file(data / "keep.txt"), "original\n");
}

TEST_F(docker_live, NetworkNoneLeavesOnlyLoopback) {
    RunOutcome o =
        docker().run(spec("netnone", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"));
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.out, "lo\n");
}

TEST_F(docker_live, RootfsIsReadOnlyAndTmpIsWritable) {
    RunOutcome o = docker().run(
        spec("rofs",
             "touch /x 2>/dev/null && echo rootfs-writable; touch /tmp/x && echo tmp-ok; id -u"));
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.out, "tmp-ok\n65534\n");
}

// True when a process runs `sleep 30` with `marker` in its environment (this test's box only,
// whatever other suites run concurrently).
bool marked_sleep_30_runs(const std::string& marker) {
    const std::string sleep30(
        "sleep\0"
        "30\0",
        9);
    for (pid_t pid : process_ids())
        if (cmdline_of(pid) == sleep30 &&
            read_proc_file("/proc/" + std::to_string(pid) + "/environ").find(marker) !=
                std::string::npos)
            return true;
    return false;
}

TEST_F(docker_live, C06TimeoutRemovesTheBoxNotJustTheClient) {
    ContainerSpec s = spec("c06", "trap '' TERM; sleep 30");
    s.timeout_ms = 2000;
    s.env = {{"C06_MARK", s.label, false}};
    const std::string marker = "C06_MARK=" + s.label;
    DockerInstance& d = docker(); // made before the thread shares it
    RunOutcome o;
    std::thread runner([&] { o = d.run(s); });
    bool seen = eventually([&] { return marked_sleep_30_runs(marker); }, 10s);
    runner.join();
    EXPECT_TRUE(seen) << "never saw the box's 'sleep 30'";
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_TIMED_OUT)
        << "timed_out, not exit 137";
    EXPECT_GE(o.seconds(), 1.9);
    EXPECT_LT(o.seconds(), 12.0);
    EXPECT_FALSE(box_exists(s.label));
    EXPECT_FALSE(marked_sleep_30_runs(marker)) << "the box's 'sleep 30' survived";
    EXPECT_EQ(children_of_this_process(), 0) << "the docker client was not reaped";
}

TEST_F(docker_live, KillFromAnotherThreadEndsTheRunPromptly) {
    ContainerSpec s = spec("kill", "sleep 600");
    DockerInstance& d = docker(); // made before the threads share it
    RunOutcome o;
    std::thread runner([&] { o = d.run(s); });
    // No ASSERT while `runner` is joinable: an early return would terminate the process.
    EXPECT_TRUE(eventually([&] { return box_exists(s.label); })) << "the box never started";
    auto killed_at = Clock::now();
    Reported k = docker().kill(s.label);
    EXPECT_EQ(k.code, RADIAL_OK) << k.message;
    EXPECT_FALSE(box_exists(s.label)) << "kill returned with the box still there";
    runner.join();
    EXPECT_LT(std::chrono::duration<double>(o.returned - killed_at).count(), 10.0);
    EXPECT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_KILLED);
    EXPECT_EQ(children_of_this_process(), 0);
}

// The runtime speaks the Engine API (docs/design.md §13.1): while a box runs, attached and
// streaming, this process has no child at all — no docker client per turn — and the run still
// ends with the workload's own exit code, its box removed.
TEST_F(docker_live, ABoxRunsWithoutAnyDockerClientProcess) {
    ContainerSpec s =
        spec("noclient", "echo started; while [ ! -e /tmp/go ]; do sleep 0.05; done; exit 3");
    DockerInstance& d = docker(); // made before the thread shares it
    RunOutcome o;
    std::promise<void> started;
    std::atomic<bool> told{false};
    std::thread runner([&] {
        o = d.run(s, [&](std::uint32_t, std::string_view chunk) {
            if (chunk.find("started") != std::string_view::npos && !told.exchange(true))
                started.set_value();
            return 0;
        });
        if (!told.exchange(true)) started.set_value(); // the run ended without the output
    });
    started.get_future().wait();
    const int children_while_running = children_of_this_process();
    shell("docker exec '" + s.label + "' touch /tmp/go >/dev/null 2>&1");
    runner.join();
    EXPECT_EQ(children_while_running, 0) << "a process was started to run the box";
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_EXITED);
    EXPECT_EQ(o.result.exit_code, 3);
    EXPECT_EQ(o.out, "started\n");
    EXPECT_FALSE(box_exists(s.label));
}

TEST_F(docker_live, KillFromInsideTheOutputCallback) {
    ContainerSpec s = spec("killcb", "echo started; sleep 600");
    Reported k;
    RunOutcome o = docker().run(s, [&](std::uint32_t, std::string_view) {
        k = docker().kill(s.label);
        return 0;
    });
    EXPECT_EQ(k.code, RADIAL_OK) << k.message;
    EXPECT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_KILLED);
    EXPECT_LT(o.seconds(), 10.0);
    EXPECT_FALSE(box_exists(s.label));
}

TEST_F(docker_live, OutputSinkAbortEndsTheRunAsKilled) {
    ContainerSpec s = spec("abort", "while :; do echo tick; sleep 0.1; done");
    RunOutcome o = docker().run(s, [](std::uint32_t, std::string_view) { return 1; });
    EXPECT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_KILLED | RADIAL_RUN_OUTPUT_ABORTED);
    EXPECT_EQ(o.chunks, 1u) << "nothing is delivered after the sink said stop";
    EXPECT_LT(o.seconds(), 10.0);
    EXPECT_FALSE(box_exists(s.label));
}

TEST_F(docker_live, KillOfAnUnknownLabelIsOkTwice) {
    std::string l = label("never-existed");
    EXPECT_EQ(docker().kill(l).code, RADIAL_OK);
    EXPECT_EQ(docker().kill(l).code, RADIAL_OK);
}

TEST_F(docker_live, C04ListByLabelIsExactAndKillTouchesOnlyItsOwnBox) {
    // The case's names, made unique to this process by the instance part ("p<pid>inst1").
    const std::string inst1 = "radial-turn-p" + std::to_string(::getpid()) + "inst1-";
    const std::string inst10 = "radial-turn-p" + std::to_string(::getpid()) + "inst10-";
    const std::string ours[] = {inst1 + "7", inst1 + "70", inst10 + "7"};
    const std::string foreign[] = {"x-" + inst1 + "7", inst1 + "7-other"};
    for (const auto& n : ours) cleanup_.push_back(n);
    for (const auto& n : foreign) {
        cleanup_.push_back(n);
        shell("docker run -d --name '" + n + "' --network none --user 65534:65534 " +
              RADIAL_TEST_IMAGE + " sleep 600 >/dev/null 2>&1");
    }
    DockerInstance& d = docker(); // made before the threads share it
    std::vector<std::thread> runs;
    std::vector<RunOutcome> outcomes(std::size(ours));
    for (std::size_t i = 0; i < std::size(ours); ++i)
        runs.emplace_back([&, i] {
            ContainerSpec s;
            s.label = ours[i];
            s.image = RADIAL_TEST_IMAGE;
            s.argv = {"sleep", "600"};
            s.timeout_ms = 60'000; // a backstop: the join below cannot hang forever
            outcomes[i] = d.run(s);
        });
    // No ASSERT while the runs are joinable: an early return would terminate the process.
    bool started = eventually([&] {
        auto names = container_names();
        return std::all_of(std::begin(ours), std::end(ours),
                           [&](auto& n) { return names.count(n); }) &&
               std::all_of(std::begin(foreign), std::end(foreign),
                           [&](auto& n) { return names.count(n); });
    });
    EXPECT_TRUE(started) << "not every box started";

    Reported r;
    EXPECT_EQ(docker().list(inst1, &r), (std::vector<std::string>{inst1 + "7", inst1 + "70"}));
    EXPECT_EQ(r.code, RADIAL_OK) << r.message;
    EXPECT_EQ(docker().list(inst10), (std::vector<std::string>{inst10 + "7"}));

    EXPECT_EQ(docker().kill(inst1 + "7").code, RADIAL_OK);
    auto names = container_names();
    EXPECT_EQ(names.count(inst1 + "7"), 0u);
    for (const auto& n : {inst1 + "70", inst10 + "7", foreign[0], foreign[1]})
        EXPECT_EQ(names.count(n), 1u) << n << " was touched";
    EXPECT_EQ(docker().list(inst1), (std::vector<std::string>{inst1 + "70"}));

    docker().kill(inst1 + "70");
    docker().kill(inst10 + "7");
    for (auto& t : runs) t.join();
    for (const auto& o : outcomes)
        EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
                  RADIAL_RUN_KILLED)
            << o.error.message;
    EXPECT_EQ(container_names().count(foreign[0]), 1u) << "a foreign box was removed";
}

TEST_F(docker_live, OrphansInEveryStateAreListedAndKilled) {
    // Boxes a crashed radiald left behind (C-05): created, exited and running, made without radial.
    const std::string created = label("orphan-created"), exited = label("orphan-exited"),
                      running = label("orphan-running");
    auto make = [&](const std::string& verb, const std::string& name, const std::string& cmd) {
        shell("docker " + verb + " --name '" + name + "' --label radial.label='" + name +
              "' --network none --user 65534:65534 " + RADIAL_TEST_IMAGE + " " + cmd +
              " >/dev/null 2>&1");
    };
    make("create", created, "true");
    make("run", exited, "true");
    make("run -d", running, "sleep 600");
    const std::string prefix = "rdt" + std::to_string(::getpid()) + "-orphan-";
    EXPECT_EQ(docker().list(prefix), (std::vector<std::string>{created, exited, running}));
    for (const auto& l : {created, exited, running})
        EXPECT_EQ(docker().kill(l).code, RADIAL_OK) << l;
    EXPECT_TRUE(docker().list(prefix).empty());
    auto names = container_names();
    for (const auto& l : {created, exited, running}) EXPECT_EQ(names.count(l), 0u) << l;
}

TEST_F(docker_live, C02SecretNeverOnAnyCommandLine) {
    const std::string secret = unique_instance_id("ghp_FAKE") + "01234567"; // 24 bytes, ours alone
    ContainerSpec s = spec("c02", "sleep 3; [ ${#GH_TOKEN} -eq 24 ] && echo ok");
    s.env = {{"GH_TOKEN", secret, true}};
    std::atomic<bool> done{false};
    DockerInstance& d = docker(); // made before the threads share it
    RunOutcome o;
    std::thread runner([&] {
        o = d.run(s);
        done = true;
    });
    int scans = 0;
    bool saw_client = false;
    const std::string client_marker = "radial.label=" + s.label;
    while (!done) {
        for (const auto& cmdline : all_cmdlines()) {
            EXPECT_EQ(cmdline.find(secret), std::string::npos) << "secret on a command line";
            saw_client = saw_client || cmdline.find(client_marker) != std::string::npos;
        }
        ++scans;
        std::this_thread::sleep_for(20ms);
    }
    runner.join();
    EXPECT_GT(scans, 20);
    // The value travels only in the create request's body (docs/design.md §6.3): no docker
    // client, whose command line would name the box, ever runs it.
    EXPECT_FALSE(saw_client) << "a docker client ran the box";
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.out, "ok\n");
    for (const auto& line : docker().log()) EXPECT_EQ(line.find(secret), std::string::npos) << line;
}

TEST_F(docker_live, C03QuotingArrivesByteForByte) {
    ContainerSpec s = spec("c03", R"CMD(X=inner; printf '%s|%s|%s\n' "it's" "$X" 'a\b'
printf 'héllo ✓ *\n')CMD");
    RunOutcome o = docker().run(s);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_EXITED);
    EXPECT_EQ(o.result.exit_code, 0);
    EXPECT_EQ(o.out, "it's|inner|a\\b\nh\xC3\xA9llo \xE2\x9C\x93 *\n");
}

TEST_F(docker_live, C09ExitStatusTable) {
    const std::pair<const char*, int> table[] = {{"exit 3", 3},
                                                 {"false | true", 0},
                                                 {"true | false", 1},
                                                 {"nonexistent_cmd_xyz", 127},
                                                 {"sh -c 'kill -9 $$'", 137}};
    int i = 0;
    for (const auto& [command, expected] : table) {
        RunOutcome o = docker().run(spec("c09-" + std::to_string(i++), command));
        ASSERT_EQ(o.status, RADIAL_OK) << command << ": " << o.error.message;
        EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
                  RADIAL_RUN_EXITED)
            << command << " (not timed out, not killed)";
        EXPECT_EQ(o.result.exit_code, expected) << command;
    }
}

TEST_F(docker_live, C09MissingImageIsAnErrorWithDockersMessage) {
    ContainerSpec s = spec("c09-image", "true");
    s.image = "does-not-exist.invalid/x:1";
    RunOutcome o = docker().run(s);
    EXPECT_EQ(o.status, RADIAL_E_NOT_FOUND);
    EXPECT_NE(o.error.message.find("the engine's create failed, before the container existed"),
              std::string::npos)
        << o.error.message;
    EXPECT_NE(o.error.message.find("No such image: does-not-exist.invalid/x:1"), std::string::npos)
        << o.error.message;
    EXPECT_EQ(o.error.message.find("exited 125"), std::string::npos) << o.error.message;
    EXPECT_EQ(o.chunks, 0u);
    EXPECT_FALSE(box_exists(s.label));
}

TEST_F(docker_live, C07PreflightFailsClosedAndAFreshInstancePasses) {
    ConfigBuilder dead;
    dead.str("host", "unix:///nonexistent.sock");
    DockerInstance broken(dead);
    Reported r = broken.preflight();
    EXPECT_EQ(r.code, RADIAL_E_UNAVAILABLE);
    EXPECT_NE(r.message.find("docker engine unreachable via 'docker' ('unix:///nonexistent.sock')"),
              std::string::npos)
        << r.message;
    EXPECT_EQ(broken.preflight().code, RADIAL_E_UNAVAILABLE) << "still failing: nothing cached";
    ContainerSpec s = spec("c07", "echo ran");
    RunOutcome o = broken.run(s);
    EXPECT_EQ(o.status, RADIAL_E_UNAVAILABLE) << o.error.message;
    EXPECT_EQ(o.out, "");
    EXPECT_FALSE(box_exists(s.label)) << "nothing may run on the real engine";

    Reported healthy = docker().preflight();
    EXPECT_EQ(healthy.code, RADIAL_OK) << healthy.message;
    EXPECT_EQ(docker().run(s).out, "ran\n");
}

// docs/design.md §13.1: run.docker.writableLayerSize is refused at startup, naming the key, where
// the engine's storage driver cannot bound a layer (overlay2 off xfs: this machine's ext4), so no
// turn's create fails on it later; elsewhere the preflight lets it through to the engine.
TEST_F(docker_live, AWritableLayerBoundTheEngineCannotGiveIsRefusedAtThePreflight) {
    std::string driver = shell("docker info --format '{{.Driver}}'");
    std::string backing = shell(
        "docker info --format '{{range .DriverStatus}}{{if eq (index . 0) \"Backing "
        "Filesystem\"}}{{index . 1}}{{end}}{{end}}'");
    while (!driver.empty() && driver.back() == '\n') driver.pop_back();
    while (!backing.empty() && backing.back() == '\n') backing.pop_back();
    ConfigBuilder bounded;
    bounded.str("pull", "never").str("writableLayerSize", "64m");
    DockerInstance instance(bounded);
    Reported r = instance.preflight();
    if (driver == "overlay2" && backing != "xfs") {
        EXPECT_EQ(r.code, RADIAL_E_INVALID) << r.message;
        EXPECT_TRUE(r.message.starts_with("run.docker.writableLayerSize: the engine ("))
            << r.message;
        EXPECT_NE(r.message.find(") cannot bound a box's writable layer: its storage driver is "
                                 "overlay2 on '" +
                                 backing + "'"),
                  std::string::npos)
            << r.message;
        // Without the preflight, the engine itself refuses the create, and the error names the
        // key; no box is left.
        ContainerSpec s = spec("layer", "echo must-not-run");
        RunOutcome o = instance.run(s);
        EXPECT_EQ(o.status, RADIAL_E_INVALID) << o.error.message;
        EXPECT_EQ(o.error.key, "writableLayerSize");
        EXPECT_NE(o.error.message.find("storage-opt"), std::string::npos) << o.error.message;
        EXPECT_EQ(o.out, "");
        EXPECT_FALSE(box_exists(s.label));
    } else {
        EXPECT_EQ(r.code, RADIAL_OK) << driver << " on " << backing << ": " << r.message;
    }
}

TEST_F(docker_live, EnvValuesArriveByteForByte) {
    ContainerSpec s = spec("env", R"(printf '%s\0' "$A" "$B" "$C" "$D" "$E" "${F-unset}")");
    s.env = {{"A", "semi;colon;and:colon", false},
             {"B", "line1\nline2\n", true},
             {"C", "it's \"quoted\" `tick` \\back", false},
             {"D", "$HOME ${X} $(id)", true},
             {"E", "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x9A\x80", false},
             {"F", "", false}};
    RunOutcome o = docker().run(s);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    std::string expected;
    for (const auto& e : s.env) expected += e.value + '\0';
    EXPECT_EQ(o.out, expected);
}

TEST_F(docker_live, LargeOutputArrivesCompleteWithBoundedMemory) {
    ContainerSpec s =
        spec("large", "head -c 33554432 /dev/zero >&2 & head -c 33554432 /dev/zero; wait");
    std::size_t bytes[3] = {0, 0, 0};
    bool all_zero = true;
    std::size_t calls = 0;
    DockerInstance& d = docker();
    const long baseline_kib = reset_peak_rss_kib();
    RunOutcome o = d.run(
        s,
        [&](std::uint32_t stream, std::string_view data) {
            bytes[stream] += data.size();
            all_zero = all_zero && data.find_first_not_of('\0') == std::string_view::npos;
            if (++calls % 64 == 0) std::this_thread::sleep_for(1ms); // a slow consumer
            return 0;
        },
        false);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.exit_code, 0);
    EXPECT_EQ(bytes[RADIAL_STREAM_STDOUT], 32u << 20);
    EXPECT_EQ(bytes[RADIAL_STREAM_STDERR], 32u << 20);
    EXPECT_TRUE(all_zero);
    EXPECT_LE(o.max_chunk, 64u << 10);
    EXPECT_LT(status_kib("VmHWM:") - baseline_kib, 24 * 1024) << "the plugin buffered the stream";
}

struct LateSink {
    std::atomic<bool> returned{false};
    std::atomic<int> late{0};
    std::atomic<int> calls{0};
};

TEST_F(docker_live, NoCallbackAfterRunReturns) {
    static LateSink late; // outlives the run, so a late call is counted, not undefined
    radial_output_sink sink{sizeof(radial_output_sink), &late,
                            [](void* ctx, std::uint32_t, const std::uint8_t*, std::size_t) {
                                auto* l = static_cast<LateSink*>(ctx);
                                ++l->calls;
                                if (l->returned) ++l->late;
                                return 0;
                            }};
    ContainerSpec s = spec("late", "while :; do echo flood; done");
    // Long enough for the box to start and flood the sink before it ends at its timeout: on a
    // loaded machine a start alone takes seconds, and a timeout that passes during the start
    // ends the run before any output (as C06TheTimeoutIsEnforcedWhileTheOutputCallbackBlocks).
    s.timeout_ms = 8000;
    radial::CSpec cspec(s);
    radial_run_result result{};
    result.struct_size = sizeof result;
    Reported r;
    radial_error_sink err = error_sink(r);
    std::int32_t status = docker().d().run(docker().rt(), cspec.get(), &sink, &result, &err);
    late.returned = true;
    std::this_thread::sleep_for(1s);
    EXPECT_EQ(status, RADIAL_OK) << r.message;
    EXPECT_EQ(result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_TIMED_OUT);
    EXPECT_GT(late.calls.load(), 0);
    EXPECT_EQ(late.late.load(), 0);
}

TEST_F(docker_live, RootOrNamedUserIsRefusedBeforeAnythingStarts) {
    // "+0" is uid 0 to runc (Go's Atoi), a name is resolved inside the image, and a uid without a
    // gid gets root's group when the image does not list it.
    int i = 0;
    for (const char* user : {"root", "+0", "+0:+0", "0:0", "1000:0", "4242", "nobody"}) {
        ContainerSpec s = spec("root" + std::to_string(i++), "id");
        s.user = user;
        RunOutcome o = docker().run(s);
        EXPECT_EQ(o.status, RADIAL_E_REFUSED) << user;
        EXPECT_EQ(o.error.key, "user") << user;
        EXPECT_NE(o.error.message.find("'" + std::string(user) + "'"), std::string::npos)
            << o.error.message;
        EXPECT_EQ(o.out, "") << user;
        EXPECT_FALSE(box_exists(s.label)) << user;
    }
    ContainerSpec s = spec("numeric-user", "id -u; id -g; id -G");
    s.user = "4242:4343";
    RunOutcome o = docker().run(s);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.out, "4242\n4343\n4343\n") << "no supplementary group from the image";
}

// The engine's own data root, as the real engine names it at the preflight, is never a box's
// mount: it holds every container's files (docs/design.md §7.5).
TEST_F(docker_live, AMountOfTheEnginesDataRootIsRefusedBeforeAnythingStarts) {
    std::string root = shell("docker info --format '{{.DockerRootDir}}'");
    while (!root.empty() && (root.back() == '\n' || root.back() == '\r')) root.pop_back();
    ASSERT_FALSE(root.empty());
    ASSERT_EQ(docker().preflight().code, RADIAL_OK);
    for (const std::string& source : {root, root + "/volumes"}) {
        if (!std::filesystem::exists(source)) continue;
        ContainerSpec s = spec("data-root", "ls /work");
        s.mounts = {{source, "/work", true}};
        RunOutcome o = docker().run(s);
        EXPECT_EQ(o.status, RADIAL_E_REFUSED) << source << ": " << o.error.message;
        // Refused by describe, before the run (a pool turn's host asks it: docs/design.md §7.5), or
        // by the run.
        EXPECT_TRUE(o.error.key.starts_with("mounts")) << o.error.key;
        EXPECT_NE(o.error.message.find("data root '" + root + "'"), std::string::npos)
            << o.error.message;
        EXPECT_EQ(o.out, "");
        EXPECT_FALSE(box_exists(s.label));
    }
}

TEST_F(docker_live, ConcurrentRunsKeepTheirOutputsApart) {
    std::vector<ContainerSpec> specs;
    for (int i = 0; i < 4; ++i)
        specs.push_back(spec("conc" + std::to_string(i),
                             "for i in 1 2 3; do echo $RUN-$i; echo err-$RUN-$i >&2; done"));
    for (auto& s : specs) s.env = {{"RUN", s.label, false}};
    DockerInstance& d = docker(); // made before the threads share it
    std::vector<RunOutcome> outcomes(specs.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < specs.size(); ++i)
        threads.emplace_back([&, i] { outcomes[i] = d.run(specs[i]); });
    for (auto& t : threads) t.join();
    for (std::size_t i = 0; i < specs.size(); ++i) {
        const std::string& l = specs[i].label;
        EXPECT_EQ(outcomes[i].status, RADIAL_OK) << outcomes[i].error.message;
        EXPECT_EQ(outcomes[i].out, l + "-1\n" + l + "-2\n" + l + "-3\n");
        EXPECT_EQ(outcomes[i].err, "err-" + l + "-1\nerr-" + l + "-2\nerr-" + l + "-3\n");
    }
}

TEST_F(docker_live, LeavesNoDescriptorChildOrStdioOutputBehind) {
    DockerInstance& d = docker();
    auto open_fds = [] {
        return std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                             std::filesystem::directory_iterator());
    };
    const auto fds_before = open_fds();
    TempDir dir("radial-live-stdio");
    std::string capture = dir.write("stdio", "");
    int file = ::open(capture.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(file, 0);
    std::fflush(stdout);
    std::fflush(stderr);
    int saved_out = ::dup(1), saved_err = ::dup(2);
    ::dup2(file, 1);
    ::dup2(file, 2);
    ContainerSpec s = spec("hygiene", "echo to-the-sink; echo err-to-the-sink >&2; exit 4");
    RunOutcome ok = d.run(s);
    ContainerSpec missing = spec("hygiene-missing", "true");
    missing.image = "does-not-exist.invalid/x:1";
    RunOutcome failed = d.run(missing);
    ContainerSpec timed = spec("hygiene-timeout", "sleep 40"); // C-06 looks for "sleep 30"
    timed.timeout_ms = 500;
    RunOutcome timed_out = d.run(timed);
    Reported k = d.kill(label("hygiene-unknown"));
    std::fflush(stdout);
    std::fflush(stderr);
    ::dup2(saved_out, 1);
    ::dup2(saved_err, 2);
    ::close(saved_out);
    ::close(saved_err);
    ::close(file);
    EXPECT_EQ(ok.result.exit_code, 4);
    EXPECT_EQ(ok.err, "err-to-the-sink\n");
    EXPECT_EQ(failed.status, RADIAL_E_NOT_FOUND);
    EXPECT_EQ(timed_out.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_TIMED_OUT);
    EXPECT_EQ(k.code, RADIAL_OK);
    EXPECT_EQ(read_file(capture), "") << "the plugin wrote to fd 1 or 2";
    EXPECT_EQ(open_fds(), fds_before) << "a descriptor was left open";
    EXPECT_EQ(children_of_this_process(), 0);
    bool logged_end = false;
    std::string log;
    for (const auto& line : d.log()) {
        logged_end =
            logged_end || line.starts_with("ended box '" + timed.label + "' (timeout reached)");
        log += line + "\n";
    }
    EXPECT_TRUE(logged_end) << "the end of a stopped box is logged; the plugin's log:\n" << log;
}

// True when `path` exists.
bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

TEST_F(docker_live, ATurnsEnvNeverRunsCodeInTheDockerClient) {
    // Debian's /usr/bin/docker is dynamically linked, so LD_PRELOAD in its environment would run
    // the library's constructor as radiald's user, on the host.
    const std::string client = "/usr/bin/docker";
    // Debian's docker.io provides it, and scripts/setup.sh installs docker.io: never skipped.
    ASSERT_TRUE(exists(client)) << "no dynamically linked docker CLI at " << client;
    TempDir dir("radial-live-preload");
    ::chmod(dir.path().c_str(), 0755);
    // The control: the library does mark a docker client it is preloaded into.
    const std::string control = dir / "control";
    shell("LD_PRELOAD='" RADIAL_PRELOAD_MARKER_SO "' RADIAL_TEST_MARKER='" + control + "' " +
          client + " --version >/dev/null 2>&1");
    ASSERT_TRUE(exists(control))
        << "the marker library does not work; the test would prove nothing";

    config_.str("binary", client);
    const std::string marker = dir / "marker";
    const std::string path = "/radial custom/bin:/usr/bin:/bin";
    const std::string home = "/home/it's \"mine\" $X \xE2\x9C\x93 ";
    // Also what docker's env-file reader might trim or interpret: spaces at both ends, '#', '=',
    // quotes and a carriage return inside.
    const std::string goflags = "  -mod=mod #not a comment\r\"x\" 'y' = ";
    ContainerSpec s = spec("preload", R"(printf '%s\0' "$LD_PRELOAD" "$PATH" "$HOME" "$GOFLAGS")");
    s.env = {{"LD_PRELOAD", RADIAL_PRELOAD_MARKER_SO, false},
             {"RADIAL_TEST_MARKER", marker, false},
             {"PATH", path, false},
             {"HOME", home, true},
             {"GOFLAGS", goflags, false}};
    DockerInstance& d = docker();
    RunOutcome o;
    std::atomic<bool> done{false};
    std::thread runner([&] {
        o = d.run(s);
        done = true;
    });
    while (!done) { // values never on a command line, the env-file route included (C-02)
        for (const auto& cmdline : all_cmdlines()) {
            EXPECT_EQ(cmdline.find(home), std::string::npos) << "a value on a command line";
            EXPECT_EQ(cmdline.find(path), std::string::npos) << "a value on a command line";
        }
        std::this_thread::sleep_for(10ms);
    }
    runner.join();
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.exit_code, 0) << o.err;
    EXPECT_FALSE(exists(marker)) << "the turn's LD_PRELOAD ran code in the docker client";
    EXPECT_EQ(o.out, std::string(RADIAL_PRELOAD_MARKER_SO) + '\0' + path + '\0' + home + '\0' +
                         goflags + '\0')
        << "the box sees the values byte for byte";
    for (const auto& line : d.log()) EXPECT_EQ(line.find(home), std::string::npos) << line;
}

TEST_F(docker_live, C06AChattyBoxTimesOutPromptly) {
    // While `docker rm -f` runs, the client's output must keep being drained: a client blocked
    // on a full pipe keeps dockerd from finishing the removal (32 s, the rm budget, before).
    // Long lines on both streams make the pipes fill at once.
    const std::string line(100, 'x');
    int i = 0;
    for (const std::string& command :
         {std::string("yes"), "yes " + line + " & yes " + line + " >&2; wait"}) {
        ContainerSpec s = spec("chatty" + std::to_string(i++), command);
        s.timeout_ms = 2000;
        RunOutcome o = docker().run(s, {}, false);
        ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
        EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
                  RADIAL_RUN_TIMED_OUT)
            << command;
        EXPECT_GE(o.seconds(), 1.9) << command;
        EXPECT_LT(o.seconds(), 10.0) << command << ": the client was left undrained";
        EXPECT_FALSE(box_exists(s.label)) << command;
        EXPECT_EQ(children_of_this_process(), 0) << command;
    }
}

TEST_F(docker_live, C06TheTimeoutIsEnforcedWhileTheOutputCallbackBlocks) {
    config_.str("killGrace", "3s");
    ContainerSpec s = spec("blocked", "yes");
    // Long enough for the box to start and reach the callback before it: on a loaded machine a
    // start alone takes seconds, and a timeout that passes during the start never sees the
    // callback block (the run ends before any output).
    constexpr double timeout_s = 8.0;
    s.timeout_ms = static_cast<std::uint32_t>(timeout_s * 1000);
    std::optional<double> blocked_at, gone_after;
    const auto start = Clock::now();
    auto since_start = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    RunOutcome o = docker().run(
        s,
        [&](std::uint32_t, std::string_view) {
            if (blocked_at) return 0;
            blocked_at = since_start();
            // A host that does not come back until the box is gone (or 45 s, far past the
            // timeout and its grace): the box must be removed meanwhile.
            while (since_start() < 45.0) {
                if (!box_exists(s.label)) {
                    gone_after = since_start();
                    break;
                }
                std::this_thread::sleep_for(200ms);
            }
            return 0;
        },
        false);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_TIMED_OUT);
    ASSERT_TRUE(blocked_at.has_value()) << "no output reached the callback";
    ASSERT_LT(*blocked_at, timeout_s)
        << "the box's first output came after its timeout: nothing blocked while it passed";
    ASSERT_TRUE(gone_after.has_value())
        << "the box outlived its timeout while the callback blocked";
    // The timeout, the grace, and room for a loaded engine's removal.
    EXPECT_LT(*gone_after, timeout_s + 3.0 + 10.0);
    EXPECT_LT(o.seconds(), *gone_after + 10.0) << "the run did not end once its callback returned";
    EXPECT_FALSE(box_exists(s.label));
    EXPECT_EQ(children_of_this_process(), 0);
}

TEST_F(docker_live, C09AContainerThatCannotStartIsAnErrorWithDockersMessage) {
    // Created, then refused by the OCI runtime at start: a directory mounted onto a file.
    TempDir dir("radial-live-start");
    ContainerSpec s = spec("c09-start", "echo never");
    s.mounts = {{dir.path(), "/etc/passwd", false}};
    RunOutcome o = docker().run(s);
    EXPECT_EQ(o.status, RADIAL_E_INTERNAL);
    EXPECT_NE(o.error.message.find("docker created the container but could not start it"),
              std::string::npos)
        << o.error.message;
    EXPECT_NE(o.error.message.find("not a directory"), std::string::npos) << o.error.message;
    EXPECT_EQ(o.error.message.find("exited 125"), std::string::npos) << o.error.message;
    EXPECT_EQ(o.chunks, 0u) << o.err;
    EXPECT_FALSE(box_exists(s.label));
}

TEST_F(docker_live, C09AWorkloadExiting125IsItsExitCode) {
    RunOutcome o = docker().run(spec("c09-125", "echo 'docker: not really' >&2; exit 125"));
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_EXITED);
    EXPECT_EQ(o.result.exit_code, 125);
    EXPECT_EQ(o.err, "docker: not really\n");
}

TEST_F(docker_live, OomKillIsReported) {
    ContainerSpec s = spec("oom", "head -c 100000000 /dev/zero | tail");
    s.memory_bytes = 16u << 20;
    RunOutcome o = docker().run(s);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_EXITED | RADIAL_RUN_OOM_KILLED);
    EXPECT_EQ(o.result.exit_code, 137);
    EXPECT_FALSE(box_exists(s.label));
}

TEST_F(docker_live, AKillBeforeTheRunStartsNothing) {
    ContainerSpec s = spec("early-kill", "echo ran");
    EXPECT_EQ(docker().kill(s.label).code, RADIAL_OK);
    RunOutcome o = docker().run(s);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_KILLED);
    EXPECT_EQ(o.out, "");
    EXPECT_LT(o.seconds(), 2.0);
    EXPECT_FALSE(box_exists(s.label));
}

TEST(docker_plugin_so, ExportsOnlyTheEntrySymbol) {
    std::string symbols =
        shell(std::string("nm -D --defined-only '") + kDockerPluginPath + "' | awk '{print $3}'");
    EXPECT_EQ(symbols, "radial_runtime_plugin_entry\n");
    const radial_runtime_descriptor& d = docker_descriptor();
    EXPECT_EQ(std::string_view(d.id.data, d.id.size), "docker");
    EXPECT_EQ(d.abi_major, RADIAL_RT_ABI_MAJOR);
}

} // namespace
} // namespace radial::test
