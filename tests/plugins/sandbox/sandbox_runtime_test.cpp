// tests/plugins/sandbox/sandbox_runtime_test.cpp — SandboxRuntime (plugins/sandbox/
// sandbox_runtime.cpp, sandbox_run.cpp) driven through the injectable executor (docs/design.md
// §5.1): the order of the calls of a turn, removal after every kind of ending, kill and timeout in
// every step, budgets, dispositions, capabilities and reconciliation's view of names.
#include "sandbox_runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "../../support/plugin_error.h"
#include "../../support/temp_dir.h"
#include "sandbox_run.h"
#include "scripted_executor.h"
#include "scripted_sbx.h"

namespace radial::sandbox {
namespace {

using radial::test::answer;
using radial::test::ScriptedExecutor;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using Args = std::vector<std::string>;

struct Fixture {
    std::shared_ptr<ScriptedExecutor> sbx = std::make_shared<ScriptedExecutor>();
    std::unique_ptr<SandboxRuntime> rt;
    explicit Fixture(SandboxSettings s = quick()) {
        rt = std::make_unique<SandboxRuntime>(radial::plugin::Host(), s, sbx);
    }
    static SandboxSettings quick() {
        SandboxSettings s;
        s.binary = "sbx";
        s.probe_timeout_ms = 2000;
        s.command_timeout_ms = 2000;
        s.create_timeout_ms = 2000;
        s.kill_grace_ms = 300;
        s.removal_timeout_ms = 1500;
        return s;
    }
    // The calls after the two help probes.
    std::vector<Args> steps() const {
        std::vector<Args> out;
        for (auto& c : sbx->calls())
            if (ScriptedExecutor::key(c) != "--help" && ScriptedExecutor::key(c) != "ls --help")
                out.push_back(c);
        return out;
    }
};

ContainerSpec spec(const std::string& label, std::vector<std::string> argv = {"true"}) {
    ContainerSpec s;
    s.label = label;
    s.image = "radial/turn:1";
    s.argv = std::move(argv);
    return s;
}

struct Captured {
    std::string out, err;
    int chunks = 0;
    bool abort_on_first = false;
};

radial_output_sink sink_for(Captured& c) {
    return radial_output_sink{sizeof(radial_output_sink), &c,
                              [](void* ctx, std::uint32_t stream, const std::uint8_t* data,
                                 std::size_t size) -> std::int32_t {
                                  auto* cap = static_cast<Captured*>(ctx);
                                  ++cap->chunks;
                                  (stream == RADIAL_STREAM_STDOUT ? cap->out : cap->err)
                                      .append(reinterpret_cast<const char*>(data), size);
                                  return cap->abort_on_first ? 1 : 0;
                              }};
}

using radial::test::error_of;

// The sbx calls in the order of docs/design.md §13.2–§13.3.
TEST(sandbox_runtime, AWholeTurnCallsSbxInTheDesignedOrderAndStreamsTheExec) {
    Fixture f;
    ContainerSpec s =
        spec("radial-turn-local-7",
             {"sh", "-c", "echo out-1; echo err-1 >&2; printf '%s' \"$SECRET\"; exit 4"});
    s.env = {{"SECRET", "sk-live-0123456789", true}};
    s.host_ports = {40123, 40124};
    s.memory_bytes = 4ull << 30;
    Captured c;
    radial_output_sink sink = sink_for(c);
    radial::plugin::Output out(&sink);
    radial::plugin::RunResult r = f.rt->run(s, out);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_EXITED);
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_EQ(c.out, "out-1\nsk-live-0123456789");
    EXPECT_EQ(c.err, "err-1\n");
    EXPECT_EQ(f.steps(), (std::vector<Args>{
                             {"create", "--no-input", "--name", "radial-turn-local-7", "--template",
                              "radial/turn:1", "--memory", "4g", "--cpus", "2", "claude"},
                             {"policy", "allow", "network", "--no-input", "--sandbox",
                              "radial-turn-local-7", "localhost:40123"},
                             {"policy", "allow", "network", "--no-input", "--sandbox",
                              "radial-turn-local-7", "localhost:40124"},
                             {"exec", "--no-input", "-i", "radial-turn-local-7", "sh", "-s"},
                             {"policy", "rm", "network", "--no-input", "--sandbox",
                              "radial-turn-local-7", "--resource", "localhost:40123"},
                             {"policy", "rm", "network", "--no-input", "--sandbox",
                              "radial-turn-local-7", "--resource", "localhost:40124"},
                             {"rm", "--no-input", "--force", "radial-turn-local-7"}}));
    for (const auto& call : f.sbx->calls())
        for (const auto& a : call) EXPECT_EQ(a.find("sk-live"), std::string::npos) << a;
}

// The grant is revoked by the runtime itself; a rule sbx already dropped is not a failure.
TEST(sandbox_runtime, ARuleAlreadyGoneIsFineAndTheSandboxIsStillRemoved) {
    Fixture f;
    f.sbx->on("policy rm", [](auto&) {
        return answer("", 1, "Error: policy rule 'localhost:40200' not found\n");
    });
    ContainerSpec s = spec("radial-turn-a-20", {"sh", "-c", "exit 0"});
    s.host_ports = {40200};
    radial::plugin::Output out(nullptr);
    radial::plugin::RunResult r = f.rt->run(s, out);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_EXITED);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(f.sbx->calls("policy rm").size(), 1u);
    EXPECT_EQ(f.steps().back(), (Args{"rm", "--no-input", "--force", "radial-turn-a-20"}));
}

