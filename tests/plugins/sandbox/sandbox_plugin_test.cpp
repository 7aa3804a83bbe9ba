// tests/plugins/sandbox/sandbox_plugin_test.cpp — the real sandbox.so, loaded with dlopen and
// driven through its C descriptor, against the scripted sbx (tests/fakes/sbx/scripted-sbx): a
// whole turn; removal after a failed create, a failed policy rule, a failing exec, a timeout and a
// kill; no secret on any sbx argv; the environment byte for byte; C-11; reconciliation of two
// instances (docs/design.md §8.3).
#include <gtest/gtest.h>
#include <radial/session.h>
#include <radial/template.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "../../support/temp_dir.h"
#include "loaded_sandbox_plugin.h"
#include "scripted_sbx.h"

namespace radial::test {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using Args = std::vector<std::string>;

const std::string kSecret = "sk-ant-FAKE-0123456789abcdef";

class sandbox_plugin : public ::testing::Test {
protected:
    SandboxInstance& sandbox() {
        if (!instance_) {
            config_.str("binary", fake_.binary()).str("template", "radial/turn:1");
            instance_ = std::make_unique<SandboxInstance>(config_);
        }
        return *instance_;
    }
    ContainerSpec spec(const std::string& label, std::vector<std::string> argv) {
        ContainerSpec s;
        s.label = label;
        s.image = "radial/turn:1";
        s.argv = std::move(argv);
        s.timeout_ms = 30'000;
        return s;
    }
    // No sbx argv so far carried `value`.
    void expect_on_no_argv(const std::string& value) {
        EXPECT_EQ(fake_.call_log().find(value), std::string::npos) << fake_.call_log();
    }

    ScriptedSbx fake_;
    ConfigBuilder config_{"run.sandbox"};

private:
    std::unique_ptr<SandboxInstance> instance_;
};

TEST_F(sandbox_plugin, AWholeTurn) {
    TempDir ws("radial-ws"), box("radial-box"); // the workspace, and where the box names it
    ws.write("brief.md", "the brief\n");
    ContainerSpec s = spec("radial-turn-local-1",
                           {"sh", "-c",
                            "cat brief.md; echo \"key=${#ANTHROPIC_API_KEY}\"; echo warn >&2; "
                            "echo result > out.txt; exit 3"});
    s.mounts = {{ws.path(), box / "work", false}};
    s.workdir = box / "work";
    s.env = {{"ANTHROPIC_API_KEY", kSecret, true}, {"MODE", "turn", false}};
    s.host_ports = {40123};
    s.memory_bytes = 4ull << 30;
    RunOutcome o = sandbox().run(s);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_EXITED);
    EXPECT_TRUE(o.result.flags & RADIAL_RUN_PHASE_TIMES); // sbx create and rm, timed apart
    EXPECT_EQ(o.result.exit_code, 3);
    EXPECT_EQ(o.out, "the brief\nkey=" + std::to_string(kSecret.size()) + "\n");
    EXPECT_EQ(o.err, "warn\n");
    EXPECT_EQ(read_file(ws / "out.txt"), "result\n") << "the bridged target wrote the workspace";

    EXPECT_EQ(fake_.calls("create"),
              (std::vector<Args>{{"create", "--no-input", "--name", "radial-turn-local-1",
                                  "--template", "radial/turn:1", "--memory", "4g", "--cpus",
                                  std::to_string(std::min(2L, ::sysconf(_SC_NPROCESSORS_ONLN))),
                                  "claude", ws.path()}}));
    EXPECT_EQ(fake_.calls("policy"),
              (std::vector<Args>{{"policy", "allow", "network", "--no-input", "--sandbox",
                                  "radial-turn-local-1", "localhost:40123"},
                                 {"policy", "rm", "network", "--no-input", "--sandbox",
                                  "radial-turn-local-1", "--resource", "localhost:40123"}}));
    EXPECT_EQ(fake_.calls("exec"),
              (std::vector<Args>{{"exec", "--no-input", "-i", "radial-turn-local-1", "sh", "-s"}}));
    EXPECT_EQ(fake_.calls("rm"),
              (std::vector<Args>{{"rm", "--no-input", "--force", "radial-turn-local-1"}}));
    EXPECT_TRUE(fake_.sandboxes().empty());
    // The runtime revoked its grant itself, before the sandbox went: `sbx rm` found no rule.
    EXPECT_EQ(fake_.revoked_rules(), "radial-turn-local-1 allow localhost:40123\n");
    EXPECT_EQ(fake_.rules("radial-turn-local-1"), "");
    EXPECT_EQ(fake_.removed_rules(), "");
    // The secret went over the exec's stdin, and nowhere on a command line (C-02 for sbx).
    EXPECT_NE(fake_.exec_stdin("radial-turn-local-1").find("export ANTHROPIC_API_KEY='" + kSecret),
              std::string::npos);
    expect_on_no_argv(kSecret);
    for (const auto& line : sandbox().log())
        EXPECT_EQ(line.find(kSecret), std::string::npos) << line;
}

