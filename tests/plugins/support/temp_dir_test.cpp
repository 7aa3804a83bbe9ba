// tests/plugins/support/temp_dir_test.cpp — private run directories and the sweep of those a
// killed process left behind (plugins/support/temp_dir.cpp).
#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace radial::plugin_support {
namespace {

namespace fs = std::filesystem;

// Points $TMPDIR at a fresh directory for one test, so sweeps see only what the test made.
class plugin_support_temp_dir_sweep : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/radial-sweep-test-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        root_ = tmpl;
        if (const char* old = std::getenv("TMPDIR")) old_tmpdir_ = old;
        ::setenv("TMPDIR", root_.c_str(), 1);
    }
    void TearDown() override {
        if (old_tmpdir_)
            ::setenv("TMPDIR", old_tmpdir_->c_str(), 1);
        else
            ::unsetenv("TMPDIR");
        std::error_code ec;
        fs::remove_all(root_, ec);
    }

    // A directory as a killed process leaves it: there, unlocked, `age_s` seconds old.
    fs::path abandoned(const std::string& name, int age_s = 60) {
        fs::path p = root_ / name;
        fs::create_directory(p);
        std::ofstream(p / "cid") << "0123abcd";
        age(p, age_s);
        return p;
    }
    static void age(const fs::path& p, int seconds) {
        fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::seconds(seconds));
    }

    fs::path root_;
    std::optional<std::string> old_tmpdir_;
};

TEST(plugin_support_temp_dir, IsPrivateAndRemovedWithItsContents) {
    fs::path path;
    {
        TempDir dir("radial-support-");
        path = dir.path();
        struct stat st {};
        ASSERT_EQ(::stat(path.c_str(), &st), 0);
        EXPECT_TRUE(S_ISDIR(st.st_mode));
        EXPECT_EQ(st.st_mode & 0777, 0700u);
        EXPECT_TRUE(path.filename().string().starts_with("radial-support-"));
        fs::create_directories(path / "a" / "b");
    }
    EXPECT_FALSE(fs::exists(path));
}

TEST_F(plugin_support_temp_dir_sweep, RemovesAnOldUnlockedDirectoryWithThePrefixOnly) {
    fs::path dead = abandoned("radial-docker-dead01");
    fs::path other = abandoned("radial-other-dead02");
    fs::path young = abandoned("radial-docker-young3", 0);
    EXPECT_EQ(remove_abandoned_temp_dirs("radial-docker-"), 1u);
    EXPECT_FALSE(fs::exists(dead));
    EXPECT_TRUE(fs::exists(other)) << "another prefix";
    EXPECT_TRUE(fs::exists(young)) << "younger than kAbandonedAfter: may be a TempDir being made";
}

TEST_F(plugin_support_temp_dir_sweep, LeavesALiveRunsDirectoryHoweverOld) {
    TempDir live("radial-docker-");
    age(live.path(), 3600);
    EXPECT_EQ(remove_abandoned_temp_dirs("radial-docker-"), 0u);
    EXPECT_TRUE(fs::exists(live.path()));
}

TEST_F(plugin_support_temp_dir_sweep, FollowsNoSymlink) {
    fs::path target = abandoned("kept-target");
    fs::create_directory_symlink(target, root_ / "radial-docker-link01");
    EXPECT_EQ(remove_abandoned_temp_dirs("radial-docker-"), 0u);
    EXPECT_TRUE(fs::exists(target / "cid"));
}

TEST_F(plugin_support_temp_dir_sweep, RemovesTheDirectoryOfAProcessKilledWithSigkill) {
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        try {
            TempDir dir("radial-docker-");
            std::ofstream(dir.path() / "cid") << "x";
            const std::string path = dir.path().string();
            [[maybe_unused]] auto n = ::write(ready[1], path.data(), path.size());
            ::close(ready[1]);
            ::pause(); // until SIGKILLed: the destructor never runs
        } catch (...) {
        }
        ::_exit(1); // never back into GoogleTest: the parent then reads EOF and fails
    }
    ::close(ready[1]);
    char buf[4096];
    ssize_t n = ::read(ready[0], buf, sizeof buf);
    ::close(ready[0]);
    ASSERT_GT(n, 0);
    const fs::path left(std::string(buf, static_cast<std::size_t>(n)));
    age(left, 60);
    EXPECT_EQ(remove_abandoned_temp_dirs("radial-docker-"), 0u) << "its owner is still alive";
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(fs::exists(left)) << "SIGKILL left nothing to sweep";
    EXPECT_EQ(remove_abandoned_temp_dirs("radial-docker-"), 1u);
    EXPECT_FALSE(fs::exists(left));
}

} // namespace
} // namespace radial::plugin_support
