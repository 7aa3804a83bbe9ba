// tests/plugins/docker/docker_runtime_test.cpp — DockerRuntime (plugins/docker/docker_runtime.cpp)
// against a scripted Engine API (fake_engine.h): exact ownership (C-04), dispositions, refusals
// before anything starts, the request sequence of a run, its endings and failures, the cached
// preflight and every call's budget.
#include "docker_runtime.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "../../support/fake_engine.h"
#include "../../support/plugin_error.h"
#include "../../support/temp_dir.h"
#include "../support/config_builder.h"
#include "deadline.h"
#include "docker_engine.h"
#include "docker_run.h"
#include "engine_api/stream_frames.h"
#include "support/early_kills.h"

namespace radial::docker {
namespace {

using radial::test::ConfigBuilder;
using radial::test::EngineAnswer;
using radial::test::FakeEngine;
using radial::test::ping_answer;
using Clock = std::chrono::steady_clock;
using engine_api::encode_frame;

const std::string kA(64, 'a'), kB(64, 'b'), kC(64, 'c'), kD(64, 'd'), kE(64, 'e');
const std::string kV = "/v1.41";

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::unique_ptr<DockerRuntime> runtime_for(const std::string& address,
                                           radial::plugin::Host host = radial::plugin::Host(),
                                           std::uint64_t kill_grace_ms = 2000,
                                           std::uint64_t command_timeout_ms = 5000) {
    ConfigBuilder b;
    b.str("host", address)
        .str("pull", "never")
        .integer("killGrace", static_cast<std::int64_t>(kill_grace_ms))
        .integer("commandTimeout", static_cast<std::int64_t>(command_timeout_ms))
        .integer("preflightTimeout", static_cast<std::int64_t>(command_timeout_ms));
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

EngineAnswer version_answer() {
    return {200, R"({"Version":"20.10.24","ApiVersion":"1.41","MinAPIVersion":"1.12"})"};
}

// The engine's list of containers carrying radial.label, as GET /containers/json answers.
std::string listing(const std::vector<std::pair<std::string, std::string>>& boxes) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [id, label] : boxes)
        list.push_back({{"Id", id}, {"Labels", {{"radial.label", label}}}});
    return list.dump();
}

const std::vector<std::pair<std::string, std::string>> kC04 = {{kA, "radial-turn-inst1-7"},
                                                               {kB, "radial-turn-inst1-70"},
                                                               {kC, "radial-turn-inst10-7"},
                                                               {kD, "x-radial-turn-inst1-7"},
                                                               {kE, "radial-turn-inst1"}};

// GET /containers/{id}/json for a container that ran, or never started.
std::string inspect_json(bool started, bool oom = false, int exit_code = 0) {
    nlohmann::json state = {
        {"Status", started ? "exited" : "created"},
        {"OOMKilled", oom},
        {"ExitCode", exit_code},
        {"Error", ""},
        {"StartedAt", started ? "2026-11-29T14:12:21.208309192Z" : "0001-01-01T00:00:00Z"}};
    return nlohmann::json{{"Id", kA}, {"State", state}}.dump();
}

// A scripted run of one box, container kA: what each step of the sequence answers.
struct Script {
    std::vector<std::pair<std::string, std::string>> boxes; // what the list answers
    EngineAnswer image{200, R"({"Config":{"Entrypoint":null}})"};
    EngineAnswer create{201, R"({"Id":")" + kA + R"(","Warnings":[]})"};
    EngineAnswer attach;
    EngineAnswer start{204, ""};
    EngineAnswer wait{200, R"({"StatusCode":0})"};
    EngineAnswer inspect{200, inspect_json(true)};
    EngineAnswer remove{204, ""};
    EngineAnswer info{200, R"({"Runtimes":{"runc":{"path":"runc"}}})"};
    bool version_silent = false;             // the ping never answers
    EngineAnswer ping = ping_answer("1.41"); // what the ping answers
    Script() { attach.hijack = true; }
};

FakeEngine::Route route(Script& s) {
    return [&s](const std::string& method, const std::string& path) -> EngineAnswer {
        if (path == "/_ping") {
            if (s.version_silent) return {0, "", true};
            return s.ping;
        }
        if (path == "/version") return version_answer();
        const std::string c = kV + "/containers/";
        if (method == "GET" && path == kV + "/info") return s.info;
        if (method == "GET" && path.starts_with(kV + "/containers/json"))
            return {200, listing(s.boxes)};
        if (method == "GET" && path.starts_with(kV + "/images/")) return s.image;
        if (method == "POST" && path.starts_with(c + "create")) return s.create;
        if (method == "POST" && path.find("/attach") != std::string::npos) return s.attach;
        if (method == "POST" && path.ends_with("/start")) return s.start;
        if (method == "POST" && path.find("/wait") != std::string::npos) return s.wait;
        if (method == "GET" && path.starts_with(c)) return s.inspect;
        if (method == "DELETE" && path.starts_with(c)) return s.remove;
        return {500, R"({"message":"unexpected request"})"};
    };
}

ContainerSpec spec(const std::string& label) {
    ContainerSpec s;
    s.label = label;
    s.image = "radial/busybox:latest";
    s.argv = {"true"};
    return s;
}

using radial::test::error_of;

TEST(docker_runtime, C04ListByLabelIsAnExactBytePrefix) {
    Script script;
    script.boxes = kC04;
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    EXPECT_EQ(rt->list_by_label("radial-turn-inst1-"),
              (std::vector<std::string>{"radial-turn-inst1-7", "radial-turn-inst1-70"}));
    EXPECT_EQ(rt->list_by_label("radial-turn-inst10-"),
              (std::vector<std::string>{"radial-turn-inst10-7"}));
    EXPECT_TRUE(rt->list_by_label("radial-turn-inst2-").empty());
    for (const auto& r : engine.requests()) {
        EXPECT_EQ(r.find("name"), std::string::npos) << "never a name filter: " << r;
        if (r.starts_with("GET " + kV + "/containers/json")) {
            EXPECT_NE(r.find("all=1"), std::string::npos) << "every state: " << r;
        }
    }
}

TEST(docker_runtime, C04KillRemovesOnlyTheExactLabel) {
    Script script;
    script.boxes = kC04;
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    rt->kill("radial-turn-inst1-7");
    EXPECT_EQ(engine.count("DELETE " + kV + "/containers/" + kA + "?force=1&v=1"), 1);
    EXPECT_EQ(engine.count("DELETE "), 1);
}

TEST(docker_runtime, KillOfAnUnknownLabelSucceedsWithoutRemovingAnything) {
    Script script;
    script.boxes = kC04;
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    EXPECT_NO_THROW(rt->kill("radial-turn-inst1-8"));
    EXPECT_EQ(engine.count("DELETE "), 0);
}

TEST(docker_runtime, KillReportsAnUnreachableEngine) {
    auto rt = runtime_for("unix:///nonexistent/radial-docker.sock");
    auto e = error_of([&] { rt->kill("radial-turn-inst1-7"); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unix:///nonexistent/radial-docker.sock"),
              std::string::npos)
        << e.what();
}

std::unique_ptr<DockerRuntime> runtime_with_oci_runtime(const std::string& address,
                                                        const std::string& oci_runtime);

TEST(docker_runtime, DescribeHonoursEverythingButARootUser) {
    // An engine to ask for its data root, which a mount must not be (docs/design.md §7.5).
    Script script;
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
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
    // An engine that cannot say where its data root is: a mount is refused, failing closed.
    auto unreachable = runtime_for("unix:///nonexistent.sock");
    s.user = "1000:1000";
    for (const auto& d : unreachable->describe(s))
        if (d.field == RADIAL_FIELD_MOUNTS) {
            EXPECT_EQ(d.disposition, RADIAL_DISP_REFUSED);
            EXPECT_NE(d.note.find("data root"), std::string::npos) << d.note;
        }
}

// Under runsc the OCI runtime's profile decides memory and pidsLimit (docs/design.md §13.9): the
// memory bound holds for the whole sandbox but OOMKilled is not always reported (BRIDGED), the
// pids cap counts the sandbox's host threads, not the box's processes (SUPERSEDED). Every other
// field stays as under runc.
TEST(docker_runtime, UnderRunscMemoryIsBridgedAndPidsLimitSupersededNamingTheKey) {
    ContainerSpec s = spec("b");
    s.pids_limit = 32;
    s.memory_bytes = 32 << 20;
    s.user = "1000:1000";
    s.read_only_rootfs = Tristate::yes;
    s.tmpfs = {{"/t", 0}};
    auto runsc = runtime_with_oci_runtime("unix:///nonexistent.sock", "runsc");
    auto runc = runtime_for("unix:///nonexistent.sock");
    int seen = 0;
    for (const auto& d : runsc->describe(s)) {
        if (d.field == RADIAL_FIELD_MEMORY) {
            ++seen;
            EXPECT_EQ(d.disposition, RADIAL_DISP_BRIDGED);
            EXPECT_NE(d.note.find("run.docker.ociRuntime 'runsc'"), std::string::npos) << d.note;
            EXPECT_NE(d.note.find("does not always report OOMKilled"), std::string::npos) << d.note;
        } else if (d.field == RADIAL_FIELD_PIDS_LIMIT) {
            ++seen;
            EXPECT_EQ(d.disposition, RADIAL_DISP_SUPERSEDED);
            EXPECT_NE(d.note.find("run.docker.ociRuntime 'runsc'"), std::string::npos) << d.note;
            EXPECT_NE(d.note.find("at least 128"), std::string::npos) << d.note;
        } else {
            EXPECT_EQ(d.disposition, RADIAL_DISP_HONOURED) << field_name(d.field);
        }
    }
    EXPECT_EQ(seen, 2);
    for (const auto& d : runc->describe(s))
        EXPECT_EQ(d.disposition, RADIAL_DISP_HONOURED) << field_name(d.field);
    // A runtime the table does not know is taken as the engine's own kind (runc).
    for (const auto& d : runtime_with_oci_runtime("unix:///nonexistent.sock", "kata")->describe(s))
        EXPECT_EQ(d.disposition, RADIAL_DISP_HONOURED) << field_name(d.field);
}

TEST(docker_runtime, CapabilitiesAreTheDockerOnes) {
    EXPECT_EQ(runtime_for("unix:///nonexistent.sock")->capabilities(),
              (std::vector<std::string>{RADIAL_CAP_UNIX_SOCKET_MOUNTS, RADIAL_CAP_NAMED_NETWORKS,
                                        RADIAL_CAP_HOST_UID_MOUNTS, RADIAL_CAP_MOUNT_PROPAGATION}));
}

// Mount propagation is claimed under runc only (docs/design.md §13.13): gVisor's gofer serves a
// mount tree fixed at start, and a spec that needs it there is refused naming the mount.
TEST(docker_runtime, MountPropagationIsNotClaimedUnderRunscAndItsSpecIsRefused) {
    const auto caps = runtime_with_oci_runtime("unix:///nonexistent.sock", "runsc")->capabilities();
    EXPECT_EQ(std::find(caps.begin(), caps.end(), RADIAL_CAP_MOUNT_PROPAGATION), caps.end());
    ContainerSpec s;
    s.label = "radial-turn-x-1";
    s.image = "img";
    s.argv = {"true"};
    s.mounts = {{"/srv/pool/1", "/radial-late", false, true}};
    DockerSettings runc, runsc;
    runsc.oci_runtime = "runsc";
    const auto body = docker_create_body(s, runc);
    EXPECT_EQ(body["HostConfig"]["Binds"][0], "/srv/pool/1:/radial-late:rslave");
    s.mounts[0].read_only = true;
    EXPECT_EQ(docker_create_body(s, runc)["HostConfig"]["Binds"][0],
              "/srv/pool/1:/radial-late:ro,rslave");
    try {
        docker_create_body(s, runsc);
        FAIL() << "runsc took a mount that must receive the host's later mounts";
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.key(), "mounts[0]");
        EXPECT_NE(std::string(e.what()).find("does not pass on"), std::string::npos) << e.what();
    } // A propagation target that named no mount arrives without a source (from_c): refused.
    s.mounts = {{"", "/nowhere", false, true}};
    try {
        docker_create_body(s, runc);
        FAIL() << "a receiving mount without a source was taken";
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.key(), "mounts[0]");
    }
}

