// `radiald turn` end to end: the real binary, the real docker plugin .so, the real engine and the
// local test image (issue 2 "Tests", cases C-02, C-03, C-06, C-07, C-09).
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/temp_dir.h"

#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

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
    return test::run_process({"docker", "ps", "-aq", "--filter", "label=radial.label=" + label}).out;
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
    EXPECT_THAT(t.record["startedAt"].get<std::string>(), ::testing::MatchesRegex("[0-9-]+T[0-9:.]+Z"));
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

TEST(RadialdTurnLive, RootFilesystemIsReadOnlyAndUserIsNotRoot) {
    auto t = run_turn({}, {"sh", "-c", "id -u; touch /probe && echo wrote-root; touch /tmp/ok && echo tmp-ok"});
    EXPECT_THAT(t.result.out, Not(HasSubstr("wrote-root")));
    EXPECT_THAT(t.result.out, HasSubstr("tmp-ok"));
    EXPECT_THAT(t.result.out, Not(::testing::StartsWith("0\n")));
    EXPECT_THAT(t.result.err, HasSubstr("Read-only file system"));
}

// /tmp allows exec (tools build and run binaries under TMPDIR) and keeps nosuid and nodev, as the
// README's hardening list says: a binary copied there runs.
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

// C-06: a box that ignores SIGTERM is still killed and removed at its timeout.
TEST(RadialdTurnLive, TimeoutEndsTheTurnAndLeavesNoContainer) {
    auto t0 = std::chrono::steady_clock::now();
    auto t = run_turn({"--timeout", "2s"}, {"sh", "-c", "trap '' TERM; sleep 30"});
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(15));
    EXPECT_EQ(t.result.exit_code, 124) << t.result.err;
    EXPECT_EQ(t.record["status"], "timed_out");
    EXPECT_EQ(containers_labelled(t.record["label"]), "");
    auto ps = test::run_process({"sh", "-c", "ps -eo args | grep -c '^sleep 30$' || true"});
    EXPECT_EQ(ps.out, "0\n");
}

// C-03: quotes, $, backslashes, newlines and UTF-8 arrive byte for byte.
TEST(RadialdTurnLive, C03_QuotingSurvivesTheTrip) {
    auto t = run_turn({}, {"sh", "-c",
                           "X=inner; printf '%s|%s|%s\\n' \"it's\" \"$X\" 'a\\b'\nprintf 'h\xc3\xa9llo \xe2\x9c\x93 *\\n'"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "it's|inner|a\\b\nh\xc3\xa9llo \xe2\x9c\x93 *\n");
}

bool any_cmdline_contains(const std::string& needle) {
    std::unique_ptr<DIR, int (*)(DIR*)> proc(::opendir("/proc"), ::closedir);
    if (!proc) return false;
    while (auto* e = ::readdir(proc.get())) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        std::string cmdline = test::read_file(std::string("/proc/") + e->d_name + "/cmdline");
        if (cmdline.find(needle) != std::string::npos) return true;
    }
    return false;
}

// C-02: a secret's value is never on any process's command line while the turn runs.
TEST(RadialdTurnLive, C02_SecretValueNeverOnAnyCommandLine) {
    const std::string secret = std::string("ghp_FAKE") + "0123456789abcdef"; // not a literal in our own argv
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
                      {"sh", "-c", "sleep 3; [ ${#GH_TOKEN} -eq 24 ] && echo ok"}, {{"GH_TOKEN", secret}});
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
}

} // namespace
} // namespace radial
