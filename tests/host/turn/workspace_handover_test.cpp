// The workspace changes hands for the turn and back (docs/design.md §17, C-12), never through a
// symlink and never touching what belongs to anyone else. Needs root (chown); skipped otherwise.
#include "turn/workspace_handover.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <radial/internal/unique_fd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../support/temp_dir.h"
#include "journal/journal_sqlite.h"
#include "turn/handover_recovery.h"

namespace radial::turn {
namespace {

constexpr uid_t kOwner = 4242;
constexpr gid_t kGroup = 4243;
constexpr uid_t kBox = 2000000000;

struct stat lstat_of(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
}

TEST(WorkspaceHandover, C12_TheTreeIsTheBoxsDuringTheTurnAndTheOwnersAfter) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir ws("radial-ho"), outside("radial-ho-out");
    const std::string w = ws.path();
    std::filesystem::create_directories(w + "/a/b");
    std::ofstream(w + "/a/b/f") << "x";
    std::ofstream(outside / "secret") << "s";
    std::ofstream(w + "/foreign") << "y";
    std::filesystem::create_symlink(outside / "secret", w + "/link");
    for (const char* p : {"", "/a", "/a/b", "/a/b/f"})
        ASSERT_EQ(::lchown((w + p).c_str(), kOwner, kGroup), 0);
    ASSERT_EQ(::lchown((w + "/link").c_str(), kOwner, kGroup), 0);
    ASSERT_EQ(::chown((outside / "secret").c_str(), kOwner, kGroup), 0);
    ASSERT_EQ(::chown((w + "/foreign").c_str(), 4343, 4343), 0);
    {
        WorkspaceHandover handover(w, kBox, kBox);
        for (const char* p : {"", "/a", "/a/b", "/a/b/f", "/link"}) {
            EXPECT_EQ(lstat_of(w + p).st_uid, kBox) << p;
            EXPECT_EQ(lstat_of(w + p).st_gid, kGroup) << p;
        }
        EXPECT_EQ(lstat_of(outside / "secret").st_uid, kOwner) << "followed the symlink";
        EXPECT_EQ(lstat_of(w + "/foreign").st_uid, 4343u) << "not the owner's: left alone";
        // What the box makes meanwhile; a symlink it leaves points outside, at a file that
        // happens to be the box uid's.
        std::filesystem::create_directories(w + "/new/deeper");
        std::ofstream(w + "/new/deeper/g") << "z";
        for (const char* p : {"/new", "/new/deeper", "/new/deeper/g"})
            ASSERT_EQ(::lchown((w + p).c_str(), kBox, kBox), 0);
        ASSERT_EQ(::chown((outside / "secret").c_str(), kBox, kBox), 0);
        std::filesystem::create_symlink(outside / "secret", w + "/new/escape");
        ASSERT_EQ(::lchown((w + "/new/escape").c_str(), kBox, kBox), 0);
    }
    for (const char* p : {"", "/a", "/a/b", "/a/b/f", "/link", "/new", "/new/deeper",
                          "/new/deeper/g", "/new/escape"}) {
        EXPECT_EQ(lstat_of(w + p).st_uid, kOwner) << p;
        EXPECT_EQ(lstat_of(w + p).st_gid, kGroup) << p;
    }
    EXPECT_EQ(lstat_of(outside / "secret").st_uid, kBox) << "followed the box's symlink";
    EXPECT_EQ(lstat_of(w + "/foreign").st_uid, 4343u);
}

// A socket in the workspace is the owner's service (a rootless engine's socket, an agent's): the
// box's uid never gets it, so it cannot connect as the owner. What the box makes, a socket too,
// still goes back to the owner (docs/design.md §3.9).
TEST(WorkspaceHandover, TheOwnersSocketsStayTheOwners) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir ws("radial-hos");
    const std::string w = ws.path();
    std::filesystem::create_directories(w + "/run");
    auto bind_socket = [](const std::string& path, uid_t uid, gid_t gid) {
        internal::UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        ASSERT_LT(path.size(), sizeof a.sun_path);
        std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
        ASSERT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << path;
        ASSERT_EQ(::lchown(path.c_str(), uid, gid), 0);
    };
    bind_socket(w + "/run/engine.sock", kOwner, kGroup);
    for (const char* p : {"", "/run"}) ASSERT_EQ(::lchown((w + p).c_str(), kOwner, kGroup), 0);
    {
        WorkspaceHandover handover(w, kBox, kBox);
        EXPECT_EQ(lstat_of(w + "/run").st_uid, kBox);
        EXPECT_EQ(lstat_of(w + "/run/engine.sock").st_uid, kOwner) << "the box got the socket";
        bind_socket(w + "/run/box.sock", kBox, kBox);
    }
    EXPECT_EQ(lstat_of(w + "/run/engine.sock").st_uid, kOwner);
    EXPECT_EQ(lstat_of(w + "/run/box.sock").st_uid, kOwner) << "the box's socket went back";
}