TEST_F(sandbox_plugin, TheEnvironmentArrivesByteForByte) {
    const std::vector<std::string> values = {"it's \"double\" 'single'",
                                             "$HOME ${PATH} $(echo no) `echo no` \\",
                                             "line1\nline2\n",
                                             "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x90\xB3",
                                             "",
                                             "  spaced  ",
                                             "a'\\''b"};
    ContainerSpec s = spec("radial-turn-local-env", {"sh", "-c",
                                                     "printf '%s\\0' \"$V0\" \"$V1\" \"$V2\" "
                                                     "\"$V3\" \"$V4\" \"$V5\" \"$V6\""});
    for (std::size_t i = 0; i < values.size(); ++i)
        s.env.push_back({"V" + std::to_string(i), values[i], true});
    RunOutcome o = sandbox().run(s);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    std::string expected;
    for (const auto& v : values) expected += v + '\0';
    EXPECT_EQ(o.out, expected);
    for (const auto& v : values)
        if (v.size() > 3) expect_on_no_argv(v);
}

TEST_F(sandbox_plugin, AFailedCreateRemovesWhateverItLeft) {
    fake_.fail("create", 1, "Error: 500 failed to run sandbox container");
    RunOutcome o = sandbox().run(spec("radial-turn-local-2", {"true"}));
    EXPECT_EQ(o.status, RADIAL_E_INTERNAL);
    EXPECT_NE(o.error.message.find("Error: 500 failed to run sandbox container"), std::string::npos)
        << o.error.message;
    EXPECT_EQ(fake_.calls("rm").size(), 1u);
    EXPECT_TRUE(fake_.calls("exec").empty());
    EXPECT_TRUE(fake_.sandboxes().empty());
}

TEST_F(sandbox_plugin, AFailedPolicyRuleRemovesTheSandbox) {
    fake_.fail("policy", 1, "Error: network policy has not been initialized");
    ContainerSpec s = spec("radial-turn-local-3", {"true"});
    s.host_ports = {40200};
    RunOutcome o = sandbox().run(s);
    EXPECT_EQ(o.status, RADIAL_E_UNAVAILABLE);
    EXPECT_NE(o.error.message.find("sbx policy init deny-all"), std::string::npos)
        << o.error.message;
    EXPECT_TRUE(fake_.calls("exec").empty());
    EXPECT_EQ(fake_.calls("rm").size(), 1u);
    EXPECT_TRUE(fake_.sandboxes().empty());
}

// sbx exec failing by itself is a runtime failure naming sbx's message, never the command's exit
// (docs/design.md §13.3): the command never ran.
TEST_F(sandbox_plugin, AFailingExecIsARuntimeFailureAndTheSandboxIsRemoved) {
    fake_.fail("exec", 1, "Error: sandbox daemon lost the VM");
    RunOutcome o = sandbox().run(spec("radial-turn-local-4", {"true"}));
    EXPECT_EQ(o.status, RADIAL_E_UNAVAILABLE) << "exit " << o.result.exit_code;
    EXPECT_NE(o.error.message.find("Error: sandbox daemon lost the VM"), std::string::npos)
        << o.error.message;
    EXPECT_NE(o.error.message.find("never started"), std::string::npos) << o.error.message;
    EXPECT_EQ(o.err, "") << "sbx's message is not the box's stderr";
    EXPECT_EQ(fake_.calls("rm").size(), 1u);
    EXPECT_TRUE(fake_.sandboxes().empty());
}

