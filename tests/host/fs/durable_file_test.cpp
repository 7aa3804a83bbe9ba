// remove_abandoned_temp_files (host/fs/durable_file.h): what a writer killed between its create and
// its rename left is removed once it is plainly abandoned, and nothing else is.
#include "fs/durable_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "../../support/temp_dir.h"

namespace radial::fs_util {
namespace {
namespace fs = std::filesystem;

TEST(DurableFile, OnlyAnAbandonedTemporaryFileIsRemoved) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown)";
    test::TempDir d("radial-durable");
    // A file published the real way, which stays.
    replace_file(d.path(), d / "retention-clock", "1\n", 0600);
    const std::string abandoned = ".retention-clock.Ab12Cd", another_users = ".session.json.Zz9yX8";
    for (const std::string& name :
         {abandoned, another_users, std::string(".retention-clock.ab-12c"), std::string(".hidden"),
          std::string("plain.XXXXXX")})
        std::ofstream(d / name) << "x";
    ASSERT_EQ(::chown((d / another_users).c_str(), 65534, 65534), 0);
    fs::create_directory(d / ".dir.Ab12Cd");

    // The caller's own names only: a file of the same shape it does not publish stays.
    const auto ours = [](std::string_view name) {
        return name == "retention-clock" || name == "session.json";
    };
    std::ofstream(d / ".bashrc.backup") << "x";
    const auto now = std::chrono::system_clock::now();
    EXPECT_EQ(remove_abandoned_temp_files(d.path(), ours, now), 0u)
        << "a live writer's file was taken";
    EXPECT_TRUE(fs::exists(d / abandoned));
    const auto later = now + kAbandonedTempFileAge + std::chrono::minutes(1);
    EXPECT_EQ(remove_abandoned_temp_files(d.path(), ours, later), 1u);
    EXPECT_FALSE(fs::exists(d / abandoned));
    for (const char* kept : {".session.json.Zz9yX8", ".bashrc.backup", ".retention-clock.ab-12c",
                             ".hidden", "plain.XXXXXX", ".dir.Ab12Cd", "retention-clock"})
        EXPECT_TRUE(fs::exists(d / kept)) << kept;
    EXPECT_EQ(remove_abandoned_temp_files(d / "missing", ours, later), 0u);
}

} // namespace
} // namespace radial::fs_util
