// Which host ids a box's files and socket belong to (turn/box_root.h; docs/design.md §8.7, §8.8).
#include "turn/box_root.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "turn/box_user_env.h"

namespace radial::turn {
namespace {

using Ids = std::optional<std::pair<uid_t, gid_t>>;

TEST(BoxRoot, LeasedIdsAreTheirOwnHostIds) {
    EXPECT_EQ(box_host_ids("2000000007:2000000007", std::nullopt), (Ids{{2000000007, 2000000007}}));
    EXPECT_EQ(box_host_ids("4242", std::nullopt), (Ids{{4242, 4242}}));
    for (const char* odd : {"", "radial", "1:x", "-1:1", "4294967295:1", "99999999999:1", "1:2:3"})
        EXPECT_EQ(box_host_ids(odd, std::nullopt), std::nullopt) << odd;
}

// Under a namespaced root only that root has known host ids: never the host's own root, and never
// an id taken at face value from inside the namespace.
TEST(BoxRoot, ANamespacedRootIsTheEnginesRemappedIds) {
    const std::optional<std::pair<std::uint32_t, std::uint32_t>> root{{100000, 100001}};
    EXPECT_EQ(box_host_ids(kNamespacedRootUser, root), (Ids{{100000, 100001}}));
    EXPECT_EQ(box_host_ids("0:0", std::nullopt), (Ids{{0, 0}})); // an operator's explicit choice
    for (const char* other : {"0", "1000:1000", "2000000007:2000000007", ""})
        EXPECT_EQ(box_host_ids(other, root), std::nullopt) << other;
}

// A namespaced root keeps the image's own accounts (a package manager adds to them) and is root
// by name too; its home and variables are as for any box user.
TEST(BoxRoot, ANamespacedRootsIdentityWritesNoPasswdAndNamesRoot) {
    const std::string state = ::testing::TempDir() + "box-root-identity";
    std::filesystem::create_directories(state);
    ContainerSpec spec;
    {
        BoxIdentity id(box_identity_dir(state, "t1"), ::geteuid(), ::getegid(), std::nullopt, true);
        EXPECT_FALSE(std::filesystem::exists(id.dir() + "/passwd"));
        id.apply(spec, 1 << 20);
    }
    for (const auto& m : spec.mounts) EXPECT_NE(m.target, "/etc/passwd");
    ASSERT_EQ(spec.tmpfs.size(), 1u);
    EXPECT_EQ(spec.tmpfs[0].target, kBoxHome);
    std::map<std::string, std::string> env;
    for (const auto& e : spec.env) env[e.name] = e.value;
    EXPECT_EQ(env["USER"], "root");
    EXPECT_EQ(env["LOGNAME"], "root");
    EXPECT_EQ(env["HOME"], kBoxHome);
    std::filesystem::remove_all(state);
}

} // namespace
} // namespace radial::turn
