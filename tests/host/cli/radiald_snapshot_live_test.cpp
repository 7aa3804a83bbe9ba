// Session snapshots end to end (docs/design.md §13.12): `radiald session snapshot`, sessions
// `--from-snapshot`, `session snapshots` and `snapshot-rm` — the real radiald, the real docker.so,
// the real engine, real images.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/scope_exit.h"
#include "../../support/temp_dir.h"
#include "../../support/unix_socket_proxy.h"
#include "session_fixture.h"
#include "stop_in_window.h"

namespace radial {
namespace {
using namespace std::chrono_literals;
using test::Session;
using ::testing::HasSubstr;
using ::testing::Not;

// The snapshot images of `setup`'s instance, by repository; all removed when the test ends
// (after its sessions: declare it first). Removed by name (repository:tag), never by image id: a
// name a test put on the shared test image would take that image with it.
class Snapshots {
public:
    explicit Snapshots(const test::RadialdSetup& setup) : setup_(setup) {}
    ~Snapshots() {
        for (const auto& name : names())
            test::run_process({"docker", "image", "rm", "-f", name}, {}, 60s);
    }
    std::string repository() const {
        std::string inst = test::read_file(setup_.state_dir() + "/instance-id");
        inst = inst.substr(0, inst.find_first_of(" \n"));
        std::string repo = "radial-snapshot-";
        for (char c : inst) repo += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return repo;
    }
    // The image ids the engine holds in our repository.
    std::vector<std::string> images() const {
        auto r =
            test::run_process({"docker", "image", "ls", "-q", "--no-trunc", repository()}, {}, 60s);
        std::vector<std::string> ids;
        for (std::size_t at = 0; at < r.out.size();) {
            const auto nl = r.out.find('\n', at);
            if (nl > at) ids.push_back(r.out.substr(at, nl - at));
            if (nl == std::string::npos) break;
            at = nl + 1;
        }
        return ids;
    }
    // The names (repository:tag) the engine holds in our repository.
    std::vector<std::string> names() const {
        auto r = test::run_process(
            {"docker", "image", "ls", "--format", "{{.Repository}}:{{.Tag}}", repository()}, {},
            60s);
        std::vector<std::string> out;
        std::istringstream lines(r.out);
        for (std::string l; std::getline(lines, l);)
            if (!l.empty() && l.find("<none>") == std::string::npos) out.push_back(l);
        return out;
    }
    // `radiald session snapshot ID`.
    test::ProcessResult take(const std::string& session) const {
        return test::run_process(
            {RADIALD_PATH, "session", "snapshot", "--config", setup_.config(), session}, {}, 300s);
    }

private:
    const test::RadialdSetup& setup_;
};

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// Session `s`'s snapshot after one turn wrote /opt/cache/x: its name, or "" (a failure said).
std::string snapshot_after_writing_x(const test::RadialdSetup& setup, const Snapshots& snaps,
                                     const Session& s) {
    EXPECT_EQ(s.created.exit_code, 0) << s.created.err;
    auto t = setup.turn({"--session", s.id}, {"sh", "-c", "echo x > /opt/cache/x"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    auto taken = snaps.take(s.id);
    EXPECT_EQ(taken.exit_code, 0) << taken.err;
    return taken.exit_code == 0 ? first_line(taken.out) : std::string();
}

// Takes `session`'s snapshot, expects it refused saying `says`, and returns what it said.
std::string refused_saying(const Snapshots& snaps, const std::string& session,
                           const std::string& says) {
    auto r = snaps.take(session);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_THAT(r.err, HasSubstr(says));
    return r.err;
}

// The same base, commands and policy name one snapshot (taken once, then reused); another
// command names another; a session from a snapshot has what its turns installed outside the
// workspace, and nothing of the box's mounts or labels.
TEST(SnapshotLive, ASnapshotsNameIsStableForTheSameInputsAndChangesWithTheManifest) {
    test::RadialdSetup setup;
    Snapshots snaps(setup);
    Session a(setup, {}), b(setup, {});
    ASSERT_EQ(a.created.exit_code, 0) << a.created.err;
    ASSERT_EQ(b.created.exit_code, 0) << b.created.err;
    const std::vector<std::string> install{"sh", "-c", "echo tool-v1 > /opt/cache/tool"};
    for (const auto* s : {&a, &b}) {
        auto t = setup.turn({"--session", s->id}, install);
        ASSERT_EQ(t.result.exit_code, 0) << t.result.err;
    }
    auto from_a = snaps.take(a.id);
    ASSERT_EQ(from_a.exit_code, 0) << from_a.err;
    const std::string name = first_line(from_a.out);
    EXPECT_THAT(name, ::testing::StartsWith(snaps.repository() + ":"));
    EXPECT_EQ(name.size(), snaps.repository().size() + 1 + 64) << name;
    auto from_b = snaps.take(b.id);
    ASSERT_EQ(from_b.exit_code, 0) << from_b.err;
    EXPECT_EQ(first_line(from_b.out), name) << "the same inputs named another snapshot";
    EXPECT_EQ(snaps.images().size(), 1u) << "the same inputs were committed twice";

    auto more = setup.turn({"--session", b.id}, {"sh", "-c", "echo v2 >> /opt/cache/tool"});
    ASSERT_EQ(more.result.exit_code, 0) << more.result.err;
    auto changed = snaps.take(b.id);
    ASSERT_EQ(changed.exit_code, 0) << changed.err;
    EXPECT_NE(first_line(changed.out), name) << "a longer manifest kept the snapshot's name";
    EXPECT_EQ(snaps.images().size(), 2u);

    Session c(setup, {"--from-snapshot", name});
    ASSERT_EQ(c.created.exit_code, 0) << c.created.err;
    // A turn names its session's image or none; the runner names one.
    auto read = setup.turn({"--session", c.id},
                           {"sh", "-c", "cat /opt/cache/tool; ls -A /run/radial"}, {}, name);
    EXPECT_EQ(read.result.exit_code, 0) << read.result.err;
    // This turn's own socket only: nothing of the snapshotted session's /run/radial.
    EXPECT_EQ(read.result.out, "tool-v1\nturn.sock\n");
    auto labels = test::run_process(
        {"docker", "image", "inspect", "--format", "{{json .Config.Labels}}", name}, {}, 60s);
    ASSERT_EQ(labels.exit_code, 0) << labels.err;
    EXPECT_THAT(labels.out, HasSubstr("\"radial.label\":\"\"")) << "a session's label in the image";
    auto listed = test::run_process(
        {RADIALD_PATH, "session", "snapshots", "--json", "--config", setup.config()}, {}, 60s);
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    auto list = nlohmann::json::parse(listed.out);
    ASSERT_EQ(list.size(), 2u) << listed.out;
    EXPECT_EQ(list[0]["image"], name);
    EXPECT_EQ(list[0]["manifest"].size(), 1u);
    EXPECT_EQ(list[0]["manifest"][0]["argv"], install);
}

// A snapshot's image keeps the base image's variables, not the box user's HOME, USER, LOGNAME and
// XDG_* (the engine merges the box's own into a commit and cannot unset one): each exec gets them,
// in the session and in a session from the snapshot, and the manifest does not list them.
TEST(SnapshotLive, TheBoxUsersVariablesGoWithEachExecAndNotIntoTheSnapshot) {
    test::RadialdSetup setup;
    Snapshots snaps(setup);
    Session a(setup, {});
    ASSERT_EQ(a.created.exit_code, 0) << a.created.err;
    const std::vector<std::string> show{"sh", "-c",
                                        "echo \"$HOME $USER $LOGNAME $XDG_CACHE_HOME\"; id -un"};
    const std::string expected = "/home/radial radial radial /home/radial/.cache\nradial\n";
    auto before = setup.turn({"--session", a.id}, show);
    ASSERT_EQ(before.result.exit_code, 0) << before.result.err;
    EXPECT_EQ(before.result.out, expected);
    // A request's own value wins.
    auto own = setup.turn({"--session", a.id, "--env", "HOME=/tmp"}, {"sh", "-c", "echo $HOME"});
    ASSERT_EQ(own.result.exit_code, 0) << own.result.err;
    EXPECT_EQ(own.result.out, "/tmp\n");
    auto taken = snaps.take(a.id);
    ASSERT_EQ(taken.exit_code, 0) << taken.err;
    const std::string name = first_line(taken.out);
    auto env = test::run_process(
        {"docker", "image", "inspect", "--format", "{{json .Config.Env}}", name}, {}, 60s);
    ASSERT_EQ(env.exit_code, 0) << env.err;
    auto base = test::run_process(
        {"docker", "image", "inspect", "--format", "{{json .Config.Env}}", RADIAL_TEST_IMAGE}, {},
        60s);
    ASSERT_EQ(base.exit_code, 0) << base.err;
    EXPECT_EQ(env.out, base.out) << "the snapshot's variables are not the base image's";
    for (const char* name_of : {"HOME=", "USER=", "LOGNAME=", "XDG_"})
        EXPECT_THAT(env.out, Not(HasSubstr(name_of)));
    auto listed = test::run_process(
        {RADIALD_PATH, "session", "snapshots", "--json", "--config", setup.config()}, {}, 60s);
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    auto list = nlohmann::json::parse(listed.out);
    ASSERT_EQ(list.size(), 1u) << listed.out;
    ASSERT_EQ(list[0]["manifest"].size(), 2u) << listed.out;
    EXPECT_EQ(list[0]["manifest"][0]["env"], nlohmann::json::array()) << listed.out;
    EXPECT_EQ(list[0]["manifest"][1]["env"], nlohmann::json::array({"HOME=/tmp"})) << listed.out;

    Session b(setup, {"--from-snapshot", name});
    ASSERT_EQ(b.created.exit_code, 0) << b.created.err;
    auto after = setup.turn({"--session", b.id}, show, {}, name);
    ASSERT_EQ(after.result.exit_code, 0) << after.result.err;
    EXPECT_EQ(after.result.out, expected);
}

// Whether /proc/locks shows process `pid` waiting for a lock ("N: -> FLOCK ... PID ...").
bool waits_for_a_lock(pid_t pid) {
    std::ifstream in("/proc/locks");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string n, arrow, kind, how, mode, who;
        f >> n >> arrow >> kind >> how >> mode >> who;
        if (arrow == "->" && who == std::to_string(pid)) return true;
    }
    return false;
}

// A snapshot's name is the engine's to move: a session from it is made from the image the
// snapshot recorded, or refused naming the fix. And a snapshot change waits for another one in
// the same state directory (an intent, its commit and completion, a removal): two of them at once
// left records and names apart.
TEST(SnapshotLive, ASessionIsMadeFromTheRecordedImageAndChangesWaitForEachOther) {
    test::RadialdSetup setup;
    Snapshots snaps(setup);
    Session a(setup, {});
    const std::string name = snapshot_after_writing_x(setup, snaps, a);
    ASSERT_FALSE(name.empty());
    auto id = test::run_process({"docker", "image", "inspect", "--format", "{{.Id}}", name});
    ASSERT_EQ(id.exit_code, 0) << id.err;
    // However the test ends: the name off the shared test image (by the name, which only untags
    // it), and the snapshot's own image, which the name left (by its id: it is no other's).
    test::ScopeExit untag([&] {
        test::run_process({"docker", "image", "rm", name}, {}, 60s);
        test::run_process({"docker", "image", "rm", "-f", first_line(id.out)}, {}, 60s);
    });
    ASSERT_EQ(test::run_process({"docker", "tag", RADIAL_TEST_IMAGE, name}).exit_code, 0);
    Session moved(setup, {"--from-snapshot", name});
    EXPECT_EQ(moved.created.exit_code, 125) << moved.created.out << moved.created.err;
    EXPECT_THAT(moved.created.err, HasSubstr("the name was put on another image since"));
    EXPECT_THAT(moved.created.err, HasSubstr("radiald session snapshot-rm"));
    // Taking it again does not say it exists already: it no longer does.
    auto again = snaps.take(a.id);
    EXPECT_EQ(again.exit_code, 1) << again.out;
    EXPECT_THAT(again.err, HasSubstr("the name was put on another image since"));

    // A removal while another change holds the snapshots: it waits, then goes on.
    const std::string dir = setup.state_dir() + "/snapshots";
    {
        internal::UniqueFd held(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        ASSERT_TRUE(held);
        ASSERT_EQ(::flock(held.get(), LOCK_EX), 0);
        test::BackgroundProcess rm(
            {RADIALD_PATH, "session", "snapshot-rm", "--config", setup.config(), name});
        ASSERT_TRUE(test::wait_until([&] { return waits_for_a_lock(rm.pid()); }, 60s))
            << "snapshot-rm did not wait for the snapshots' lock";
        EXPECT_TRUE(rm.running());
        held.reset();
        EXPECT_EQ(rm.wait(), 0);
    }
}

// An image removed outside radiald (docker image rm) is taken again rather than refused as a
// name put on another image: the record names the new image, and a session is made from it.
TEST(SnapshotLive, ASnapshotWhoseImageWasRemovedOutsideRadialdIsTakenAgain) {
    test::RadialdSetup setup;
    Snapshots snaps(setup);
    Session a(setup, {});
    const std::string name = snapshot_after_writing_x(setup, snaps, a);
    ASSERT_FALSE(name.empty());
    auto rm = test::run_process({"docker", "image", "rm", name}, {}, 60s);
    ASSERT_EQ(rm.exit_code, 0) << rm.err;
    ASSERT_TRUE(snaps.images().empty());
    auto again = snaps.take(a.id);
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(first_line(again.out), name);
    EXPECT_THAT(again.err, HasSubstr("no longer on the engine"));
    const auto ids = snaps.images();
    ASSERT_EQ(ids.size(), 1u);
    auto listed = test::run_process(
        {RADIALD_PATH, "session", "snapshots", "--json", "--config", setup.config()}, {}, 60s);
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    auto list = nlohmann::json::parse(listed.out);
    ASSERT_EQ(list.size(), 1u) << listed.out;
    EXPECT_EQ(list[0]["digest"], ids[0]) << "the record names the image removed";
    Session b(setup, {"--from-snapshot", name});
    ASSERT_EQ(b.created.exit_code, 0) << b.created.err;
    auto read = setup.turn({"--session", b.id}, {"cat", "/opt/cache/x"}, {}, name);
    EXPECT_EQ(read.result.exit_code, 0) << read.result.err;
    EXPECT_EQ(read.result.out, "x\n");
}

// A turn that leaves a secret's value (in any encoding the redactor knows) or its turn token in
// the box's own file system bars the session's snapshots, naming the secret and the path, never
// the value; nothing is committed.
TEST(SnapshotLive, ATurnThatLeavesASecretOrItsTokenInTheBoxBarsSnapshots) {
    test::RadialdSetup setup;
    Snapshots snaps(setup);
    Session s(setup, {}), t(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    ASSERT_EQ(t.created.exit_code, 0) << t.created.err;
    const std::string secret = "snap-secret-" + std::to_string(::getpid()) + "-abcdef";
    auto leak = setup.turn({"--session", s.id, "--secret", "API_KEY"},
                           {"sh", "-c",
                            "mkdir -p /opt/cache/deep && printf %s \"$API_KEY\" | base64 > "
                            "/opt/cache/deep/enc"},
                           {{"API_KEY", secret}});
    ASSERT_EQ(leak.result.exit_code, 0) << leak.result.err;
    auto refused = snaps.take(s.id);
    EXPECT_EQ(refused.exit_code, 1) << refused.out;
    EXPECT_THAT(refused.err, HasSubstr("secret API_KEY in '/opt/cache/deep/enc'"));
    EXPECT_THAT(refused.err, HasSubstr("keep secrets out of the box's own file system"));
    EXPECT_THAT(refused.err, Not(HasSubstr(secret)));
    // The bar holds for good: a later clean turn does not lift it.
    auto clean = setup.turn({"--session", s.id}, {"rm", "-rf", "/opt/cache/deep"});
    ASSERT_EQ(clean.result.exit_code, 0) << clean.result.err;
    EXPECT_EQ(snaps.take(s.id).exit_code, 1);

    auto token = setup.turn({"--session", t.id},
                            {"sh", "-c", "ln -s \"x$RADIAL_TURN_TOKEN\" /opt/cache/link"});
    ASSERT_EQ(token.result.exit_code, 0) << token.result.err;
    auto no = snaps.take(t.id);
    EXPECT_EQ(no.exit_code, 1) << no.out;
    EXPECT_THAT(no.err, HasSubstr("secret RADIAL_TURN_TOKEN in '/opt/cache/link'"));

    // Hex, as od writes it with its spaces removed: the snapshot kept it and a later session
    // decoded it.
    Session u(setup, {});
    ASSERT_EQ(u.created.exit_code, 0) << u.created.err;
    auto hex = setup.turn(
        {"--session", u.id, "--secret", "API_KEY"},
        {"sh", "-c", "printf %s \"$API_KEY\" | od -An -tx1 | tr -d ' \\n' > /opt/cache/hex"},
        {{"API_KEY", secret}});
    ASSERT_EQ(hex.result.exit_code, 0) << hex.result.err;
    auto hexed = snaps.take(u.id);
    EXPECT_EQ(hexed.exit_code, 1) << hexed.out;
    EXPECT_THAT(hexed.err, HasSubstr("secret API_KEY in '/opt/cache/hex'"));
    EXPECT_TRUE(snaps.images().empty()) << "a snapshot was committed anyway";
}

// A secret one turn stashes in a mount the box keeps between turns (/tmp, /dev/shm), which a
// later turn without that secret copies into the box's file system, is found by the later turn's
// check (the session remembers its turns' secrets as fingerprints); a secret in a file's name is
// named by its secret, never printed.
TEST(SnapshotLive, ASecretMovedIntoTheBoxByALaterTurnBarsSnapshots) {
    test::RadialdSetup setup;
    Snapshots snaps(setup);
    Session s(setup, {}), named(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    ASSERT_EQ(named.created.exit_code, 0) << named.created.err;
    const std::string secret = "stash-secret-" + std::to_string(::getpid()) + "-qwerty";
    auto stash = setup.turn({"--session", s.id, "--secret", "API_KEY"},
                            {"sh", "-c",
                             "printf %s \"$API_KEY\" > /tmp/stash; printf %s "
                             "\"$RADIAL_TURN_TOKEN\" > /dev/shm/tok"},
                            {{"API_KEY", secret}});
    ASSERT_EQ(stash.result.exit_code, 0) << stash.result.err;
    auto move = setup.turn({"--session", s.id}, {"sh", "-c", "cp /dev/shm/tok /opt/cache/tok"});
    ASSERT_EQ(move.result.exit_code, 0) << move.result.err;
    refused_saying(snaps, s.id, "secret RADIAL_TURN_TOKEN in '/opt/cache/tok'");

    auto name = setup.turn({"--session", named.id, "--secret", "API_KEY"},
                           {"sh", "-c", "touch \"/opt/cache/$API_KEY\""}, {{"API_KEY", secret}});
    ASSERT_EQ(name.result.exit_code, 0) << name.result.err;
    auto no = snaps.take(named.id);
    EXPECT_EQ(no.exit_code, 1) << no.out;
    EXPECT_THAT(no.err, HasSubstr("secret API_KEY in '/opt/cache/[REDACTED:API_KEY] (its name)'"));
    EXPECT_THAT(no.err, Not(HasSubstr(secret)));
    EXPECT_THAT(test::read_file(setup.state_dir() + "/sessions/" + named.id + ".json"),
                Not(HasSubstr(secret)));
    EXPECT_TRUE(snaps.images().empty());
}

// A file an earlier turn made under a directory, with the second half of a secret for its name,
// gets the whole secret for its path when a later turn without that secret renames the directory
// to the first half: the rename changes the directory, not the file, and the later turn's check
// must see the file's new path all the same.
TEST(SnapshotLive, ASecretSpelledByRenamingAnOldDirectoryBarsSnapshots) {
    test::RadialdSetup setup;
    Snapshots snaps(setup);
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    const std::string pid = std::to_string(::getpid());
    const std::string head = "split-secret-" + pid + "-wJalrXUtnF", tail = "K7MDENGbPx-" + pid;
    auto plant = setup.turn({"--session", s.id, "--secret", "API_KEY"},
                            {"sh", "-c",
                             "mkdir -p /opt/cache/x && touch \"/opt/cache/x/${API_KEY#*/}\" && "
                             "printf %s \"${API_KEY%%/*}\" > /tmp/head"},
                            {{"API_KEY", head + "/" + tail}});
    ASSERT_EQ(plant.result.exit_code, 0) << plant.result.err;
    // The file's change must lie before the next turn's window (its start, less a second's slack):
    // await the wall clock past it, as a change time cannot be set back.
    const auto planted = std::chrono::system_clock::now();
    while (std::chrono::system_clock::now() < planted + 2500ms) std::this_thread::sleep_for(50ms);
    auto rename = setup.turn({"--session", s.id},
                             {"sh", "-c", "mv /opt/cache/x \"/opt/cache/$(cat /tmp/head)\""});
    ASSERT_EQ(rename.result.exit_code, 0) << rename.result.err;
    const std::string said = refused_saying(
        snaps, s.id, "secret API_KEY in '/opt/cache (an entry whose name holds it)'");
    EXPECT_THAT(said, Not(HasSubstr(tail)));
    EXPECT_TRUE(snaps.images().empty()) << "a snapshot was committed anyway";
}

// A secret that a turn outside the session was given — a one-shot turn, another session's turn —
// and left in a workspace the session shares, copied into the box's file system by a session turn
// that was never given it, is found by that turn's check: the state directory keeps the
// fingerprints of what every turn was given (session/instance_fingerprints.h), in every encoding.
TEST(SnapshotLive, ASecretAnotherTurnLeftInASharedWorkspaceBarsSnapshots) {
    test::RadialdSetup setup;
    test::TempDir ws("radial-ws");
    // Not root's: radiald hands the workspace to each box and back (docs/design.md §3.9).
    ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
    Snapshots snaps(setup);
    Session mine(setup, {"--workspace", ws.path()}), theirs(setup, {"--workspace", ws.path()}),
        after(setup, {"--workspace", ws.path()});
    for (const auto* s : {&mine, &theirs, &after})
        ASSERT_EQ(s->created.exit_code, 0) << s->created.err;
    const std::string one = "oneshot-secret-" + std::to_string(::getpid()) + "-zxcvb";
    const std::string two = "session-secret-" + std::to_string(::getpid()) + "-poiuy";
    auto oneshot =
        setup.turn({"--workspace", ws.path(), "--secret", "DEPLOY_KEY"},
                   {"sh", "-c", "printf %s \"$DEPLOY_KEY\" > left-raw"}, {{"DEPLOY_KEY", one}});
    ASSERT_EQ(oneshot.result.exit_code, 0) << oneshot.result.err;
    auto other =
        setup.turn({"--session", theirs.id, "--secret", "API_KEY"},
                   {"sh", "-c", "printf %s \"$API_KEY\" | base64 > left-b64"}, {{"API_KEY", two}});
    ASSERT_EQ(other.result.exit_code, 0) << other.result.err;

    // Neither session turn was given either secret.
    auto copy_raw = setup.turn({"--session", mine.id}, {"cp", "left-raw", "/opt/cache/raw"});
    ASSERT_EQ(copy_raw.result.exit_code, 0) << copy_raw.result.err;
    EXPECT_THAT(refused_saying(snaps, mine.id, "secret DEPLOY_KEY in '/opt/cache/raw'"),
                Not(HasSubstr(one)));
    auto copy_b64 = setup.turn({"--session", after.id}, {"cp", "left-b64", "/opt/cache/b64"});
    ASSERT_EQ(copy_b64.result.exit_code, 0) << copy_b64.result.err;
    refused_saying(snaps, after.id, "secret API_KEY in '/opt/cache/b64'");
    // What is kept is no value: neither secret in any file of the store.
    for (const auto& e :
         std::filesystem::directory_iterator(setup.state_dir() + "/secret-fingerprints")) {
        const std::string text = test::read_file(e.path().string());
        EXPECT_THAT(text, Not(HasSubstr(one))) << e.path();
        EXPECT_THAT(text, Not(HasSubstr(two))) << e.path();
    }
    EXPECT_TRUE(snaps.images().empty()) << "a snapshot was committed anyway";
}

// A turn whose secrets cannot be kept in the store does not start its box (a session's snapshot
// could otherwise hold one unseen); the error names the store. Nor does a turn with no secret
// while the store cannot be read: what other turns were given is masked in every turn's output
// (docs/design.md §13.12). Mended, turns run again.
TEST(SnapshotLive, ATurnWhoseSecretsCannotBeKeptDoesNotStart) {
    test::RadialdSetup setup;
    auto first = setup.turn({}, {"true"});
    ASSERT_EQ(first.result.exit_code, 0) << first.result.err;
    const std::string store = setup.state_dir() + "/secret-fingerprints";
    { std::ofstream(store) << "not a directory"; }
    auto refused = setup.turn({"--secret", "API_KEY"}, {"sh", "-c", "echo ran"},
                              {{"API_KEY", "kept-secret-0123456789"}});
    EXPECT_NE(refused.result.exit_code, 0);
    EXPECT_THAT(refused.result.err, HasSubstr(store));
    EXPECT_THAT(refused.result.out, Not(HasSubstr("ran")));
    EXPECT_EQ(refused.record.value("status", ""), "error") << refused.record.dump();
    auto plain = setup.turn({}, {"sh", "-c", "echo ran"});
    EXPECT_NE(plain.result.exit_code, 0);
    EXPECT_THAT(plain.result.err, HasSubstr(store));
    EXPECT_THAT(plain.result.out, Not(HasSubstr("ran")));
    std::filesystem::remove(store);
    auto mended = setup.turn({"--secret", "API_KEY"}, {"sh", "-c", "echo ran"},
                             {{"API_KEY", "kept-secret-0123456789"}});
    EXPECT_EQ(mended.result.exit_code, 0) << mended.result.err;
    EXPECT_EQ(mended.result.out, "ran\n");
}

// The same commands with another variable, or in another workspace, name another snapshot; a
// reused name keeps the record of its first making.
TEST(SnapshotLive, AnExecsVariablesAndTheWorkspaceAreInTheName) {
    test::RadialdSetup setup;
    test::TempDir ws("radial-ws");
    Snapshots snaps(setup);
    Session one(setup, {}), two(setup, {}), three(setup, {}),
        elsewhere(setup, {"--workspace", ws.path()});
    for (const auto* s : {&one, &two, &three, &elsewhere})
        ASSERT_EQ(s->created.exit_code, 0) << s->created.err;
    const std::vector<std::string> write{"sh", "-c", "echo \"$V\" > /opt/cache/v"};
    ASSERT_EQ(setup.turn({"--session", one.id, "--env", "V=one"}, write).result.exit_code, 0);
    ASSERT_EQ(setup.turn({"--session", two.id, "--env", "V=two"}, write).result.exit_code, 0);
    ASSERT_EQ(setup.turn({"--session", three.id, "--env", "V=one"}, write).result.exit_code, 0);
    ASSERT_EQ(setup.turn({"--session", elsewhere.id, "--env", "V=one"}, write).result.exit_code, 0);
    const auto a = first_line(snaps.take(one.id).out), b = first_line(snaps.take(two.id).out),
               c = first_line(snaps.take(three.id).out),
               d = first_line(snaps.take(elsewhere.id).out);
    ASSERT_FALSE(a.empty());
    EXPECT_NE(a, b) << "V=one and V=two named one snapshot";
    EXPECT_EQ(a, c);
    EXPECT_NE(a, d) << "another workspace named the same snapshot";
    auto listed = test::run_process(
        {RADIALD_PATH, "session", "snapshots", "--json", "--config", setup.config()}, {}, 60s);
    auto list = nlohmann::json::parse(listed.out);
    ASSERT_EQ(list.size(), 3u) << listed.out;
    for (const auto& snap : list)
        if (snap["image"] == a) {
            EXPECT_EQ(snap["session"], one.id) << "a reuse relabelled it";
        }
}

// A turn whose radiald was killed was never checked: its session takes no snapshot, and no later
// turn lifts that.
TEST(SnapshotLive, ATurnCutShortByAKilledRadialdBarsSnapshots) {
    test::RadialdSetup setup;
    test::TempDir scratch("radial-snap");
    Snapshots snaps(setup);
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    test::BackgroundProcess turn(
        {RADIALD_PATH, "turn", "--config", setup.config(), "--session", s.id, "--timeout", "2s",
         "--", "sh", "-c", "echo started; sleep 600"},
        scratch / "radiald.log", true);
    ASSERT_EQ(turn.read_line(), std::optional<std::string>("started"))
        << test::read_file(scratch / "radiald.log");
    turn.signal(SIGKILL);
    turn.wait(30s);
    auto refused = snaps.take(s.id);
    EXPECT_EQ(refused.exit_code, 1) << refused.out;
    EXPECT_THAT(refused.err, HasSubstr("ran in it when its radiald ended"));
    // Advice about keeping secrets out of the box is for a secret found, not for this.
    EXPECT_THAT(refused.err, Not(HasSubstr("keep secrets out")));
    EXPECT_THAT(refused.err, HasSubstr("take the snapshot from a new session"));
    auto later = setup.turn({"--session", s.id}, {"echo", "harmless"});
    ASSERT_EQ(later.result.exit_code, 0) << later.result.err;
    auto still = snaps.take(s.id);
    EXPECT_EQ(still.exit_code, 1) << "a later turn lifted the bar of an unchecked one";
    EXPECT_THAT(still.err, HasSubstr("ran in it when its radiald ended"));
    EXPECT_TRUE(snaps.images().empty());
}

// A turn that failed before its exec started ran nothing in the box: it does not bar snapshots
// the way a turn cut short by a killed radiald does.
TEST(SnapshotLive, ATurnThatFailedBeforeItsExecDoesNotBarSnapshots) {
    test::RadialdSetup setup;
    Snapshots snaps(setup);
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    // A directory where the turn's terminal record reserve goes: the turn fails before its exec.
    std::filesystem::create_directories(setup.state_dir() + "/pending/early-fail.json");
    auto failed = setup.turn({"--session", s.id, "--turn-id", "early-fail"}, {"echo", "never"});
    EXPECT_NE(failed.result.exit_code, 0);
    EXPECT_THAT(failed.result.err, HasSubstr("reserving space for the terminal record"));
    EXPECT_THAT(failed.result.out, Not(HasSubstr("never")));
    auto taken = snaps.take(s.id);
    EXPECT_EQ(taken.exit_code, 0) << taken.err;
    EXPECT_THAT(taken.err, Not(HasSubstr("ran in it when its radiald ended")));
    EXPECT_EQ(snaps.images().size(), 1u);
}

// An exec the engine would not start (the box paused: `docker pause`, or a snapshot's commit under
// way) ran nothing in the box: its turn is an error that says so, and neither bars the session's
// snapshots for good nor adds a step to its manifest (which names its snapshot); an exec that
// did run does both.
TEST(SnapshotLive, ATurnWhoseExecTheEngineWouldNotStartDoesNotBarSnapshots) {
    test::RadialdSetup setup;
    Snapshots snaps(setup);
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    struct Paused {
        std::string box;
        bool paused = false;
        void unpause() {
            if (paused) test::run_process({"docker", "unpause", box}, {}, 60s);
            paused = false;
        }
        ~Paused() { unpause(); }
    } pause{s.box()};
    ASSERT_EQ(test::run_process({"docker", "pause", s.box()}, {}, 60s).exit_code, 0);
    pause.paused = true;
    auto refused = setup.turn({"--session", s.id}, {"echo", "never"});
    EXPECT_EQ(refused.result.exit_code, 125) << refused.result.err;
    EXPECT_THAT(refused.result.err, HasSubstr("is paused"));
    EXPECT_THAT(refused.result.err, HasSubstr("nothing of the exec ran"));
    pause.unpause();
    const auto rec =
        nlohmann::json::parse(test::read_file(setup.state_dir() + "/sessions/" + s.id + ".json"));
    EXPECT_EQ(rec.value("noSnapshotBecause", ""), "") << rec.dump();
    EXPECT_EQ(rec.value("manifest", nlohmann::json::array()).size(), 0u) << rec.dump();
    auto ran = setup.turn({"--session", s.id}, {"echo", "ran"});
    EXPECT_EQ(ran.result.exit_code, 0) << ran.result.err;
    auto taken = snaps.take(s.id);
    EXPECT_EQ(taken.exit_code, 0) << taken.err;
    EXPECT_EQ(snaps.images().size(), 1u);
}

// A turn sent to a session whose box already ended (its idle timeout, its maximum lifetime, or the
// engine stopping it; here `docker kill`) ran nothing: the engine refuses the exec of a box that
// is not running. It neither bars the session's snapshots nor adds a step to its manifest, and
// the ended box is still snapshotted.
TEST(SnapshotLive, ATurnOfASessionWhoseBoxEndedDoesNotBarSnapshots) {
    test::RadialdSetup setup;
    Snapshots snaps(setup);
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    ASSERT_EQ(setup.turn({"--session", s.id}, {"touch", "/opt/cache/ended"}).result.exit_code, 0);
    ASSERT_EQ(test::run_process({"docker", "kill", s.box()}, {}, 60s).exit_code, 0);
    EXPECT_TRUE(test::wait_until(
        [&] {
            return test::run_process({"docker", "inspect", "-f", "{{.State.Running}}", s.box()}, {},
                                     60s)
                       .out == "false\n";
        },
        60s))
        << "the killed box still runs";
    auto late = setup.turn({"--session", s.id}, {"echo", "never"});
    EXPECT_EQ(late.result.exit_code, 125) << late.result.err;
    EXPECT_THAT(late.result.err, HasSubstr("nothing of the exec ran"));
    // `session ls` lists it, ended, and its id stays taken until the session is removed.
    EXPECT_THAT(late.result.err, HasSubstr("Remove the session with 'radiald session rm " + s.id));
    EXPECT_THAT(late.result.err, Not(HasSubstr("create a new session")));
    EXPECT_THAT(late.result.out, Not(HasSubstr("never")));
    const auto rec =
        nlohmann::json::parse(test::read_file(setup.state_dir() + "/sessions/" + s.id + ".json"));
    EXPECT_EQ(rec.value("noSnapshotBecause", ""), "") << rec.dump();
    EXPECT_EQ(rec.value("uncheckedTurn", ""), "") << rec.dump();
    EXPECT_EQ(rec.value("manifest", nlohmann::json::array()).size(), 1u) << rec.dump();
    auto taken = snaps.take(s.id);
    EXPECT_EQ(taken.exit_code, 0) << taken.err;
    EXPECT_EQ(snaps.images().size(), 1u);
}

// run.maxSnapshots = 0 turns snapshots off: the refusal says so and names the key, not a
// snapshot to remove.
TEST(SnapshotLive, NoSnapshotIsTakenWithMaxSnapshotsZeroAndTheRefusalSaysTheyAreOff) {
    test::RadialdSetup setup("maxSnapshots = 0\n");
    Snapshots snaps(setup);
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    auto refused = snaps.take(s.id);
    EXPECT_EQ(refused.exit_code, 1) << refused.out;
    EXPECT_THAT(refused.err, HasSubstr("snapshots are off in this state directory "
                                       "(run.maxSnapshots = 0); raise run.maxSnapshots"));
    EXPECT_THAT(refused.err, Not(HasSubstr("snapshot-rm")));
    EXPECT_TRUE(snaps.images().empty());
}

// run.maxSnapshots caps what a state directory keeps: one more is refused naming the key, and
// fits again once one is removed; a snapshot a session runs from is not removed. Every session's
// life is journaled.
TEST(SnapshotLive, TheCapRefusesOneMoreSnapshotAndTheJournalNamesEachStep) {
    test::RadialdSetup setup("maxSnapshots = 1\n");
    Snapshots snaps(setup);
    Session a(setup, {}), b(setup, {});
    ASSERT_EQ(a.created.exit_code, 0) << a.created.err;
    ASSERT_EQ(b.created.exit_code, 0) << b.created.err;
    ASSERT_EQ(setup.turn({"--session", b.id}, {"touch", "/opt/cache/b"}).result.exit_code, 0);
    auto first = snaps.take(a.id);
    ASSERT_EQ(first.exit_code, 0) << first.err;
    auto second = snaps.take(b.id);
    EXPECT_EQ(second.exit_code, 1);
    EXPECT_THAT(second.err, HasSubstr("run.maxSnapshots = 1"));
    {
        Session from(setup, {"--from-snapshot", first_line(first.out)});
        ASSERT_EQ(from.created.exit_code, 0) << from.created.err;
        auto busy = test::run_process({RADIALD_PATH, "session", "snapshot-rm", "--config",
                                       setup.config(), first_line(first.out)},
                                      {}, 60s);
        EXPECT_EQ(busy.exit_code, 1);
        EXPECT_THAT(busy.err, HasSubstr("radiald session rm"));
    }
    auto rm = test::run_process(
        {RADIALD_PATH, "session", "snapshot-rm", "--config", setup.config(), first_line(first.out)},
        {}, 60s);
    EXPECT_EQ(rm.exit_code, 0) << rm.err;
    EXPECT_TRUE(snaps.images().empty());
    auto now = snaps.take(b.id);
    EXPECT_EQ(now.exit_code, 0) << now.err;

    const std::string events = test::read_file(setup.state_dir() + "/sessions/events.jsonl");
    EXPECT_THAT(events, HasSubstr("\"event\":\"created\",\"session\":\"" + a.id + "\""));
    EXPECT_THAT(events, HasSubstr("\"event\":\"snapshot\",\"session\":\"" + a.id + "\""));
    EXPECT_THAT(events, HasSubstr("\"detail\":\"removed by 'radiald session rm'\""));
}

// Session `s`'s snapshot after one turn made /opt/cache/sparse a file of `bytes` holes: refused,
// nothing left of it (no image, no record, the box not paused), and the session's next turn runs.
test::ProcessResult sparse_file_refused(const test::RadialdSetup& setup, const Snapshots& snaps,
                                        const Session& s, const std::string& bytes) {
    EXPECT_EQ(s.created.exit_code, 0) << s.created.err;
    auto made = setup.turn({"--session", s.id}, {"truncate", "-s", bytes, "/opt/cache/sparse"});
    EXPECT_EQ(made.result.exit_code, 0) << made.result.err;
    auto refused = snaps.take(s.id);
    EXPECT_EQ(refused.exit_code, 1) << refused.out;
    EXPECT_THAT(refused.err, HasSubstr("/opt/cache/sparse (" + bytes + " bytes)"));
    EXPECT_TRUE(snaps.images().empty());
    auto listed = test::run_process(
        {RADIALD_PATH, "session", "snapshots", "--config", setup.config()}, {}, 60s);
    EXPECT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_EQ(listed.out, "") << "a refused snapshot left a record";
    EXPECT_EQ(
        test::run_process({"docker", "inspect", "-f", "{{.State.Paused}}", s.box()}, {}, 60s).out,
        "false\n");
    auto next = setup.turn({"--session", s.id}, {"echo", "next"});
    EXPECT_EQ(next.result.exit_code, 0) << next.result.err;
    EXPECT_EQ(next.result.out, "next\n");
    return refused;
}

// A sparse file costs the box nothing and a commit its whole size in zeros: the snapshot is
// refused before anything is committed, naming run.maxSnapshotBytes and the file. Once the file is
// gone the snapshot is taken. (The engine's free space, which bounds a snapshot at 0 too, is not
// tested here: a regression would have the engine write terabytes of zeros to its disk.)
TEST(SnapshotLive, ASnapshotPastItsBoundIsRefusedBeforeItsCommit) {
    test::RadialdSetup setup("maxSnapshotBytes = \"1m\"\n");
    Snapshots snaps(setup);
    Session s(setup, {});
    auto refused = sparse_file_refused(setup, snaps, s, "67108864");
    EXPECT_THAT(refused.err, HasSubstr("run.maxSnapshotBytes = 1048576"));
    EXPECT_EQ(setup.turn({"--session", s.id}, {"rm", "/opt/cache/sparse"}).result.exit_code, 0);
    const auto taken = snaps.take(s.id);
    EXPECT_EQ(taken.exit_code, 0) << taken.err << " (once the file is gone)";
    EXPECT_EQ(snaps.images().size(), 1u);
}

// No file at all, and yet a layer of megabytes: links with long targets under long names. The
// bound counted the regular files' sizes alone, so a box made 20,000 such links and an 80 MB
// layer was committed under a 1 MiB bound. A commit's headers, names and link
// targets are counted too.
TEST(SnapshotLive, LinksWithLongTargetsCountTowardsTheBound) {
    test::RadialdSetup setup("maxSnapshotBytes = \"1m\"\n");
    Snapshots snaps(setup);
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    auto made = setup.turn({"--session", s.id},
                           {"sh", "-c",
                            "t=$(head -c 1000 /dev/zero | tr '\\0' a); n=$(head -c 150 /dev/zero "
                            "| tr '\\0' b); i=0; while [ $i -lt 1000 ]; do ln -s \"$t\" "
                            "/opt/cache/$n$i; i=$((i+1)); done"});
    ASSERT_EQ(made.result.exit_code, 0) << made.result.err;
    auto refused = snaps.take(s.id);
    EXPECT_EQ(refused.exit_code, 1) << refused.out;
    EXPECT_THAT(refused.err, HasSubstr("run.maxSnapshotBytes = 1048576"));
    EXPECT_THAT(refused.err, HasSubstr("changed entries' headers, names, link targets"));
    EXPECT_TRUE(snaps.images().empty());
}

} // namespace
} // namespace radial

namespace radial {
namespace {

// `radiald session snapshots --json`, parsed.
nlohmann::json listed_snapshots(const test::RadialdSetup& setup) {
    auto r = test::run_process(
        {RADIALD_PATH, "session", "snapshots", "--json", "--config", setup.config()}, {}, 60s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::array();
}

// Runs `radiald session snapshot` of `session` until the engine has committed the image (its
// answer held by `proxy`), then SIGKILLs it: a radiald that ended mid-commit.
void kill_mid_commit(const test::RadialdSetup& setup, const Snapshots& snaps,
                     test::UnixSocketProxy& proxy, const std::string& session,
                     std::size_t images_before) {
    proxy.hold_answers_to("/commit?");
    const std::string log = setup.dir() / "snapshot-killed.log";
    test::BackgroundProcess taking(
        {RADIALD_PATH, "session", "snapshot", "--config", setup.config(), session}, log);
    EXPECT_TRUE(test::wait_until([&] { return snaps.images().size() == images_before + 1; }, 120s))
        << "the engine never committed the snapshot";
    EXPECT_TRUE(taking.running()) << "radiald did not wait for the held answer (connections "
                                  << proxy.accepted() << ", held " << proxy.held()
                                  << "): " << test::read_file(log);
    taking.signal(SIGKILL);
    taking.wait();
    proxy.hold_answers_to("");
}

// A radiald killed while the engine commits a snapshot leaves its intent's record, not an image
// no record names: the listing shows it incomplete, no session is made from it, taking the
// snapshot again completes it, and `snapshot-rm` removes an incomplete one with its image.
TEST(SnapshotLive, ASnapshotWhoseRadialdDiedMidCommitIsListedCompletedOrRemoved) {
    test::TempDir sock("radial-proxy");
    test::UnixSocketProxy proxy(sock / "docker.sock", "/var/run/docker.sock");
    test::RadialdSetup setup("", "[run.docker]\nhost = \"unix://" + proxy.path() + "\"\n");
    Snapshots snaps(setup);
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    auto install = setup.turn({"--session", s.id}, {"sh", "-c", "echo v1 > /opt/cache/tool"});
    ASSERT_EQ(install.result.exit_code, 0) << install.result.err;

    kill_mid_commit(setup, snaps, proxy, s.id, 0);
    auto list = listed_snapshots(setup);
    ASSERT_EQ(list.size(), 1u) << "an image no record names: " << list;
    EXPECT_EQ(list[0]["complete"], false) << list;
    EXPECT_EQ(list[0]["digest"], "") << list;
    const std::string name = list[0]["image"];
    Session from(setup, {"--from-snapshot", name});
    EXPECT_NE(from.created.exit_code, 0) << "a session was made from an incomplete snapshot";
    EXPECT_THAT(from.created.err, HasSubstr("incomplete"));
    EXPECT_THAT(from.created.err, HasSubstr("snapshot-rm"));

    // Taken again: the same name, now complete with the committed image's digest.
    auto again = snaps.take(s.id);
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(first_line(again.out), name);
    list = listed_snapshots(setup);
    ASSERT_EQ(list.size(), 1u) << list;
    EXPECT_EQ(list[0]["complete"], true) << list;
    EXPECT_THAT(list[0]["digest"].get<std::string>(), ::testing::StartsWith("sha256:"));

    // A second one, killed mid-commit, then removed: its image goes with its record.
    auto more = setup.turn({"--session", s.id}, {"sh", "-c", "echo v2 >> /opt/cache/tool"});
    ASSERT_EQ(more.result.exit_code, 0) << more.result.err;
    kill_mid_commit(setup, snaps, proxy, s.id, 1);
    list = listed_snapshots(setup);
    ASSERT_EQ(list.size(), 2u) << list;
    const auto& half = list[0]["complete"] == false ? list[0] : list[1];
    EXPECT_EQ(half["complete"], false) << list;
    auto rm = test::run_process({RADIALD_PATH, "session", "snapshot-rm", "--config", setup.config(),
                                 half["tag"].get<std::string>()},
                                {}, 120s);
    EXPECT_EQ(rm.exit_code, 0) << rm.err;
    EXPECT_EQ(snaps.images().size(), 1u) << "the incomplete snapshot's image is still there";
    EXPECT_EQ(listed_snapshots(setup).size(), 1u);
}

// SIGTERM reaching `session snapshot` while the engine commits the box: once the commit returned,
// its image and its intent's record go, and the command says so on one line and exits 130 (it died
// of the signal, leaving an incomplete snapshot no session can be made from until `snapshot-rm`).
// Taken again, the snapshot is made.
TEST(SnapshotLive, ASignalDuringASnapshotsCommitLeavesNoSnapshot) {
    test::TempDir sock("radial-proxy");
    test::UnixSocketProxy proxy(sock / "docker.sock", "/var/run/docker.sock");
    test::RadialdSetup setup("", "[run.docker]\nhost = \"unix://" + proxy.path() + "\"\n");
    Snapshots snaps(setup);
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    auto install = setup.turn({"--session", s.id}, {"sh", "-c", "echo v1 > /opt/cache/tool"});
    ASSERT_EQ(install.result.exit_code, 0) << install.result.err;
    const std::string log = setup.dir() / "snapshot.log";
    proxy.hold_answers_to("/commit?");
    test::BackgroundProcess taking(
        {RADIALD_PATH, "session", "snapshot", "--config", setup.config(), s.id}, log, true);
    const bool caught = test::signal_while_held(taking, proxy, SIGTERM);
    const int status = taking.wait(300s);
    const std::string err = test::read_file(log);
    ASSERT_TRUE(caught) << "session snapshot never waited on its commit: " << err;
    EXPECT_EQ(status, 130) << err;
    EXPECT_THAT(err, HasSubstr("interrupted by SIGTERM: no snapshot was taken; nothing is left"));
    EXPECT_EQ(taking.read_line(10s), std::nullopt) << "a snapshot was printed";
    EXPECT_EQ(listed_snapshots(setup).size(), 0u) << listed_snapshots(setup);
    EXPECT_EQ(snaps.images().size(), 0u) << "the interrupted commit's image stayed";
    auto again = snaps.take(s.id);
    EXPECT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(listed_snapshots(setup).size(), 1u);
}

} // namespace
} // namespace radial
