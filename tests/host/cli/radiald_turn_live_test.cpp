// `radiald turn` end to end: the real binary, the real docker plugin .so, the real engine and the
// local test image (docs/design.md §5 "Tests", cases C-02, C-03, C-06, C-07, C-09).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

using Turn = test::TurnRun;

// Runs `radiald turn` hermetically (private state dir) with the given flags and command.
Turn run_turn(const std::vector<std::string>& flags, const std::vector<std::string>& argv,
              const std::map<std::string, std::string>& env = {}) {
    test::RadialdSetup setup;
    return setup.turn(flags, argv, env);
}

// Every container, in any state, carrying the given radial label.
std::string containers_labelled(const std::string& label) {
    return test::run_process({"docker", "ps", "-aq", "--filter", "label=radial.label=" + label})
        .out;
}

TEST(RadialdTurnLive, MarkerOutputAndAWorkspaceFileTheHostCanRead) {
    test::TempDir ws("radial-ws");
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    auto t = run_turn({"--workspace", ws.path()},
                      {"sh", "-c", "echo marker-7f3e; echo 'from the box' > /work/out.txt; pwd"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "marker-7f3e\n/work\n");
    EXPECT_EQ(test::read_file(ws / "out.txt"), "from the box\n");
    EXPECT_EQ(t.record["status"], "succeeded");
    EXPECT_EQ(t.record["exitCode"], 0);
    EXPECT_EQ(t.record["runtime"], "docker");
    EXPECT_EQ(t.record["image"], RADIAL_TEST_IMAGE);
    EXPECT_FALSE(t.record["turnId"].get<std::string>().empty());
    EXPECT_GE(t.record["durationMs"].get<std::int64_t>(), 0);
    EXPECT_THAT(t.record["startedAt"].get<std::string>(),
                ::testing::MatchesRegex("[0-9-]+T[0-9:.]+Z"));
    EXPECT_EQ(containers_labelled(t.record["label"]), "");
}

TEST(RadialdTurnLive, ExitCodeThreePropagates) {
    auto t = run_turn({}, {"sh", "-c", "echo to-stderr >&2; exit 3"});
    EXPECT_EQ(t.result.exit_code, 3);
    EXPECT_THAT(t.result.err, HasSubstr("to-stderr\n"));
    EXPECT_EQ(t.record["status"], "failed");
    EXPECT_EQ(t.record["exitCode"], 3);
}

TEST(RadialdTurnLive, NoNetworkInterfaceButLoopback) {
    auto t = run_turn({}, {"sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "lo\n");
}

// Under mode read-only; workspace-write gives the box a private writable layer instead
// (radiald_workspace_mode_live_test.cpp).
TEST(RadialdTurnLive, RootFilesystemIsReadOnlyAndUserIsNotRoot) {
    auto t = run_turn(
        {"--mode", "read-only"},
        {"sh", "-c", "id -u; touch /probe && echo wrote-root; touch /tmp/ok && echo tmp-ok"});
    EXPECT_THAT(t.result.out, Not(HasSubstr("wrote-root")));
    EXPECT_THAT(t.result.out, HasSubstr("tmp-ok"));
    EXPECT_THAT(t.result.out, Not(::testing::StartsWith("0\n")));
    EXPECT_THAT(t.result.err, HasSubstr("Read-only file system"));
}

// /tmp allows exec (tools build and run binaries under TMPDIR) and keeps nosuid and nodev, as the
// hardening list in docs/configuration.md says: a binary copied there runs.
TEST(RadialdTurnLive, TmpRunsACopiedBinaryAndStaysNosuidNodev) {
    auto t = run_turn({}, {"sh", "-c",
                           // busybox picks its applet from argv[0]
                           "cp /bin/busybox /tmp/echo && chmod 755 /tmp/echo && "
                           "/tmp/echo ran-from-tmp && grep ' /tmp ' /proc/mounts"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_THAT(t.result.out, ::testing::StartsWith("ran-from-tmp\n")) << t.result.err;
    EXPECT_THAT(t.result.out, ::testing::ContainsRegex("tmpfs /tmp tmpfs rw,nosuid,nodev[ ,]"));
    EXPECT_THAT(t.result.out, Not(HasSubstr("noexec")));
}

// C-06: a box that ignores SIGTERM is still killed and removed at its timeout, and every process
// it had (watched by pidfd, found through the box's own pid namespace) is gone with it.
TEST(RadialdTurnLive, TimeoutEndsTheTurnAndLeavesNoContainer) {
    const std::string instance = test::unique_instance_id("tmo");
    test::RadialdSetup setup("instanceId = \"" + instance + "\"\n");
    const std::string label = "radial-turn-" + instance + "-t1";
    test::ProcessWatch box_processes;
    auto t0 = std::chrono::steady_clock::now();
    auto turn = std::async(std::launch::async, [&] {
        return setup.turn({"--timeout", "2s", "--turn-id", "t1"},
                          {"sh", "-c", "trap '' TERM; sleep 30 & echo started; wait"});
    });
    // The box's init, its shell and its sleep, once the sleep is forked.
    bool watching = test::wait_until(
        [&] {
            auto pid = test::run_process({"docker", "inspect", "-f", "{{.State.Pid}}", label}).out;
            const long init = std::strtol(pid.c_str(), nullptr, 10); // "" before the box exists
            if (init <= 0) return false;
            auto procs = test::processes_in_pid_namespace_of(static_cast<pid_t>(init));
            bool has_sleep = false;
            for (pid_t p : procs)
                has_sleep = has_sleep || test::cmdline_of(p) == std::string(
                                                                    "sleep\0"
                                                                    "30\0",
                                                                    9);
            if (!has_sleep || procs.size() < 3) return false;
            for (pid_t p : procs) box_processes.add(p);
            return true;
        },
        std::chrono::seconds(30));
    auto t = turn.get();
    EXPECT_TRUE(watching) << "never saw the box's sleep: " << t.result.err;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(15));
    EXPECT_EQ(t.result.exit_code, 124) << t.result.err;
    EXPECT_EQ(t.record["status"], "timed_out");
    EXPECT_EQ(t.record["label"], label);
    EXPECT_EQ(containers_labelled(label), "");
    EXPECT_GE(box_processes.size(), 3u);
    EXPECT_TRUE(
        test::wait_until([&] { return box_processes.alive() == 0; }, std::chrono::seconds(5)))
        << box_processes.alive() << " of the box's processes outlived it";
}

// C-03: quotes, $, backslashes, newlines and UTF-8 arrive byte for byte.
TEST(RadialdTurnLive, C03_QuotingSurvivesTheTrip) {
    auto t = run_turn({}, {"sh", "-c",
                           "X=inner; printf '%s|%s|%s\\n' \"it's\" \"$X\" 'a\\b'\nprintf "
                           "'h\xc3\xa9llo \xe2\x9c\x93 *\\n'"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "it's|inner|a\\b\nh\xc3\xa9llo \xe2\x9c\x93 *\n");
}

// Whether any process on the host has `needle` on its command line. Every process is looked at
// (that is the point), and one that vanishes between the listing and the read had nothing to show.
bool any_cmdline_contains(const std::string& needle) {
    for (const auto& cmdline : test::all_cmdlines())
        if (cmdline.find(needle) != std::string::npos) return true;
    return false;
}

// C-02: a secret's value is never on any process's command line while the turn runs.
TEST(RadialdTurnLive, C02_SecretValueNeverOnAnyCommandLine) {
    // Unique to this run (so no other test's secret can be mistaken for ours), 24 bytes long, and
    // never on this test's own command line.
    const std::string secret = test::unique_instance_id("ghp_FAKE") + "01234567";
    std::atomic<bool> done{false};
    std::atomic<int> scans{0};
    std::atomic<bool> seen{false};
    std::thread scanner([&] {
        while (!done) {
            if (any_cmdline_contains(secret)) seen = true;
            ++scans;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    });
    auto t = run_turn({"--secret", "GH_TOKEN"},
                      {"sh", "-c", "sleep 3; [ ${#GH_TOKEN} -eq 24 ] && echo ok"},
                      {{"GH_TOKEN", secret}});
    done = true;
    scanner.join();
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "ok\n");
    EXPECT_GT(scans.load(), 20);
    EXPECT_FALSE(seen.load());
    EXPECT_THAT(t.result.err, Not(HasSubstr(secret)));
    EXPECT_THAT(t.record.dump(), Not(HasSubstr(secret)));
}

// C-07: an engine that does not answer fails closed with a clear error.
TEST(RadialdTurnLive, C07_UnreachableEngineFailsClosed) {
    test::RadialdSetup dead("", "[run.docker]\nhost = \"unix:///nonexistent.sock\"\n");
    test::TempDir marker_dir("radial-marker");
    auto t = dead.turn({}, {"sh", "-c", "touch " + marker_dir.path() + "/ran-on-host"});
    EXPECT_EQ(t.result.exit_code, 125);
    EXPECT_THAT(t.result.err, HasSubstr("unreachable"));
    EXPECT_FALSE(std::filesystem::exists(marker_dir / "ran-on-host"));
    EXPECT_EQ(t.record["status"], "error");
    EXPECT_THAT(t.record["error"].get<std::string>(), HasSubstr("unreachable"));
    // With the engine back (the default host), the next turn works: no failure was cached.
    auto ok = run_turn({}, {"true"});
    EXPECT_EQ(ok.result.exit_code, 0) << ok.result.err;
}

// C-09: the turn reports what the command did.
TEST(RadialdTurnLive, C09_ExitStatusTable) {
    EXPECT_EQ(run_turn({}, {"sh", "-c", "false | true"}).result.exit_code, 0);
    EXPECT_EQ(run_turn({}, {"sh", "-c", "true | false"}).result.exit_code, 1);
    EXPECT_EQ(run_turn({}, {"sh", "-c", "nonexistent_cmd_xyz"}).result.exit_code, 127);
    auto killed = run_turn({}, {"sh", "-c", "kill -9 $$"});
    EXPECT_EQ(killed.result.exit_code, 137);
    EXPECT_EQ(killed.record["status"], "failed");
}

TEST(RadialdTurnLive, C09_MissingImageIsARuntimeErrorWithDockersMessage) {
    // pull = "never": a pull would look the registry up through the machine's resolver, and tests
    // send no traffic beyond loopback.
    test::RadialdSetup setup("", "[run.docker]\npull = \"never\"\n");
    auto t = setup.turn({}, {"true"}, {}, "does-not-exist.invalid/x:1");
    EXPECT_EQ(t.result.exit_code, 125) << t.result.err;
    EXPECT_EQ(t.record["status"], "error");
    EXPECT_THAT(t.record["error"].get<std::string>(), HasSubstr("does-not-exist.invalid"));
    // docker's answer without a pull (a pull would fail on the registry's name instead).
    EXPECT_THAT(t.record["error"].get<std::string>(), HasSubstr("No such image"));
    EXPECT_FALSE(t.record.contains("exitCode"));
    // The digest it could not be pinned to is said of the image, not of a session it is not.
    EXPECT_THAT(t.result.err, HasSubstr("is not present on the engine, so it has no digest yet"));
    EXPECT_THAT(t.result.err, ::testing::Not(HasSubstr("session"))) << t.result.err;
}

// C-20: secrets stored with a line ending, surrounding spaces or surrounding quotes are printed
// trimmed or unquoted by the shell; none of those forms may reach the output, the terminal record
// or the journal.
TEST(RadialdTurnLive, C20_TrimmedAndUnquotedSecretsAreRedacted) {
    test::RadialdSetup setup;
    const std::string nl = "Zq8-wX41-pL0k", sp = "Hh5-kK31-zZ8w", q = "Qw3-rT55-yU7i";
    auto t = setup.turn(
        {"--secret", "TOK_NL", "--secret", "TOK_SP", "--secret", "TOKQ"},
        {"sh", "-c",
         "printf \"a=%s;\\n\" $TOK_NL; printf \"c=%s;\\n\" $TOK_SP; "
         "eval \"q=$TOKQ\"; printf \"dq=%s\\n\" \"$q\""},
        {{"TOK_NL", nl + "\n"}, {"TOK_SP", "  " + sp + "  "}, {"TOKQ", "\"" + q + "\""}});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "a=[REDACTED:TOK_NL];\nc=[REDACTED:TOK_SP];\ndq=[REDACTED:TOKQ]\n");
    std::string journal;
    for (const auto& entry : std::filesystem::directory_iterator(t.state_dir))
        if (entry.path().filename().string().starts_with("journal.sqlite3"))
            journal += test::read_file(entry.path());
    EXPECT_FALSE(journal.empty());
    for (const auto& v : {nl, sp, q}) {
        EXPECT_THAT(t.result.out + t.result.err, Not(HasSubstr(v)));
        EXPECT_THAT(t.record.dump(), Not(HasSubstr(v)));
        EXPECT_THAT(journal, Not(HasSubstr(v)));
    }
}

// C-24: the output tail is cut on a character boundary: it never starts with a replacement
// character the box did not print, and stays within 4096 bytes. The newline makes the output
// 6001 bytes, so its last 4096 start inside an é.
TEST(RadialdTurnLive, C24_OutputTailIsCutOnACharacterBoundary) {
    auto t = run_turn(
        {},
        {"sh", "-c", "i=0; while [ $i -lt 3000 ]; do printf '\xc3\xa9'; i=$((i+1)); done; echo"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out.size(), 6001u);
    const std::string tail = t.record["outputTail"]["stdout"];
    EXPECT_LE(tail.size(), 4096u);
    EXPECT_EQ(tail.size(), 4095u) << "the cut é is dropped whole";
    EXPECT_TRUE(tail.starts_with("\xc3\xa9")) << tail.substr(0, 8);
    EXPECT_THAT(tail, Not(HasSubstr("\xef\xbf\xbd"))) << "U+FFFD the box never printed";
    EXPECT_FALSE(t.record["outputTail"].contains("stdoutBase64"));
}

// C-21: the box swaps the record's directory for a symlink while it runs. radiald (root) must not
// write where the symlink leads; it says the record could not be written where it was asked.
TEST(RadialdTurnLive, C21_ARecordDirectorySwappedForASymlinkIsNotFollowed) {
    test::TempDir ws("radial-ws"), elsewhere("radial-elsewhere");
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    ASSERT_EQ(::chmod(elsewhere.path().c_str(), 0777), 0);
    std::filesystem::create_directory(ws / "sub");
    ASSERT_EQ(::chmod((ws / "sub").c_str(), 0777), 0);
    test::RadialdSetup setup;
    auto r = test::run_process({RADIALD_PATH, "turn", "--config", setup.config(), "--image",
                                RADIAL_TEST_IMAGE, "--workspace", ws.path(), "--record-file",
                                ws / "sub/record.json", "--", "sh", "-c",
                                "rm -rf /work/sub && ln -s " + elsewhere.path() + " /work/sub"});
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.err, HasSubstr("was removed or replaced")) << r.err;
    EXPECT_TRUE(std::filesystem::is_empty(elsewhere.path())) << "radiald wrote through the link";
}

// The same class: a symlink planted at the record's own name is replaced, never followed.
TEST(RadialdTurnLive, C21_ASymlinkPlantedAtTheRecordNameIsReplaced) {
    test::TempDir ws("radial-ws"), elsewhere("radial-elsewhere");
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    ASSERT_EQ(::chmod(elsewhere.path().c_str(), 0777), 0);
    test::RadialdSetup setup;
    auto r = test::run_process({RADIALD_PATH, "turn", "--config", setup.config(), "--image",
                                RADIAL_TEST_IMAGE, "--workspace", ws.path(), "--record-file",
                                ws / "record.json", "--", "sh", "-c",
                                "ln -s " + elsewhere.path() + "/record.json /work/record.json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(std::filesystem::is_empty(elsewhere.path())) << "radiald wrote through the link";
    EXPECT_FALSE(std::filesystem::is_symlink(ws / "record.json"));
    auto rec = nlohmann::json::parse(test::read_file(ws / "record.json"));
    EXPECT_EQ(rec["status"], "succeeded");
}

// Ctrl-C, SIGTERM, and a closed terminal (SIGHUP, SIGQUIT) each kill the box: radiald exits 130,
// records the turn interrupted, and leaves no box behind.
TEST(RadialdTurnLive, EveryStopSignalKillsTheBoxAndExits130) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
        const std::string instance = test::unique_instance_id("sig");
        test::RadialdSetup setup("instanceId = \"" + instance + "\"\n");
        const std::string label = "radial-turn-" + instance + "-s1";
        const std::string record = setup.dir() / "record.json";
        test::BackgroundProcess radiald({std::string(RADIALD_PATH), "turn", "--config",
                                         setup.config(), "--image", RADIAL_TEST_IMAGE, "--turn-id",
                                         "s1", "--record-file", record, "--", "sleep", "600"});
        const bool running = test::wait_until(
            [&] {
                return test::run_process({"docker", "inspect", "-f", "{{.State.Running}}", label})
                           .out == "true\n";
            },
            std::chrono::seconds(30));
        EXPECT_TRUE(running) << "signal " << sig << ": the box never ran";
        radiald.signal(sig);
        EXPECT_EQ(radiald.wait(), 130) << "signal " << sig;
        EXPECT_EQ(containers_labelled(label), "") << "signal " << sig;
        auto rec = nlohmann::json::parse(test::read_file(record));
        EXPECT_EQ(rec["reason"], "interrupted") << rec.dump();
    }
}

// A workspace that belongs to root is never handed to the box: radiald says so, and what to do,
// instead of leaving the box with a bare "Permission denied".
TEST(RadialdTurnLive, ARootOwnedWorkspaceIsNamedWithWhatToDo) {
    test::TempDir ws("radial-root-ws"); // made by the test, which runs as root
    ASSERT_EQ(::chmod(ws.path().c_str(), 0755), 0);
    test::RadialdSetup setup;
    auto r = test::run_process({RADIALD_PATH, "turn", "--config", setup.config(), "--image",
                                RADIAL_TEST_IMAGE, "--workspace", ws.path(), "--mode",
                                "workspace-write", "--", "sh", "-c", "echo x > /work/f"});
    EXPECT_NE(r.exit_code, 0) << "the box could write a root-owned 0755 workspace";
    EXPECT_THAT(r.err, HasSubstr("workspace '" + ws.path() + "' belongs to root"));
    EXPECT_THAT(r.err, HasSubstr("chown -R USER: '" + ws.path() + "'"));
    // Read-only: nothing to write, nothing to say.
    auto ro = test::run_process({RADIALD_PATH, "turn", "--config", setup.config(), "--image",
                                 RADIAL_TEST_IMAGE, "--workspace", ws.path(), "--mode", "read-only",
                                 "--", "true"});
    EXPECT_EQ(ro.exit_code, 0) << ro.err;
    EXPECT_THAT(ro.err, Not(HasSubstr("belongs to root")));
}

// SIGUSR1, SIGUSR2 and SIGALRM (a stray `kill -USR1`, a shell's alarm) neither kill radiald turn
// nor its box: each is logged and the turn runs to its own end.
TEST(RadialdTurnLive, SignalsWithoutAMeaningAreLoggedAndTheTurnGoesOn) {
    const std::string instance = test::unique_instance_id("usr");
    test::RadialdSetup setup("instanceId = \"" + instance + "\"\n");
    const std::string label = "radial-turn-" + instance + "-u1";
    const std::string record = setup.dir() / "record.json";
    test::BackgroundProcess radiald(
        {std::string(RADIALD_PATH), "turn", "--config", setup.config(), "--image",
         RADIAL_TEST_IMAGE, "--turn-id", "u1", "--record-file", record, "--", "sh", "-c",
         "echo up; sleep 600 & wait"},
        setup.dir() / "stderr.txt");
    ASSERT_TRUE(test::wait_until(
        [&] {
            return test::run_process({"docker", "inspect", "-f", "{{.State.Running}}", label})
                       .out == "true\n";
        },
        std::chrono::seconds(30)));
    for (int sig : {SIGUSR1, SIGUSR2, SIGALRM}) radiald.signal(sig);
    ASSERT_TRUE(test::wait_until(
        [&] {
            const auto err = test::read_file(setup.dir() / "stderr.txt");
            return err.find("SIGUSR1 received and ignored") != std::string::npos &&
                   err.find("SIGUSR2 received and ignored") != std::string::npos &&
                   err.find("SIGALRM received and ignored") != std::string::npos;
        },
        std::chrono::seconds(30)))
        << test::read_file(setup.dir() / "stderr.txt");
    // Still running: the box too. Then the turn is stopped the usual way.
    EXPECT_EQ(test::run_process({"docker", "inspect", "-f", "{{.State.Running}}", label}).out,
              "true\n");
    radiald.signal(SIGINT);
    EXPECT_EQ(radiald.wait(), 130);
    EXPECT_EQ(containers_labelled(label), "");
}

// The operator's [redact] extras: literal values and the values of named environment variables
// are masked in every turn, with markers that name where each came from.
TEST(RadialdTurnLive, RedactTableValuesAndEnvNamesAreMasked) {
    test::RadialdSetup setup("",
                             "[redact]\nvalues = [\"lit-Secret-91\", \"lit-Secret-92\"]\n"
                             "envNames = [\"RADIAL_TEST_OPERATOR_SECRET\"]\n");
    // They are the operator's words to mask, not the turn's secrets: a command quoting them runs
    // (a turn's own secret there is refused: ASecretInAFieldTheRuntimeKeepsIsRefused).
    auto t = setup.turn({}, {"echo", "lit-Secret-91 lit-Secret-92 op-Secret-93"},
                        {{"RADIAL_TEST_OPERATOR_SECRET", "op-Secret-93"}});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out,
              "[REDACTED:redact.values.0] [REDACTED:redact.values.1] "
              "[REDACTED:RADIAL_TEST_OPERATOR_SECRET]\n");
}

} // namespace
} // namespace radial
