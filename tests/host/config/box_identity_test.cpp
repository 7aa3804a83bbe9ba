// The box-id range check's two halves (docs/design.md §8.7): `radiald turn` runs the processes half
// on a thread of its own beside loading its runtime and the accounts half before it (§3.2), so
// each must find what it is for, and only that.
#include "config/box_identity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

// run.user names the ids: the range is not the boxes', and neither half looks.
TEST(BoxIdRange, NeitherHalfLooksWhenRunUserNamesTheIds) {
    HostConfig cfg = range(65534, 65534);
    cfg.user = "1000:1000";
    EXPECT_EQ(refusal_of(check_box_id_range_accounts, cfg), "(no refusal)");
    EXPECT_EQ(refusal_of(check_box_id_range_processes, cfg), "(no refusal)");
}

} // namespace
} // namespace radial::config
