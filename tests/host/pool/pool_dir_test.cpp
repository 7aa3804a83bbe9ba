// tests/host/pool/pool_dir_test.cpp — what a radiald killed with pool boxes left is cleared
// (host/pool/pool_box.h, docs/design.md §13.14) without touching a workspace still mounted in it,
// however the state directory's path is spelled: through a link, or with a trailing slash. In a
// mount namespace of the test's own (a death-test child), with the bind mounts a killed radiald
// leaves: a workspace stacked on a pool box's receiving directory.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "../../support/temp_dir.h"
#include "pool/pool_box.h"

namespace radial::pool {
namespace {

namespace fs = std::filesystem;

// The checks, in the death-test child; a failure is one line on stderr and exit status 1.
[[noreturn]] void clear_as_spelled(const std::string& base) {
    auto fail = [&base](const std::string& why) {
        std::cerr << why << std::endl;
        test::exit_removing(base, 1);
    };
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        fail("no mount namespace of the test's own");
    const std::string state = base + "/state", ws = base + "/ws";
    fs::create_directories(ws);
    std::ofstream(ws + "/keep") << "the user's work";
    fs::create_symlink(state, base + "/state-link");
    for (const std::string& spelled : {base + "/state-link", state + "/", state + "/./"}) {
        // What a killed radiald left: a box's receiving directory with the workspace on it.
        const std::string work = state + "/pool/box-1/work";
        fs::create_directories(work);
        if (::mount(work.c_str(), work.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
            ::mount(ws.c_str(), work.c_str(), nullptr, MS_BIND, nullptr) != 0)
            fail("binding the workspace failed");
        const std::size_t detached = clear_pool_dir(spelled);
        if (!fs::exists(ws + "/keep")) fail("'" + spelled + "': the workspace was emptied");
        if (detached != 2)
            fail("'" + spelled + "': detached " + std::to_string(detached) + " mounts of 2");
        if (fs::exists(state + "/pool/box-1"))
            fail("'" + spelled + "': the box's directory stayed");
    }
    test::exit_removing(base, 0);
}

TEST(PoolDir, AKilledRadialdsPoolIsClearedWithoutTouchingAWorkspaceMountedInIt) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (a mount namespace)";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    test::TempDir base("radial-pool-dir");
    // The child (this test run again, death_test_style "threadsafe") checks in a directory of its
    // own making.
    EXPECT_EXIT(clear_as_spelled(base.path()), ::testing::ExitedWithCode(0), "");
}

} // namespace
} // namespace radial::pool