// The script's own set-up failing (here: a file where a target's parent should be) is a runtime
// failure too, with the failing step's message; the command never ran.
TEST_F(sandbox_plugin, AFailedBridgeIsARuntimeFailureNotTheCommandsExit) {
    TempDir ws("radial-ws"), box("radial-box");
    box.write("plain", "x");
    ContainerSpec s = spec("radial-turn-local-4b", {"sh", "-c", "echo HARNESS-RAN"});
    s.mounts = {{ws.path(), box / "plain/work", false}};
    RunOutcome o = sandbox().run(s);
    EXPECT_EQ(o.status, RADIAL_E_UNAVAILABLE) << "exit " << o.result.exit_code;
    EXPECT_NE(o.error.message.find("mkdir"), std::string::npos) << o.error.message;
    EXPECT_EQ(o.out, "");
    EXPECT_TRUE(fake_.sandboxes().empty());
}

// A directory with files where the workspace is to appear is covered, as docker's mount covers
// it: the harness runs and sees the workspace (docs/design.md §13.3).
TEST_F(sandbox_plugin, ATargetThatHoldsFilesIsCoveredAndTheHarnessRuns) {
    TempDir ws("radial-ws"), box("radial-box");
    ws.write("brief.md", "the brief\n");
    std::filesystem::create_directories(box / "work");
    box.write("work/from-the-image", "x");
    ContainerSpec s = spec("radial-turn-local-4c", {"sh", "-c", "cat brief.md; echo HARNESS-RAN"});
    s.mounts = {{ws.path(), box / "work", false}};
    s.workdir = box / "work";
    RunOutcome o = sandbox().run(s);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.exit_code, 0) << o.err;
    EXPECT_EQ(o.out, "the brief\nHARNESS-RAN\n");
    EXPECT_EQ(o.err, "");
}

TEST_F(sandbox_plugin, ATimeoutRemovesTheSandboxWhichEndsTheExec) {
    ContainerSpec s = spec("radial-turn-local-5", {"sh", "-c", "echo started; exec sleep 30"});
    s.timeout_ms = 800;
    RunOutcome o = sandbox().run(s);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_TIMED_OUT);
    EXPECT_LT(o.seconds(), 6.0);
    EXPECT_EQ(o.out, "started\n");
    EXPECT_GE(fake_.calls("rm").size(), 1u);
    EXPECT_TRUE(fake_.sandboxes().empty());
}

TEST_F(sandbox_plugin, AKillFromAnotherThreadRemovesTheSandbox) {
    RunOutcome o;
    sandbox();
    std::thread runner([&] { o = sandbox().run(spec("radial-turn-local-6", {"sleep", "30"})); });
    auto deadline = Clock::now() + 10s;
    while (fake_.calls("exec").empty() && Clock::now() < deadline)
        std::this_thread::sleep_for(20ms);
    Reported k = sandbox().kill("radial-turn-local-6");
    runner.join();
    EXPECT_EQ(k.code, RADIAL_OK) << k.message;
    EXPECT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_KILLED);
    EXPECT_LT(o.seconds(), 8.0);
    EXPECT_TRUE(fake_.sandboxes().empty());
    EXPECT_EQ(sandbox().kill("radial-turn-local-6").code, RADIAL_OK) << "idempotent";
}

TEST_F(sandbox_plugin, AKillDuringCreateInterruptsIt) {
    fake_.hang("create");
    RunOutcome o;
    sandbox();
    std::thread runner([&] { o = sandbox().run(spec("radial-turn-local-7", {"true"})); });
    auto deadline = Clock::now() + 10s;
    while (fake_.calls("create").empty() && Clock::now() < deadline)
        std::this_thread::sleep_for(20ms);
    Reported k = sandbox().kill("radial-turn-local-7");
    runner.join();
    EXPECT_EQ(k.code, RADIAL_OK) << k.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_KILLED);
    EXPECT_LT(o.seconds(), 8.0);
    EXPECT_TRUE(fake_.calls("exec").empty());
    EXPECT_TRUE(fake_.sandboxes().empty());
}

