// open_no_links (host/fs/open_no_links.h): a path radiald checked is opened again refusing a link
// anywhere in it, through openat2 and through the walk it falls back to where a seccomp filter
// (systemd's RestrictSUIDSGID=) refuses openat2.
#include "fs/open_no_links.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>

#include "../../support/temp_dir.h"

namespace radial::fs_util {
namespace {
namespace fs = std::filesystem;

// Opens `path` with `flags` both ways; each errno (0 when it opened) is one element.
std::pair<int, int> both_ways(const std::string& path, int flags) {
    std::pair<int, int> out;
    for (const bool openat2 : {true, false}) {
        errno = 0;
        const bool opened = static_cast<bool>(open_no_links(path, flags, openat2));
        (openat2 ? out.first : out.second) = opened ? 0 : errno;
    }
    return out;
}

TEST(OpenNoLinks, ALinkAnywhereOnThePathIsRefusedBothWays) {
    test::TempDir d("radial-nolinks");
    fs::create_directories(d / "real/inner");
    fs::create_directory_symlink(d / "real", d / "link");
    fs::create_directory_symlink(d / "real/inner", d / "real/linked");
    const std::pair<int, int> opened{0, 0}, looped{ELOOP, ELOOP};
    for (const int flags : {O_PATH, O_RDONLY | O_DIRECTORY}) {
        EXPECT_EQ(both_ways(d / "real/inner", flags), opened) << flags;
        EXPECT_EQ(both_ways(d / "link/inner", flags), looped) << "a link inside, flags " << flags;
        EXPECT_EQ(both_ways(d / "real/linked", flags), looped) << "a link at the end, " << flags;
        EXPECT_EQ(both_ways(d / "gone", flags), (std::pair<int, int>{ENOENT, ENOENT})) << flags;
    }
}

} // namespace
} // namespace radial::fs_util
