// The one mapping of error classes to exit statuses and log components (docs/design.md §14.4),
// for the module types that replaced bare std::runtime_error / std::system_error throws (§14.2):
// each is raised by the real code where it can be, then mapped.
#include "cli/exit_status.h"

#include <gtest/gtest.h>
#include <radial/internal/temp_dir.h>

#include <cerrno>
#include <string>

#include "../../support/temp_dir.h"
#include "config/host_config.h"
#include "daemon/daemon_error.h"
#include "daemon/spool.h"
#include "daemon/spool_watcher.h"
#include "fs/durable_file.h"
#include "fs/fs_error.h"
#include "turn/box_user_env.h"
#include "turn/turn_setup_error.h"

namespace radial::cli {
namespace {

// The statuses every non-config error gets: 1 for the other commands, 125 for `radiald turn`.
void expect_failed_and_host_fault(const std::exception& e) {
    EXPECT_EQ(exit_status_for(e, CommandKind::other), kExitFailed) << e.what();
    EXPECT_EQ(exit_status_for(e, CommandKind::turn), kExitHostFault) << e.what();
}

TEST(ExitStatus, TheBaselineClassesKeepTheirStatuses) {
    const config::ConfigError config("radiald.toml:1:1: run.x: unknown key");
    EXPECT_EQ(exit_status_for(config, CommandKind::other), kExitUsage);
    EXPECT_EQ(exit_status_for(config, CommandKind::turn), kExitHostFault);
    EXPECT_EQ(error_component(config, "daemon"), "config");
    expect_failed_and_host_fault(config::HostRefusalError("run.boxIdRange: taken"));
    expect_failed_and_host_fault(std::runtime_error("anything else"));
}

TEST(ExitStatus, AFileThatCannotBePublishedIsAnFsErrorWithItsErrno) {
    test::TempDir dir("radial-exit-fs");
    try {
        fs_util::publish_file(dir.path() + "/missing", dir.path() + "/f", "x", 0600);
        FAIL() << "published into a directory that does not exist";
    } catch (const fs_util::FsError& e) {
        EXPECT_EQ(e.error_number(), ENOENT);
        EXPECT_NE(std::string(e.what()).find(dir.path() + "/missing"), std::string::npos)
            << e.what();
        expect_failed_and_host_fault(e);
        EXPECT_EQ(error_component(e, "submit"), "submit");
    }
}

TEST(ExitStatus, ASpoolThatCannotBeWatchedIsASpoolError) {
    test::TempDir dir("radial-exit-spool");
    const std::string missing = dir.path() + "/queue";
    try {
        daemon::SpoolWatcher watcher(missing);
        FAIL() << "watched a directory that does not exist";
    } catch (const daemon::SpoolError& e) {
        EXPECT_EQ(std::string(e.what()), "watching the spool '" + missing +
                                             "': inotify_add_watch: No such file or directory");
        expect_failed_and_host_fault(e);
        EXPECT_EQ(error_component(e, "daemon"), "spool");
    }
}

TEST(ExitStatus, TheEventLoopsFailureIsADaemonError) {
    const daemon::DaemonError e("creating the signal pipe", EMFILE);
    EXPECT_EQ(std::string(e.what()), "creating the signal pipe: Too many open files");
    expect_failed_and_host_fault(e);
    EXPECT_EQ(error_component(e, "daemon"), "daemon");
}

TEST(ExitStatus, APreparationTheBoxUserCannotHaveIsATurnSetupError) {
    test::TempDir state("radial-exit-turn");
    turn::BoxIdentity identity(turn::box_identity_dir(state.path(), "t1"), 2000000000, 2000000000);
    ContainerSpec spec;
    spec.tmpfs = {{"/home/radial", 1 << 20}};
    try {
        identity.apply(spec, 1 << 20);
        FAIL() << "a tmpfs took the box user's home";
    } catch (const turn::TurnSetupError& e) {
        expect_failed_and_host_fault(e);
        EXPECT_EQ(error_component(e, "turn"), "turn");
    }
}

TEST(ExitStatus, ATemporaryDirectoryThatCannotBeMadeIsATempDirError) {
    test::TempDir dir("radial-exit-tmp");
    try {
        internal::TempDir made(dir.path() + "/missing", "x-");
        FAIL() << "made a temporary directory under a directory that does not exist";
    } catch (const internal::TempDirError& e) {
        EXPECT_EQ(e.code().value(), ENOENT);
        expect_failed_and_host_fault(e);
        EXPECT_EQ(error_component(e, "template"), "template");
    }
}

} // namespace
} // namespace radial::cli