// A session's workspace that a killed radiald left the box uid's (its box kept, no hand-back):
// the next turn gives it back to the owner the session recorded at create, not to the box; a
// directory that belongs to anyone else keeps its own owner, whatever was recorded.
TEST(WorkspaceHandover, ATreeLeftTheBoxUidsGoesBackToTheRecordedOwner) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir ws("radial-ho");
    const std::string w = ws.path();
    std::filesystem::create_directories(w + "/a");
    std::ofstream(w + "/a/f") << "x";
    for (const char* p : {"", "/a", "/a/f"}) ASSERT_EQ(::lchown((w + p).c_str(), kBox, kBox), 0);
    {
        WorkspaceHandover handover(w, kBox, kBox, {}, true, std::make_pair(kOwner, kGroup));
        EXPECT_EQ(lstat_of(w).st_uid, kBox);
    }
    for (const char* p : {"", "/a", "/a/f"}) {
        EXPECT_EQ(lstat_of(w + p).st_uid, kOwner) << p;
        EXPECT_EQ(lstat_of(w + p).st_gid, kGroup) << p;
    }
    // Given to another user since: that user's, not the recorded owner's.
    for (const char* p : {"", "/a", "/a/f"}) ASSERT_EQ(::lchown((w + p).c_str(), 4343, 4343), 0);
    {
        WorkspaceHandover handover(w, kBox, kBox, {}, true, std::make_pair(kOwner, kGroup));
        EXPECT_EQ(lstat_of(w + "/a/f").st_uid, kBox);
    }
    for (const char* p : {"", "/a", "/a/f"}) EXPECT_EQ(lstat_of(w + p).st_uid, 4343u) << p;
}

// No setuid or setgid file a box made survives its turn, however deep (docs/design.md §17,
// C-12's class): the hand-back has no depth limit, clears both bits (setgid without group
// execute, which a chown keeps, included), and gives every level back.
// The workspace's path was resolved when the turn was checked: a link in it now (its owner
// replaced the directory, or a directory above it, with one to another user's tree) is not
// followed, and nothing of that tree changes hands.
TEST(WorkspaceHandover, AWorkspaceReachedThroughALinkNowIsNotHandedOver) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir base("radial-ho"), victim("radial-ho-victim");
    std::filesystem::create_directories(victim / "ws");
    std::ofstream(victim / "ws/file") << "v";
    for (const char* p : {"", "/ws", "/ws/file"})
        ASSERT_EQ(::lchown((victim.path() + p).c_str(), 4343, 4343), 0);
    std::filesystem::create_symlink(victim / "ws", base / "ws");    // the last component
    std::filesystem::create_symlink(victim.path(), base / "above"); // one above it
    for (const std::string& w : {base / "ws", base / "above/ws"}) {
        {
            WorkspaceHandover handover(w, kBox, kBox);
            EXPECT_EQ(lstat_of(victim / "ws/file").st_uid, 4343u) << w;
            EXPECT_EQ(lstat_of(victim / "ws").st_uid, 4343u) << w;
        }
        EXPECT_EQ(lstat_of(victim / "ws/file").st_uid, 4343u) << w;
    }
}

