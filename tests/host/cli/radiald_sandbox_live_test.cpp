// `radiald turn` under the sandbox runtime, end to end, against the simulated sbx backed by the
// local Docker Engine (docs/design.md §13.2 "Tests"): the tcp turn socket, a record posted from
// inside, the terminal record, `sbx ls` empty after; and the startup refusals decided from the
// plugin's capabilities and dispositions, never from its name (docs/design.md §7.4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/small_disk.h"
#include "../../support/temp_dir.h"
#include "session_fixture.h"

namespace radial {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

// A private simulator: a symlink in its own directory, which is then the simulator's state.
struct SandboxSetup {
    test::TempDir sim_dir{"radial-sbxsim"};
    std::string sbx = sim_dir / "sbx";
    test::RadialdSetup setup;
    SandboxSetup(const std::string& run_keys = "", const std::string& tables = "")
        : setup("containerRuntime = \"sandbox\"\n" + run_keys,
                "[run.sandbox]\nbinary = \"" + (sim_dir / "sbx") + "\"\n" + tables) {
        std::filesystem::create_symlink(RADIAL_SBX_SIM, sbx);
    }
    std::string ls() const { return test::run_process({sbx, "ls"}).out; }
    std::string policy_rules() const { return test::read_file(sim_dir / "rules"); }
};

void expect_startup_refusal(const test::TurnRun& t, const std::string& fragment) {
    EXPECT_EQ(t.result.exit_code, 125) << t.result.err;
    EXPECT_THAT(t.result.err, HasSubstr(fragment));
    EXPECT_EQ(t.record["status"], "error");
}

TEST(SandboxLive, ATurnPostsARecordOverTcpAndLeavesNoSandbox) {
    SandboxSetup s("user = \"1000:1000\"\n");
    auto t = s.setup.turn({}, {"sh", "-c", R"SH(
case "$RADIAL_TURN_SOCKET" in tcp://host.docker.internal:*) ;; *) echo "bad socket $RADIAL_TURN_SOCKET"; exit 9;; esac
curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $RADIAL_TURN_TOKEN" \
  -H 'Content-Type: application/json' --data-binary '{"type":"result","payload":{"answer":42}}' \
  "http://${RADIAL_TURN_SOCKET#tcp://}/v1/records"
echo "inside $(pwd)")SH"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.out << t.result.err;
    EXPECT_EQ(t.result.out, "201\ninside /\n");
    EXPECT_EQ(t.record["status"], "succeeded");
    EXPECT_EQ(t.record["runtime"], "sandbox");
    auto j = s.setup.records(t.record["turnId"]);
    ASSERT_EQ(j["records"].size(), 1u) << j.dump();
    EXPECT_EQ(j["records"][0]["payload"]["answer"], 42);
    // The per-sandbox policy rule named the sandbox (C-11), and the runtime revoked it itself
    // after the turn, before removing the sandbox; nothing is left.
    EXPECT_EQ(s.ls().find("radial-turn"), std::string::npos) << s.ls();
    EXPECT_EQ(s.policy_rules(), "");
    std::string calls = test::read_file(s.sim_dir / "calls.log");
    EXPECT_THAT(calls, HasSubstr("policy\037allow\037network\037"));
    EXPECT_THAT(calls, ::testing::ContainsRegex(
                           "--sandbox\037radial-turn-[^\037]+\037localhost:[0-9]+\037"));
    EXPECT_THAT(calls, ::testing::ContainsRegex(
                           "policy\037rm\037network\037(--no-input\037)?--sandbox\037radial-"
                           "turn-[^\037]+\037--resource\037localhost:[0-9]+\037"));
    EXPECT_LT(calls.find("policy\037rm\037"), calls.rfind("\nrm\037"))
        << "revoked before the sandbox went";
    EXPECT_THAT(test::read_file(s.sim_dir / "revoked-rules"),
                ::testing::MatchesRegex("radial-turn-[^ ]+ allow localhost:[0-9]+\n"));
    // The VM is bounded: the host's own bounds reach `sbx create` (run.memory 2g, 2 CPUs or the
    // host's; docs/design.md §6.4).
    const std::string cpus = std::to_string(std::min(2L, ::sysconf(_SC_NPROCESSORS_ONLN)));
    EXPECT_THAT(calls, HasSubstr("\037--memory\0372g\037--cpus\037" + cpus + "\037"));
    // run.user is superseded by the microVM boundary: named in the log, never silently dropped.
    EXPECT_THAT(t.result.err, HasSubstr("runtime 'sandbox' supersedes user"));
    // So radiald gives it no passwd, group or home of its own (docs/design.md §8.7), and says so.
    EXPECT_THAT(t.result.err, HasSubstr("runtime 'sandbox' keeps its own box user and home"));
    // sbx create and sbx rm are reported apart from the command (docs/design.md §13.2): both
    // happened, and within the turn's duration.
    ASSERT_TRUE(t.record.contains("createMs")) << t.record.dump();
    ASSERT_TRUE(t.record.contains("removeMs")) << t.record.dump();
    EXPECT_GT(t.record["createMs"].get<std::uint64_t>(), 0u);
    EXPECT_LE(t.record["createMs"].get<std::uint64_t>() + t.record["removeMs"].get<std::uint64_t>(),
              t.record["durationMs"].get<std::uint64_t>());
}

// Brokered egress on the sandbox runtime (docs/design.md §9.7): each destination of the turn
// becomes an sbx policy rule scoped to the turn's sandbox while it runs, revoked after; the log
// says what the runtime's own policy leaves out; a session's turn with egress is refused naming
// why. (The simulator records the rules; a real sbx's proxy enforces them.)
TEST(SandboxLive, EgressDestinationsBecomeRulesScopedToTheSandbox) {
    {
        SandboxSetup refused("", "[run.egress]\nallow = [\"pypi.org:443\"]\n");
        auto t = refused.setup.turn({"--egress", "pypi.org:443"}, {"true"});
        EXPECT_NE(t.result.exit_code, 0);
        EXPECT_THAT(t.result.err, HasSubstr("set run.egress.runtimePolicy = true"))
            << "without the operator's consent the runtime's own policy is not used";
        EXPECT_EQ(refused.policy_rules(), "");
    }
    SandboxSetup s("",
                   "[run.egress]\nallow = [\"pypi.org:443\", \"*.pythonhosted.org:443\"]\n"
                   "runtimePolicy = true\n");
    auto t =
        s.setup.turn({"--egress", "pypi.org:443", "--egress", "*.pythonhosted.org:443"}, {"true"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    const std::string calls = test::read_file(s.sim_dir / "calls.log");
    for (const char* d : {"pypi.org:443", "\\*\\.pythonhosted\\.org:443"})
        EXPECT_THAT(calls, ::testing::ContainsRegex(std::string("policy\037allow\037network\037("
                                                                "--no-input\037)?--sandbox\037"
                                                                "radial-turn-[^\037]+\037") +
                                                    d + "\037?"))
            << calls;
    const std::string revoked = test::read_file(s.sim_dir / "revoked-rules");
    EXPECT_THAT(revoked, HasSubstr(" allow pypi.org:443\n"));
    EXPECT_THAT(revoked, HasSubstr(" allow *.pythonhosted.org:443\n"));
    EXPECT_EQ(s.policy_rules(), "") << "no rule outlives the turn";
    EXPECT_THAT(t.result.err, HasSubstr("enforces the turn's 2 egress destination(s) with its own "
                                        "policy"));
    EXPECT_THAT(t.result.err, HasSubstr("no radial.egress receipts"));

    auto outside = s.setup.turn({"--egress", "example.com:443"}, {"true"});
    EXPECT_NE(outside.result.exit_code, 0);
    EXPECT_THAT(outside.result.err, HasSubstr("run.egress.allow"));
    test::Session session(s.setup, {});
    ASSERT_EQ(session.created.exit_code, 0) << session.created.err;
    auto in_session = s.setup.turn({"--session", session.id, "--egress", "pypi.org:443"}, {"true"});
    EXPECT_NE(in_session.result.exit_code, 0);
    EXPECT_THAT(in_session.result.err, HasSubstr("a session's turn is an exec"));
}

// A session under the sandbox runtime (docs/design.md §13.12): `radiald session create` makes one
// sandbox; each `radiald turn --session` is an exec in it that reaches its own tcp turn socket
// (the port opened for that exec only); what a turn installs is there for the next; `session rm`
// removes the sandbox.
TEST(SandboxLive, ASessionsTurnsAreExecsInOneSandboxAndPostOverTcp) {
    SandboxSetup s;
    test::TempDir ws("radial-ws");
    std::string id;
    {
        test::Session session(s.setup, {"--workspace", ws.path()});
        ASSERT_EQ(session.created.exit_code, 0) << session.created.err;
        id = session.id;
        EXPECT_THAT(s.ls(), HasSubstr(session.box()));
        auto first =
            s.setup.turn({"--session", session.id},
                         {"sh", "-c", R"SH(echo v1 > /opt/cache/installed; echo w > /work/made
curl -s -o /dev/null -w '%{http_code}
' -H "Authorization: Bearer $RADIAL_TURN_TOKEN" \
  -H 'Content-Type: application/json' --data-binary '{"type":"result","payload":{"n":1}}' \
  "http://${RADIAL_TURN_SOCKET#tcp://}/v1/records")SH"});
        ASSERT_EQ(first.result.exit_code, 0) << first.result.err;
        EXPECT_EQ(first.result.out, "201\n");
        EXPECT_EQ(first.record["session"], session.id);
        EXPECT_EQ(first.record["runtime"], "sandbox");
        EXPECT_EQ(s.setup.records(first.record["turnId"])["records"].size(), 1u);
        EXPECT_EQ(test::read_file(ws / "made"), "w\n") << "the workspace passes through";
        auto second = s.setup.turn(
            {"--session", session.id},
            {"sh", "-c", "cat /opt/cache/installed; echo \"[$RADIAL_TURN_TOKEN]\" | wc -c"});
        EXPECT_EQ(second.result.exit_code, 0) << second.result.err;
        EXPECT_THAT(second.result.out, ::testing::StartsWith("v1\n"));
        EXPECT_NE(second.record["turnId"], first.record["turnId"]);
        EXPECT_EQ(s.policy_rules(), "") << "each exec's port rule is revoked after it";
        EXPECT_THAT(s.ls(), HasSubstr(session.box())) << "the sandbox is kept between turns";
    }
    EXPECT_EQ(s.ls().find(id), std::string::npos) << "session rm removed the sandbox: " << s.ls();
}

// A sandbox session past its maximum lifetime: the keeper in the sandbox ends its processes with
// nobody watching, and reconciliation — by the host's own record of the lifetime, since sbx cannot
// say how a sandbox ended — removes the sandbox and the session.
TEST(SandboxLive, ReconciliationRemovesASessionPastItsMaximumLifetime) {
    SandboxSetup s;
    test::Session session(s.setup, {"--max-lifetime", "10s"});
    ASSERT_EQ(session.created.exit_code, 0) << session.created.err;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    std::string ended;
    while (ended.empty() && std::chrono::steady_clock::now() < deadline) {
        ended = test::run_process({"docker", "exec", session.box(), "sh", "-c",
                                   "cat \"$HOME/.radial-session/ended\" 2>/dev/null"})
                    .out;
        if (ended.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_EQ(ended, "its maximum lifetime passed\n");
    auto r = test::run_process({RADIALD_PATH, "reconcile", "--config", s.setup.config()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err,
                HasSubstr("session " + session.id + ": its box passed its maximum lifetime"));
    EXPECT_EQ(s.ls().find(session.box()), std::string::npos) << s.ls();
    auto ls =
        test::run_process({RADIALD_PATH, "session", "ls", "--json", "--config", s.setup.config()});
    EXPECT_EQ(ls.out.find(session.id), std::string::npos) << ls.out;
}

// run.sandbox.memory and cpus reach `sbx create`, and through the simulator the box's cgroup.
TEST(SandboxLive, MemoryAndCpusReachSbxCreate) {
    SandboxSetup s("", "memory = \"768m\"\ncpus = 1\n");
    auto t = s.setup.turn({}, {"sh", "-c",
                               "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat "
                               "/sys/fs/cgroup/memory/memory.limit_in_bytes"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    std::string calls = test::read_file(s.sim_dir / "calls.log");
    EXPECT_THAT(calls, HasSubstr("\037--memory\037768m\037--cpus\0371\037"));
    EXPECT_EQ(t.result.out, std::to_string(768ull << 20) + "\n");
}

TEST(SandboxLive, UnixTransportIsRefusedNamingBothKeys) {
    SandboxSetup s("turnTransport = \"unix\"\n");
    expect_startup_refusal(
        s.setup.turn({}, {"true"}),
        "run.turnTransport is \"unix\" but run.containerRuntime 'sandbox' cannot pass a "
        "unix socket into its boxes");
    EXPECT_EQ(s.ls().find("radial-turn"), std::string::npos);
}

TEST(SandboxLive, ANetworkIsRefusedAtStartup) {
    SandboxSetup s("network = \"host\"\n");
    expect_startup_refusal(s.setup.turn({}, {"true"}), "run.network: runtime 'sandbox' refuses it");
}

TEST(SandboxLive, CodexAuthIsRefusedAtStartup) {
    SandboxSetup s("codexAuth = true\n");
    expect_startup_refusal(
        s.setup.turn({}, {"true"}),
        "run.codexAuth is set but runtime 'sandbox' cannot mount files keyed to the host's uid");
}

TEST(SandboxLive, ADockerSectionIsRefusedUnderTheSandboxRuntime) {
    SandboxSetup s("", "[run.docker]\nbinary = \"docker\"\n");
    expect_startup_refusal(
        s.setup.turn({}, {"true"}),
        "run.docker: configures runtime 'docker' but run.containerRuntime is 'sandbox'");
}

TEST(SandboxLive, ASandboxSectionIsRefusedUnderTheDockerRuntime) {
    test::RadialdSetup s("", "[run.sandbox]\ntemplate = \"t\"\n");
    expect_startup_refusal(
        s.turn({}, {"true"}),
        "run.sandbox: configures runtime 'sandbox' but run.containerRuntime is 'docker'");
}

// `radiald template export`: a local image is saved to a private archive and loaded with
// `sbx template load` (the sandbox runtime's image store), with run.sandbox.binary from the config;
// the archive is gone afterwards.
TEST(SandboxLive, TemplateExportSavesTheImageAndLoadsItWithSbx) {
    SandboxSetup s;
    test::TempDir tmp("radial-tmpl");
    auto r = test::run_process(
        {RADIALD_PATH, "template", "export", "--config", s.setup.config(), RADIAL_TEST_IMAGE},
        {{"TMPDIR", tmp.path()}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr(std::string("saved '") + RADIAL_TEST_IMAGE + "'"));
    EXPECT_THAT(r.out, HasSubstr("loaded into runtime 'sandbox'"));
    EXPECT_EQ(test::read_file(s.sim_dir / "templates"), std::string(RADIAL_TEST_IMAGE) + "\n");
    const std::string calls = test::read_file(s.sim_dir / "calls.log");
    EXPECT_THAT(calls, HasSubstr("template\037load\037" + tmp.path() + "/radial-template-"));
    EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "the archive was left behind";
}

// The same through a plugin host process of its own: the extension crosses it.
TEST(SandboxLive, TemplateExportLoadsThroughAPluginHostProcessToo) {
    SandboxSetup s("pluginIsolation = \"process\"\n");
    auto r = test::run_process(
        {RADIALD_PATH, "template", "export", "--config", s.setup.config(), RADIAL_TEST_IMAGE});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_file(s.sim_dir / "templates"), std::string(RADIAL_TEST_IMAGE) + "\n");
}

TEST(SandboxLive, TemplateExportOfAnImageNotInTheEngineSaysSoAndCallsNoSbx) {
    SandboxSetup s;
    auto r = test::run_process({RADIALD_PATH, "template", "export", "--config", s.setup.config(),
                                "radial/no-such-image:never"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("image 'radial/no-such-image:never' is not in the local Docker "
                                 "Engine"));
    EXPECT_FALSE(std::filesystem::exists(s.sim_dir / "calls.log")) << "sbx was called";
}

// An executable script at `path` (replacing what is there).
void write_script(const std::filesystem::path& path, const std::string& body) {
    std::filesystem::remove(path);
    std::ofstream(path) << "#!/bin/sh\n" << body;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
}

// The export asks the selected runtime for its template store (radial.template/1) and never
// checks its id: the docker runtime keeps none, which is said before anything is run.
TEST(SandboxLive, TemplateExportUnderARuntimeWithoutAStoreIsRefusedBeforeAnythingRuns) {
    test::RadialdSetup s;
    auto r = test::run_process({RADIALD_PATH, "template", "export", "--config", s.config(),
                                "--docker", "/nonexistent/docker", RADIAL_TEST_IMAGE});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("runtime 'docker' (run.containerRuntime) keeps no template "
                                 "store of its own: it does not offer the extension "
                                 "radial.template/1"));
    EXPECT_THAT(r.err, Not(HasSubstr("/nonexistent/docker")));
}

// One budget for the whole export (--timeout): a load that does not answer is stopped, the
// message names the step, and the archive is removed.
TEST(SandboxLive, TemplateExportStopsALoadPastItsBudget) {
    SandboxSetup s;
    write_script(s.sbx, "[ \"$1\" = template ] && exec sleep 600\nSBX_SIM_STATE='" +
                            s.sim_dir.path() + "' exec '" + RADIAL_SBX_SIM + "' \"$@\"\n");
    test::TempDir tmp("radial-tmpl");
    auto r = test::run_process({RADIALD_PATH, "template", "export", "--config", s.setup.config(),
                                "--timeout", "3s", RADIAL_TEST_IMAGE},
                               {{"TMPDIR", tmp.path()}});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("loading it into runtime 'sandbox' did not finish within the "
                                 "export's budget of 3s and was stopped; give it longer with "
                                 "--timeout"));
    EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "the archive was left behind";
}

TEST(SandboxLive, TemplateExportStopsASavePastItsBudgetAndLoadsNothing) {
    SandboxSetup s;
    const std::filesystem::path docker = s.sim_dir / "slow-docker";
    write_script(docker, "[ \"$1 $2\" = 'image save' ] && exec sleep 600\nexec docker \"$@\"\n");
    auto r = test::run_process({RADIALD_PATH, "template", "export", "--config", s.setup.config(),
                                "--docker", docker.string(), "--timeout", "3s", RADIAL_TEST_IMAGE});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("saving image '" + std::string(RADIAL_TEST_IMAGE) + "' with '" +
                                 docker.string() +
                                 " image save' did not finish within the export's budget of 3s"));
    EXPECT_THAT(test::read_file(s.sim_dir / "calls.log"), Not(HasSubstr("template")));
}

// A stop signal (Ctrl-C, SIGTERM, a closed terminal) stops the step under way and removes the
// archive: during the save the docker CLI is killed; during the runtime's load the command ends at
// once and kills what the runtime started for it (its sbx was left running, reparented, with no
// deadline left).
// `radiald template export` of the test image with TMPDIR `tmp` and `docker` as its docker CLI.
std::vector<std::string> export_argv(const SandboxSetup& s, const test::TempDir& tmp,
                                     const std::filesystem::path& docker) {
    return {"env",      "TMPDIR=" + tmp.path(), RADIALD_PATH, "template",      "export",
            "--config", s.setup.config(),       "--docker",   docker.string(), RADIAL_TEST_IMAGE};
}

// The pid a stalled step wrote to `file`, once it did; 0 (and a failure naming the command's
// stderr) when it did not within a minute.
pid_t await_pid_in(const std::string& file, const std::filesystem::path& stderr_path) {
    if (test::wait_until([&] { return !test::read_file(file).empty(); }, std::chrono::seconds(60)))
        return std::stoi(test::read_file(file));
    ADD_FAILURE() << "the step never started: " << test::read_file(stderr_path);
    return 0;
}

TEST(SandboxLive, TemplateExportStoppedBySignalRemovesTheArchive) {
    for (const std::string step : {"save", "load"}) {
        SCOPED_TRACE(step);
        SandboxSetup s;
        const std::string started = s.sim_dir / (step + "-started");
        const std::filesystem::path docker = s.sim_dir / "slow-docker";
        write_script(docker, step == "save"
                                 ? "[ \"$1 $2\" = 'image save' ] && { echo $$ > '" + started +
                                       "'; exec sleep 600; }\n"
                                       "exec docker \"$@\"\n"
                                 : "exec docker \"$@\"\n");
        if (step == "load")
            write_script(s.sbx, "[ \"$1\" = template ] && { echo $$ > '" + started +
                                    "'; exec sleep 600; }\nSBX_SIM_STATE='" + s.sim_dir.path() +
                                    "' exec '" + RADIAL_SBX_SIM + "' \"$@\"\n");
        test::TempDir tmp("radial-tmpl");
        test::BackgroundProcess radiald(export_argv(s, tmp, docker), s.sim_dir / "stderr");
        const pid_t sleeper = await_pid_in(started, s.sim_dir / "stderr");
        ASSERT_GT(sleeper, 0);
        radiald.signal(step == "save" ? SIGTERM : SIGINT);
        EXPECT_EQ(radiald.wait(std::chrono::seconds(60)), 1);
        const std::string err = test::read_file(s.sim_dir / "stderr");
        EXPECT_THAT(err, HasSubstr(step == "save" ? "was stopped: interrupted by signal 15"
                                                  : "was stopped: interrupted by signal 2"));
        EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "the archive was left behind";
        const bool ended =
            test::wait_until([&] { return ::kill(sleeper, 0) != 0; }, std::chrono::seconds(30));
        EXPECT_TRUE(ended) << "the " << (step == "save" ? "docker CLI" : "runtime's sbx")
                           << " outlived the export";
        if (!ended) ::kill(sleeper, SIGKILL);
    }
}

// A SIGKILLed export cannot remove its archive's directory: it was left in TMPDIR for good, an
// image's size each time. The next export removes it (fs/held_temp_dir.h), once nobody holds it.
TEST(SandboxLive, TemplateExportRemovesTheArchiveAKilledExportLeft) {
    SandboxSetup s;
    const std::string started = s.sim_dir / "save-started";
    const std::filesystem::path docker = s.sim_dir / "slow-docker";
    write_script(docker, "[ \"$1 $2\" = 'image save' ] && { echo $$ > '" + started +
                             "'; exec sleep 600; }\nexec docker \"$@\"\n");
    test::TempDir tmp("radial-tmpl");
    {
        test::BackgroundProcess killed(export_argv(s, tmp, docker), s.sim_dir / "stderr");
        const pid_t save = await_pid_in(started, s.sim_dir / "stderr");
        ASSERT_GT(save, 0);
        killed.signal(SIGKILL);
        killed.wait(std::chrono::seconds(30));
        ::kill(save, SIGKILL); // its docker, orphaned
    }
    std::vector<std::filesystem::path> left(std::filesystem::directory_iterator(tmp.path()), {});
    ASSERT_EQ(left.size(), 1u) << "a SIGKILLed export leaves its directory";
    std::filesystem::last_write_time(
        left[0], std::filesystem::file_time_type::clock::now() - std::chrono::minutes(5));
    auto r = test::run_process({"env", "TMPDIR=" + tmp.path(), RADIALD_PATH, "template", "export",
                                "--config", s.setup.config(), RADIAL_TEST_IMAGE});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("removed 1 archive directory an export that was killed left"));
    EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "the killed export's directory stayed";
}

TEST(SandboxLive, TemplateExportRefusesABadTimeoutNamingTheFlag) {
    SandboxSetup s;
    for (const char* bad : {"soon", "0s", "25h"}) {
        auto r = test::run_process({RADIALD_PATH, "template", "export", "--config",
                                    s.setup.config(), "--timeout", bad, RADIAL_TEST_IMAGE});
        EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
        EXPECT_THAT(r.err, HasSubstr("--timeout must be a duration from 1s to 24h")) << bad;
    }
}

// IMAGE is a name a template can be known by, checked before docker or sbx runs: '--help' (after
// '--') was read by docker as its option (both steps printed help and exited 0, and the export
// went on with no archive); an image id or a digest gives an archive of no name, which no run
// could name.
TEST(SandboxLive, TemplateExportRefusesAnImageThatCannotNameATemplate) {
    SandboxSetup s;
    const std::string image_id =
        test::run_process({"docker", "image", "inspect", "--format", "{{.Id}}", RADIAL_TEST_IMAGE})
            .out.substr(7, 12);
    ASSERT_EQ(image_id.size(), 12u);
    for (const std::string& bad :
         {std::string("--help"), std::string("-o/tmp/x"), image_id,
          std::string(RADIAL_TEST_IMAGE) + "@sha256:" + std::string(64, 'a'),
          std::string("Upper/Case")}) {
        auto r = test::run_process(
            {RADIALD_PATH, "template", "export", "--config", s.setup.config(), "--", bad});
        EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
        EXPECT_THAT(r.err, HasSubstr("IMAGE '" + bad + "'")) << bad;
        EXPECT_THAT(r.err, HasSubstr("name it as REPOSITORY:TAG")) << bad;
        EXPECT_THAT(r.err, Not(HasSubstr("saved"))) << bad;
    }
    EXPECT_FALSE(std::filesystem::exists(s.sim_dir / "calls.log")) << "sbx was called";
}

// The archive is about the image's size: a TMPDIR with less room than that is said before the
// save (which ran until ENOSPC), naming TMPDIR, and nothing is saved or loaded.
TEST(SandboxLive, TemplateExportIntoATmpdirWithoutRoomIsRefusedBeforeTheSave) {
    SandboxSetup s;
    test::TempDir base("radial-tmpl-small");
    const std::string small = base / "tmp";
    test::SmallDisk disk(small, "1m");
    ASSERT_TRUE(disk.ok()) << "mounting a tmpfs needs root: the suite runs as root";
    auto r = test::run_process(
        {RADIALD_PATH, "template", "export", "--config", s.setup.config(), RADIAL_TEST_IMAGE},
        {{"TMPDIR", small}});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("the archive of the image needs about"));
    EXPECT_THAT(r.err, HasSubstr("and '" + small + "' has"));
    EXPECT_THAT(r.err, HasSubstr("point TMPDIR at a file system with room for it"));
    EXPECT_THAT(r.err, Not(HasSubstr("saving '"))) << "the save ran";
    EXPECT_TRUE(std::filesystem::is_empty(small)) << "the archive's directory was left";
    EXPECT_THAT(test::read_file(s.sim_dir / "calls.log"), Not(HasSubstr("template")));
}

// A session made under another runtime than the one radiald runs now (made under docker, then
// run.containerRuntime = "sandbox") is that runtime's: a turn of it, a snapshot and `rm` through
// sandbox are refused naming --runtime docker, `ls` says whose it is, and reconciliation keeps it
// and its box (the sandbox runtime lists no docker box, so it took the session for gone, removed
// its record and left the box running). Under docker again, all of it works.
TEST(SandboxLive, ASessionOfAnotherRuntimeIsThatRuntimesNotGoneForThisOne) {
    SandboxSetup s;
    const std::string sandbox_config = test::read_file(s.setup.config());
    std::string docker_config = sandbox_config;
    docker_config.replace(docker_config.find("containerRuntime = \"sandbox\""),
                          std::string("containerRuntime = \"sandbox\"").size(),
                          "containerRuntime = \"docker\"");
    docker_config.erase(docker_config.find("[run.sandbox]")); // the last table
    auto use = [&](const std::string& text) { std::ofstream(s.setup.config()) << text; };
    use(docker_config);
    test::Session session(s.setup, {});
    ASSERT_EQ(session.created.exit_code, 0) << session.created.err;
    use(sandbox_config);
    auto turn = s.setup.turn({"--session", session.id}, {"true"});
    EXPECT_EQ(turn.result.exit_code, 125) << turn.result.err;
    EXPECT_THAT(turn.result.err, HasSubstr("was created under runtime 'docker'"));
    EXPECT_THAT(turn.result.err, HasSubstr("--runtime docker"));
    auto cmd = [&](std::vector<std::string> args) {
        std::vector<std::string> a = {RADIALD_PATH, "session"};
        a.insert(a.end(), args.begin(), args.end());
        a.insert(a.end(), {"--config", s.setup.config()});
        return test::run_process(a, {}, std::chrono::seconds(120));
    };
    for (const char* verb : {"snapshot", "rm"}) {
        auto r = cmd({verb, session.id});
        EXPECT_EQ(r.exit_code, 1) << verb << ": " << r.err;
        EXPECT_THAT(r.err, HasSubstr("--runtime docker")) << verb;
    }
    auto ls = cmd({"ls"});
    EXPECT_THAT(ls.out, HasSubstr("box runtime docker's")) << ls.out << ls.err;
    auto reconciled = test::run_process({RADIALD_PATH, "reconcile", "--config", s.setup.config()},
                                        {}, std::chrono::seconds(120));
    EXPECT_EQ(reconciled.exit_code, 0) << reconciled.err;
    EXPECT_EQ(test::run_process({"docker", "inspect", session.box()}).exit_code, 0)
        << "the box was left to itself";
    use(docker_config);
    auto in_docker = cmd({"ls"});
    EXPECT_THAT(in_docker.out, HasSubstr(session.id + "  ")) << in_docker.out << in_docker.err;
    EXPECT_THAT(in_docker.out, HasSubstr("box present")) << in_docker.out;
    auto rm = cmd({"rm", session.id});
    EXPECT_EQ(rm.exit_code, 0) << rm.err;
    EXPECT_NE(test::run_process({"docker", "inspect", session.box()}).exit_code, 0);
}

} // namespace
} // namespace radial