// Any other failure to revoke is logged, never the turn's failure: the sandbox's removal follows.
TEST(sandbox_runtime, AFailingRevokeDoesNotFailTheTurnAndTheSandboxIsStillRemoved) {
    Fixture f;
    f.sbx->on("policy rm",
              [](auto&) { return answer("", 1, "Error: unknown flag: --resource\n"); });
    ContainerSpec s = spec("radial-turn-a-21", {"sh", "-c", "exit 5"});
    s.host_ports = {40201};
    radial::plugin::Output out(nullptr);
    radial::plugin::RunResult r = f.rt->run(s, out);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_EXITED);
    EXPECT_EQ(r.exit_code, 5);
    EXPECT_EQ(f.steps().back(), (Args{"rm", "--no-input", "--force", "radial-turn-a-21"}));
}

// A run ended early (its sandbox removed to stop it) still revokes what it was granted.
TEST(sandbox_runtime, ATimedOutRunRevokesItsGrantToo) {
    Fixture f;
    ContainerSpec s = spec("radial-turn-a-22", {"sh", "-c", "sleep 30"});
    s.host_ports = {40202};
    s.timeout_ms = 300;
    radial::plugin::Output out(nullptr);
    radial::plugin::RunResult r = f.rt->run(s, out);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_TIMED_OUT);
    EXPECT_EQ(f.sbx->calls("policy rm"),
              (std::vector<Args>{{"policy", "rm", "network", "--no-input", "--sandbox",
                                  "radial-turn-a-22", "--resource", "localhost:40202"}}));
}

TEST(sandbox_runtime, AFailedCreateIsAnErrorAndTheSandboxIsStillRemoved) {
    Fixture f;
    f.sbx->on("create",
              [](auto&) { return answer("", 1, "Error: 500 failed to run sandbox container\n"); });
    radial::plugin::Output out(nullptr);
    auto e = error_of([&] { f.rt->run(spec("radial-turn-a-1"), out); });
    EXPECT_EQ(e.code(), RADIAL_E_INTERNAL);
    EXPECT_EQ(std::string(e.what()),
              "creating sandbox 'radial-turn-a-1' for box 'radial-turn-a-1': Error: 500 failed to "
              "run sandbox container; check the message and 'sbx diagnose'");
    auto steps = f.steps();
    ASSERT_GE(steps.size(), 2u);
    EXPECT_EQ(steps[0][0], "create");
    EXPECT_EQ(steps[1], (Args{"rm", "--no-input", "--force", "radial-turn-a-1"}));
    EXPECT_TRUE(f.sbx->calls("exec").empty());
}

