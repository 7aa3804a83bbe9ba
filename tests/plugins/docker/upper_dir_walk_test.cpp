// walk_upper_dir (plugins/docker/upper_dir_walk.h) over a real directory laid out as an overlayfs
// upper directory: what changed since a time is given with its bytes, nothing is followed,
// whiteouts and holes are skipped, and what cannot be read is an error, never a clean entry.
#include "upper_dir_walk.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <radial/internal/dir_names.h>
#include <radial/internal/unique_fd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "../../support/temp_dir.h"

namespace radial::docker {
namespace {
namespace fs = std::filesystem;

struct WalkedChanges {
    std::map<std::string, std::pair<std::uint32_t, std::string>> entries; // path -> kind, bytes
    std::string current;
};

radial_change_sink sink_for(WalkedChanges& c) {
    radial_change_sink s{};
    s.struct_size = sizeof(s);
    s.ctx = &c;
    s.entry = [](void* ctx, radial_str path, std::uint32_t kind) -> std::int32_t {
        auto* c = static_cast<WalkedChanges*>(ctx);
        c->current.assign(path.data, path.size);
        c->entries[c->current] = {kind, ""};
        return 0;
    };
    s.data = [](void* ctx, const std::uint8_t* d, std::size_t n) -> std::int32_t {
        auto* c = static_cast<WalkedChanges*>(ctx);
        c->entries[c->current].second.append(reinterpret_cast<const char*>(d), n);
        return 0;
    };
    return s;
}

std::uint64_t walk_clock_ms() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
}

WalkedChanges walk(const std::string& dir, std::uint64_t since_ms,
                   std::size_t most_names_held = kMostNamesHeld) {
    WalkedChanges c;
    auto s = sink_for(c);
    radial::plugin::ChangeSink sink(&s);
    walk_upper_dir(dir, since_ms, sink, most_names_held);
    return c;
}

TEST(UpperDirWalkTest, GivesFilesLinksAndAttributesWithoutFollowingAnything) {
    test::TempDir up("radial-upper");
    fs::create_directories(up / "opt/cache");
    up.write("opt/cache/tool", "tool-v1\n");
    ASSERT_EQ(::symlink("/etc/shadow", (up / "opt/cache/link").c_str()), 0);
    ASSERT_EQ(::mkfifo((up / "opt/cache/fifo").c_str(), 0600), 0);
    ASSERT_EQ(::mknod((up / "opt/gone").c_str(), S_IFCHR | 0000, makedev(0, 0)), 0); // whiteout
    const std::string f = up / "opt/cache/tool";
    if (::setxattr(f.c_str(), "user.note", "attr-value", 10, 0) != 0)
        GTEST_LOG_(INFO) << "no user xattrs on /tmp here; the attribute part is not exercised";
    const bool has_xattr = ::getxattr(f.c_str(), "user.note", nullptr, 0) == 10;

    auto c = walk(up.path(), 0);
    ASSERT_TRUE(c.entries.count("/opt/cache/tool"));
    EXPECT_EQ(c.entries["/opt/cache/tool"].first, RADIAL_CHANGE_FILE);
    EXPECT_EQ(c.entries["/opt/cache/tool"].second, has_xattr ? "tool-v1\nattr-value" : "tool-v1\n");
    EXPECT_EQ(c.entries["/opt/cache/link"],
              std::make_pair(std::uint32_t{RADIAL_CHANGE_SYMLINK}, std::string("/etc/shadow")));
    EXPECT_EQ(c.entries["/opt/cache/fifo"].first, RADIAL_CHANGE_OTHER);
    EXPECT_EQ(c.entries["/opt"].first, RADIAL_CHANGE_OTHER);
    EXPECT_FALSE(c.entries.count("/opt/gone")) << "a whiteout is a removal, not a change";
}

// A file's bytes are given once however many names it has: every other name comes alone. A box
// that made thousands of hard links to one large file had it read once per link, and the walk ran
// past the plugin call's deadline.
TEST(UpperDirWalkTest, AFileWithManyNamesHasItsBytesGivenOnce) {
    test::TempDir up("radial-upper");
    fs::create_directories(up / "d");
    up.write("big", "the-bytes");
    for (int i = 0; i < 50; ++i)
        ASSERT_EQ(::link((up / "big").c_str(), (up / ("d/l" + std::to_string(i))).c_str()), 0);
    auto c = walk(up.path(), 0);
    std::size_t names = 0, with_bytes = 0;
    for (const auto& [path, entry] : c.entries) {
        if (entry.first != RADIAL_CHANGE_FILE) continue;
        ++names;
        if (!entry.second.empty()) {
            ++with_bytes;
            EXPECT_EQ(entry.second.substr(0, 9), "the-bytes") << path;
        }
    }
    EXPECT_EQ(names, 51u) << "every name of the file is given";
    EXPECT_EQ(with_bytes, 1u) << "the file's bytes were given once per name";
}

TEST(UpperDirWalkTest, ALinkToADirectoryIsNotEntered) {
    test::TempDir up("radial-upper"), outside("radial-outside");
    outside.write("host-secret", "never read");
    ASSERT_EQ(::symlink(outside.path().c_str(), (up / "escape").c_str()), 0);
    auto c = walk(up.path(), 0);
    EXPECT_EQ(c.entries.size(), 1u);
    EXPECT_EQ(c.entries["/escape"].first, RADIAL_CHANGE_SYMLINK);
}

TEST(UpperDirWalkTest, OnlyWhatChangedSinceTheTimeIsGiven) {
    test::TempDir up("radial-upper");
    up.write("old", "before");
    // A change time cannot be set back: wait for the clock to pass `since` instead, by more than
    // a kernel tick (a change time is read from the coarse clock, up to a tick behind).
    const auto since = walk_clock_ms() + 50;
    while (walk_clock_ms() < since + 50) ::usleep(5000);
    up.write("new", "after");
    auto c = walk(up.path(), since);
    EXPECT_FALSE(c.entries.count("/old"));
    EXPECT_TRUE(c.entries.count("/new"));
    // Renaming or linking an old file changes it (its ctime): it is given again.
    ASSERT_EQ(::rename((up / "old").c_str(), (up / "renamed").c_str()), 0);
    auto again = walk(up.path(), since);
    EXPECT_EQ(again.entries["/renamed"].second, "before");
}

// Renaming a directory changes its ctime, not its children's: an old file gets a new full path
// (one that may now spell a secret across the '/') while its own inode stays unchanged. Below a
// directory that changed, every entry is given by its name, its bytes only when they changed;
// a directory that did not change keeps its old entries out.
TEST(UpperDirWalkTest, BelowADirectoryThatChangedEveryEntryIsGivenByItsName) {
    test::TempDir up("radial-upper");
    ASSERT_TRUE(fs::create_directories(up / "x/sub"));
    up.write("x/tail", "old bytes");
    up.write("x/sub/deeper", "old too");
    ASSERT_TRUE(fs::create_directories(up / "quiet"));
    up.write("quiet/old", "untouched");
    ASSERT_EQ(::symlink("/etc", (up / "x/link").c_str()), 0);
    const auto since = walk_clock_ms() + 50;
    while (walk_clock_ms() < since + 50) ::usleep(5000);
    ASSERT_EQ(::rename((up / "x").c_str(), (up / "head").c_str()), 0);
    auto c = walk(up.path(), since);
    ASSERT_TRUE(c.entries.count("/head"));
    ASSERT_TRUE(c.entries.count("/head/tail")) << "an old file under a renamed directory";
    EXPECT_EQ(c.entries["/head/tail"],
              (std::pair<std::uint32_t, std::string>{RADIAL_CHANGE_FILE, ""}))
        << "its bytes did not change: its name alone";
    EXPECT_EQ(c.entries["/head/sub"].first, RADIAL_CHANGE_OTHER);
    EXPECT_EQ(c.entries["/head/sub/deeper"].first, RADIAL_CHANGE_FILE);
    EXPECT_EQ(c.entries["/head/link"],
              (std::pair<std::uint32_t, std::string>{RADIAL_CHANGE_SYMLINK, ""}));
    EXPECT_FALSE(c.entries.count("/quiet")) << "a directory that did not change";
    EXPECT_FALSE(c.entries.count("/quiet/old"));
    // An entry put into an old directory changes that directory: its other entries' names too.
    up.write("quiet/new", "fresh");
    auto again = walk(up.path(), since);
    EXPECT_EQ(again.entries["/quiet/new"].second, "fresh");
    EXPECT_EQ(again.entries["/quiet/old"],
              (std::pair<std::uint32_t, std::string>{RADIAL_CHANGE_FILE, ""}));
}

TEST(UpperDirWalkTest, ASparseFileIsReadByItsDataOnly) {
    test::TempDir up("radial-upper");
    const std::string p = up / "sparse";
    int fd = ::open(p.c_str(), O_CREAT | O_WRONLY, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, "head", 4, 0), 4);
    ASSERT_EQ(::pwrite(fd, "tail", 4, off_t{1} << 40), 4); // a 1 TiB file of two extents
    ::close(fd);
    auto c = walk(up.path(), 0);
    const auto& bytes = c.entries["/sparse"].second;
    EXPECT_LT(bytes.size(), 1u << 20) << "the holes were read";
    EXPECT_EQ(bytes.substr(0, 4), "head");
    EXPECT_EQ(bytes.substr(bytes.size() - 4), "tail");
}

