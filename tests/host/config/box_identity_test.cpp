// The box-id range check's two halves (docs/design.md §8.7): `radiald turn` runs the processes half
// on a thread of its own beside loading its runtime and the accounts half before it (§3.2), so
// each must find what it is for, and only that.
#include "config/box_identity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <string>

#include "../../support/host_processes.h"

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

// Whether /proc says `pid` (the test's own child) runs with real uid `uid`.
bool runs_as(pid_t pid, uid_t uid) {
    std::istringstream status(test::read_proc_file("/proc/" + std::to_string(pid) + "/status"));
    std::string line;
    while (std::getline(status, line))
        if (line.starts_with("Uid:")) {
            std::istringstream ids(line.substr(4));
            uid_t real = 0;
            return ids >> real && real == uid;
        }
    return false;
}

// 65534 is `nobody` in passwd.
TEST(BoxIdRange, TheAccountsHalfNamesAPasswdEntry) {
    EXPECT_THAT(refusal_of(check_box_id_range_accounts, range(65534, 65534)),
                HasSubstr("run.boxIdRange 65534-65534: host user '"));
    EXPECT_THAT(refusal_of(check_box_id_range, range(65534, 65534)), HasSubstr("65534 (passwd)"));
}

TEST(BoxIdRange, TheProcessesHalfNamesAProcessTheAccountsHalfDoesNotSee) {
    constexpr uid_t kId = 2100000005; // in no passwd or group file
    const pid_t squatter = ::fork();
    if (squatter == 0) {
        // As a host service dropping privileges to an id that happens to be in the range.
        if (::setresgid(kId, kId, kId) != 0 || ::setresuid(kId, kId, kId) != 0) ::_exit(1);
        for (;;) ::pause();
    }
    ASSERT_GT(squatter, 0);
    const bool dropped =
        test::wait_until([&] { return runs_as(squatter, kId); }, std::chrono::seconds(10));
    const HostConfig cfg = range(2100000000, 2100000009);
    const std::string processes = refusal_of(check_box_id_range_processes, cfg);
    const std::string accounts = refusal_of(check_box_id_range_accounts, cfg);
    const std::string both = refusal_of(check_box_id_range, cfg);
    ::kill(squatter, SIGKILL);
    ::waitpid(squatter, nullptr, 0);

    ASSERT_TRUE(dropped) << "the child never ran as " << kId;
    EXPECT_THAT(processes, HasSubstr("host process " + std::to_string(squatter) + " ("));
    EXPECT_THAT(processes, HasSubstr("runs with id 2100000005"));
    EXPECT_EQ(accounts, "(no refusal)");
    EXPECT_EQ(both, processes);
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