TEST(sandbox_runtime, AMissingTemplateIsNotFoundWithHowToLoadIt) {
    Fixture f;
    f.sbx->on("create",
              [](auto&) { return answer("", 1, "Error: template \"radial/turn:1\" not found\n"); });
    radial::plugin::Output out(nullptr);
    auto e = error_of([&] { f.rt->run(spec("radial-turn-a-1"), out); });
    EXPECT_EQ(e.code(), RADIAL_E_NOT_FOUND);
    EXPECT_NE(std::string(e.what()).find("sbx template load"), std::string::npos) << e.what();
}

TEST(sandbox_runtime, AFailedPolicyRuleRemovesTheSandboxAndNeverExecs) {
    Fixture f;
    f.sbx->on("policy", [](auto&) { return answer("", 1, "Error: unknown flag: --sandbox\n"); });
    ContainerSpec s = spec("radial-turn-a-2");
    s.host_ports = {5000};
    radial::plugin::Output out(nullptr);
    auto e = error_of([&] { f.rt->run(s, out); });
    EXPECT_NE(std::string(e.what()).find("allowing box 'radial-turn-a-2' to reach host port 5000"),
              std::string::npos)
        << e.what();
    EXPECT_TRUE(f.sbx->calls("exec").empty());
    EXPECT_EQ(f.steps().back(), (Args{"rm", "--no-input", "--force", "radial-turn-a-2"}));
}

// The turn's timeout is its command's: a create slower than it is ended by the create budget
// (an error naming it), not counted as the turn timing out; what it may have made is removed and
// looked for twice.
TEST(sandbox_runtime, TheTimeoutDoesNotCountTheCreateWhichHasItsOwnBudget) {
    SandboxSettings settings = Fixture::quick();
    settings.create_timeout_ms = 1500;
    Fixture f(settings);
    f.sbx->hang("create");
    ContainerSpec s = spec("radial-turn-a-3");
    s.timeout_ms = 300;
    radial::plugin::Output out(nullptr);
    auto start = Clock::now();
    auto e = error_of([&] { f.rt->run(s, out); });
    EXPECT_GE(Clock::now() - start, 1500ms) << "the 300 ms timeout did not cut the create short";
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("gave no answer within 1500 ms"), std::string::npos)
        << e.what();
    auto steps = f.steps();
    ASSERT_EQ(steps.size(), 4u);
    EXPECT_EQ(steps[1][0], "rm");
    EXPECT_EQ(steps[2][0], "ls");
    EXPECT_EQ(steps[3][0], "ls");
}

TEST(sandbox_runtime, TheCreateBudgetAppliesToACreateThatNeverAnswers) {
    SandboxSettings s = Fixture::quick();
    s.create_timeout_ms = 300;
    Fixture f(s);
    f.sbx->hang("create");
    radial::plugin::Output out(nullptr);
    auto start = Clock::now();
    auto e = error_of([&] { f.rt->run(spec("radial-turn-a-4"), out); });
    EXPECT_LT(Clock::now() - start, 3s);
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("gave no answer within 300 ms"), std::string::npos)
        << e.what();
    EXPECT_EQ(f.sbx->calls("rm").size(), 1u);
}

TEST(sandbox_runtime, ThePolicyBudgetAppliesToAPolicyCallThatNeverAnswers) {
    SandboxSettings s = Fixture::quick();
    s.command_timeout_ms = 300;
    Fixture f(s);
    f.sbx->hang("policy");
    ContainerSpec sp = spec("radial-turn-a-12");
    sp.host_ports = {40300};
    radial::plugin::Output out(nullptr);
    auto start = Clock::now();
    auto e = error_of([&] { f.rt->run(sp, out); });
    EXPECT_LT(Clock::now() - start, 3s);
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("gave no answer within 300 ms"), std::string::npos)
        << e.what();
    EXPECT_TRUE(f.sbx->calls("exec").empty());
    EXPECT_EQ(f.steps().back(), (Args{"rm", "--no-input", "--force", "radial-turn-a-12"}));
}