// A session's workspace is the directory it was created with: another directory moved to its
// path since (not a link: a rename) is not handed to the box's ids, and the turn is told.
TEST(WorkspaceHandover, ASessionsWorkspaceReplacedSinceItsCreateIsNotHandedOver) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir base("radial-ho");
    std::filesystem::create_directories(base / "ws");
    const std::string created = [&] {
        const internal::UniqueFd fd(::open((base / "ws").c_str(), O_RDONLY | O_DIRECTORY));
        return directory_identity(fd.get());
    }();
    ASSERT_NE(created, "");
    std::filesystem::rename(base / "ws", base / "old");
    std::filesystem::create_directories(base / "ws");
    std::ofstream(base / "ws/file") << "other";
    for (const char* p : {"/ws", "/ws/file"})
        ASSERT_EQ(::lchown((base.path() + p).c_str(), 4343, 4343), 0);
    {
        WorkspaceHandover handover(base / "ws", kBox, kBox, {}, true, std::nullopt, created);
        EXPECT_NE(handover.moved().find("not the directory its session was created with"),
                  std::string::npos)
            << handover.moved();
        EXPECT_EQ(lstat_of(base / "ws/file").st_uid, 4343u);
    }
    EXPECT_EQ(lstat_of(base / "ws/file").st_uid, 4343u);
    // The directory it was created with, moved back, is handed over as before.
    std::filesystem::remove_all(base / "ws");
    std::filesystem::rename(base / "old", base / "ws");
    ASSERT_EQ(::lchown((base.path() + "/ws").c_str(), 4343, 4343), 0);
    std::ofstream(base / "ws/mine") << "m";
    ASSERT_EQ(::lchown((base.path() + "/ws/mine").c_str(), 4343, 4343), 0);
    {
        WorkspaceHandover handover(base / "ws", kBox, kBox, {}, true, std::nullopt, created);
        EXPECT_EQ(handover.moved(), "");
        EXPECT_EQ(lstat_of(base / "ws/mine").st_uid, kBox);
    }
    EXPECT_EQ(lstat_of(base / "ws/mine").st_uid, 4343u);
}

// The hand-back walks the directory that was handed over, wherever it was moved meanwhile, and
// nothing that took its name.
TEST(WorkspaceHandover, TheHandBackFindsTheDirectoryWhereverItWasMoved) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir base("radial-ho");
    const std::string w = base / "ws";
    std::filesystem::create_directories(w + "/a");
    std::ofstream(w + "/a/f") << "x";
    for (const char* p : {"", "/a", "/a/f"})
        ASSERT_EQ(::lchown((w + p).c_str(), kOwner, kGroup), 0);
    {
        WorkspaceHandover handover(w, kBox, kBox);
        ASSERT_EQ(lstat_of(w + "/a/f").st_uid, kBox);
        std::filesystem::rename(w, base / "ws.old");
        std::filesystem::create_directories(w);
        std::ofstream(w + "/other") << "y";
        ASSERT_EQ(::lchown((w + "/other").c_str(), kBox, kBox), 0);
    }
    for (const char* p : {"", "/a", "/a/f"})
        EXPECT_EQ(lstat_of(base / "ws.old" + p).st_uid, kOwner) << p;
    EXPECT_EQ(lstat_of(w + "/other").st_uid, kBox) << "not the directory handed over";
}

