// A box's command cannot reach its PID 1 (docs/design.md §13.8): radial-init is not dumpable, so
// the command — the same uid — can neither ptrace it (which would stop the box's deadline) nor
// read its /proc files (its environment holds the secret variables). Shown with radiald SIGKILLed:
// the box still ends at its deadline. The probe (probes/init_reach_probe.c) runs from the
// workspace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <radial/internal/proc_file.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "../../support/box_id_leases.h"
#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/temp_dir.h"
#include "../daemon/docker_boxes.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(BoxIsolationLive, TheCommandCannotPtraceOrReadItsInitAndTheDeadlineHoldsWithRadialdDead) {
    const std::string inst = test::unique_instance_id("bi");
    test::BoxCleanup cleanup{"radial-turn-" + inst + "-"};
    test::RadialdSetup setup("instanceId = \"" + inst + "\"\n",
                             "[run.docker]\npull = \"never\"\nkillGrace = \"2s\"\n");
    test::TempDir ws("radial-ws");
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    fs::copy_file(RADIAL_INIT_REACH_PROBE, ws / "probe");
    ASSERT_EQ(::chmod((ws / "probe").c_str(), 0755), 0);
    const std::string turn_id = "bi-" + test::unique_instance_id("t");
    test::BackgroundProcess turn(
        {RADIALD_PATH, "turn", "--config", setup.config(), "--image", RADIAL_TEST_IMAGE,
         "--workspace", ws.path(), "--turn-id", turn_id, "--timeout", "4s", "--", "sh", "-c",
         "/work/probe /work/probe.out; sleep 600"},
        ws / "radiald.log");
    ASSERT_TRUE(test::wait_until([&] { return fs::exists(ws / "probe.out"); }, 120s))
        << test::read_file(ws / "radiald.log");
    const auto probed = std::chrono::steady_clock::now();
    turn.signal(SIGKILL);
    turn.wait(30s);
    const std::string said = test::read_file(ws / "probe.out");
    EXPECT_THAT(said, ::testing::HasSubstr("attach: Operation not permitted\n"));
    EXPECT_THAT(said, ::testing::HasSubstr("environ: Permission denied\n"));
    // 4 s timeout + 2 s killGrace, from a moment after the box started, + 10 s for a loaded
    // machine: a stopped PID 1 would keep the box for the probe's 600 s.
    const std::string box = "radial-turn-" + inst + "-" + turn_id;
    const auto budget = std::chrono::duration_cast<std::chrono::milliseconds>(
        probed + 16s - std::chrono::steady_clock::now());
    EXPECT_TRUE(test::wait_until([&] { return test::box_state(box) != "running"; }, budget))
        << "box " << box << " outlived its deadline with no radiald: " << said;
    // The killed radiald's box ids stay leased until its state directory is reconciled
    // (turn/box_id_lease.h), then are free.
    EXPECT_EQ(test::box_id_leases_of(setup.state_dir()), 1u);
    auto r = test::run_process({RADIALD_PATH, "reconcile", "--config", setup.config()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, ::testing::HasSubstr("freed box ids "));
    EXPECT_EQ(test::box_id_leases_of(setup.state_dir()), 0u);
}

