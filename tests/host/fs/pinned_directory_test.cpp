// PinnedDirectory::publish (host/fs/pinned_directory.h): what is at the name when the record is
// published decides whether it is replaced. A regular file and a symlink are names to replace; a
// device, a fifo or a socket is another program's, and is left as it is (docs/design.md §11.4).
#include "fs/pinned_directory.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "../../support/temp_dir.h"

namespace radial::fs_util {
namespace {
namespace fs = std::filesystem;

// The names in `dir`, for "nothing else was left there" (no temporary file).
std::vector<std::string> names_in(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

// A device node, a fifo or a socket put at the name while the box ran is refused at publish time,
// named and left in place, and no temporary file stays behind; a regular file and a planted link
// are replaced (the link itself, never where it leads).
TEST(PinnedDirectory, PublishReplacesOnlyARegularFileOrALink) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (mknod)";
    test::TempDir d("radial-pin");
    const PinnedDirectory dir = PinnedDirectory::open(d.path());
    // After open(): the name changes after the directory was pinned, as during a turn.
    ASSERT_EQ(::mknod((d / "device").c_str(), S_IFCHR | 0666, ::makedev(1, 3)), 0); // as /dev/null
    ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
    ASSERT_EQ(::mknod((d / "socket").c_str(), S_IFSOCK | 0600, 0), 0);
    for (const auto& [name, kind] : std::vector<std::pair<std::string, std::string>>{
             {"device", "a character device"}, {"fifo", "a fifo"}, {"socket", "a socket"}}) {
        struct stat before {};
        ASSERT_EQ(::lstat((d / name).c_str(), &before), 0);
        try {
            dir.publish(name, "{}\n", 0600);
            ADD_FAILURE() << name << " was replaced";
        } catch (const FsError& e) {
            EXPECT_EQ(std::string(e.what()),
                      "writing '" + dir.path() + "/" + name + "': it is now " + kind +
                          ", which radiald does not replace; nothing was written");
        }
        struct stat after {};
        ASSERT_EQ(::lstat((d / name).c_str(), &after), 0) << name;
        EXPECT_EQ(after.st_ino, before.st_ino) << name;
        EXPECT_EQ(after.st_mode, before.st_mode) << name;
    }
    EXPECT_EQ(names_in(d.path()), (std::vector<std::string>{"device", "fifo", "socket"}));

    const std::string outside = d.write("outside", "theirs\n");
    fs::create_symlink(outside, d / "link");
    d.write("file", "old\n");
    for (const std::string name : {"link", "file"}) {
        dir.publish(name, "{}\n", 0600);
        EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(d / name))) << name;
        EXPECT_EQ(test::read_file(d / name), "{}\n") << name;
    }
    EXPECT_EQ(test::read_file(outside), "theirs\n");
}

} // namespace
} // namespace radial::fs_util