// A kill that overtakes its run on the host's threads (no run of the label yet, no sandbox): the
// run that follows starts nothing and ends killed (the ABI's kill contract). A kill that found a
// sandbox (reconciliation, `session rm`) is not remembered: a run of the label may follow.
TEST_F(sandbox_plugin, AKillBeforeItsRunIsRememberedAndTheRunStartsNothing) {
    EXPECT_EQ(sandbox().kill("radial-turn-local-8").code, RADIAL_OK);
    RunOutcome o = sandbox().run(spec("radial-turn-local-8", {"true"}));
    EXPECT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_KILLED);
    EXPECT_TRUE(fake_.calls("create").empty()) << fake_.call_log();
    EXPECT_TRUE(fake_.sandboxes().empty());

    fake_.add_sandbox("radial-turn-local-9");
    EXPECT_EQ(sandbox().kill("radial-turn-local-9").code, RADIAL_OK);
    EXPECT_TRUE(fake_.sandboxes().empty());
    RunOutcome after = sandbox().run(spec("radial-turn-local-9", {"sh", "-c", "echo ran"}));
    ASSERT_EQ(after.status, RADIAL_OK) << after.error.message;
    EXPECT_EQ(after.out, "ran\n");
}

TEST_F(sandbox_plugin, C11PolicyRulesAreScopedToOneSandbox) {
    ContainerSpec a = spec("radial-turn-c11-a", {"sh", "-c", "sleep 0.5; echo a"});
    a.host_ports = {41001};
    ContainerSpec b = spec("radial-turn-c11-b", {"sh", "-c", "sleep 0.5; echo b"});
    sandbox();
    RunOutcome oa, ob;
    std::thread ta([&] { oa = sandbox().run(a); });
    std::thread tb([&] { ob = sandbox().run(b); });
    ta.join();
    tb.join();
    ASSERT_EQ(oa.status, RADIAL_OK) << oa.error.message;
    ASSERT_EQ(ob.status, RADIAL_OK) << ob.error.message;
    EXPECT_EQ(oa.out, "a\n");
    EXPECT_EQ(ob.out, "b\n");
    auto policy = fake_.calls("policy");
    ASSERT_EQ(policy.size(), 2u) << "only A has a host port: its grant and its revocation";
    for (const auto& call : policy) {
        auto at = std::find(call.begin(), call.end(), "--sandbox");
        ASSERT_NE(at, call.end()) << "a global rule";
        ASSERT_NE(at + 1, call.end());
        EXPECT_EQ(*(at + 1), "radial-turn-c11-a");
    }
    EXPECT_EQ(fake_.rules("GLOBAL"), "") << "no global rule was ever written";
    EXPECT_EQ(fake_.rules("radial-turn-c11-a"), "") << "nothing the runtime added remains";
    EXPECT_TRUE(fake_.sandboxes().empty());
    EXPECT_EQ(fake_.revoked_rules(), "radial-turn-c11-a allow localhost:41001\n");
}

TEST_F(sandbox_plugin, ReconciliationRemovesOnlyItsOwnInstancesSandboxes) {
    // Left behind by two daemons that were killed mid-turn, plus the operator's own sandbox.
    for (const char* name : {"radial-turn-inst1-1", "radial-turn-inst1-20", "radial-turn-inst10-1",
                             "radial-turn-my.5finst-3", "claude-myproject"})
        fake_.add_sandbox(name);
    // A startup pass of instance inst1: listByLabel, then kill each (docs/design.md §3).
    Reported r;
    std::vector<std::string> mine = sandbox().list("radial-turn-inst1-", &r);
    ASSERT_EQ(r.code, RADIAL_OK) << r.message;
    EXPECT_EQ(mine, (std::vector<std::string>{"radial-turn-inst1-1", "radial-turn-inst1-20"}));
    for (const auto& label : mine) EXPECT_EQ(sandbox().kill(label).code, RADIAL_OK);
    EXPECT_EQ(fake_.sandboxes(),
              (std::vector<std::string>{"claude-myproject", "radial-turn-inst10-1",
                                        "radial-turn-my.5finst-3"}));
    // Then instance my_inst, whose id needs escaping: its label comes back as it was written.
    std::vector<std::string> other = sandbox().list("radial-turn-my_inst-", &r);
    EXPECT_EQ(other, (std::vector<std::string>{"radial-turn-my_inst-3"}));
    for (const auto& label : other) EXPECT_EQ(sandbox().kill(label).code, RADIAL_OK);
    EXPECT_EQ(fake_.sandboxes(),
              (std::vector<std::string>{"claude-myproject", "radial-turn-inst10-1"}));
    EXPECT_TRUE(sandbox().list("radial-turn-inst1-").empty()) << "a second pass finds nothing";
}