std::unique_ptr<DockerRuntime> runtime_with_oci_runtime(const std::string& address,
                                                        const std::string& oci_runtime) {
    ConfigBuilder b;
    b.str("host", address).str("pull", "never").str("ociRuntime", oci_runtime);
    radial::plugin::Config config(b.get());
    return std::make_unique<DockerRuntime>(radial::plugin::Host(), config);
}

int infos_asked(FakeEngine& engine) {
    int n = 0;
    for (const auto& r : engine.requests()) n += r.find("/info") != std::string::npos;
    return n;
}

// An engine whose data root is not /var/lib/docker (daemon.json's data-root, a rootless engine):
// the preflight learns it, and a run or a session mounting it starts nothing (docs/design.md §7.5).
TEST(docker_runtime, AMountOfTheEnginesDataRootLearntAtThePreflightIsRefused) {
    radial::test::TempDir root("radial-data-root");
    Script script;
    script.info = {200, nlohmann::json{{"DockerRootDir", root.path()}}.dump()};
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    ContainerSpec s = spec("radial-turn-i-1");
    s.mounts = {{root.path(), "/work", false}};
    rt->preflight();
    Collected c;
    auto e = error_of([&] { run_collecting(*rt, s, c); });
    EXPECT_EQ(e.code(), RADIAL_E_REFUSED);
    EXPECT_EQ(e.key(), "mounts[0]");
    EXPECT_NE(std::string(e.what()).find("data root '" + root.path() + "'"), std::string::npos)
        << e.what();
    ConfigBuilder b;
    b.str("host", engine.address()).str("pull", "never").str("boxInit", "/bin/true");
    radial::plugin::Config config(b.get());
    DockerRuntime with_init(radial::plugin::Host(), config);
    with_init.preflight();
    e = error_of([&] { with_init.create_session(s, 60'000, 60'000); });
    EXPECT_EQ(e.code(), RADIAL_E_REFUSED) << e.what();
    EXPECT_NE(std::string(e.what()).find("data root '" + root.path() + "'"), std::string::npos)
        << e.what();
    EXPECT_EQ(engine.count("POST " + kV + "/containers/create"), 0);
    // An instance created again without a preflight (its plugin host process crashed) asks.
    auto fresh = runtime_for(engine.address());
    e = error_of([&] { run_collecting(*fresh, s, c); });
    EXPECT_EQ(e.code(), RADIAL_E_REFUSED) << e.what();
    EXPECT_EQ(engine.count("POST " + kV + "/containers/create"), 0);
    // Said before any run too: a warm pool's turn mounts its workspace from the host, past the
    // run, and the host asks describe first (docs/design.md §7.5).
    const auto mounts_disposition = [&](const ContainerSpec& asked) {
        for (const auto& d : rt->describe(asked))
            if (d.field == RADIAL_FIELD_MOUNTS) return d;
        return radial::Disposition{RADIAL_FIELD_MOUNTS, 0, "not reported"};
    };
    auto d = mounts_disposition(s);
    EXPECT_EQ(d.disposition, std::uint32_t{RADIAL_DISP_REFUSED});
    EXPECT_NE(d.note.find("data root '" + root.path() + "'"), std::string::npos) << d.note;
    // Another directory of the same host passes.
    radial::test::TempDir work("radial-work");
    s.mounts = {{work.path(), "/work", false}};
    EXPECT_EQ(mounts_disposition(s).disposition, std::uint32_t{RADIAL_DISP_HONOURED});
    run_collecting(*rt, s, c);
    EXPECT_EQ(engine.count("POST " + kV + "/containers/create"), 1);
}

