// The spool in process (C-15): only regular files radiald's uid owns are read; anything else in
// queue/ is moved to rejected/ without being opened or followed.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "../../support/temp_dir.h"
#include "daemon/spool.h"
#include "log/logger.h"

namespace radial::daemon {
namespace {
namespace fs = std::filesystem;

SpooledRequest request(const std::string& id) {
    SpooledRequest r;
    r.turn_id = id;
    r.image = "img";
    r.argv = {"echo", id};
    return r;
}

TEST(C15_SpoolGuard, ListMovesWhatRadialdDidNotWriteAside) {
    test::TempDir d;
    Spool s(d.path());
    s.ensure_dirs();
    ASSERT_TRUE(s.enqueue(request("good")));
    // A valid request elsewhere, reached through a symlink.
    test::TempDir elsewhere;
    Spool other(elsewhere.path());
    ASSERT_TRUE(other.enqueue(request("link")));
    fs::create_symlink(other.request_path("link"), s.request_path("link"));
    fs::create_symlink(d / "nothing", s.request_path("dangling"));
    ASSERT_EQ(::mkfifo(s.request_path("fifo").c_str(), 0600), 0);
    fs::create_directory(s.request_path("dir"));

    EXPECT_EQ(s.list(), std::vector<std::string>{"good"});
    std::string rejected = d / "spool/rejected";
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(rejected + "/link.json")));
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(rejected + "/dangling.json")));
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(rejected + "/fifo.json")));
    EXPECT_TRUE(fs::is_directory(fs::symlink_status(rejected + "/dir.json")));
    // The symlink's target is untouched.
    EXPECT_TRUE(other.load("link").has_value());
    // A second entry of the same name does not replace the first.
    ASSERT_EQ(::mkfifo(s.request_path("fifo").c_str(), 0600), 0);
    EXPECT_EQ(s.list(), std::vector<std::string>{"good"});
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(rejected + "/fifo.json.1")));
}

// The log lines the spool writes while `f` runs.
template <class F>
std::vector<std::string> logged(F&& f) {
    std::vector<std::string> lines;
    log::set_sink([&](std::string_view l) { lines.emplace_back(l); });
    f();
    log::set_sink({});
    return lines;
}

bool any_line_has(const std::vector<std::string>& lines, const std::string& what) {
    for (const auto& l : lines)
        if (l.find(what) != std::string::npos) return true;
    return false;
}

TEST(C15_SpoolGuard, AHardLinkPlantedInTheQueueIsMovedAsideAndLogged) {
    test::TempDir d;
    Spool s(d.path());
    s.ensure_dirs();
    // A valid request elsewhere (on the same file system), given a second name in the queue.
    test::TempDir elsewhere;
    Spool other(elsewhere.path());
    ASSERT_TRUE(other.enqueue(request("linked")));
    ASSERT_EQ(::link(other.request_path("linked").c_str(), s.request_path("linked").c_str()), 0);
    ASSERT_TRUE(s.enqueue(request("good")));

    std::vector<std::string> ids;
    auto lines = logged([&] { ids = s.list(); });
    EXPECT_EQ(ids, std::vector<std::string>{"good"});
    EXPECT_TRUE(fs::exists(d / "spool/rejected/linked.json"));
    EXPECT_FALSE(fs::exists(fs::symlink_status(s.request_path("linked"))));
    EXPECT_TRUE(any_line_has(lines, "hard link")) << ::testing::PrintToString(lines);
    // Planted between the listing and the claim: load refuses it too.
    ASSERT_EQ(::link(other.request_path("linked").c_str(), s.request_path("late").c_str()), 0);
    std::optional<SpooledRequest> loaded;
    lines = logged([&] { loaded = s.load("late"); });
    EXPECT_FALSE(loaded.has_value());
    EXPECT_TRUE(fs::exists(d / "spool/rejected/late.json"));
    EXPECT_TRUE(any_line_has(lines, "hard link")) << ::testing::PrintToString(lines);
    // The file the links named is untouched (its other names are in rejected/ now).
    EXPECT_EQ(test::read_file(other.request_path("linked")).empty(), false);
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(other.request_path("linked"))));
}

TEST(C15_SpoolGuard, AFileNotNamedForATurnIdIsMovedAsideAndLogged) {
    test::TempDir d;
    Spool s(d.path());
    s.ensure_dirs();
    ASSERT_TRUE(s.enqueue(request("good")));
    for (const char* name : {"Bad_Id.json", "notes.txt", ".hidden.json", "x.json.tmp"})
        std::ofstream(s.queue_dir() + "/" + name) << "{}";
    std::vector<std::string> ids;
    auto lines = logged([&] { ids = s.list(); });
    EXPECT_EQ(ids, std::vector<std::string>{"good"});
    for (const char* name : {"Bad_Id.json", "notes.txt", ".hidden.json", "x.json.tmp"}) {
        EXPECT_TRUE(fs::exists(d / (std::string("spool/rejected/") + name))) << name;
        EXPECT_TRUE(any_line_has(lines, fmt::format("named '{}'", name)))
            << name << ::testing::PrintToString(lines);
    }
    EXPECT_EQ(s.list(), std::vector<std::string>{"good"});
}

TEST(C15_SpoolGuard, LoadNeverFollowsASymlinkNorWaitsOnAFifo) {
    test::TempDir d;
    Spool s(d.path());
    s.ensure_dirs();
    test::TempDir elsewhere;
    Spool other(elsewhere.path());
    ASSERT_TRUE(other.enqueue(request("link")));
    fs::create_symlink(other.request_path("link"), s.request_path("link"));
    ASSERT_EQ(::mkfifo(s.request_path("fifo").c_str(), 0600), 0);
    EXPECT_FALSE(s.load("link").has_value());
    EXPECT_FALSE(s.load("fifo").has_value()); // returns at once: O_NONBLOCK
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(d / "spool/rejected/link.json")));
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(d / "spool/rejected/fifo.json")));
    EXPECT_FALSE(fs::exists(fs::symlink_status(s.request_path("link"))));
}

TEST(C15_SpoolGuard, AFileOfAnotherOwnerIsNotRead) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown to another uid)";
    test::TempDir d;
    Spool s(d.path());
    ASSERT_TRUE(s.enqueue(request("theirs")));
    ASSERT_EQ(::chown(s.request_path("theirs").c_str(), 12345, 12345), 0);
    EXPECT_FALSE(s.load("theirs").has_value());
    EXPECT_TRUE(fs::exists(d / "spool/rejected/theirs.json"));
    ASSERT_TRUE(s.enqueue(request("theirs2")));
    ASSERT_EQ(::chown(s.request_path("theirs2").c_str(), 12345, 12345), 0);
    EXPECT_TRUE(s.list().empty());
    EXPECT_TRUE(fs::exists(d / "spool/rejected/theirs2.json"));
}

} // namespace
} // namespace radial::daemon