TEST_F(sandbox_plugin, AnOlderSbxWithoutJsonOrNoInputStillRunsAndLists) {
    fake_.features("");
    fake_.ls_noise("Starting sandboxd daemon...\nDaemon started (PID: 9, socket: /x)\nLogs: /y\n");
    fake_.add_sandbox("radial-turn-old-1");
    EXPECT_EQ(sandbox().list("radial-turn-old-"), (std::vector<std::string>{"radial-turn-old-1"}));
    RunOutcome o = sandbox().run(spec("radial-turn-old-2", {"echo", "ok"}));
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.out, "ok\n");
    for (const auto& call : fake_.calls())
        EXPECT_EQ(std::find(call.begin(), call.end(), "--no-input"), call.end());
    EXPECT_EQ(fake_.calls("ls").front(), (Args{"ls"}));
}

TEST_F(sandbox_plugin, PreflightPassesAndExplainsWhatItCannotFix) {
    Reported ok = sandbox().preflight();
    EXPECT_EQ(ok.code, RADIAL_OK) << ok.message;
    EXPECT_EQ(fake_.calls().front(), (Args{"version"}));
    fake_.fail("ls", 1, "Error: not signed in");
    Reported bad = sandbox().preflight();
    EXPECT_EQ(bad.code, RADIAL_E_UNAVAILABLE);
    EXPECT_NE(bad.message.find("sbx is not signed in to a Docker account"), std::string::npos)
        << bad.message;
    EXPECT_NE(bad.message.find("run 'sbx login' once"), std::string::npos) << bad.message;
    for (const auto& call : fake_.calls())
        EXPECT_TRUE(call.empty() || call[0] != "login") << "never an interactive command";
}

TEST_F(sandbox_plugin, CapabilitiesAndTcpRouteThroughTheABI) {
    EXPECT_EQ(sandbox().capabilities(), std::vector<std::string>{RADIAL_CAP_EGRESS_POLICY});
    EXPECT_EQ(sandbox().tcp_route(),
              (std::pair<std::string, std::string>{"127.0.0.1", "host.docker.internal"}));
    EXPECT_EQ(sandbox().d().abi_major, RADIAL_RT_ABI_MAJOR);
    EXPECT_EQ(std::string(sandbox().d().id.data, sandbox().d().id.size), "sandbox");
}

// A session's sandbox is kept when something other than its end fails (docs/design.md §13.12):
// a port rule sbx refused, or a state query sbx cannot answer after a code of 128 or more (which
// many commands exit with on their own; the command's code stands).
class sandbox_plugin_session : public sandbox_plugin {
protected:
    sandbox_plugin_session() : home_("radial-sbx-home") {
        // The scripted sbx runs the scripts here, with this HOME: the session's state is the
        // test's own.
        ::setenv("HOME", home_.path().c_str(), 1);
    }
    const radial_session_ext* ext() {
        return static_cast<const radial_session_ext*>(
            sandbox().d().get_extension(sandbox().rt(), RADIAL_SESSION_EXTENSION_ID));
    }
    Reported create(const std::string& label) {
        ContainerSpec s;
        s.label = label;
        s.image = "radial/turn:1";
        radial::CSpec c(s);
        Reported r;
        radial_error_sink err = error_sink(r);
        r.code = ext()->create(sandbox().rt(), c.get(), 0, 0, &err);
        return r;
    }
    RunOutcome exec(const std::string& label, const std::string& cmd,
                    std::vector<std::uint32_t> ports = {}) {
        ContainerSpec e;
        e.label = label;
        e.argv = {"sh", "-c", cmd};
        e.timeout_ms = 60'000;
        e.host_ports = std::move(ports);
        return exec_in_session(ext(), sandbox().rt(), e);
    }
    bool exists(const std::string& name) {
        return std::filesystem::exists(fake_.dir() + "/sandboxes/" + name);
    }
    TempDir home_;
};

