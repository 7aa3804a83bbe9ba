// The box-id range check's two halves (docs/design.md §8.7): `radiald turn` runs the processes half
// on a thread of its own beside loading its runtime and the accounts half before it (§3.2), so
// each must find what it is for, and only that.
#include "config/box_identity.h"

#include <gmock/gmock.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "../../support/id_squatter.h"

namespace radial::config {
namespace {
using ::testing::HasSubstr;

HostConfig range(std::uint32_t first, std::uint32_t last) {
    HostConfig cfg;
    cfg.box_id_first = first;
    cfg.box_id_last = last;
    return cfg;
}

std::string refusal_of(void (*check)(const HostConfig&), const HostConfig& cfg) {
    try {
        check(cfg);
    } catch (const HostRefusalError& e) {
        return e.what();
    }
    return "(no refusal)";
}

// 65534 is `nobody` in passwd.
// Whether the host's /proc hides other users' processes (a box's arguments among them), read off
// mountinfo's /proc line: its super options' hidepid (docs/design.md §15.3).
TEST(HostProc, HidepidIsReadOffTheProcMount) {
    const std::string before = "22 1 0:5 / /dev rw,nosuid - devtmpfs udev rw,size=10m\n";
    auto proc = [&](const std::string& super) {
        return before + "23 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc " +
               super + "\n24 23 0:22 / /proc/sys/fs/binfmt_misc rw - autofs systemd-1 rw\n";
    };
    EXPECT_FALSE(proc_hides_other_users(proc("rw")));
    EXPECT_FALSE(proc_hides_other_users(proc("rw,hidepid=0")));
    EXPECT_FALSE(proc_hides_other_users(proc("rw,hidepid=off")));
    EXPECT_TRUE(proc_hides_other_users(proc("rw,hidepid=2")));
    EXPECT_TRUE(proc_hides_other_users(proc("rw,hidepid=invisible,gid=4")));
    EXPECT_TRUE(proc_hides_other_users(proc("rw,gid=4,hidepid=noaccess")));
    EXPECT_FALSE(proc_hides_other_users(before)) << "no /proc mount at all";
    // A /proc that is not procfs (a bind of something else) hides nothing.
    EXPECT_FALSE(proc_hides_other_users("23 1 0:21 / /proc rw - tmpfs none rw,hidepid=2\n"));
    // Mounts stack: the last procfs at /proc is the one in effect, either way round.
    EXPECT_TRUE(proc_hides_other_users(proc("rw") + proc("rw,hidepid=invisible")));
    EXPECT_FALSE(proc_hides_other_users(proc("rw,hidepid=invisible") + proc("rw")));
}

TEST(BoxIdRange, TheAccountsHalfNamesAPasswdEntry) {
    EXPECT_THAT(refusal_of(check_box_id_range_accounts, range(65534, 65534)),
                HasSubstr("run.boxIdRange 65534-65534: host user '"));
    EXPECT_THAT(refusal_of(check_box_id_range, range(65534, 65534)), HasSubstr("65534 (passwd)"));
}

TEST(BoxIdRange, TheProcessesHalfNamesAProcessTheAccountsHalfDoesNotSee) {
    constexpr uid_t kId = 2100000005; // in no passwd or group file
    test::IdSquatter squatter(kId);
    ASSERT_TRUE(squatter.running()) << "the child never ran as " << kId;
    const HostConfig cfg = range(2100000000, 2100000009);
    const std::string processes = refusal_of(check_box_id_range_processes, cfg);
    const std::string accounts = refusal_of(check_box_id_range_accounts, cfg);
    const std::string both = refusal_of(check_box_id_range, cfg);

    EXPECT_THAT(processes, HasSubstr("host process " + std::to_string(squatter.pid()) + " ("));
    EXPECT_THAT(processes, HasSubstr("runs with id 2100000005"));
    EXPECT_EQ(accounts, "(no refusal)");
    EXPECT_EQ(both, processes);
}

// The processes half as a user that is not root, in a child: 0 when nothing is refused, 3 when
// the range is.
int check_as_nobody(const HostConfig& cfg) {
    const pid_t child = ::fork();
    if (child == 0) {
        if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
            ::setresuid(65534, 65534, 65534) != 0)
            ::_exit(4);
        try {
            check_box_id_range_processes(cfg);
            ::_exit(0);
        } catch (const HostRefusalError&) {
            ::_exit(3);
        } catch (...) {
            ::_exit(5);
        }
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A radiald that is not root cannot read another user's pid-namespace link, yet must tell a box
// (a process in a pid namespace of its own, running as an id of the range) from a host process of
// that id: a box of a root radiald must not stop it starting; a host process must.
TEST(BoxIdRange, ANonRootCheckTellsABoxFromAHostProcess) {
    ASSERT_EQ(::geteuid(), 0u)
        << "the suite runs as root: making another user's box-like process needs root";
    constexpr uid_t kId = 2100000015;
    const HostConfig cfg = range(2100000010, 2100000019);
    int ready[2], release[2];
    ASSERT_EQ(::pipe(ready), 0);
    ASSERT_EQ(::pipe(release), 0);
    const pid_t outer = ::fork();
    if (outer == 0) {
        ::close(ready[0]);
        ::close(release[1]);
        if (::unshare(CLONE_NEWPID) != 0) ::_exit(1);
        const pid_t inner = ::fork(); // pid 1 of the new namespace, as a box's first process
        if (inner == 0) {
            if (::setgroups(0, nullptr) != 0 || ::setresgid(kId, kId, kId) != 0 ||
                ::setresuid(kId, kId, kId) != 0)
                ::_exit(1);
            (void)!::write(ready[1], "x", 1);
            char c;
            (void)!::read(release[0], &c, 1); // until the test closes its end
            ::_exit(0);
        }
        ::waitpid(inner, nullptr, 0);
        ::_exit(0);
    }
    ::close(ready[1]);
    ::close(release[0]);
    char c = 0;
    const bool box_running = ::read(ready[0], &c, 1) == 1;
    ::close(ready[0]);
    EXPECT_TRUE(box_running) << "the box-like process never ran as " << kId;
    if (box_running) {
        EXPECT_EQ(check_as_nobody(cfg), 0) << "a box in its own pid namespace was refused";
        // A host process of the range is refused all the same.
        test::IdSquatter squatter(2100000016);
        ASSERT_TRUE(squatter.running());
        EXPECT_EQ(check_as_nobody(cfg), 3) << "a host process of the range was not refused";
    }
    ::close(release[1]);
    ::waitpid(outer, nullptr, 0);
}

// run.user names the ids: the range is not the boxes', and neither half looks.
TEST(BoxIdRange, NeitherHalfLooksWhenRunUserNamesTheIds) {
    HostConfig cfg = range(65534, 65534);
    cfg.user = "1000:1000";
    EXPECT_EQ(refusal_of(check_box_id_range_accounts, cfg), "(no refusal)");
    EXPECT_EQ(refusal_of(check_box_id_range_processes, cfg), "(no refusal)");
}

} // namespace
} // namespace radial::config