TEST(WorkspaceHandover, NoSetuidOrSetgidFileSurvivesAtAnyDepth) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir ws("radial-ho");
    const std::string w = ws.path();
    ASSERT_EQ(::chown(w.c_str(), kOwner, kGroup), 0);
    std::string deep = w;
    {
        WorkspaceHandover handover(w, kBox, kBox);
        // What the box makes: setuid and setgid copies at the top, and 300 levels down (deeper
        // than a walk holding a descriptor per level can go), each level the box's.
        std::vector<std::string> made = {w + "/suid", w + "/sgid"};
        for (int i = 0; i < 300; ++i) {
            deep += "/d";
            ASSERT_EQ(::mkdir(deep.c_str(), 0755), 0) << i;
            ASSERT_EQ(::chown(deep.c_str(), kBox, kBox), 0);
        }
        made.push_back(deep + "/suid");
        for (const auto& f : made) {
            std::ofstream(f) << "#!/bin/sh\n";
            ASSERT_EQ(::chown(f.c_str(), kBox, kBox), 0);
        }
        ASSERT_EQ(::chmod((w + "/suid").c_str(), 04755), 0);
        ASSERT_EQ(::chmod((w + "/sgid").c_str(), 02644), 0); // setgid, no group execute
        ASSERT_EQ(::chmod((deep + "/suid").c_str(), 06755), 0);
        handover.give_back();
        EXPECT_TRUE(handover.report().complete);
        EXPECT_GE(handover.report().deepest, 300u);
        EXPECT_EQ(handover.report().setid_cleared, 3u);
    }
    for (const std::string& f : {w + "/suid", w + "/sgid", deep + "/suid"}) {
        struct stat st = lstat_of(f);
        EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0u) << f;
        EXPECT_EQ(st.st_uid, kOwner) << f;
    }
    EXPECT_EQ(lstat_of(w + "/suid").st_mode & 0777, 0755u) << "only the two bits go";
    EXPECT_EQ(lstat_of(deep).st_uid, kOwner) << "the deepest level was given back";
}

// What the box made writable by every local user (the root, .git/hooks, a file, a sticky
// directory) is not so once it is the owner's: another user could plant a hook that runs as the
// owner. An entry the box did not own keeps its mode, and only that one bit goes.
TEST(WorkspaceHandover, NothingTheBoxMadeWritableByAllStaysSoForTheOwner) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir ws("radial-ho-ww");
    const std::string w = ws.path();
    ASSERT_EQ(::chown(w.c_str(), kOwner, kGroup), 0);
    std::filesystem::create_directories(w + "/.git/hooks");
    std::ofstream(w + "/f") << "x";
    std::ofstream(w + "/roots") << "x"; // root's, never handed over
    for (const char* p : {"/.git", "/.git/hooks", "/f"})
        ASSERT_EQ(::chown((w + p).c_str(), kOwner, kGroup), 0);
    ASSERT_EQ(::chmod((w + "/roots").c_str(), 0666), 0);
    {
        WorkspaceHandover handover(w, kBox, kBox);
        ASSERT_EQ(lstat_of(w + "/.git/hooks").st_uid, kBox);
        ASSERT_EQ(::mkdir((w + "/tmp").c_str(), 0755), 0);
        ASSERT_EQ(::chown((w + "/tmp").c_str(), kBox, kBox), 0);
        for (const auto& [p, mode] : std::vector<std::pair<std::string, mode_t>>{
                 {"", 0777}, {"/.git/hooks", 0777}, {"/f", 0666}, {"/tmp", 01777}})
            ASSERT_EQ(::chmod((w + p).c_str(), mode), 0) << p;
        handover.give_back();
        EXPECT_TRUE(handover.report().complete);
        EXPECT_EQ(handover.report().open_to_all_cleared, 4u);
    }
    for (const auto& [p, mode] : std::vector<std::pair<std::string, mode_t>>{
             {"", 0775}, {"/.git/hooks", 0775}, {"/f", 0664}, {"/tmp", 01775}}) {
        const struct stat st = lstat_of(w + p);
        EXPECT_EQ(st.st_mode & 07777, mode) << "'" << p << "'";
        EXPECT_EQ(st.st_uid, kOwner) << p;
    }
    EXPECT_EQ(lstat_of(w + "/roots").st_mode & 07777, 0666u) << "not the box's: kept";
}

TEST(WorkspaceHandover, ARootOwnedWorkspaceOnlyGetsTheBoxsFilesBack) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir ws("radial-ho-root");
    const std::string w = ws.path();
    std::ofstream(w + "/mine") << "x";
    {
        WorkspaceHandover handover(w, kBox, kBox);
        EXPECT_EQ(lstat_of(w + "/mine").st_uid, 0u) << "root's files are never handed over";
        std::ofstream(w + "/made") << "y";
        ASSERT_EQ(::chown((w + "/made").c_str(), kBox, kBox), 0);
    }
    EXPECT_EQ(lstat_of(w + "/made").st_uid, 0u);
    EXPECT_EQ(lstat_of(w + "/made").st_gid, lstat_of(w).st_gid);
}