// An image's HEALTHCHECK would have the engine run its command in the box beside the turn (and
// between a session's turns), outside radial-init: no deadline, no setuid filter, no session
// check of what it changed. No box runs one. The image is built here from the test image.
TEST(BoxIsolationLive, AnImagesHealthCheckNeverRunsInTheBox) {
    const std::string image = "radial-test-hc:" + std::to_string(::getpid());
    const auto built = test::build_from_test_image(
        image, "HEALTHCHECK --interval=1s CMD touch /work/health-ran\n");
    ASSERT_EQ(built.exit_code, 0) << built.err;
    const std::string inst = test::unique_instance_id("hc");
    test::BoxCleanup cleanup{"radial-turn-" + inst + "-"};
    test::RadialdSetup setup("instanceId = \"" + inst + "\"\n");
    test::TempDir ws("radial-ws");
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    const std::string turn_id = "hc-" + test::unique_instance_id("t");
    test::BackgroundProcess turn(
        {RADIALD_PATH, "turn", "--config", setup.config(), "--image", image, "--workspace",
         ws.path(), "--turn-id", turn_id, "--timeout", "120s", "--", "sh", "-c",
         "touch /work/started; while [ ! -e /work/stop ]; do sleep 0.1; done"},
        ws / "radiald.log");
    ASSERT_TRUE(test::wait_until([&] { return fs::exists(ws / "started"); }, 120s))
        << test::read_file(ws / "radiald.log");
    const std::string box = "radial-turn-" + inst + "-" + turn_id;
    const auto inspected = test::run_process(
        {"docker", "inspect", "-f", "{{json .Config.Healthcheck}} {{json .State.Health}}", box});
    ws.write("stop", "");
    EXPECT_EQ(turn.wait(60s), 0) << test::read_file(ws / "radiald.log");
    // The engine keeps the image's other fields (its interval); NONE turns the check off.
    EXPECT_THAT(inspected.out, ::testing::StartsWith("{\"Test\":[\"NONE\"]")) << inspected.err;
    EXPECT_THAT(inspected.out, ::testing::EndsWith("} null\n")) << "no health state at all";
    EXPECT_FALSE(fs::exists(ws / "health-ran")) << "the image's health check ran in the box";
    test::run_process({"docker", "rmi", "-f", image});
}