TEST(sandbox_runtime, KillFromInsideTheOutputCallbackDoesNotDeadlock) {
    Fixture f;
    struct Ctx {
        SandboxRuntime* rt;
        int chunks = 0;
    } ctx{f.rt.get()};
    radial_output_sink sink{sizeof(radial_output_sink), &ctx,
                            [](void* c, std::uint32_t, const std::uint8_t*, std::size_t) {
                                auto* x = static_cast<Ctx*>(c);
                                if (x->chunks++ == 0) x->rt->kill("radial-turn-a-13");
                                return 0;
                            }};
    radial::plugin::Output out(&sink);
    auto start = Clock::now();
    radial::plugin::RunResult r =
        f.rt->run(spec("radial-turn-a-13", {"sh", "-c", "echo first; exec sleep 30"}), out);
    EXPECT_LT(Clock::now() - start, 3s);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_KILLED);
    EXPECT_EQ(ctx.chunks, 1);
}

TEST(sandbox_runtime, KillDuringCreateInterruptsItAndRemoves) {
    Fixture f;
    f.sbx->hang("create");
    radial::plugin::RunResult r;
    std::thread runner([&] {
        radial::plugin::Output out(nullptr);
        r = f.rt->run(spec("radial-turn-a-5"), out);
    });
    while (f.sbx->calls("create").empty()) std::this_thread::sleep_for(10ms);
    auto start = Clock::now();
    f.rt->kill("radial-turn-a-5"); // waits for the run's teardown
    EXPECT_LT(Clock::now() - start, 3s);
    runner.join();
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_KILLED);
    EXPECT_GE(f.sbx->calls("rm").size(), 2u) << "kill's own rm and the run's";
    EXPECT_TRUE(f.sbx->calls("exec").empty());
}

TEST(sandbox_runtime, TimeoutDuringExecRemovesTheSandboxThenKillsTheClient) {
    Fixture f;
    ContainerSpec s = spec("radial-turn-a-6", {"sleep", "30"});
    s.timeout_ms = 300;
    radial::plugin::Output out(nullptr);
    auto start = Clock::now();
    radial::plugin::RunResult r = f.rt->run(s, out);
    EXPECT_LT(Clock::now() - start, 3s);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_TIMED_OUT);
    EXPECT_EQ(f.sbx->calls("rm").size(), 1u) << "removed while ending, not again";
}

TEST(sandbox_runtime, KillDuringExecFromAnotherThread) {
    Fixture f;
    radial::plugin::RunResult r;
    std::thread runner([&] {
        radial::plugin::Output out(nullptr);
        r = f.rt->run(spec("radial-turn-a-7", {"sleep", "30"}), out);
    });
    while (f.sbx->calls("exec").empty()) std::this_thread::sleep_for(10ms);
    auto start = Clock::now();
    f.rt->kill("radial-turn-a-7");
    EXPECT_LT(Clock::now() - start, 3s);
    runner.join();
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_KILLED);
}

TEST(sandbox_runtime, AnOutputSinkThatAsksToStopEndsTheRun) {
    Fixture f;
    Captured c;
    c.abort_on_first = true;
    radial_output_sink sink = sink_for(c);
    radial::plugin::Output out(&sink);
    radial::plugin::RunResult r =
        f.rt->run(spec("radial-turn-a-8", {"sh", "-c", "echo first; exec sleep 30"}), out);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_KILLED | RADIAL_RUN_OUTPUT_ABORTED);
    EXPECT_EQ(c.chunks, 1);
    EXPECT_EQ(f.sbx->calls("rm").size(), 1u);
}

TEST(sandbox_runtime, ASandboxThatCannotBeRemovedFailsTheRunNamingItsOutcome) {
    Fixture f;
    f.sbx->on("rm", [](auto&) { return answer("", 1, "Error: sandbox is busy\n"); });
    f.sbx->on("ls",
              [](auto&) { return answer("{\"sandboxes\":[{\"name\":\"radial-turn-a-9\"}]}\n"); });
    radial::plugin::Output out(nullptr);
    auto start = Clock::now();
    auto e = error_of([&] { f.rt->run(spec("radial-turn-a-9", {"true"}), out); });
    EXPECT_LT(Clock::now() - start, 5s) << "bounded by the removal budget";
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    std::string what = e.what();
    EXPECT_TRUE(
        what.starts_with("box 'radial-turn-a-9' exited 0, but removing sandbox "
                         "'radial-turn-a-9'"))
        << what;
    EXPECT_NE(what.find("remove it by hand with 'sbx rm --force radial-turn-a-9'"),
              std::string::npos)
        << what;
}