TEST(UpperDirWalkTest, AnUnreadableEntryIsAnErrorNotACleanEntry) {
    test::TempDir up("radial-upper");
    up.write("locked", "x");
    ASSERT_EQ(::chmod((up / "locked").c_str(), 0), 0);
    // Root reads a mode-000 file: walk as nobody, in a child, who may list the directory only.
    ASSERT_EQ(::chmod(up.path().c_str(), 0755), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
        WalkedChanges c;
        auto s = sink_for(c);
        radial::plugin::ChangeSink sink(&s);
        try {
            walk_upper_dir(up.path(), 0, sink);
        } catch (const radial::plugin::Error& e) {
            ::_exit(std::string(e.what()).find("'/locked'") != std::string::npos ? 0 : 2);
        }
        ::_exit(1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no error; 2: the error does not name the entry";
}

// `levels` directories "d", each in the one before, under `root`; the path of the deepest.
std::string nest(const std::string& root, std::size_t levels) {
    std::string path = root;
    for (std::size_t i = 0; i < levels; ++i) path += "/d";
    fs::create_directories(path);
    return path;
}

// The box chooses how deep its directories go: the walk goes kMostWalkDepth levels down and
// fails past them, naming the path, and never holds more than one descriptor per level.
TEST(UpperDirWalkTest, ADirectoryTooDeepIsAnErrorAndEachLevelHoldsOneDescriptor) {
    test::TempDir ok("radial-upper"), deep("radial-upper");
    const std::string deepest = nest(ok.path(), kMostWalkDepth);
    std::ofstream(deepest + "/f") << "x";
    nest(deep.path(), kMostWalkDepth + 1);
    // A child with room for kMostWalkDepth descriptors more than it has open (and a few for the
    // walk's own files): two per level would run out.
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        std::size_t open_now = 0;
        // hermetic-ok: this process's own descriptors
        for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++open_now;
        const rlim_t room = open_now + kMostWalkDepth + 8;
        const rlimit lim{room, room};
        if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) ::_exit(3);
        WalkedChanges c;
        try {
            c = walk(ok.path(), 0);
        } catch (const radial::plugin::Error&) {
            ::_exit(4);
        }
        const std::string want = deepest.substr(ok.path().size()) + "/f";
        ::_exit(c.entries.count(want) == 1 && c.entries.size() == kMostWalkDepth + 1 ? 0 : 5);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0)
        << "3: no limit set; 4: the walk failed (out of descriptors); 5: entries missing";
    try {
        walk(deep.path(), 0);
        ADD_FAILURE() << "a tree deeper than kMostWalkDepth was walked";
    } catch (const radial::plugin::Error& e) {
        EXPECT_NE(std::string(e.what()).find("'/d/d/d"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("deeper than " + std::to_string(kMostWalkDepth)),
                  std::string::npos)
            << e.what();
    }
}

// The box chooses how many entries its directories hold too, and the walk holds each directory's
// names beside those of every directory above it: past the bound (summed along the path, so
// splitting the names over nested directories does not help) the walk fails, naming where; within
// it, and for the same names side by side (each directory's let go when it is done), it reads all.
TEST(UpperDirWalkTest, MoreNamesHeldAlongAPathThanTheBoundAreAnError) {
    test::TempDir nested("radial-upper"), side("radial-upper");
    // a/{a1,a2,b/{b1,b2,c/{c1,c2}}}: 1 + 3 + 3 + 2 names held at c.
    fs::create_directories(nested / "a/b/c");
    for (const char* f : {"a/a1", "a/a2", "a/b/b1", "a/b/b2", "a/b/c/c1", "a/b/c/c2"})
        std::ofstream(nested / f) << "x";
    EXPECT_EQ(walk(nested.path(), 0, 9).entries.size(), 9u);
    try {
        walk(nested.path(), 0, 7);
        ADD_FAILURE() << "8 names held at once under a bound of 7";
    } catch (const radial::plugin::Error& e) {
        EXPECT_NE(std::string(e.what()).find("'/a/b/c' of the box's changes"), std::string::npos)
            << e.what();
    }
    // x/{x1,x2,x3} beside y/{y1,y2,y3}: 2 + 3 names at most at once.
    fs::create_directories(side / "x");
    fs::create_directories(side / "y");
    for (const char* f : {"x/1", "x/2", "x/3", "y/1", "y/2", "y/3"}) std::ofstream(side / f) << "x";
    EXPECT_EQ(walk(side.path(), 0, 5).entries.size(), 8u);
}

// A listing past its cap is refused whole (EOVERFLOW), never cut; at the cap it is read whole.
TEST(UpperDirWalkTest, ADirectoryWithMoreEntriesThanTheCapIsNotListed) {
    test::TempDir dir("radial-upper");
    for (int i = 0; i < 4; ++i) std::ofstream(dir / ("f" + std::to_string(i))) << "x";
    radial::internal::UniqueFd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(fd);
    errno = 0;
    EXPECT_FALSE(radial::internal::dir_names(fd.get(), 3));
    EXPECT_EQ(errno, EOVERFLOW);
    const auto all = radial::internal::dir_names(fd.get(), 4);
    ASSERT_TRUE(all);
    EXPECT_EQ(all->size(), 4u);
    EXPECT_EQ(radial::internal::dir_names(fd.get())->size(), 4u) << "no cap by default";
}

// A snapshot's size is what its commit writes: a header per entry, and the files' apparent sizes:
// a sparse file counts whole (a commit writes its holes out as zeros), a file with two names once,
// and whatever changed when (size_upper_dir takes no time: a commit keeps every change).
TEST(UpperDirSizeTest, SumsApparentSizesCountingEachFileOnceAndNamesTheBiggest) {
    test::TempDir up("radial-upper");
    fs::create_directories(up / "opt/cache/deep");
    const std::string sparse = up / "opt/cache/sparse";
    int fd = ::open(sparse.c_str(), O_CREAT | O_WRONLY, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, off_t{1} << 40), 0); // 1 TiB of holes, no data
    ::close(fd);
    up.write("opt/cache/deep/small", "12345");
    up.write("opt/mid", std::string(1000, 'x'));
    ASSERT_EQ(::link((up / "opt/mid").c_str(), (up / "opt/mid-again").c_str()), 0);
    ASSERT_EQ(::symlink("/opt/cache/sparse", (up / "opt/link").c_str()), 0);
    ASSERT_EQ(::mknod((up / "opt/gone").c_str(), S_IFCHR | 0000, makedev(0, 0)), 0); // whiteout

    const auto size = size_upper_dir(up.path(), 2);
    // Nine entries' headers (three directories, four names of files, the link, the whiteout), and
    // the files' bytes in whole 512-byte blocks, the file of two names once.
    EXPECT_EQ(size.entries, 9u);
    EXPECT_EQ(size.bytes, 9 * 512 + (std::uint64_t{1} << 40) + 1024 + 512);
    ASSERT_EQ(size.biggest.size(), 2u);
    EXPECT_EQ(size.biggest[0],
              (std::pair<std::string, std::uint64_t>{"/opt/cache/sparse", std::uint64_t{1} << 40}));
    EXPECT_EQ(size.biggest[1].second, 1000u);
    EXPECT_TRUE(size.biggest[1].first == "/opt/mid" || size.biggest[1].first == "/opt/mid-again")
        << size.biggest[1].first;
    EXPECT_EQ(size_upper_dir(up.path(), 5).biggest.size(), 3u) << "one file, two names: once";
}