// `w`, with a file "f" in it, both the workspace owner's.
void owner_with_a_file(const std::string& w) {
    std::ofstream(w + "/f") << "x";
    ASSERT_EQ(::lchown(w.c_str(), kOwner, kGroup), 0);
    ASSERT_EQ(::lchown((w + "/f").c_str(), kOwner, kGroup), 0);
}

// A child process hands `w` to the box uid with its note at `note`, then dies as SIGKILL would:
// no give-back, the note left unlocked. Whether the child ran and ended.
bool hand_over_and_die(const std::string& w, const std::string& note) {
    const pid_t child = ::fork();
    if (child == 0) {
        static std::optional<WorkspaceHandover> leaked; // _exit runs no destructor
        leaked.emplace(w, kBox, kBox, note);
        ::_exit(0);
    }
    int status = 0;
    return child > 0 && ::waitpid(child, &status, 0) == child && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}

// A radiald killed during its turn leaves a note; the next radiald of the state directory hands
// the tree back. A note whose turn still runs (its lock held) is left alone.
TEST(WorkspaceHandover, C12_AKilledRadialdsWorkspaceIsHandedBackByTheNextOne) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir ws("radial-ho-kill"), state("radial-ho-state");
    const std::string w = ws.path();
    ASSERT_NO_FATAL_FAILURE(owner_with_a_file(w));
    const std::string notes = handover_marker_dir(state.path());
    {
        WorkspaceHandover live(w, kBox, kBox, notes + "/live");
        EXPECT_EQ(WorkspaceHandover::recover(notes), 0u) << "a running turn's tree was taken";
        EXPECT_EQ(lstat_of(w + "/f").st_uid, kBox);
    }
    EXPECT_FALSE(std::filesystem::exists(notes + "/live")) << "a finished hand-over left its note";

    ASSERT_TRUE(hand_over_and_die(w, notes + "/killed"));
    ASSERT_EQ(lstat_of(w + "/f").st_uid, kBox) << "the child did not hand the tree over";
    EXPECT_EQ(WorkspaceHandover::recover(notes), 1u);
    EXPECT_EQ(lstat_of(w).st_uid, kOwner);
    EXPECT_EQ(lstat_of(w + "/f").st_uid, kOwner);
    EXPECT_FALSE(std::filesystem::exists(notes + "/killed"));
    EXPECT_EQ(WorkspaceHandover::recover(notes), 0u);
}

// A note is locked and whole before it has its name: a recovery beside a turn's start (session rm,
// reconcile) saw the note its turn had just made, not yet locked, empty, and removed it as "not a
// workspace hand-over note", so a radiald killed in that turn left nothing to hand the tree back
// by. Under its temporary name a note is passed over, and removed only once a killed radiald
// plainly left it unfinished (a minute old).
TEST(WorkspaceHandover, ANoteBeingWrittenIsNeitherObeyedNorRemovedByARecovery) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir ws("radial-ho-kill"), state("radial-ho-state");
    const std::string w = ws.path();
    ASSERT_NO_FATAL_FAILURE(owner_with_a_file(w));
    const std::string notes = handover_marker_dir(state.path());
    ASSERT_TRUE(std::filesystem::create_directories(notes));
    // What a turn's start has made at the moment a recovery looks: the file, empty, unlocked.
    const std::string fresh = notes + "/" + std::string(kNoteBeingWritten) + "turn-9.a1b2c3";
    const std::string stale = notes + "/" + std::string(kNoteBeingWritten) + "turn-8.d4e5f6";
    for (const auto& p : {fresh, stale}) {
        std::ofstream{p};
        ASSERT_EQ(::chmod(p.c_str(), 0600), 0);
    }
    const timespec old_times[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, stale.c_str(), old_times, 0), 0);
    EXPECT_EQ(WorkspaceHandover::recover(notes), 0u);
    EXPECT_TRUE(std::filesystem::exists(fresh))
        << "a note being written was taken for a forged one";
    EXPECT_FALSE(std::filesystem::exists(stale)) << "an unfinished note stays forever";

    // Under its own name a note is whole and held from the start: a killed turn's is obeyed.
    ASSERT_TRUE(hand_over_and_die(w, notes + "/turn-9"));
    ASSERT_EQ(lstat_of(w + "/f").st_uid, kBox);
    std::size_t temporary = 0;
    for (const auto& e : std::filesystem::directory_iterator(notes))
        temporary += e.path().filename().string().starts_with(kNoteBeingWritten) ? 1 : 0;
    EXPECT_EQ(temporary, 1u) << "only the note made above may be under a temporary name";
    EXPECT_EQ(WorkspaceHandover::recover(notes), 1u);
    EXPECT_EQ(lstat_of(w + "/f").st_uid, kOwner);
}