TEST(sandbox_runtime, AKillBeforeTheRunStartsCreatesNothing) {
    Fixture f;
    SbxCli cli(Fixture::quick(), f.sbx, radial::plugin::Host());
    plugin_support::ActiveRun active;
    active.request_kill();
    radial::plugin::Output out(nullptr);
    radial::plugin::RunResult r = run_sandbox(cli, radial::plugin::Host(), spec("b"), out, active);
    EXPECT_EQ(r.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES), RADIAL_RUN_KILLED);
    EXPECT_TRUE(f.sbx->calls().empty());
}

TEST(sandbox_runtime, RefusalsComeBeforeAnySandboxExists) {
    Fixture f;
    radial::plugin::Output out(nullptr);
    ContainerSpec s = spec("radial-turn-a-10");
    s.network = "radial-net";
    EXPECT_EQ(error_of([&] { f.rt->run(s, out); }).code(), RADIAL_E_REFUSED);
    s = spec("radial-turn-a-10");
    s.env = {{"BAD NAME", "x", false}};
    EXPECT_EQ(error_of([&] { f.rt->run(s, out); }).key(), "env[0]");
    s = spec("radial-turn-a-10");
    s.mounts = {{"/nonexistent/radial-src", "/work", false}};
    auto e = error_of([&] { f.rt->run(s, out); });
    EXPECT_EQ(e.code(), RADIAL_E_NOT_FOUND);
    EXPECT_EQ(e.key(), "mounts[0]");
    EXPECT_TRUE(f.steps().empty()) << "no create, no rm";
}

TEST(sandbox_runtime, ConcurrentRunsOfOneLabelAreRefused) {
    Fixture f;
    f.sbx->hang("create");
    std::thread runner([&] {
        radial::plugin::Output out(nullptr);
        f.rt->run(spec("radial-turn-dup"), out);
    });
    while (f.sbx->calls("create").empty()) std::this_thread::sleep_for(10ms);
    radial::plugin::Output out(nullptr);
    auto e = error_of([&] { f.rt->run(spec("radial-turn-dup"), out); });
    EXPECT_EQ(e.key(), "label");
    f.rt->kill("radial-turn-dup");
    runner.join();
}

TEST(sandbox_runtime, ListByLabelDecodesNamesAndMatchesAnExactBytePrefix) {
    Fixture f;
    f.sbx->on("ls", [](auto&) {
        return answer(
            R"({"sandboxes":[{"name":"radial-turn-inst1-7"},{"name":"radial-turn-inst1-70"},)"
            R"({"name":"radial-turn-inst10-7"},{"name":"x-radial-turn-inst1-7"},)"
            R"({"name":"radial-turn-my.5finst-1"},{"name":"claude-myproj"},)"
            R"({"name":"radial-turn-inst1-.41"}]})");
    });
    EXPECT_EQ(f.rt->list_by_label("radial-turn-inst1-"),
              (std::vector<std::string>{"radial-turn-inst1-7", "radial-turn-inst1-70"}));
    EXPECT_EQ(f.rt->list_by_label("radial-turn-my_inst-"),
              (std::vector<std::string>{"radial-turn-my_inst-1"}))
        << "original labels, decoded";
    EXPECT_TRUE(f.rt->list_by_label("radial-turn-inst2-").empty());
}

TEST(sandbox_runtime, KillIsIdempotent) {
    Fixture f;
    EXPECT_NO_THROW(f.rt->kill("radial-turn-a-11"));
    EXPECT_NO_THROW(f.rt->kill("radial-turn-a-11"));
    EXPECT_EQ(f.sbx->calls("rm").size(), 2u);
}

