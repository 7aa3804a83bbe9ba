// One state directory per instance id on the host (CASES C-16): the claim the radiald commands
// that run or reconcile boxes hold.
#include "daemon/instance_claim.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

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

TEST(InstanceClaim, ARegistryOthersCanWriteIsRefused) {
    test::TempDir reg, a;
    const std::string registry = reg / "claims";
    std::filesystem::create_directory(registry);
    ::chmod(registry.c_str(), 0777);
    EXPECT_THAT(
        refusal(registry, "x1", a.path()),
        HasSubstr("must be uid " + std::to_string(::geteuid()) + "'s and writable by nobody else"));
}

} // namespace
} // namespace radial::daemon
