// tests/plugin-api/file_trust_test.cpp — who may write a file radiald trusts
// (radial/internal/file_trust.h, docs/design.md §5.9, §15.1): a non-root owner's own private
// group, where a umask of 002 leaves group-writable files, lets nobody else write; root's group,
// another user's group or a group with other members does.
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <radial/internal/file_trust.h>
#include <sys/stat.h>

#include <optional>
#include <string>
#include <utility>

namespace radial::internal {
namespace {

// A non-root account of this host whose primary group is its own (same name, no other member),
// as a user-private-group system makes for every user; nullopt when there is none.
std::optional<std::pair<uid_t, gid_t>> private_group_user() {
    ::setpwent();
    std::optional<std::pair<uid_t, gid_t>> found;
    while (passwd* pw = ::getpwent()) {
        if (pw->pw_uid == 0) continue;
        const group* gr = ::getgrgid(pw->pw_gid);
        if (gr == nullptr || std::string(gr->gr_name) != pw->pw_name) continue;
        if (gr->gr_mem != nullptr && gr->gr_mem[0] != nullptr) continue;
        found = std::pair{pw->pw_uid, pw->pw_gid};
        break;
    }
    ::endpwent();
    return found;
}

TEST(FileTrust, OnlyANonRootOwnersPrivateGroupMayWrite) {
    EXPECT_FALSE(group_is_owners_alone(0, 0)) << "root's files take no group write";
    const auto user = private_group_user();
    if (!user) GTEST_SKIP() << "no account with a private group on this host";
    const auto [uid, gid] = *user;
    EXPECT_TRUE(group_is_owners_alone(gid, uid));
    EXPECT_FALSE(group_is_owners_alone(0, uid)) << "root's group";
    EXPECT_FALSE(group_is_owners_alone(gid, 0)) << "owned by root";
    EXPECT_FALSE(group_is_owners_alone(gid + 100000, uid)) << "a group that is not its own";

    struct stat st {};
    st.st_mode = S_IFREG | 0664;
    st.st_uid = uid;
    st.st_gid = gid;
    // Judged on the group alone: the owner is refused anyway unless radiald runs as it.
    const std::string said = trust_problem("/x", st, "file", "change it");
    EXPECT_EQ(said.find("writable by"), std::string::npos) << said;
    st.st_gid = 0;
    EXPECT_NE(trust_problem("/x", st, "file", "change it").find("writable by its group (gid 0)"),
              std::string::npos);
    st.st_mode = S_IFREG | 0666;
    EXPECT_NE(trust_problem("/x", st, "file", "change it").find("writable by group or others"),
              std::string::npos);
}

} // namespace
} // namespace radial::internal