// A killed radiald's box may still run, and write as the box user: its note stays (and its tree
// the box's) until the box is said to be gone, whatever order the recoveries come in.
TEST(WorkspaceHandover, C12_ANoteWhoseBoxStillWritesIsKeptUntilTheBoxIsGone) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir ws("radial-ho-kill"), state("radial-ho-state");
    const std::string w = ws.path();
    ASSERT_NO_FATAL_FAILURE(owner_with_a_file(w));
    const std::string notes = handover_marker_dir(state.path());
    ASSERT_TRUE(hand_over_and_die(w, notes + "/turn-7"));
    std::vector<std::string> asked;
    bool box_runs = true;
    const WorkspaceHandover::BoxMayWrite may_write = [&](const std::string& id) {
        asked.push_back(id);
        return box_runs;
    };
    EXPECT_EQ(WorkspaceHandover::recover(notes, may_write), 0u);
    EXPECT_EQ(asked, std::vector<std::string>{"turn-7"});
    EXPECT_EQ(lstat_of(w + "/f").st_uid, kBox) << "handed back under a running box";
    EXPECT_TRUE(std::filesystem::exists(notes + "/turn-7"));
    // What the box writes meanwhile is handed back with the rest once it is gone.
    std::ofstream(w + "/late") << "y";
    ASSERT_EQ(::lchown((w + "/late").c_str(), kBox, kBox), 0);
    EXPECT_EQ(WorkspaceHandover::recover(
                  notes, [](const std::string&) -> bool { throw std::runtime_error("no engine"); }),
              0u)
        << "an engine that cannot be asked keeps the note";
    box_runs = false;
    EXPECT_EQ(WorkspaceHandover::recover(notes, may_write), 1u);
    for (const char* p : {"", "/f", "/late"}) EXPECT_EQ(lstat_of(w + p).st_uid, kOwner) << p;
    EXPECT_FALSE(std::filesystem::exists(notes + "/turn-7"));
}