// Links cost a commit their targets, long names their own bytes, attributes theirs: counting the
// regular files alone, 20,000 links of 4 KB targets were a layer of 80 MB under a 1 MiB bound.
TEST(UpperDirSizeTest, LinkTargetsLongNamesAndAttributesCount) {
    test::TempDir up("radial-upper");
    const std::string target(4000, 't');
    for (int i = 0; i < 100; ++i)
        ASSERT_EQ(
            ::symlink(target.c_str(), (up / (std::string(200, 'n') + std::to_string(i))).c_str()),
            0);
    auto size = size_upper_dir(up.path());
    EXPECT_EQ(size.entries, 100u);
    EXPECT_GE(size.bytes, 100u * (4000 + 200)) << "the targets and names are not counted";
    EXPECT_TRUE(size.biggest.empty()) << "no file among them";
    const std::uint64_t links = size.bytes;
    up.write("f", "x");
    const std::string value(2000, 'v');
    if (::setxattr((up / "f").c_str(), "user.big", value.data(), value.size(), 0) == 0) {
        size = size_upper_dir(up.path());
        EXPECT_GE(size.bytes, links + 512 + 2000) << "the attribute is not counted";
    } else {
        ASSERT_EQ(errno, ENOTSUP) << "the test directory refused a user attribute";
    }
}