TEST_F(sandbox_plugin_session, ARefusedPortRuleFailsTheExecAndKeepsTheSession) {
    ASSERT_EQ(create("sess-port").code, RADIAL_OK);
    EXPECT_EQ(exec("sess-port", "echo first").out, "first\n");
    fake_.fail("policy", 1, "Error: sandboxd is busy, try again");
    auto refused = exec("sess-port", "echo second", {4242});
    EXPECT_NE(refused.status, RADIAL_OK);
    fake_.clear("policy");
    EXPECT_TRUE(exists("sess-port")) << "the session's sandbox was removed over a port rule";
    EXPECT_EQ(exec("sess-port", "echo third").out, "third\n");
}

TEST_F(sandbox_plugin_session, AnUnanswerableStateQueryKeepsTheSessionAndTheCommandsCode) {
    ASSERT_EQ(create("sess-unknown").code, RADIAL_OK);
    // The command exits 255 (as ssh does) and makes the next sbx exec, the plugin's state query,
    // fail.
    auto o = exec("sess-unknown", "printf '1\\nError: sandboxd did not answer\\n' > " +
                                      fake_.dir() + "/control/exec.fail; exit 255");
    fake_.clear("exec");
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_EXITED);
    EXPECT_EQ(o.result.exit_code, 255);
    EXPECT_TRUE(exists("sess-unknown"));
}

// A session's exec that sbx fails before the command started is a runtime failure too, never the
// command's code, and its stderr is the command's only (docs/design.md §13.3).
TEST_F(sandbox_plugin_session, AFailingExecIsARuntimeFailureNotTheCommandsCode) {
    ASSERT_EQ(create("sess-exec").code, RADIAL_OK);
    auto o = exec("sess-exec", "echo out; echo err >&2; exit 3");
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.exit_code, 3);
    EXPECT_EQ(o.out, "out\n");
    EXPECT_EQ(o.err, "err\n");
    fake_.fail("exec", 1, "Error: sandbox daemon lost the VM");
    o = exec("sess-exec", "true");
    fake_.clear("exec");
    EXPECT_EQ(o.status, RADIAL_E_UNAVAILABLE) << "exit " << o.result.exit_code;
    EXPECT_NE(o.error.message.find("sandbox daemon lost the VM"), std::string::npos)
        << o.error.message;
    EXPECT_TRUE(exists("sess-exec"));
}

TEST_F(sandbox_plugin, ThePluginExportsOnlyItsEntrySymbol) {
    std::string symbols =
        shell(std::string("nm -D --defined-only '") + kSandboxPluginPath + "' | awk '{print $3}'");
    EXPECT_EQ(symbols, "radial_runtime_plugin_entry\n");
}

TEST_F(sandbox_plugin, ANetworkIsRefusedBeforeAnySbxCall) {
    ContainerSpec s = spec("radial-turn-local-net", {"true"});
    s.network = "radial-net";
    RunOutcome o = sandbox().run(s);
    EXPECT_EQ(o.status, RADIAL_E_REFUSED);
    EXPECT_EQ(o.error.key, "network");
    EXPECT_TRUE(fake_.calls().empty());
}