// A note is an order to chown a tree, carried out as root: its directory is radiald's alone
// whatever the umask, and a note another user could have written (a file not radiald's, one
// writable by others, one that gives root's files away) is removed, not obeyed.
TEST(WorkspaceHandover, OnlyANoteRadialdWroteIsObeyed) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir ws("radial-ho-kill"), state("radial-ho-state"), victim("radial-ho-victim");
    const std::string w = ws.path();
    ASSERT_NO_FATAL_FAILURE(owner_with_a_file(w));
    const std::string notes = handover_marker_dir(state.path());
    const mode_t old_umask = ::umask(0);
    ASSERT_TRUE(hand_over_and_die(w, notes + "/killed"));
    ::umask(old_umask);
    EXPECT_EQ(lstat_of(notes).st_mode & 07777, 0700u) << "the umask chose the notes' mode";
    EXPECT_EQ(WorkspaceHandover::recover(notes), 1u);

    // Root's files, which a note must never give to anyone.
    std::ofstream(victim / "secret") << "root's";
    const std::string v = victim.path();
    const auto forge = [&](const std::string& name, const std::string& text, uid_t as,
                           mode_t mode) {
        const std::string path = notes + "/" + name;
        std::ofstream(path) << text;
        ASSERT_EQ(::chown(path.c_str(), as, as), 0);
        ASSERT_EQ(::chmod(path.c_str(), mode), 0);
    };
    const std::string gives_root_away = "4242 4242 0 0\n" + v + "\n";
    const std::string gives_box_files =
        "4242 4242 " + std::to_string(kBox) + " " + std::to_string(kBox) + "\n" + v + "\n";
    ASSERT_EQ(::lchown((v + "/secret").c_str(), kBox, kBox), 0);
    ASSERT_NO_FATAL_FAILURE(forge("another-users", gives_box_files, 65534, 0600));
    ASSERT_NO_FATAL_FAILURE(forge("writable-by-all", gives_box_files, 0, 0666));
    // A directory made writable by all (an older radiald under a umask of 0) is made radiald's.
    ASSERT_EQ(::chmod(notes.c_str(), 0777), 0);
    EXPECT_EQ(WorkspaceHandover::recover(notes), 0u);
    EXPECT_EQ(lstat_of(v + "/secret").st_uid, kBox) << "a note radiald did not write was obeyed";
    EXPECT_EQ(lstat_of(notes).st_mode & 07777, 0700u);
    EXPECT_TRUE(std::filesystem::is_empty(notes)) << "a forged note stays";

    ASSERT_EQ(::lchown((v + "/secret").c_str(), 0, 0), 0);
    ASSERT_NO_FATAL_FAILURE(forge("root-to-4242", gives_root_away, 0, 0600));
    EXPECT_EQ(WorkspaceHandover::recover(notes), 0u);
    EXPECT_EQ(lstat_of(v + "/secret").st_uid, 0u) << "root's file was given away";
    EXPECT_TRUE(std::filesystem::is_empty(notes));
}

// A note names the directory by its inode too: one put in its place since (by its owner) is not
// walked for the box uid's entries, and a link in its path is not followed.
TEST(WorkspaceHandover, ANoteForADirectoryReplacedSinceHandsNothingBack) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir base("radial-ho-kill"), state("radial-ho-state"), victim("radial-ho-victim");
    const std::string w = base / "ws";
    std::filesystem::create_directories(w);
    ASSERT_NO_FATAL_FAILURE(owner_with_a_file(w));
    const std::string notes = handover_marker_dir(state.path());
    for (const bool as_link : {false, true}) {
        ASSERT_TRUE(hand_over_and_die(w, notes + "/killed"));
        ASSERT_EQ(lstat_of(w + "/f").st_uid, kBox);
        std::filesystem::rename(w, base / "ws.old");
        // In its place: a directory of the box uid's entries, or a link to one.
        const std::string other = as_link ? victim / "ws" : w;
        std::filesystem::create_directories(other);
        std::ofstream(other + "/g") << "y";
        ASSERT_EQ(::lchown((other + "/g").c_str(), kBox, kBox), 0);
        if (as_link) std::filesystem::create_symlink(other, w);
        EXPECT_EQ(WorkspaceHandover::recover(notes), 0u) << as_link;
        EXPECT_EQ(lstat_of(other + "/g").st_uid, kBox) << as_link;
        EXPECT_FALSE(std::filesystem::exists(notes + "/killed")) << "the note stays forever";
        // Put back for the next round, the tree its owner's again.
        std::filesystem::remove_all(w);
        std::filesystem::rename(base / "ws.old", w);
        ASSERT_EQ(::lchown(w.c_str(), kOwner, kGroup), 0);
        ASSERT_EQ(::lchown((w + "/f").c_str(), kOwner, kGroup), 0);
    }
}

// A hand-back that cannot list or open a directory (out of descriptors here, at every limit from
// none to spare to more than the walk needs) says it is incomplete; one that says it is complete
// gave every entry back. A partial walk taken for a whole one would leave the box's ids on the
// owner's files with nothing said.
TEST(WorkspaceHandover, AHandBackThatCouldNotReachADirectorySaysSo) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
#if defined(__SANITIZE_ADDRESS__)
    // UBSan's vptr check makes a pipe to probe memory; out of descriptors it reports the
    // logger's own objects as invalid. The optimized build runs this test.
    GTEST_SKIP() << "the sanitizers need descriptors of their own";