// The field mapping of docs/design.md §13.2.
TEST(sandbox_runtime, DispositionsFollowTheFieldMapping) {
    Fixture f;
    ContainerSpec s = spec("radial-turn-x_1");
    s.mounts = {{"/a", "/b", true}};
    s.env = {{"X", "1", false}};
    s.workdir = "/b";
    s.timeout_ms = 5;
    s.host_ports = {8080};
    s.pids_limit = 5;
    s.read_only_rootfs = Tristate::yes;
    s.user = "1000";
    s.tmpfs = {{"/t", 0}};
    s.extra_hosts = {"h:127.0.0.1"};
    s.memory_bytes = 1 << 30;
    s.network = "host";
    s.cpus_milli = 1500;
    std::map<std::uint32_t, radial::plugin::Disposition> by_field;
    for (auto& d : f.rt->describe(s)) by_field[d.field] = d;
    ASSERT_EQ(by_field.size(), carried_fields(s).size());
    auto disp = [&](std::uint32_t field) { return by_field.at(field).disposition; };
    for (auto field : {RADIAL_FIELD_LABEL, RADIAL_FIELD_IMAGE, RADIAL_FIELD_ARGV, RADIAL_FIELD_ENV,
                       RADIAL_FIELD_WORKDIR, RADIAL_FIELD_TIMEOUT_MS, RADIAL_FIELD_HOST_PORTS,
                       RADIAL_FIELD_ON_OUTPUT})
        EXPECT_EQ(disp(field), RADIAL_DISP_HONOURED) << field_name(field);
    // 1.5 CPUs become --cpus 2: a bound, not the one asked for (confine-cpus probes it).
    EXPECT_EQ(disp(RADIAL_FIELD_CPUS), RADIAL_DISP_BRIDGED);
    EXPECT_EQ(disp(RADIAL_FIELD_MOUNTS), RADIAL_DISP_BRIDGED);
    // Bounded, but an OOM cannot be told from another exit 137 (confine-memory-oom).
    EXPECT_EQ(disp(RADIAL_FIELD_MEMORY), RADIAL_DISP_BRIDGED);
    EXPECT_NE(by_field.at(RADIAL_FIELD_MEMORY).note.find("not as OOM_KILLED"), std::string::npos);
    for (auto field : {RADIAL_FIELD_PIDS_LIMIT, RADIAL_FIELD_READ_ONLY_ROOTFS, RADIAL_FIELD_USER,
                       RADIAL_FIELD_TMPFS, RADIAL_FIELD_EXTRA_HOSTS}) {
        EXPECT_EQ(disp(field), RADIAL_DISP_SUPERSEDED) << field_name(field);
        EXPECT_NE(by_field.at(field).note.find("superseded by"), std::string::npos)
            << field_name(field) << ": the note says why";
    }
    EXPECT_EQ(disp(RADIAL_FIELD_NETWORK), RADIAL_DISP_REFUSED);
    EXPECT_NE(by_field.at(RADIAL_FIELD_NETWORK).note.find("no docker network"), std::string::npos);
    EXPECT_NE(by_field.at(RADIAL_FIELD_LABEL).note.find("'radial-turn-x.5f1'"), std::string::npos);
    EXPECT_NE(by_field.at(RADIAL_FIELD_CPUS).note.find("rounded up"), std::string::npos);
    EXPECT_FALSE(by_field.at(RADIAL_FIELD_MOUNTS).note.empty());
}

// docs/design.md §13.4: the turn socket is reached over tcp through host.docker.internal.
TEST(sandbox_runtime, OnlyItsOwnEgressPolicyAndTheTcpRouteToTheTurnSocket) {
    Fixture f;
    EXPECT_EQ(f.rt->capabilities(), std::vector<std::string>{RADIAL_CAP_EGRESS_POLICY})
        << "no unix-socket mounts (auto → tcp, unix refused), no named networks, no egress "
           "endpoint: egress as sbx policy rules";
    auto route = f.rt->tcp_route();
    EXPECT_EQ(route.bind_host, "127.0.0.1");
    EXPECT_EQ(route.box_host, "host.docker.internal");
}