TEST(docker_runtime, PreflightRefusesAnOciRuntimeTheEngineDoesNotList) {
    Script script;
    script.info = {200, R"({"Runtimes":{"io.containerd.runc.v2":{"path":"runc"},)"
                        R"("runc":{"path":"runc"}}})"};
    FakeEngine engine(route(script));
    auto e = error_of([&] { runtime_with_oci_runtime(engine.address(), "runsc")->preflight(); });
    EXPECT_EQ(e.code(), RADIAL_E_INVALID);
    EXPECT_EQ(e.key(), "ociRuntime");
    EXPECT_NE(std::string(e.what()).find("run.docker.ociRuntime = \"runsc\": the engine ("),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(
                  "has no runtime of that name (it lists: io.containerd.runc.v2, runc)"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("scripts/setup.sh --with-gvisor"), std::string::npos);
}

TEST(docker_runtime, PreflightRefusesRunscRegisteredUnderAnotherName) {
    Script script;
    script.info = {200,
                   R"({"Runtimes":{"runc":{"path":"runc"},"gvisor":{"path":"/usr/bin/runsc"}}})"};
    FakeEngine engine(route(script));
    auto e = error_of([&] { runtime_with_oci_runtime(engine.address(), "gvisor")->preflight(); });
    EXPECT_EQ(e.code(), RADIAL_E_INVALID);
    EXPECT_EQ(e.key(), "ociRuntime");
    EXPECT_NE(std::string(e.what()).find("runs it as '/usr/bin/runsc', which is runsc"),
              std::string::npos)
        << e.what();
}

// gVisor refuses a box's connect to a host unix socket unless runsc runs with --host-uds=open:
// the turn socket would be unreachable and every turn would end without its records.
TEST(docker_runtime, PreflightRefusesRunscThatCannotReachHostUnixSockets) {
    for (const char* args : {"", R"(,"runtimeArgs":["--network=none","--platform=ptrace"])",
                             R"(,"runtimeArgs":["--host-uds=none"])"}) {
        Script script;
        script.info = {
            200, std::string(R"({"Runtimes":{"runsc":{"path":"/usr/bin/runsc")") + args + "}}}"};
        FakeEngine engine(route(script));
        auto e =
            error_of([&] { runtime_with_oci_runtime(engine.address(), "runsc")->preflight(); });
        EXPECT_EQ(e.code(), RADIAL_E_INVALID) << args;
        EXPECT_EQ(e.key(), "ociRuntime");
        EXPECT_NE(std::string(e.what()).find("starts runsc without --host-uds=open"),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("scripts/setup.sh --with-gvisor"), std::string::npos);
    }
}

TEST(docker_runtime, PreflightPassesAListedOciRuntimeAndAsksOnlyTheDataRootWithoutOne) {
    Script script;
    script.info = {200, R"({"Runtimes":{"runc":{"path":"runc"},"runsc":{"path":"/usr/bin/runsc",)"
                        R"("runtimeArgs":["--platform=ptrace","-host-uds=open"]}}})"};
    FakeEngine engine(route(script));
    EXPECT_NO_THROW(runtime_with_oci_runtime(engine.address(), "runsc")->preflight());
    EXPECT_EQ(infos_asked(engine), 2) << "the runtimes', then the data root's";
    Script plain_script;
    FakeEngine plain(route(plain_script));
    EXPECT_NO_THROW(runtime_for(plain.address())->preflight());
    EXPECT_EQ(infos_asked(plain), 1) << "the data root's, once";
}

// docs/design.md §13.1: a writable-layer bound the engine's storage driver cannot give is refused
// at the preflight, naming the key; without the key the preflight asks /info only for the data
// root.
TEST(docker_runtime, PreflightRefusesAWritableLayerBoundTheStorageDriverCannotGive) {
    Script script;
    script.info = {200, R"({"Driver":"overlay2","DriverStatus":[["Backing Filesystem","extfs"],)"
                        R"(["Supports d_type","true"]]})"};
    FakeEngine engine(route(script));
    auto with_size = [&] {
        ConfigBuilder b;
        b.str("host", engine.address()).str("pull", "never").str("writableLayerSize", "10g");
        radial::plugin::Config config(b.get());
        return std::make_unique<DockerRuntime>(radial::plugin::Host(), config);
    };
    auto e = error_of([&] { with_size()->preflight(); });
    EXPECT_EQ(e.code(), RADIAL_E_INVALID);
    EXPECT_EQ(e.key(), "writableLayerSize");
    EXPECT_NE(std::string(e.what()).find("run.docker.writableLayerSize: the engine ("),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("its storage driver is overlay2 on 'extfs'"),
              std::string::npos)
        << e.what();
    script.info = {200, R"({"Driver":"overlay2","DriverStatus":[["Backing Filesystem","xfs"]]})"};
    EXPECT_NO_THROW(with_size()->preflight());
    Script plain_script;
    FakeEngine plain(route(plain_script));
    EXPECT_NO_THROW(runtime_for(plain.address())->preflight());
    EXPECT_EQ(infos_asked(plain), 1) << "the data root's, once";
}

// Where the preflight could not rule the bound out (xfs without pquota), the engine's refusal of
// the create names the key.
TEST(docker_runtime, TheEnginesRefusalOfTheLayerBoundNamesTheKey) {
    Script script;
    script.create = {500, R"({"message":"--storage-opt is supported only for overlay over xfs )"
                          R"(with 'pquota' mount option"})"};
    FakeEngine engine(route(script));
    ConfigBuilder b;
    b.str("host", engine.address()).str("pull", "never").str("writableLayerSize", "1g");
    radial::plugin::Config config(b.get());
    DockerRuntime rt(radial::plugin::Host(), config);
    Collected c;
    auto e = error_of([&] { run_collecting(rt, spec("b"), c); });
    EXPECT_EQ(e.code(), RADIAL_E_INVALID);
    EXPECT_EQ(e.key(), "writableLayerSize");
    EXPECT_NE(std::string(e.what()).find("--storage-opt is supported only for overlay over xfs"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("as run.docker.writableLayerSize asks"), std::string::npos)
        << e.what();
    auto body = nlohmann::json::parse(engine.body_of("POST " + kV + "/containers/create"));
    EXPECT_EQ(body["HostConfig"]["StorageOpt"]["size"], "1073741824");
}