// A mount that must receive the host's later mounts (radial_spec_propagation) is refused, naming
// the mount, by a runtime that does not claim radial.cap.mount-propagation, before anything starts:
// for a run and for a session's box alike.
TEST_F(sandbox_plugin_session, AMountReceivingLaterMountsIsRefusedWithoutTheCapability) {
    ContainerSpec s = spec("radial-turn-local-late", {"true"});
    s.mounts = {{"/srv/pool/1", "/radial-late", true, true}};
    RunOutcome o = sandbox().run(s);
    EXPECT_EQ(o.status, RADIAL_E_REFUSED);
    EXPECT_EQ(o.error.key, "mounts");
    EXPECT_NE(o.error.message.find("'/radial-late' must receive the host's later mounts"),
              std::string::npos)
        << o.error.message;
    s.argv.clear();
    radial::CSpec c(s);
    Reported r;
    radial_error_sink err = error_sink(r);
    EXPECT_EQ(ext()->create(sandbox().rt(), c.get(), 0, 0, &err), RADIAL_E_REFUSED);
    EXPECT_EQ(r.key, "mounts");
    EXPECT_TRUE(fake_.calls().empty());
}

TEST_F(sandbox_plugin, UnknownConfigKeysAreRefused) {
    ConfigBuilder b("run.sandbox");
    b.str("binary", fake_.binary()).str("tmpfsSize", "2g");
    try {
        SandboxInstance bad(b);
        FAIL() << "created with an unknown key";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), "create: unknown key 'tmpfsSize' in [run.sandbox]");
    }
}

// radial.template/1 (docs/design.md §13.2): `radiald template export` hands the saved archive to
// the runtime, which loads it with `sbx template load` within the budget it is given.
class sandbox_plugin_template : public sandbox_plugin {
protected:
    Reported load(const std::string& archive, std::uint64_t timeout_ms) {
        const auto* ext = static_cast<const radial_template_ext*>(
            sandbox().d().get_extension(sandbox().rt(), RADIAL_TEMPLATE_EXTENSION_ID));
        Reported r;
        if (ext == nullptr || ext->load == nullptr) {
            r.code = -1;
            r.message = "the sandbox runtime offers no " RADIAL_TEMPLATE_EXTENSION_ID;
            return r;
        }
        radial_error_sink err = error_sink(r);
        r.code = ext->load(sandbox().rt(), {archive.data(), archive.size()}, timeout_ms, &err);
        return r;
    }
    TempDir archives_{"radial-tmpl-archive"};
};

TEST_F(sandbox_plugin_template, AnArchiveIsLoadedWithSbxTemplateLoad) {
    archives_.write("image.tar", "eleven byte");
    const std::string archive = archives_.path() + "/image.tar";
    const Reported r = load(archive, 60'000);
    ASSERT_EQ(r.code, RADIAL_OK) << r.message;
    EXPECT_EQ(read_file(fake_.dir() + "/templates.log"), archive + " 11\n");
}

TEST_F(sandbox_plugin_template, APathThatIsNoRegularFileIsRefusedBeforeAnySbxCall) {
    for (const std::string& bad :
         {std::string("relative/image.tar"), archives_.path(), archives_.path() + "/missing.tar"}) {
        const Reported r = load(bad, 60'000);
        EXPECT_EQ(r.code, RADIAL_E_INVALID) << bad;
        EXPECT_EQ(r.key, "archive") << bad;
        EXPECT_NE(r.message.find("'" + bad + "'"), std::string::npos) << r.message;
    }
    EXPECT_FALSE(std::filesystem::exists(fake_.dir() + "/templates.log"));
}

TEST_F(sandbox_plugin_template, ALoadThatDoesNotAnswerIsStoppedAtItsBudget) {
    archives_.write("image.tar", "x");
    fake_.hang("template");
    const Reported r = load(archives_.path() + "/image.tar", 500);
    EXPECT_EQ(r.code, RADIAL_E_TIMEOUT) << r.message;
    EXPECT_NE(r.message.find("did not finish within 500 ms and was stopped"), std::string::npos)
        << r.message;
    EXPECT_NE(r.message.find("--timeout"), std::string::npos) << r.message;
}

TEST_F(sandbox_plugin_template, SbxsRefusalIsTheMessage) {
    archives_.write("image.tar", "x");
    fake_.fail("template", 1, "Error: archive holds no image manifest");
    const Reported r = load(archives_.path() + "/image.tar", 60'000);
    EXPECT_EQ(r.code, RADIAL_E_UNAVAILABLE) << r.message;
    EXPECT_NE(r.message.find("archive holds no image manifest"), std::string::npos) << r.message;
}

} // namespace
} // namespace radial::test
