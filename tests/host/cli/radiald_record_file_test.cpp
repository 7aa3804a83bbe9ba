// `radiald turn --record-file PATH` renames the record into place, replacing what is at PATH: only
// a regular file (or nothing) may be there. A device, a fifo, a socket or a link (/dev/stdout) is
// refused before the box starts, naming --record-file and the fix, and is left as it was
// (docs/design.md §11.4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../../support/fake_runtime_setup.h"
#include "../../support/process_runner.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct RecordFileSetup : test::FakeRuntimeSetup {
    RecordFileSetup() : FakeRuntimeSetup("radial-recf") {}
    test::ProcessResult turn(const std::string& record, const std::string& command = "turn") {
        return test::run_process({RADIALD_PATH, command, "--config", config, "--image", "img",
                                  "--record-file", record, "--", "echo", "the box ran"});
    }
};

TEST(RadialdRecordFile, WhatIsNoRegularFileAtThePathIsRefusedBeforeTheBoxAndLeftAsItWas) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (mknod)";
    RecordFileSetup s;
    const std::string target = s.dir.write("target.json", "theirs\n");
    // As /dev/null, /dev/stdout (a link) and a reader's fifo would be.
    ASSERT_EQ(::mknod((s.dir / "device").c_str(), S_IFCHR | 0666, ::makedev(1, 3)), 0);
    ASSERT_EQ(::mkfifo((s.dir / "fifo").c_str(), 0600), 0);
    ASSERT_EQ(::mknod((s.dir / "socket").c_str(), S_IFSOCK | 0600, 0), 0);
    fs::create_symlink(target, s.dir / "link");
    const std::vector<std::pair<std::string, std::string>> cases{
        {"device", "is a character device, not a regular file"},
        {"fifo", "is a fifo, not a regular file"},
        {"socket", "is a socket, not a regular file"},
        {"link", "is a symbolic link (to '" + target + "')"}};
    for (const std::string command : {"turn", "check"})
        for (const auto& [name, said] : cases) {
            struct stat before {};
            ASSERT_EQ(::lstat((s.dir / name).c_str(), &before), 0);
            const auto r = s.turn(s.dir / name, command);
            EXPECT_EQ(r.exit_code, 125) << command << " " << name << ": " << r.err;
            EXPECT_THAT(r.err, HasSubstr("--record-file '" + (s.dir / name) + "' " + said))
                << command;
            EXPECT_THAT(r.err, HasSubstr("a path where nothing is")) << r.err;
            EXPECT_EQ(r.out, "") << command << " " << name << ": the box ran";
            struct stat after {};
            ASSERT_EQ(::lstat((s.dir / name).c_str(), &after), 0) << name;
            EXPECT_EQ(after.st_ino, before.st_ino) << command << " " << name;
            EXPECT_EQ(after.st_mode, before.st_mode) << command << " " << name;
        }
    EXPECT_EQ(test::read_file(target), "theirs\n");
    // A regular file and a path where nothing is are written.
    for (const std::string name : {"target.json", "new.json"}) {
        const auto r = s.turn(s.dir / name);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_THAT(test::read_file(s.dir / name), HasSubstr("\"succeeded\"")) << name;
    }
}

} // namespace
} // namespace radial