TEST(docker_runtime, PreflightWithAnOciRuntimeFailsClosedWhenTheEngineDoesNotSay) {
    Script script;
    script.info = {500, R"({"message":"engine trouble"})"};
    FakeEngine engine(route(script));
    auto e = error_of([&] { runtime_with_oci_runtime(engine.address(), "runsc")->preflight(); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("no runtime list in its answer"), std::string::npos)
        << e.what();
    script.info = {200, R"({"ServerVersion":"20.10.24"})"};
    e = error_of([&] { runtime_with_oci_runtime(engine.address(), "runsc")->preflight(); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("no runtime list in its answer"), std::string::npos)
        << e.what();
}

TEST(docker_runtime, AnInvalidSpecOrAMissingMountSourceContactsNoEngine) {
    Script script;
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    ContainerSpec s = spec("b");
    s.env = {{"A", "1", false}, {"A", "2", false}};
    radial::plugin::Output out(nullptr);
    auto e = error_of([&] { rt->run(s, out); });
    EXPECT_EQ(e.code(), RADIAL_E_INVALID);
    EXPECT_EQ(e.key(), "env[1]");
    s = spec("b");
    s.mounts = {{"/nonexistent/radial-src", "/work", false}};
    e = error_of([&] { rt->run(s, out); });
    EXPECT_EQ(e.code(), RADIAL_E_NOT_FOUND);
    EXPECT_EQ(e.key(), "mounts[0]");
    EXPECT_TRUE(engine.requests().empty());
}

// Without radial-init a secret variable could only go in the create body, which the engine keeps
// on disk: describe refuses env, and run refuses before asking the engine anything that makes a
// box (docs/design.md §6.3). A plain variable is still carried.
TEST(docker_runtime, WithoutTheBoxInitASecretIsRefusedNotPutInTheCreateBody) {
    Script script;
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    ContainerSpec s = spec("radial-turn-i-1");
    s.env = {{"LANG", "C", false}, {"GH_TOKEN", "ghp_FAKEsecret", true}};
    int seen = 0;
    for (const auto& d : rt->describe(s))
        if (d.field == RADIAL_FIELD_ENV) {
            ++seen;
            EXPECT_EQ(d.disposition, RADIAL_DISP_REFUSED);
            EXPECT_NE(d.note.find("run.docker.boxInit"), std::string::npos) << d.note;
        }
    EXPECT_EQ(seen, 1);
    Collected c;
    auto e = error_of([&] { run_collecting(*rt, s, c); });
    EXPECT_EQ(e.code(), RADIAL_E_REFUSED);
    EXPECT_EQ(e.key(), "env[1]");
    EXPECT_NE(std::string(e.what()).find("run.docker.boxInit"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("ghp_FAKEsecret"), std::string::npos) << e.what();
    EXPECT_EQ(engine.count("POST " + kV + "/containers/create"), 0);
    for (const auto& req : engine.requests())
        EXPECT_EQ(req.find("ghp_FAKEsecret"), std::string::npos) << req;
    // Plain variables only: described honoured and carried in the body.
    s.env = {{"LANG", "C", false}};
    for (const auto& d : rt->describe(s)) {
        if (d.field == RADIAL_FIELD_ENV) {
            EXPECT_EQ(d.disposition, RADIAL_DISP_HONOURED);
        }
    }
    run_collecting(*rt, s, c);
    EXPECT_EQ(engine.count("POST " + kV + "/containers/create"), 1);
}

// create → attach → start → wait → inspect → remove, in that order; both streams demultiplexed,
// each in its order, the frames' bytes exact.
TEST(docker_runtime, ARunIsCreateAttachStartWaitInspectRemoveWithBothStreamsExact) {
    Script script;
    script.attach.frames = encode_frame(1, "out1 ") + encode_frame(2, "err1\n") +
                           encode_frame(1, std::string("bin\0\xff", 5)) + encode_frame(2, "err2");
    script.wait = {200, R"({"StatusCode":125})"};
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    Collected c;
    ContainerSpec s = spec("radial-turn-i-1");
    s.env = {{"GH_TOKEN", "ghp_FAKEplain", false}};
    radial::plugin::RunResult r = run_collecting(*rt, s, c);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_EXITED);
    EXPECT_TRUE(r.flags & RADIAL_RUN_PHASE_TIMES); // create and removal, timed apart
    EXPECT_EQ(r.exit_code, 125) << "the workload's own 125, not a docker failure";
    EXPECT_EQ(c.out, std::string("out1 bin\0\xff", 10));
    EXPECT_EQ(c.err, "err1\nerr2");
    std::vector<std::string> steps;
    for (const auto& req : engine.requests()) steps.push_back(req.substr(0, req.find('?')));
    const std::string id = kV + "/containers/" + kA;
    EXPECT_EQ(steps, (std::vector<std::string>{
                         "GET /_ping", "GET " + kV + "/images/radial%2Fbusybox%3Alatest/json",
                         "POST " + kV + "/containers/create", "POST " + id + "/attach",
                         "POST " + id + "/start", "POST " + id + "/wait", "GET " + id + "/json",
                         "DELETE " + id}));
    EXPECT_NE(engine.requests()[2].find("name=radial-turn-i-1"), std::string::npos);
}

// An OOM kill is reported under 137 (the workload itself) and under any other non-zero exit (a
// build whose compiler the memory bound killed, exiting 1), the state read before the removal.
TEST(docker_runtime, OomKillIsReportedAndTheContainerRemovedAfterItsStateIsRead) {
    for (int code : {137, 1}) {
        Script script;
        script.wait = {200, R"({"StatusCode":)" + std::to_string(code) + "}"};
        script.inspect = {200, inspect_json(true, true, code)};
        FakeEngine engine(route(script));
        auto rt = runtime_for(engine.address());
        Collected c;
        radial::plugin::RunResult r = run_collecting(*rt, spec("b"), c);
        EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
                  RADIAL_RUN_EXITED | RADIAL_RUN_OOM_KILLED)
            << code;
        EXPECT_EQ(r.exit_code, code);
        EXPECT_EQ(engine.count("GET " + kV + "/containers/" + kA + "/json"), 1) << code;
        EXPECT_EQ(engine.count("DELETE "), 1) << code;
    }
}

// Exit 0 is the workload's own end: nothing a state could add (a memory kill or a forced removal
// never ends in 0), so the container is removed without an inspection.
TEST(docker_runtime, AnExitOfZeroIsNotInspected) {
    Script script;
    script.inspect = {500, R"({"message":"must not be asked"})"};
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    Collected c;
    radial::plugin::RunResult r = run_collecting(*rt, spec("b"), c);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_EXITED);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(engine.count("GET " + kV + "/containers/" + kA + "/json"), 0);
    EXPECT_EQ(engine.count("DELETE "), 1);
}