// A file's other names are links whose headers name one of its names, whichever the engine's
// walk meets first: short names given to a file under a long path each carried that path, and a
// layer five times the bound was committed.
TEST(UpperDirSizeTest, EveryLinkOfAFileCostsItsLongestName) {
    test::TempDir up("radial-upper");
    fs::path deep = up.path();
    for (int i = 0; i < 10; ++i) deep /= std::string(200, 'd');
    fs::create_directories(deep);
    up.write((deep / "f").string().substr(up.path().size() + 1), "x");
    const std::size_t longest = (deep / "f").string().size() - up.path().size() - 1;
    fs::create_directory(up / "h");
    for (int i = 0; i < 50; ++i)
        ASSERT_EQ(::link((deep / "f").c_str(), (fs::path(up / "h") / std::to_string(i)).c_str()),
                  0);
    const auto size = size_upper_dir(up.path());
    EXPECT_GE(size.bytes, 50u * longest) << "the links' targets are not counted";
}

TEST(UpperDirSizeTest, TooDeepOrMissingIsAnErrorNotASmallSize) {
    test::TempDir up("radial-upper");
    nest(up.path(), kMostWalkDepth + 1);
    EXPECT_THROW(size_upper_dir(up.path()), radial::plugin::Error);
    EXPECT_THROW(size_upper_dir("/nonexistent/radial-upper"), radial::plugin::Error);
}

TEST(UpperDirWalkTest, AMissingDirectoryIsAnError) {
    WalkedChanges c;
    auto s = sink_for(c);
    radial::plugin::ChangeSink sink(&s);
    EXPECT_THROW(walk_upper_dir("/nonexistent/radial-upper", 0, sink), radial::plugin::Error);
}

} // namespace
} // namespace radial::docker