#endif
    test::TempDir ws("radial-ho-fds");
    const std::string w = ws.path();
    std::vector<std::string> paths{""};
    std::string dir;
    for (const char* level : {"/a", "/b", "/c", "/d"}) {
        dir += level;
        std::filesystem::create_directories(w + dir);
        std::ofstream(w + dir + "/f") << "x";
        paths.push_back(dir);
        paths.push_back(dir + "/f");
    }
    auto give_to = [&](uid_t uid, gid_t gid) {
        for (const auto& p : paths) ASSERT_EQ(::lchown((w + p).c_str(), uid, gid), 0) << p;
    };
    give_to(kOwner, kGroup);
    int complete = 0, incomplete = 0;
    for (rlim_t spare = 0; spare <= 6; ++spare) {
        const pid_t child = ::fork();
        if (child == 0) {
            WorkspaceHandover handover(w, kBox, kBox);
            const int lowest_free = ::open("/", O_RDONLY | O_CLOEXEC);
            ::close(lowest_free);
            const rlimit limit{static_cast<rlim_t>(lowest_free) + spare,
                               static_cast<rlim_t>(lowest_free) + spare};
            if (lowest_free < 0 || ::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(2);
            handover.give_back();
            ::_exit(handover.report().complete ? 0 : 3);
        }
        ASSERT_GT(child, 0);
        int status = 0;
        ASSERT_EQ(::waitpid(child, &status, 0), child);
        ASSERT_TRUE(WIFEXITED(status)) << spare;
        const int code = WEXITSTATUS(status);
        ASSERT_TRUE(code == 0 || code == 3) << "spare " << spare << ": exit " << code;
        if (code == 0) {
            ++complete;
            for (const auto& p : paths)
                EXPECT_EQ(lstat_of(w + p).st_uid, kOwner)
                    << p << " with " << spare << " spare descriptors: said complete";
        } else {
            ++incomplete;
        }
        give_to(kOwner, kGroup);
    }
    EXPECT_GT(incomplete, 0) << "no limit was short enough to stop the walk: nothing was tested";
    EXPECT_GT(complete, 0) << "no limit let the walk finish";
}

// After a turn of a session ran its exec and handed the workspace back, the notes earlier turns of
// that session left are done with — only those: of the same box (the journal's label), the same
// directory and the same ids (the note's first line), and not locked by a running turn.
TEST(WorkspaceHandover, OnlyEarlierNotesOfTheSameSessionDirectoryAndIdsAreForgotten) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir ws("radial-ho-sess"), state("radial-ho-state");
    const std::string w = ws.path();
    ASSERT_NO_FATAL_FAILURE(owner_with_a_file(w));
    const std::string notes = handover_marker_dir(state.path());
    auto journal = journal::open_sqlite_journal(state / "journal.sqlite3");
    const std::string mine = "radial-session-x-s1", other = "radial-session-x-s2";
    for (const auto& [id, label] : std::vector<std::pair<std::string, std::string>>{
             {"same", mine}, {"other-box", other}, {"other-dir", mine}, {"running", mine}})
        journal->add_turn({id, label, "fake", "img", "result", "{}"}, journal::TurnState::queued);
    ASSERT_TRUE(hand_over_and_die(w, notes + "/same"));
    std::filesystem::copy_file(notes + "/same", notes + "/other-box");
    {
        std::ifstream in(notes + "/same");
        std::string first, rest((std::istreambuf_iterator<char>(std::getline(in, first))), {});
        std::ofstream(notes + "/other-dir") << first << "1\n" << rest; // another inode
    }
    WorkspaceHandover running(w, kBox, kBox, notes + "/running", true, {{kOwner, kGroup}});
    {
        WorkspaceHandover now(w, kBox, kBox, notes + "/now", true, {{kOwner, kGroup}});
        now.give_back();
        EXPECT_EQ(forget_earlier_session_notes(notes, "now", mine, now.note_ids(), *journal), 1u);
    }
    EXPECT_FALSE(std::filesystem::exists(notes + "/same"));
    for (const char* kept : {"other-box", "other-dir", "running"})
        EXPECT_TRUE(std::filesystem::exists(notes + "/" + kept)) << kept;
}

} // namespace
} // namespace radial::turn