TEST(docker_runtime, C09AMissingImageIsNotFoundWithTheEnginesMessage) {
    Script script;
    script.image = {404, R"({"message":"no such image: nope:1"})"};
    script.create = {404, R"({"message":"No such image: nope:1"})"};
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    ContainerSpec s = spec("b");
    s.image = "nope:1";
    radial::plugin::Output out(nullptr);
    auto e = error_of([&] { rt->run(s, out); });
    EXPECT_EQ(e.code(), RADIAL_E_NOT_FOUND);
    EXPECT_NE(
        std::string(e.what()).find("the engine's create failed, before the container existed: "),
        std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("No such image: nope:1"), std::string::npos) << e.what();
    EXPECT_EQ(engine.count("POST " + kV + "/containers/" + kA), 0) << "nothing was started";
}

TEST(docker_runtime, C09AStartFailureIsAnErrorWithTheEnginesReasonAndTheBoxIsRemoved) {
    Script script;
    script.start = {400, R"({"message":"OCI runtime create failed: not a directory"})"};
    script.attach.close_after = [] {}; // closes once start failed and the box was removed
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    Collected c;
    auto e = error_of([&] { run_collecting(*rt, spec("b"), c); });
    EXPECT_EQ(e.code(), RADIAL_E_INTERNAL);
    EXPECT_NE(std::string(e.what()).find("docker created the container but could not start it: "
                                         "OCI runtime create failed: not a directory"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(c.chunks, 0);
    EXPECT_EQ(engine.count("DELETE " + kV + "/containers/" + kA), 1);
}

// A runtime whose start never answers (a wedged engine, runsc stuck in 'Created'), for the
// start-deadline tests: startTimeout 300 ms, killGrace 300 ms.
std::unique_ptr<DockerRuntime> runtime_with_start_timeout(const std::string& address,
                                                          radial::plugin::Host host,
                                                          const std::string& oci_runtime = "") {
    ConfigBuilder b;
    b.str("host", address)
        .str("pull", "never")
        .integer("killGrace", 300)
        .integer("commandTimeout", 5000)
        .integer("startTimeout", 300);
    if (!oci_runtime.empty()) b.str("ociRuntime", oci_runtime);
    radial::plugin::Config config(b.get());
    return std::make_unique<DockerRuntime>(host, config);
}

// docs/design.md §13.1: the start has a deadline of its own; when it passes, the run fails naming
// the box, the OCI runtime and the key, and the box is force-removed.
TEST(docker_runtime, AStartThatNeverAnswersFailsAtStartTimeoutAndTheBoxIsRemoved) {
    Script script;
    script.start = {0, "", true}; // never answers
    FakeEngine engine(route(script));
    LogCapture log;
    auto rt = runtime_with_start_timeout(engine.address(), log.host(), "runsc");
    Collected c;
    ContainerSpec s = spec("b");
    s.timeout_ms = 600'000; // far away: the start's own deadline is what ends this run
    auto e = error_of([&] { run_collecting(*rt, s, c); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    const std::string what = e.what();
    EXPECT_NE(what.find("starting box 'b' under OCI runtime 'runsc' (run.docker.ociRuntime): the "
                        "engine did not start its container within 300 ms "
                        "(run.docker.startTimeout)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("; the box was force-removed; check dockerd's log and that runtime"),
              std::string::npos)
        << what;
    EXPECT_EQ(engine.count("DELETE " + kV + "/containers/" + kA), 1);
    EXPECT_EQ(engine.count("POST " + kV + "/containers/" + kA + "/wait"), 0);
    EXPECT_EQ(c.chunks, 0);
}

// The removal after a start that never answered has a deadline too: an engine that answers
// neither is said so, and the box left to reconciliation by its label, instead of hanging.
TEST(docker_runtime, ARemovalThatAlsoNeverAnswersIsLeftToReconciliationByLabel) {
    Script script;
    script.start = {0, "", true};
    script.remove = {0, "", true};
    FakeEngine engine(route(script));
    LogCapture log;
    auto rt = runtime_with_start_timeout(engine.address(), log.host());
    Collected c;
    auto e = error_of([&] { run_collecting(*rt, spec("b"), c); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    const std::string what = e.what();
    EXPECT_NE(what.find("starting box 'b' under the engine's default OCI runtime: the engine did "
                        "not start its container within 300 ms"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("its forced removal did not complete within 1000 ms either, so it is left "
                        "to reconciliation by its label 'b' (radiald reconcile)"),
              std::string::npos)
        << what;
    EXPECT_GE(engine.count("DELETE " + kV + "/containers/" + kA), 1);
}

// A turn whose timeout comes before startTimeout: the start's budget is cut to it, and the run
// ends TIMED_OUT (the turn's ending), not as a start failure.
TEST(docker_runtime, ATurnTimeoutDuringAHungStartEndsTheRunTimedOut) {
    Script script;
    script.start = {0, "", true};
    FakeEngine engine(route(script));
    LogCapture log;
    ConfigBuilder b;
    b.str("host", engine.address())
        .str("pull", "never")
        .integer("killGrace", 300)
        .integer("commandTimeout", 5000); // startTimeout: the default 60 s
    radial::plugin::Config config(b.get());
    DockerRuntime rt(log.host(), config);
    ContainerSpec s = spec("b");
    s.timeout_ms = 300;
    Collected c;
    radial::plugin::RunResult r = run_collecting(rt, s, c);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_TIMED_OUT);
    EXPECT_GE(engine.count("DELETE " + kV + "/containers/" + kA), 1);
    // The end is logged as for a timeout after the start (what the live hygiene test looks for
    // when a loaded machine makes the start outlast a short timeout).
    EXPECT_NE(log.text().find("ended box 'b' (timeout reached): its container was force-removed"),
              std::string::npos)
        << log.text();
}

TEST(docker_runtime, C16ABoxRemovedFromOutsideIsAnErrorNotTheCommandsExit) {
    Script script;
    script.wait = {404, R"({"message":"No such container"})"};
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    Collected c;
    auto e = error_of([&] { run_collecting(*rt, spec("b"), c); });
    EXPECT_EQ(e.code(), RADIAL_E_INTERNAL);
    EXPECT_NE(std::string(e.what()).find("was removed while it ran by something other than this "
                                         "radiald"),
              std::string::npos)
        << e.what();
}

// The attach stream stalls (the engine sends nothing and never closes it) and the engine accepts
// the removal without ending the stream: the turn still ends at its timeout, the stream closed
// from this side after killGrace, instead of hanging with it.
TEST(docker_runtime, AStalledAttachStreamCannotOutliveTheTimeout) {
    Script script;
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    script.attach.close_after = [released] { released.wait(); };
    FakeEngine engine(route(script));
    LogCapture log;
    auto rt = runtime_for(engine.address(), log.host(), 300);
    ContainerSpec s = spec("b");
    s.timeout_ms = 200;
    Collected c;
    radial::plugin::RunResult r = run_collecting(*rt, s, c);
    release.set_value();
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_TIMED_OUT);
    EXPECT_GE(engine.count("DELETE " + kV + "/containers/" + kA), 1);
    EXPECT_NE(log.text().find("its attach stream was still open"), std::string::npos) << log.text();
}

// A kill from another thread while the box runs: the box is removed, the run returns KILLED.
TEST(docker_runtime, AKillWhileTheBoxRunsRemovesItAndTheRunIsKilled) {
    Script script;
    std::promise<void> removed;
    std::shared_future<void> gone = removed.get_future().share();
    std::once_flag once;
    std::atomic<bool> deleted{false};
    script.attach.frames = encode_frame(1, "started\n");
    script.attach.close_after = [gone] { gone.wait(); };
    FakeEngine engine([&](const std::string& method, const std::string& path) {
        if (method == "DELETE") {
            deleted = true;
            std::call_once(once, [&] { removed.set_value(); });
        }
        if (method == "GET" && path.starts_with(kV + "/containers/json"))
            return EngineAnswer{200, deleted ? "[]" : listing({{kA, "b"}})};
        // As the engine answers once the forced removal killed the box: 137, then no container.
        // (A wait answering 0 would be a box that ended by itself, whatever the kill did.)
        if (deleted && method == "POST" && path.find("/wait") != std::string::npos)
            return EngineAnswer{200, R"({"StatusCode":137})"};
        if (deleted && method == "GET" && path.starts_with(kV + "/containers/" + kA))
            return EngineAnswer{404, R"({"message":"No such container"})"};
        return route(script)(method, path);
    });
    auto rt = runtime_for(engine.address());
    Collected c;
    std::promise<void> started;
    c.hook = [&](std::uint32_t) { started.set_value(); };
    radial::plugin::RunResult r;
    std::thread runner([&] { r = run_collecting(*rt, spec("b"), c); });
    started.get_future().wait();
    rt->kill("b");
    runner.join();
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_KILLED);
    EXPECT_EQ(c.out, "started\n");
}

TEST(docker_runtime, APreflightThatPassedIsNotRepeatedUntilACallFindsNoEngine) {
    Script script;
    std::atomic<bool> lists_fail{false};
    FakeEngine engine([&](const std::string& method, const std::string& path) {
        if (lists_fail && path.starts_with(kV + "/containers/json"))
            return EngineAnswer{0, "", true};
        return route(script)(method, path);
    });
    auto rt = runtime_for(engine.address(), radial::plugin::Host(), 2000, 300);
    rt->preflight();
    rt->preflight();
    EXPECT_EQ(engine.count("GET /_ping"), 1) << "a passed probe is kept";
    lists_fail = true;
    auto e = error_of([&] { rt->list_by_label("radial-turn-"); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("within the call's budget"), std::string::npos)
        << e.what();
    rt->preflight();
    EXPECT_EQ(engine.count("GET /_ping"), 2) << "an engine that failed a call is probed again";
}

TEST(docker_runtime, C07ASilentEngineFailsThePreflightWithinItsBudgetAndIsNeverCached) {
    Script script;
    script.version_silent = true;
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address(), radial::plugin::Host(), 2000, 300);
    for (int i = 0; i < 2; ++i) {
        auto e = error_of([&] { rt->preflight(); });
        EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
        EXPECT_NE(std::string(e.what()).find("docker engine unreachable via 'docker'"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(engine.count("GET /_ping"), 2);
}

// An engine whose ping names no version (every path answers the same JSON here) is asked
// GET /version, and refused there when it is too old.
TEST(docker_runtime, AnEngineTooOldIsRefusedNamingBothVersions) {
    FakeEngine engine([](const std::string&, const std::string&) {
        return EngineAnswer{200, R"({"Version":"19.03.1","ApiVersion":"1.40"})"};
    });
    auto rt = runtime_for(engine.address());
    auto e = error_of([&] { rt->preflight(); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("speaks Engine API 1.40; radiald needs at least 1.41"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(engine.count("GET /version"), 1) << "the fallback when the ping names no version";
}

// The version is negotiated from the ping's API-Version header, as the docker CLI does, so the
// engine is never asked GET /version (which queries containerd and the OCI runtime first); the
// version in its Server header names the engine when it is too old.
TEST(docker_runtime, TheVersionComesFromThePingWithoutAskingForTheEnginesVersion) {
    Script script;
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    rt->preflight();
    EXPECT_EQ(engine.count("GET /_ping"), 1);
    EXPECT_EQ(engine.count("GET /version"), 0);

    script.ping = ping_answer("1.40");
    script.ping.headers = "API-Version: 1.40\r\nServer: Docker/19.03.1 (linux)\r\n";
    FakeEngine old(route(script));
    auto e = error_of([&] { runtime_for(old.address())->preflight(); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find(
                  "(version 19.03.1) speaks Engine API 1.40; radiald needs at least 1.41"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(old.count("GET /version"), 0);
}

TEST(docker_runtime, TheEngineAddressComesFromTheSettingThenDockerHostWithTlsFromTheEnvironment) {
    radial::test::TempDir certs("radial-certs");
    certs.write("ca.pem", "x");
    engine_api::EngineEnvironment env;
    env.home = certs.path(); // no config.json there: no context
    DockerSettings s;
    EXPECT_EQ(docker_engine_address(s, env).address.path, "/var/run/docker.sock");
    EXPECT_EQ(docker_engine_address(s, env).source, "the default socket");
    env.docker_host = "unix:///d.sock";
    EXPECT_EQ(docker_engine_address(s, env).address.path, "/d.sock");
    EXPECT_EQ(docker_engine_address(s, env).source, "$DOCKER_HOST");
    s.host = "tcp://127.0.0.1:2375";
    auto a = docker_engine_address(s, env);
    EXPECT_FALSE(a.address.unix_socket);
    EXPECT_EQ(a.address.port, "2375");
    EXPECT_EQ(a.source, "run.docker.host");
    EXPECT_FALSE(a.address.tls);
    env.docker_tls_verify = "1";
    env.docker_cert_path = certs.path();
    a = docker_engine_address(s, env);
    ASSERT_TRUE(a.address.tls);
    EXPECT_EQ(a.address.tls->ca_file, certs / "ca.pem");
    EXPECT_EQ(a.address.tls->cert_file, "");
    s.host.clear();
    env.docker_host = "ssh://me@host";
    auto e = error_of([&] { docker_engine_address(s, env); });
    EXPECT_EQ(e.code(), RADIAL_E_INVALID);
    EXPECT_EQ(e.key(), "host");
    EXPECT_NE(std::string(e.what()).find("$DOCKER_HOST"), std::string::npos) << e.what();
}

// An image the engine does not have is pulled with the docker CLI (for the operator's credential
// helpers), and its entrypoint is read from the engine afterwards, so the box still runs under
// the box init with the image's own entrypoint after it (docs/design.md §13.1, §13.8).
TEST(docker_runtime, AMissingImageIsPulledWithTheCliThenItsEntrypointIsRead) {
    radial::test::TempDir dir("radial-pull");
    const std::string pulled = dir / "pulled";
    const std::string cli =
        dir.write("docker", "#!/bin/sh\nprintf '%s ' \"$@\" > '" + pulled + "'\n");
    ::chmod(cli.c_str(), 0755);
    Script script;
    FakeEngine engine([&](const std::string& method, const std::string& path) {
        if (method == "GET" && path.starts_with(kV + "/images/"))
            return std::filesystem::exists(pulled)
                       ? EngineAnswer{200, R"({"Config":{"Entrypoint":["/entry","-x"]}})"}
                       : EngineAnswer{404, R"({"message":"No such image"})"};
        return route(script)(method, path);
    });
    ConfigBuilder b;
    b.str("pull", "missing"); // pulls-on-purpose: "docker" is a script, no registry is contacted
    b.str("host", engine.address()).str("binary", cli).str("boxInit", cli);
    radial::plugin::Config config(b.get());
    DockerRuntime rt(radial::plugin::Host(), config);
    radial::plugin::Output out(nullptr);
    radial::plugin::RunResult r = rt.run(spec("b"), out);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_EXITED);
    EXPECT_EQ(read_text(pulled),
              "--host " + engine.address() + " pull --quiet radial/busybox:latest ");
    auto body = nlohmann::json::parse(engine.body_of("POST " + kV + "/containers/create"));
    EXPECT_EQ(body["Cmd"], nlohmann::json::parse(R"(["0", "10000", "--", "/entry", "-x", "true"])"))
        << body.dump();
    EXPECT_EQ(body["Entrypoint"], nlohmann::json::parse(R"(["/.radial/init"])"));
}

TEST(docker_runtime, AKillBeforeTheRunIsRememberedAndTheRunStartsNothing) {
    Script script; // no box with the label exists
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    rt->kill("radial-turn-early");
    radial::plugin::Output out(nullptr);
    radial::plugin::RunResult r = rt->run(spec("radial-turn-early"), out);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_KILLED);
    EXPECT_EQ(engine.count("POST " + kV + "/containers/create"), 0);
    // Taken once: a later run of that label is not killed again.
    r = rt->run(spec("radial-turn-early"), out);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_EXITED);
}

TEST(docker_runtime, AKillThatRemovedAnOrphanDoesNotStopALaterRun) {
    Script script;
    script.boxes = {{kA, "radial-turn-orphan"}};
    FakeEngine engine(route(script));
    auto rt = runtime_for(engine.address());
    rt->kill("radial-turn-orphan");
    EXPECT_EQ(engine.count("DELETE " + kV + "/containers/" + kA), 1);
    script.boxes.clear();
    radial::plugin::Output out(nullptr);
    radial::plugin::RunResult r = rt->run(spec("radial-turn-orphan"), out);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_EXITED);
}

TEST(docker_runtime, EarlyKillsExpireAndAreBounded) {
    plugin_support::EarlyKills kills(std::chrono::seconds(60), 3);
    const auto t0 = plugin_support::EarlyKills::Clock::now();
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

} // namespace
} // namespace radial::docker
