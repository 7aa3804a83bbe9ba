// Temporary directories a killed maker left (docs/design.md §14.6): removed by the next maker only
// when nobody holds them, they are this user's, and they have been quiet for a while; a link, a
// directory of another user, a held one and a fresh one stay.
#include "fs/held_temp_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "../../support/temp_dir.h"

namespace radial::fs_util {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

void age(const fs::path& p) { fs::last_write_time(p, fs::file_time_type::clock::now() - 5min); }

TEST(HeldTempDir, OnlyAnAbandonedDirectoryOfOurOwnIsRemoved) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root: it makes another user's directory";
    test::TempDir root("radial-htd");
    std::optional<HeldTempDir> held(std::in_place, root.path(), "radial-x-");
    age(held->path());
    const fs::path left = root / "radial-x-left";
    fs::create_directories(left / "sub");
    std::ofstream(left / "sub" / "archive.tar") << "gigabytes";
    age(left);
    const fs::path fresh = root / "radial-x-fresh";
    fs::create_directory(fresh);
    const fs::path others = root / "radial-x-others";
    fs::create_directory(others);
    ASSERT_EQ(::chown(others.c_str(), 65534, 65534), 0);
    age(others);
    const fs::path target = root / "keep";
    fs::create_directory(target);
    std::ofstream(target / "f") << "mine";
    fs::create_directory_symlink(target, root / "radial-x-link");
    const fs::path other_prefix = root / "other-left";
    fs::create_directory(other_prefix);
    age(other_prefix);

    EXPECT_EQ(remove_abandoned_temp_dirs(root.path(), "radial-x-"), 1u);
    EXPECT_FALSE(fs::exists(left));
    EXPECT_TRUE(fs::exists(fresh)) << "a directory made a moment ago";
    EXPECT_TRUE(fs::exists(others)) << "another user's";
    EXPECT_TRUE(fs::exists(target / "f")) << "followed a link";
    EXPECT_TRUE(fs::is_symlink(root / "radial-x-link"));
    EXPECT_TRUE(fs::exists(other_prefix));
    EXPECT_TRUE(fs::exists(held->path())) << "its maker still holds it";

    // Let go without its destructor, as a killed maker does: the next maker removes it.
    const fs::path was_held = held->path();
    held.reset();
    EXPECT_FALSE(fs::exists(was_held)) << "its own destructor removes it";
    fs::create_directory(was_held);
    age(was_held);
    std::size_t removed = 0;
    HeldTempDir next(root.path(), "radial-x-", &removed);
    EXPECT_EQ(removed, 1u);
    EXPECT_FALSE(fs::exists(was_held));
    EXPECT_TRUE(fs::exists(next.path()));
}

} // namespace
} // namespace radial::fs_util
