// A box never shares its identity with a host account (docs/design.md §17, C-12): the default box
// uid:gid, the socket that only the box's uid and root can reach, the workspace handed back to its
// owner, the explicit choice of running as the workspace owner, and the startup check of the id
// range.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "../../support/id_squatter.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/temp_dir.h"
#include "../daemon/docker_boxes.h"

namespace radial {
namespace {
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

// The ids the turn's box ran as, from its record: leased from run.boxIdRange for the box alone
// (turn/box_id_lease.h), the same number as uid and gid.
uid_t box_id_of(const test::TurnRun& t) {
    const std::string ids = t.record.value("boxUser", std::string());
    const uid_t id = static_cast<uid_t>(std::stoul(ids.empty() ? "0" : ids));
    EXPECT_EQ(ids, std::to_string(id) + ":" + std::to_string(id));
    EXPECT_GE(id, 2000000000u); // the default run.boxIdRange
    EXPECT_LE(id, 2000065535u);
    return id;
}
constexpr uid_t kOwner = 4242;      // the workspace's owner (no passwd entry needed)
constexpr gid_t kOwnerGroup = 4243; // the workspace's group, e.g. `docker` on a real host
constexpr uid_t kUnrelated = 4343;

bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds budget) {
    const auto deadline = std::chrono::steady_clock::now() + budget;
    while (!done() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(20ms);
    return done();
}

// argv run as `uid` (gid the same, no supplementary groups).
test::ProcessResult as_uid(uid_t uid, const std::vector<std::string>& argv, gid_t gid = 0) {
    std::vector<std::string> a = {
        "setpriv",       "--reuid", std::to_string(uid), "--regid", std::to_string(gid ? gid : uid),
        "--clear-groups"};
    a.insert(a.end(), argv.begin(), argv.end());
    return test::run_process(a, {}, 30s);
}

std::string instance_id(const test::RadialdSetup& s) {
    std::string text = test::read_file(s.state_dir() + "/instance-id");
    return text.substr(0, text.find_first_of(" \n"));
}

std::vector<std::string> curl_post(const std::string& socket) {
    return {"curl",
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "5",
            "--unix-socket",
            socket,
            "-d",
            "{}",
            "http://radial/v1/records"};
}

// The box writes its ids and some files, signals ready, and waits (bounded) for the test.
const std::string kBoxScript = R"(id -u > /work/ids; id -g >> /work/ids; id -G >> /work/ids
mkdir -p /work/made/deeper; echo x > /work/made/deeper/f; echo y > /work/top; chmod 0600 /work/top
touch /work/ready
n=0; while [ ! -e /work/stop ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done)";

TEST(IdentityLive, C12_NoHostAccountSharesTheBoxIdentity) {
    test::RadialdSetup s;
    test::TempDir ws("radial-c12");
    ASSERT_EQ(::chown(ws.path().c_str(), kOwner, kOwnerGroup), 0);
    ASSERT_EQ(::chmod(ws.path().c_str(), 0750), 0);
    const std::string id = "c12-" + std::to_string(::getpid());
    test::TurnRun t;
    std::thread turn([&] {
        t = s.turn({"--workspace", ws.path(), "--turn-id", id, "--timeout", "120s"},
                   {"sh", "-c", kBoxScript});
    });
    const bool ready = wait_for([&] { return std::filesystem::exists(ws / "ready"); }, 60s);
    std::string pid;
    if (ready) {
        auto r = test::run_process({"docker", "inspect", "-f", "{{.State.Pid}}",
                                    "radial-turn-" + instance_id(s) + "-" + id});
        pid = r.out.substr(0, r.out.find('\n'));
    }
    const std::string host_socket = s.state_dir() + "/turns/" + id + "/turn.sock";
    const std::string proc_socket = "/proc/" + pid + "/root/run/radial/turn.sock";
    struct stat sock {
    }, dir{};
    const bool stat_ok = ::stat(host_socket.c_str(), &sock) == 0 &&
                         ::stat((s.state_dir() + "/turns/" + id).c_str(), &dir) == 0;
    // Root reaches the socket by both paths (so the paths are right): no token, 401.
    const auto root_host = test::run_process(curl_post(host_socket));
    const auto root_proc = test::run_process(curl_post(proc_socket));
    std::vector<std::pair<uid_t, std::vector<test::ProcessResult>>> tries;
    for (uid_t uid : {kOwner, uid_t{65534}, kUnrelated})
        tries.push_back(
            {uid,
             {as_uid(uid, {"cat", "/proc/" + pid + "/environ"}),
              as_uid(uid, {"ls", "/proc/" + pid + "/root/"}), as_uid(uid, curl_post(proc_socket)),
              as_uid(uid, curl_post(host_socket))}});
    ws.write("stop", "");
    turn.join();

    ASSERT_TRUE(ready) << t.result.err;
    ASSERT_FALSE(pid.empty() || pid == "0");
    ASSERT_TRUE(stat_ok);
    const uid_t kBoxId = box_id_of(t);
    EXPECT_EQ(sock.st_uid, kBoxId);
    EXPECT_EQ(sock.st_gid, kBoxId);
    EXPECT_EQ(sock.st_mode & 07777, 0600u);
    EXPECT_EQ(dir.st_uid, kBoxId);
    EXPECT_EQ(dir.st_mode & 07777, 0700u);
    EXPECT_EQ(root_host.out, "401");
    EXPECT_EQ(root_proc.out, "401");
    for (const auto& [uid, results] : tries) {
        const char* what[] = {"read environ", "list the box's root", "connect via /proc",
                              "connect via the state directory"};
        for (std::size_t i = 0; i < results.size(); ++i) {
            EXPECT_NE(results[i].exit_code, 0) << "uid " << uid << " could " << what[i];
            EXPECT_EQ(results[i].out, i < 2 ? "" : "000") << "uid " << uid << " " << what[i];
        }
    }
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    // The box's ids: its own, never the workspace's group, nothing supplementary besides it.
    const std::string n = std::to_string(kBoxId);
    EXPECT_EQ(test::read_file(ws / "ids"), n + "\n" + n + "\n" + n + "\n");
    EXPECT_EQ(test::run_process({"getent", "passwd", std::to_string(kBoxId)}).exit_code, 2);
    EXPECT_EQ(test::run_process({"getent", "group", std::to_string(kBoxId)}).exit_code, 2);
    // Everything the box wrote is the owner's, who can delete it all without root.
    for (const char* p : {"", "/made", "/made/deeper", "/made/deeper/f", "/top", "/ids"}) {
        struct stat st {};
        ASSERT_EQ(::lstat((ws.path() + p).c_str(), &st), 0) << p;
        EXPECT_EQ(st.st_uid, kOwner) << p;
        EXPECT_EQ(st.st_gid, kOwnerGroup) << p;
    }
    auto rm = as_uid(kOwner, {"rm", "-rf", ws / "made", ws / "top", ws / "ids", ws / "ready"},
                     kOwnerGroup);
    EXPECT_EQ(rm.exit_code, 0) << rm.err;
    EXPECT_FALSE(std::filesystem::exists(ws / "made"));
}

// A radiald killed mid-turn leaves its box running (to its deadline) and a hand-over note. The next
// radiald (here: another turn's) must not hand the tree back under that box, which still writes as
// the box user: into a directory it made world-writable, what it wrote after would stay the box
// uid's, with no note left to give it back. `radiald reconcile` ends the orphan, then hands back.
TEST(IdentityLive, C12_AWorkspaceIsNotHandedBackUnderItsOrphanedBox) {
    const std::string inst = test::unique_instance_id("ho");
    test::BoxCleanup cleanup{"radial-turn-" + inst + "-"};
    test::RadialdSetup s("instanceId = \"" + inst + "\"\n");
    test::TempDir ws("radial-c12-orphan");
    ASSERT_EQ(::chown(ws.path().c_str(), kOwner, kOwnerGroup), 0);
    ASSERT_EQ(::chmod(ws.path().c_str(), 0750), 0);
    const std::string id = "ho-" + std::to_string(::getpid());
    test::BackgroundProcess orphaned(
        {RADIALD_PATH, "turn", "--config", s.config(), "--image", RADIAL_TEST_IMAGE, "--workspace",
         ws.path(), "--turn-id", id, "--timeout", "300s", "--", "sh", "-c",
         "mkdir -m 777 /work/open && touch /work/started; "
         "while [ ! -e /work/go ]; do sleep 0.1; done; "
         "echo late > /work/open/late && touch /work/open/wrote; sleep 600"},
        ws / "radiald.log");
    ASSERT_TRUE(wait_for([&] { return std::filesystem::exists(ws / "started"); }, 120s))
        << test::read_file(ws / "radiald.log");
    orphaned.signal(SIGKILL);
    orphaned.wait(30s);
    const std::string box = "radial-turn-" + inst + "-" + id;
    ASSERT_EQ(test::box_state(box), "running");

    // Another turn of the state directory opens it, with its hand-over recovery.
    const test::TurnRun other = s.turn({"--timeout", "60s"}, {"true"});
    EXPECT_EQ(other.result.exit_code, 0) << other.result.err;
    struct stat root {};
    ASSERT_EQ(::lstat(ws.path().c_str(), &root), 0);
    EXPECT_NE(root.st_uid, kOwner) << "the tree was handed back while its box still ran";
    // Nor does a turn start on that workspace beside the box: the hand-over would take the box's
    // uid for the owner (docs/design.md §3.9).
    const test::TurnRun beside = s.turn({"--workspace", ws.path(), "--timeout", "60s"}, {"true"});
    EXPECT_EQ(beside.result.exit_code, 125) << beside.result.err;
    EXPECT_THAT(beside.result.err, HasSubstr("is still written by the box of turn " + id))
        << beside.result.err;

    ws.write("go", "");
    ASSERT_TRUE(wait_for([&] { return std::filesystem::exists(ws / "open/wrote"); }, 60s));
    const auto reconciled =
        test::run_process({RADIALD_PATH, "reconcile", "--config", s.config()}, {}, 120s);
    EXPECT_EQ(reconciled.exit_code, 0) << reconciled.err;
    EXPECT_NE(test::box_state(box), "running");
    for (const char* p : {"", "/open", "/open/late", "/open/wrote", "/started"}) {
        struct stat st {};
        ASSERT_EQ(::lstat((ws.path() + p).c_str(), &st), 0) << p;
        EXPECT_EQ(st.st_uid, kOwner) << p << ": left the box uid's";
        EXPECT_EQ(st.st_gid, kOwnerGroup) << p;
    }
    // Once the box is gone, the workspace takes turns again.
    const test::TurnRun after = s.turn({"--workspace", ws.path(), "--timeout", "60s"}, {"true"});
    EXPECT_EQ(after.result.exit_code, 0) << after.result.err;
}

// Started under a umask of 0, radiald takes group and other write out of it (its own files may be
// orders to it, as a hand-over note is), and its hand-over notes' directory is radiald's alone.
TEST(IdentityLive, RadialdMakesNothingWritableByOthersWhateverItsUmask) {
    const std::string inst = test::unique_instance_id("um");
    test::BoxCleanup cleanup{"radial-turn-" + inst + "-"};
    test::RadialdSetup s("instanceId = \"" + inst + "\"\n");
    test::TempDir ws("radial-umask");
    ASSERT_EQ(::chown(ws.path().c_str(), kOwner, kOwnerGroup), 0);
    test::BackgroundProcess turn(
        {"sh", "-c", "umask 000; exec \"$@\"", "sh", RADIALD_PATH, "turn", "--config", s.config(),
         "--image", RADIAL_TEST_IMAGE, "--workspace", ws.path(), "--timeout", "300s", "--", "sh",
         "-c", "echo up; sleep 600"},
        ws / "radiald.log", true);
    ASSERT_EQ(turn.read_line(), std::optional<std::string>("up"))
        << test::read_file(ws / "radiald.log");
    const std::string proc = "/proc/" + std::to_string(turn.pid());
    const std::string status = test::read_file(proc + "/status"); // hermetic-ok: its own radiald
    EXPECT_THAT(status, HasSubstr("Umask:\t0022\n"));
    struct stat notes {};
    ASSERT_EQ(::lstat((s.state_dir() + "/handovers").c_str(), &notes), 0);
    EXPECT_EQ(notes.st_mode & 07777, 0700u);
    turn.signal(SIGTERM);
    EXPECT_EQ(turn.wait(120s), 130) << test::read_file(ws / "radiald.log");
}

// Running as the workspace's owner is the operator's explicit choice; even then the box's gid is
// its own, never the workspace's group.
TEST(IdentityLive, C12_RunningAsTheWorkspaceOwnerIsAnExplicitChoice) {
    test::RadialdSetup s("user = \"workspace-owner\"\n");
    test::TempDir ws("radial-c12o");
    ASSERT_EQ(::chown(ws.path().c_str(), kOwner, kOwnerGroup), 0);
    auto t = s.turn({"--workspace", ws.path()}, {"sh", "-c", "id -u; id -g; id -G; touch /work/f"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    // The uid is the owner's; the gid is leased for the box alone, as every box's.
    const std::string gid = t.record.value("boxUser", std::string("?:?")).substr(5);
    EXPECT_EQ(t.record.value("boxUser", std::string()), "4242:" + gid);
    EXPECT_THAT(gid, ::testing::MatchesRegex("20000[0-9]{5}"));
    EXPECT_EQ(t.result.out, "4242\n" + gid + "\n" + gid + "\n");
    struct stat st {};
    ASSERT_EQ(::stat((ws / "f").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kOwner);
    EXPECT_EQ(st.st_gid, kOwnerGroup);
    auto no_ws = s.turn({}, {"true"});
    EXPECT_EQ(no_ws.result.exit_code, 125);
    EXPECT_THAT(no_ws.result.err, HasSubstr("has no workspace"));
}

// The range is checked at startup: a host account or a host process with an id in it is named,
// and nothing runs.
TEST(IdentityLive, C12_ARangeAHostAccountOrProcessUsesIsRefused) {
    test::RadialdSetup account("boxIdRange = \"65534-65534\"\n");
    auto t = account.turn({}, {"echo", "ran"});
    EXPECT_EQ(t.result.exit_code, 125);
    EXPECT_THAT(t.result.out, Not(HasSubstr("ran")));
    EXPECT_THAT(t.result.err, HasSubstr("run.boxIdRange 65534-65534: host user '"));
    EXPECT_THAT(t.result.err, HasSubstr("65534 (passwd)"));

    test::IdSquatter squatter(2100000005);
    ASSERT_TRUE(squatter.running());
    test::RadialdSetup process("boxIdRange = \"2100000000-2100000009\"\n");
    test::TurnRun p = process.turn({}, {"echo", "ran"});
    EXPECT_EQ(p.result.exit_code, 125);
    EXPECT_THAT(p.result.out, Not(HasSubstr("ran")));
    EXPECT_THAT(p.result.err, HasSubstr("host process " + std::to_string(squatter.pid()) + " ("));
    EXPECT_THAT(p.result.err, HasSubstr(") runs with id 2100000005"));
}

} // namespace
} // namespace radial