TEST(sandbox_runtime, PreflightRunsVersionThenLsAndExplainsAFailure) {
    Fixture f;
    EXPECT_NO_THROW(f.rt->preflight());
    auto calls = f.sbx->calls();
    ASSERT_EQ(calls.size(), 4u);
    EXPECT_EQ(calls[0], (Args{"version"}));
    EXPECT_EQ(calls[3], (Args{"ls", "--no-input", "--json"}));
    f.sbx->on("ls", [](auto&) { return answer("", 1, "Error: not authenticated\n"); });
    auto e = error_of([&] { f.rt->preflight(); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("run 'sbx login' once"), std::string::npos) << e.what();
    f.sbx->on("ls", [](auto&) { return answer("{\"sandboxes\":[]}"); });
    EXPECT_NO_THROW(f.rt->preflight()) << "a failed preflight is never cached";
}

TEST(sandbox_runtime, PreflightBudgetAppliesToAVersionThatNeverAnswers) {
    SandboxSettings s = Fixture::quick();
    s.probe_timeout_ms = 200;
    Fixture f(s);
    f.sbx->hang("version");
    auto start = Clock::now();
    auto e = error_of([&] { f.rt->preflight(); });
    EXPECT_LT(Clock::now() - start, 2s);
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
}

// The scripted sbx (tests/fakes/sbx/scripted-sbx) through the real process executor, with a
// removal budget a test can wait out.
struct OnScriptedSbx {
    radial::test::ScriptedSbx fake;
    std::unique_ptr<SandboxRuntime> rt;
    explicit OnScriptedSbx(std::uint64_t removal_ms) {
        SandboxSettings s = Fixture::quick();
        s.binary = fake.binary();
        s.removal_timeout_ms = removal_ms;
        rt = std::make_unique<SandboxRuntime>(radial::plugin::Host(), s,
                                              std::make_shared<ProcessSbxExecutor>(s.binary));
    }
};

// A failed rm followed by an ls that prints nothing proves nothing: the sandbox may still be there,
// and the turn fails rather than report it gone (docs/design.md §8.3).
TEST(sandbox_runtime, AFailedRemovalIsNotTakenForSuccessByASilentListing) {
    OnScriptedSbx f(1500);
    f.fake.fail("rm", 1, "Error: sandboxd: context deadline exceeded");
    f.fake.answer("ls", "");
    radial::plugin::Output out(nullptr);
    auto e = error_of([&] { f.rt->run(spec("radial-turn-a-40"), out); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("context deadline exceeded"), std::string::npos)
        << e.what();
    EXPECT_EQ(f.fake.sandboxes(), (std::vector<std::string>{"radial-turn-a-40"}));
}

// Ending a box whose sandbox cannot be removed takes one removal budget, not one per path that
// asks (the pump's stop, the teardown): every later path tries once (docs/design.md §8.3).
TEST(sandbox_runtime, EndingABoxWhoseSandboxStaysTakesOneRemovalBudget) {
    constexpr std::uint64_t kRemovalMs = 4000;
    OnScriptedSbx f(kRemovalMs);
    f.fake.fail("rm", 1, "Error: sandboxd: context deadline exceeded");
    ContainerSpec s = spec("radial-turn-a-41", {"sleep", "30"});
    s.timeout_ms = 300;
    radial::plugin::Output out(nullptr);
    auto e = error_of([&] { f.rt->run(s, out); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    // One budget of tries 500 ms apart, and a few single tries after it.
    EXPECT_LE(f.fake.calls("rm").size(), kRemovalMs / 500 + 5);
    // A kill of the box now, still within that episode, tries once more and says so.
    const auto before = f.fake.calls("rm").size();
    EXPECT_EQ(error_of([&] { f.rt->kill("radial-turn-a-41"); }).code(), RADIAL_E_UNAVAILABLE);
    EXPECT_EQ(f.fake.calls("rm").size(), before + 1);
}

} // namespace
} // namespace radial::sandbox
