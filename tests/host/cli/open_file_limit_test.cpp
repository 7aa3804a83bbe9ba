// radiald raises its soft open-file limit to the hard one (host/cli/open_file_limit.h): many
// turns' descriptors at once must not run it out of them at the default 1024.
#include "cli/open_file_limit.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace radial::cli {
namespace {

// In a child process, so this test's own limits stay as they were.
TEST(OpenFileLimit, TheSoftLimitIsRaisedToTheHardOne) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        rlimit lim{};
        if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) ::_exit(10);
        lim.rlim_cur = 64; // as low as a unit's default could leave it
        if (lim.rlim_max < 128 || ::setrlimit(RLIMIT_NOFILE, &lim) != 0) ::_exit(11);
        const rlim_t said = raise_open_file_limit();
        rlimit after{};
        if (::getrlimit(RLIMIT_NOFILE, &after) != 0) ::_exit(12);
        if (after.rlim_cur != after.rlim_max) ::_exit(13);
        if (said != after.rlim_cur) ::_exit(14);
        ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "10-12: a limit call failed; 13: the soft limit is not "
                                         "the hard one; 14: the returned limit is not in force";
}

} // namespace
} // namespace radial::cli
