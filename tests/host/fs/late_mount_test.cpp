// tests/host/fs/late_mount_test.cpp — the host's side of a box that receives its mounts later
// (host/fs/late_mount.h, docs/design.md §13.13), in a mount namespace of the test's own whose `/`
// is shared as systemd makes it: the receiving directory is a peer group of its own (a plain bind
// would join `/`'s and carry every later mount to all of its peers), and a late mount is private,
// nosuid, nodev, read-only when asked, and detached exactly when it goes.
#include "fs/late_mount.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../../support/temp_dir.h"
#include "fs/fs_error.h"

namespace radial::fs_util {
namespace {

// One line of /proc/self/mountinfo.
struct MountLine {
    std::string mount_point, options, optional_fields;
};

// The lines whose mount point is `path`, bottom to top.
std::vector<MountLine> mounts_at(const std::string& path) {
    std::vector<MountLine> out;
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string id, parent, dev, root, point, options, word, optional;
        f >> id >> parent >> dev >> root >> point >> options;
        while (f >> word && word != "-") optional += (optional.empty() ? "" : " ") + word;
        if (point == path) out.push_back({point, options, optional});
    }
    return out;
}

// The peer group ("shared:N") in `optional_fields`, or empty.
std::string peer_group(const std::string& optional_fields) {
    std::istringstream f(optional_fields);
    std::string w;
    while (f >> w)
        if (w.rfind("shared:", 0) == 0) return w;
    return {};
}

bool has_option(const std::string& options, const std::string& o) {
    return ("," + options + ",").find("," + o + ",") != std::string::npos;
}

// The checks, run in the death-test child after it made a namespace of its own; a failure is one
// line on stderr and exit status 1.
[[noreturn]] void run_in_own_namespace(const std::string& base) {
    auto fail = [&base](const std::string& why) {
        std::cerr << why << std::endl;
        test::exit_removing(base, 1);
    };
    if (::unshare(CLONE_NEWNS) != 0) fail("unshare(CLONE_NEWNS) failed");
    // Nothing done here may reach the host's namespace; then `/` shared, as under systemd.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_SHARED, nullptr) != 0)
        fail("making / a shared slave failed");
    const std::string dir = base + "/receiving", ws = base + "/ws";
    const std::string root_group = peer_group(mounts_at("/").back().optional_fields);
    if (root_group.empty()) fail("/ is not shared after MS_SHARED");
    {
        ReceivingDir receiving(dir);
        auto at = mounts_at(dir);
        if (at.size() != 1) fail("the receiving directory is not one mount");
        const std::string group = peer_group(at[0].optional_fields);
        if (group.empty()) fail("the receiving directory is not shared: " + at[0].optional_fields);
        if (group == root_group)
            fail("the receiving directory joined /'s peer group " + group +
                 ": every later mount would reach all of /'s peers");
        {
            LateMount ro(receiving, ws, /*read_only=*/true);
            at = mounts_at(dir);
            if (at.size() != 2) fail("the late mount is not stacked on the receiving directory");
            if (!peer_group(at[1].optional_fields).empty())
                fail("the late mount is shared: " + at[1].optional_fields);
            for (const char* o : {"ro", "nosuid", "nodev"})
                if (!has_option(at[1].options, o))
                    fail(std::string("the late mount lacks ") + o + ": " + at[1].options);
            std::ifstream brief(dir + "/brief.md");
            std::string text;
            std::getline(brief, text);
            if (text != "the brief") fail("the workspace is not seen through the receiving dir");
        }
        at = mounts_at(dir);
        if (at.size() != 1) fail("the late mount was not detached when it went");
        {
            LateMount rw(receiving, ws, /*read_only=*/false);
            if (has_option(mounts_at(dir).back().options, "ro")) fail("a read-write mount is ro");
        }
        // A link anywhere on the source (put there after radiald resolved it) ends the mount,
        // never redirects it to the tree the link names.
        std::filesystem::create_symlink(base, base + "/link");
        std::filesystem::create_symlink(ws, base + "/ws-link");
        for (const std::string& linked : {base + "/link/ws", base + "/ws-link"}) {
            try {
                LateMount m(receiving, linked, /*read_only=*/true);
                fail("a source reached through a link was mounted: " + linked);
            } catch (const FsError&) {
            }
            if (mounts_at(dir).size() != 1) fail("a refused late mount left a mount: " + linked);
        }
    }
    if (!mounts_at(dir).empty()) fail("the receiving directory was not detached when it went");
    test::exit_removing(base, 0);
}

TEST(LateMount, AReceivingDirIsAPeerGroupOfItsOwnAndALateMountCarriesItsFlags) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root: mount namespaces need root";
    test::TempDir base("radial-late-mount");
    std::filesystem::create_directory(base.path() + "/receiving");
    std::filesystem::create_directory(base.path() + "/ws");
    base.write("ws/brief.md", "the brief\n");
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(run_in_own_namespace(base.path()), ::testing::ExitedWithCode(0), "");
}

} // namespace
} // namespace radial::fs_util