// A box cannot make a setuid or setgid file by any call (radial-init's filter,
// plugins/box-init/no_setid_files.h) — not even 130 levels deep — while it still makes and changes
// ordinary files; after the turn nothing in the workspace has either bit and all is the owner's.
// (The hand-back clears any such file at any depth as well: WorkspaceHandover tests.)
TEST(BoxIsolationLive, TheBoxCannotMakeASetuidOrSetgidFileByAnyCall) {
    test::RadialdSetup setup;
    test::TempDir ws("radial-ws");
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    fs::copy_file(RADIAL_SETID_PROBE, ws / "probe");
    ASSERT_EQ(::chmod((ws / "probe").c_str(), 0755), 0);
    ASSERT_EQ(::chown((ws / "probe").c_str(), 65534, 65534), 0);
    auto t = setup.turn({"--workspace", ws.path()},
                        {"sh", "-c",
                         "mkdir /work/p && /work/probe /work/p && d=/work && i=0 && "
                         "while [ $i -lt 130 ]; do d=$d/d; mkdir $d; i=$((i+1)); done && "
                         "cp /bin/busybox $d/sh && chmod 4755 $d/sh; echo deep=$?"});
    ASSERT_EQ(t.result.exit_code, 0) << t.result.err;
    const char* denied = ": Operation not permitted\n";
    for (const char* call :
         {"chmod 4755", "fchmod 2755", "fchmodat 6755", "fchmodat2 4755", "open O_CREAT 4755",
          "openat O_CREAT 2755", "creat 6755", "mknod 4755", "mknodat 2755"})
        EXPECT_THAT(t.result.out, ::testing::HasSubstr(std::string(call) + denied));
    EXPECT_THAT(t.result.out, ::testing::HasSubstr("openat2: Function not implemented\n"));
    for (const char* call : {"chmod 0700", "fchmod 0755", "open O_CREAT 0644", "open O_RDONLY"})
        EXPECT_THAT(t.result.out, ::testing::HasSubstr(std::string(call) + ": ok\n"));
    EXPECT_THAT(t.result.out, ::testing::HasSubstr("deep=1\n"));
    EXPECT_THAT(t.result.err, ::testing::HasSubstr("Operation not permitted"));
    std::size_t files = 0;
    for (const auto& e : fs::recursive_directory_iterator(ws.path())) {
        struct stat st {};
        ASSERT_EQ(::lstat(e.path().c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0u) << e.path();
        EXPECT_EQ(st.st_uid, 65534u) << e.path();
        files += e.is_regular_file() ? 1 : 0;
    }
    EXPECT_EQ(files, 4u); // the probe, its plain and ok files, the deep copy
}

// One turn per workspace (turn/workspace_lock.h): a second `radiald turn` on a workspace a running
// turn holds is refused before its box, naming the key that allows it; the first is unaffected.
// With run.sharedWorkspaces = true, the second runs.
TEST(BoxIsolationLive, ASecondTurnOnAWorkspaceInUseIsRefusedUnlessTheOperatorAllowsIt) {
    test::RadialdSetup setup;
    test::RadialdSetup shared("sharedWorkspaces = true\n");
    test::TempDir ws("radial-ws");
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    test::BackgroundProcess first(
        {RADIALD_PATH, "turn", "--config", setup.config(), "--image", RADIAL_TEST_IMAGE,
         "--workspace", ws.path(), "--", "sh", "-c",
         "touch /work/ready; while [ ! -e /work/go ]; do sleep 0.1; done; echo first > /work/f"},
        ws / "first.log");
    ASSERT_TRUE(test::wait_until([&] { return fs::exists(ws / "ready"); }, 120s))
        << test::read_file(ws / "first.log");
    auto second = setup.turn({"--workspace", ws.path()}, {"sh", "-c", "echo second > /work/s"});
    EXPECT_EQ(second.result.exit_code, 125) << second.result.err;
    EXPECT_THAT(second.result.err, ::testing::HasSubstr("is in use by another turn"));
    EXPECT_THAT(second.result.err, ::testing::HasSubstr("run.sharedWorkspaces"));
    EXPECT_EQ(second.record["status"], "error");
    EXPECT_FALSE(fs::exists(ws / "s")) << "the second turn's box ran";
    auto side_by_side =
        shared.turn({"--workspace", ws.path()}, {"sh", "-c", "echo shared > /work/s"});
    EXPECT_EQ(side_by_side.result.exit_code, 0) << side_by_side.result.err;
    std::ofstream(ws / "go").put('\n');
    EXPECT_EQ(first.wait(120s), 0) << test::read_file(ws / "first.log");
    EXPECT_EQ(test::read_file(ws / "f"), "first\n");
    // Free again: the next turn runs.
    auto after = setup.turn({"--workspace", ws.path()}, {"true"});
    EXPECT_EQ(after.result.exit_code, 0) << after.result.err;
}

// No request mounts another radiald instance's state directory (its journal, its managed-auth
// files): while instance B runs a turn, a turn of instance A that names B's state directory, or
// a directory inside it, as its workspace is refused before its box.
TEST(BoxIsolationLive, AnotherInstancesStateDirectoryIsNeverMounted) {
    test::RadialdSetup a, b;
    test::TempDir ws("radial-ws");
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    test::BackgroundProcess running(
        {RADIALD_PATH, "turn", "--config", b.config(), "--image", RADIAL_TEST_IMAGE, "--workspace",
         ws.path(), "--", "sh", "-c",
         "touch /work/ready; while [ ! -e /work/go ]; do sleep 0.1; done"},
        ws / "b.log");
    ASSERT_TRUE(test::wait_until([&] { return fs::exists(ws / "ready"); }, 120s))
        << test::read_file(ws / "b.log");
    for (const std::string& target : {b.state_dir(), b.state_dir() + "/turns"}) {
        auto t = a.turn({"--workspace", target}, {"true"});
        EXPECT_EQ(t.result.exit_code, 125) << target << ": " << t.result.err;
        EXPECT_THAT(t.result.err, ::testing::HasSubstr("of another radiald on this host"))
            << target;
    }
    std::ofstream(ws / "go").put('\n');
    EXPECT_EQ(running.wait(120s), 0) << test::read_file(ws / "b.log");
}

// Neither radiald's config nor the docker client's configuration (its credentials, contexts and
// their TLS keys) is ever mounted: a box that owned a workspace holding the config replaced it
// and the next radiald ran boxes on the host network (docs/design.md §7.5). The host refuses
// both before any box (the docker runtime refuses the client's too, for what only it resolves).
TEST(BoxIsolationLive, AWorkspaceHoldingRadialdsConfigOrTheDockerClientsIsRefused) {
    test::RadialdSetup s;
    test::TempDir ws("radial-ws");
    fs::create_directories(ws / "etc");
    fs::copy_file(s.config(), ws / "etc/radiald.toml");
    auto own =
        test::run_process({RADIALD_PATH, "turn", "--config", ws / "etc/radiald.toml", "--image",
                           RADIAL_TEST_IMAGE, "--workspace", ws.path(), "--", "true"},
                          {}, 120s);
    EXPECT_EQ(own.exit_code, 125) << own.err;
    EXPECT_THAT(own.err, ::testing::HasSubstr("contains radiald's config file '" +
                                              ws / "etc/radiald.toml" + "'"));

    test::TempDir client("radial-ws");
    fs::create_directories(client / "dockercfg");
    std::ofstream(client / "dockercfg/config.json") << "{}";
    auto docker =
        s.turn({"--workspace", client.path()}, {"true"}, {{"DOCKER_CONFIG", client / "dockercfg"}});
    EXPECT_EQ(docker.result.exit_code, 125) << docker.result.err;
    EXPECT_THAT(docker.result.err,
                ::testing::HasSubstr("contains the docker client's configuration "
                                     "($DOCKER_CONFIG, else ~/.docker) '" +
                                     client / "dockercfg" + "'"));
}

// The pid of the box's command: the first child of its PID 1 (radial-init), whose host pid the
// engine reports.
std::string command_pid(const std::string& box) {
    auto r = test::run_process({"docker", "inspect", "-f", "{{.State.Pid}}", box});
    const std::string init = r.out.substr(0, r.out.find('\n'));
    if (init.empty() || init == "0") return {};
    std::string children =
        internal::read_proc_file("/proc/" + init + "/task/" + init + "/children");
    return children.substr(0, children.find(' '));
}

// Every box its own ids (turn/box_id_lease.h), so what the kernel gives per uid is per box: one
// box takes every inotify instance its uid may have (fs.inotify.max_user_instances) and holds
// them, and a box beside it still gets its own.
TEST(BoxIsolationLive, OneBoxTakingEveryInotifyInstanceOfItsUidLeavesAnotherBoxItsOwn) {
    const long limit = std::stol(test::read_file("/proc/sys/fs/inotify/max_user_instances"));
    test::RadialdSetup setup;
    test::TempDir a("radial-ws"), b("radial-ws");
    for (const auto* ws : {&a, &b}) {
        ASSERT_EQ(::chown(ws->path().c_str(), 65534, 65534), 0);
        fs::copy_file(RADIAL_UID_LIMITS_PROBE, *ws / "probe");
        ASSERT_EQ(::chmod((*ws / "probe").c_str(), 0755), 0);
    }
    const std::string turn_a = "ino-" + test::unique_instance_id("a");
    test::BackgroundProcess hog(
        {RADIALD_PATH, "turn", "--config", setup.config(), "--image", RADIAL_TEST_IMAGE,
         "--workspace", a.path(), "--turn-id", turn_a, "--record-file", a / "record.json", "--",
         "/work/probe", "inotify", std::to_string(limit + 16), "/work/a.out"},
        a / "radiald.log");
    ASSERT_TRUE(test::wait_until([&] { return fs::exists(a / "a.out"); }, 120s))
        << test::read_file(a / "radiald.log");
    EXPECT_EQ(test::read_file(a / "a.out"),
              "made=" + std::to_string(limit) + " stopped=Too many open files\n");
    auto other = setup.turn({"--workspace", b.path()},
                            {"sh", "-c",
                             "touch /work/b.out.release && /work/probe inotify 1 /work/b.out && "
                             "cat /work/b.out"});
    std::ofstream(a / "a.out.release").put('\n');
    EXPECT_EQ(hog.wait(120s), 0) << test::read_file(a / "radiald.log");
    EXPECT_EQ(other.result.exit_code, 0) << other.result.err;
    EXPECT_EQ(other.result.out, "made=1 stopped=none\n") << "the other box got no instance";
    const auto hog_record = nlohmann::json::parse(test::read_file(a / "record.json"));
    EXPECT_NE(hog_record.value("boxUser", std::string()), "");
    EXPECT_NE(hog_record.value("boxUser", std::string()),
              other.record.value("boxUser", std::string()));
}

// A local user who gets one box's ids (as a setuid file that box left would have given them, before
// a box could make none: TheBoxCannotMakeASetuidOrSetgidFileByAnyCall) is still nobody to another
// turn's box: its environment (where the secrets are) stays unreadable. The box's own command is
// readable that way, which shows the process did run with that box's ids.
TEST(BoxIsolationLive, ALocalUserWhoBecomesOneBoxCannotReadAnotherBoxesEnviron) {
    const std::string inst = test::unique_instance_id("en");
    test::BoxCleanup cleanup{"radial-turn-" + inst + "-"};
    test::RadialdSetup setup("instanceId = \"" + inst + "\"\n");
    test::TempDir a("radial-ws"), b("radial-ws");
    for (const auto* ws : {&a, &b}) {
        ASSERT_EQ(::chown(ws->path().c_str(), 65534, 65534), 0);
        ASSERT_EQ(::chmod(ws->path().c_str(), 0755), 0);
    }
    // Where any uid can run it.
    test::TempDir tools("radial-probe");
    ASSERT_EQ(::chmod(tools.path().c_str(), 0755), 0);
    fs::copy_file(RADIAL_UID_LIMITS_PROBE, tools / "probe");
    ASSERT_EQ(::chmod((tools / "probe").c_str(), 0755), 0);
    const std::string wait_go =
        "touch /work/ready; n=0; while [ ! -e /work/go ] && [ $n -lt 1200 ]; do sleep 0.1; "
        "n=$((n+1)); done";
    auto start = [&](const test::TempDir& ws, const std::string& id, const std::string& script) {
        return std::make_unique<test::BackgroundProcess>(
            std::vector<std::string>{RADIALD_PATH, "turn", "--config", setup.config(), "--image",
                                     RADIAL_TEST_IMAGE, "--workspace", ws.path(), "--turn-id", id,
                                     "--env", "A_VALUE=kept-in-the-box", "--", "sh", "-c", script},
            ws / "radiald.log");
    };
    const std::string id_a = "en-a-" + std::to_string(::getpid()),
                      id_b = "en-b-" + std::to_string(::getpid());
    auto turn_a = start(a, id_a, wait_go);
    auto turn_b = start(b, id_b, wait_go);
    for (const auto* ws : {&a, &b})
        ASSERT_TRUE(test::wait_until([&] { return fs::exists(*ws / "ready"); }, 120s))
            << test::read_file(*ws / "radiald.log");
    const std::string pid_a = command_pid("radial-turn-" + inst + "-" + id_a),
                      pid_b = command_pid("radial-turn-" + inst + "-" + id_b);
    // Box B's ids: the owner of what it made.
    struct stat sh {};
    const bool stat_ok = ::stat((b / "ready").c_str(), &sh) == 0;
    auto seen = test::run_process(
        {"setpriv", "--reuid", std::to_string(sh.st_uid), "--regid", std::to_string(sh.st_gid),
         "--clear-groups", tools / "probe", "environ", pid_a, pid_b},
        {}, 30s);
    for (const auto* ws : {&a, &b}) std::ofstream(*ws / "go").put('\n');
    EXPECT_EQ(turn_a->wait(120s), 0) << test::read_file(a / "radiald.log");
    EXPECT_EQ(turn_b->wait(120s), 0) << test::read_file(b / "radiald.log");
    ASSERT_FALSE(pid_a.empty() || pid_b.empty());
    ASSERT_TRUE(stat_ok);
    EXPECT_EQ(seen.out, "euid=" + std::to_string(sh.st_uid) + "\n" + pid_a +
                            ": Permission denied\n" + pid_b + ": readable\n")
        << seen.err;
    EXPECT_GE(sh.st_uid, 2000000000u) << "not the box's ids";
}

} // namespace
} // namespace radial
