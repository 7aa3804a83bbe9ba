// One state directory per instance id on the host (docs/design.md §17, C-16): the claim the radiald
// commands that run or reconcile boxes hold.
#include "daemon/instance_claim.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "../../support/temp_dir.h"
#include "daemon/state_dir_lock.h"

namespace radial::daemon {
namespace {
using ::testing::HasSubstr;

std::string refusal(const std::string& registry, const std::string& id, const std::string& dir) {
    try {
        InstanceClaim::acquire(registry, id, dir);
    } catch (const LockError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(InstanceClaim, C16_AnotherStateDirectoryIsRefusedNamingTheHolder) {
    test::TempDir reg, a, b;
    const std::string registry = reg / "claims";
    auto held = InstanceClaim::acquire(registry, "x1", a.path());
    EXPECT_EQ(refusal(registry, "x1", b.path()),
              "run.instanceId 'x1' is in use by the radiald of state directory '" + a.path() +
                  "' (pid " + std::to_string(::getpid()) +
                  "); two state directories must not share an instance id (each would take the "
                  "other's boxes for orphans); give this one its own run.instanceId");
    // The same state directory shares the claim (turns beside each other); another id is free.
    auto again = InstanceClaim::acquire(registry, "x1", a.path());
    auto other = InstanceClaim::acquire(registry, "x2", b.path());
    EXPECT_EQ(refusal(registry, "x1", b.path()).find("(no error)"), std::string::npos);
}

TEST(InstanceClaim, TheClaimGoesWithItsLastHolder) {
    test::TempDir reg, a, b;
    const std::string registry = reg / "claims";
    {
        auto first = InstanceClaim::acquire(registry, "x1", a.path());
        auto second = InstanceClaim::acquire(registry, "x1", a.path());
    }
    auto now_b = InstanceClaim::acquire(registry, "x1", b.path());
    EXPECT_THAT(refusal(registry, "x1", a.path()), HasSubstr("'" + b.path() + "'"));
}

// The claim files do not pile up in the registry: the last holder removes them.
TEST(InstanceClaim, TheLastHolderRemovesItsFiles) {
    test::TempDir reg, a, b;
    const std::string registry = reg / "claims";
    std::optional<InstanceClaim> first = InstanceClaim::acquire(registry, "x1", a.path());
    std::optional<InstanceClaim> second = InstanceClaim::acquire(registry, "x1", a.path());
    EXPECT_TRUE(std::filesystem::exists(registry + "/x1.claim"));
    first.reset();
    EXPECT_TRUE(std::filesystem::exists(registry + "/x1.claim")) << "a holder still holds it";
    EXPECT_THAT(refusal(registry, "x1", b.path()), HasSubstr("'" + a.path() + "'"));
    second.reset();
    EXPECT_TRUE(std::filesystem::is_empty(registry))
        << "claim or guard left behind: " << std::filesystem::directory_iterator(registry)->path();
    // Gone, and free for another state directory.
    auto now_b = InstanceClaim::acquire(registry, "x1", b.path());
    EXPECT_THAT(refusal(registry, "x1", a.path()), HasSubstr("'" + b.path() + "'"));
}

// A file left by a holder that crashed is taken over, and removed when that claim ends.
TEST(InstanceClaim, AFileACrashedHolderLeftIsRemovedByTheNextOne) {
    test::TempDir reg, a;
    const std::string registry = reg / "claims";
    std::filesystem::create_directory(registry);
    reg.write("claims/x1.claim", "1:2 /gone/state\n");
    reg.write("claims/x1.lock", "");
    { auto claim = InstanceClaim::acquire(registry, "x1", a.path()); }
    EXPECT_TRUE(std::filesystem::is_empty(registry));
}

// Any start sweeps the claims no radiald holds whose state directory is gone (a killed radiald's,
// whose state directory went with its test or its host's layout): the registry held hundreds.
// One held, or naming a directory that exists, stays.
TEST(InstanceClaim, AClaimNobodyHoldsWhoseStateDirectoryIsGoneIsSweptByAnyStart) {
    test::TempDir reg, a, kept;
    auto gone = std::make_unique<test::TempDir>();
    const std::string registry = reg / "claims";
    std::filesystem::create_directory(registry);
    reg.write("claims/stale.claim", "1:2 " + gone->path() + "/state\n");
    reg.write("claims/stale.lock", "");
    reg.write("claims/alive.claim", "1:2 " + kept.path() + "\n");
    auto held = InstanceClaim::acquire(registry, "held", gone->path());
    gone.reset(); // the holder's directory went, but it still runs
    { auto claim = InstanceClaim::acquire(registry, "x1", a.path()); }
    EXPECT_FALSE(std::filesystem::exists(registry + "/stale.claim"));
    EXPECT_FALSE(std::filesystem::exists(registry + "/stale.lock"));
    EXPECT_TRUE(std::filesystem::exists(registry + "/alive.claim"));
    EXPECT_FALSE(std::filesystem::exists(registry + "/alive.lock")) << "the sweep made a guard";
    EXPECT_TRUE(std::filesystem::exists(registry + "/held.claim"));
}

// flock(2) takes a descriptor opened read-only: a local user who could open the claim's files
// could hold their locks and keep every radiald of that instance out (a claim waited on for ever).
// They are 0600, also a file an older radiald left 0644, and no other uid opens them.
TEST(InstanceClaim, NoOtherUserCanOpenTheClaimsFiles) {
    test::TempDir reg, a;
    ASSERT_EQ(::chmod(reg.path().c_str(), 0755), 0) << "others may reach the registry";
    const std::string registry = reg / "claims";
    std::filesystem::create_directory(registry);
    ASSERT_EQ(::chmod(registry.c_str(), 0755), 0);
    reg.write("claims/x1.claim", "1:2 /gone/state\n");
    ASSERT_EQ(::chmod((registry + "/x1.claim").c_str(), 0644), 0);
    auto claim = InstanceClaim::acquire(registry, "x1", a.path());
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(registry)) {
        files.push_back(e.path());
        struct stat st {};
        ASSERT_EQ(::lstat(e.path().c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 077, 0u) << e.path();
    }
    ASSERT_FALSE(files.empty());
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (opening as another uid)";
    const pid_t child = ::fork();
    if (child == 0) {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(100);
        int opened = 0;
        for (const auto& f : files) {
            const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd >= 0) ++opened;
        }
        ::_exit(opened);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "files uid 65534 could open (100: no setuid)";
}

// Removing the files never lets two state directories hold one instance id at once: claims of two
// directories taken and let go in a loop from several threads (flock locks are per open file, so
// threads contend as processes would) never overlap.
TEST(InstanceClaim, RemovalNeverLetsTwoStateDirectoriesInAtOnce) {
    test::TempDir reg, a, b;
    const std::string registry = reg / "claims";
    std::atomic<int> in_a{0}, in_b{0}, overlaps{0}, claims{0};
    auto worker = [&](const std::string& dir, std::atomic<int>& mine, std::atomic<int>& theirs) {
        for (int i = 0; i < 200; ++i) {
            try {
                auto c = InstanceClaim::acquire(registry, "x1", dir);
                ++mine;
                ++claims;
                if (theirs.load() != 0) ++overlaps;
                --mine;
            } catch (const LockError&) {
                // the other directory held it: the refusal this test expects half the time
            }
        }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
        threads.emplace_back(worker, a.path(), std::ref(in_a), std::ref(in_b));
        threads.emplace_back(worker, b.path(), std::ref(in_b), std::ref(in_a));
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(overlaps.load(), 0);
    EXPECT_GT(claims.load(), 0);
    EXPECT_TRUE(std::filesystem::is_empty(registry));
}

TEST(InstanceClaim, ARegistryOthersCanWriteIsRefused) {
    test::TempDir reg, a;
    const std::string registry = reg / "claims";
    std::filesystem::create_directory(registry);
    ::chmod(registry.c_str(), 0777);
    EXPECT_THAT(
        refusal(registry, "x1", a.path()),
        HasSubstr("must be uid " + std::to_string(::geteuid()) + "'s and writable by nobody else"));
    EXPECT_THAT(refusal(registry, "x1", a.path()), HasSubstr("chmod go-w it"));
    // Another user's, which this one could not remove from a sticky /tmp: the fix is one it can
    // make.
    ::chmod(registry.c_str(), 0755);
    ASSERT_EQ(::geteuid(), 0u) << "the daemon tests run as root";
    ASSERT_EQ(::chown(registry.c_str(), 65534, 65534), 0);
    EXPECT_THAT(refusal(registry, "x1", a.path()),
                HasSubstr("another user made it first: set XDG_RUNTIME_DIR"));
}

// Root's registry is host-wide, so it must be where no other user can create it first: such a user
// would own it, and every radiald of root would then refuse it (the test above) and not start.
// It was /run/lock/radial, and /run/lock is writable by everyone.
TEST(InstanceClaim, RootsRegistryIsInADirectoryOnlyRootMayWrite) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (root's registry)";
    const std::filesystem::path registry = default_claim_registry();
    for (auto dir = registry.parent_path(); !dir.empty(); dir = dir.parent_path()) {
        struct stat st {};
        ASSERT_EQ(::stat(dir.c_str(), &st), 0) << dir;
        EXPECT_EQ(st.st_uid, 0u) << dir << " is not root's";
        EXPECT_EQ(st.st_mode & (S_IWGRP | S_IWOTH), 0u)
            << dir << " (mode " << std::oct << (st.st_mode & 07777) << ") lets another user create "
            << registry;
        if (dir == dir.root_path()) break;
    }
}

} // namespace
} // namespace radial::daemon
