// Which queued turns the daemon leases box ids for before it claims them (docs/design.md §8.7):
// a turn of its own box, and beside a warm pool only one the pool cannot serve — such a turn,
// claimed while the range was full, waited a minute for a pool box's id and ended in an error.
#include "daemon/box_ids_ahead.h"

#include <gtest/gtest.h>

#include "../../support/instance_config.h"

namespace radial::daemon {
namespace {

SpooledRequest turn_of(const std::string& image, const std::string& workspace) {
    SpooledRequest r;
    r.turn_id = "t-1";
    r.image = image;
    r.workspace = workspace;
    r.argv = {"true"};
    return r;
}

TEST(BoxIdsAhead, ATurnTheWarmPoolCannotServeLeasesItsOwn) {
    auto cfg = test::instance_config();
    cfg.pool.images = {"pooled:1"};
    cfg.pool.size = 1;
    EXPECT_TRUE(leases_box_ids(cfg, turn_of("pooled:1", "/w"), false)) << "no pool running";
    EXPECT_FALSE(leases_box_ids(cfg, turn_of("pooled:1", "/w"), true)) << "the pool's box";
    EXPECT_TRUE(leases_box_ids(cfg, turn_of("other:1", "/w"), true)) << "an image it lacks";
    EXPECT_TRUE(leases_box_ids(cfg, turn_of("pooled:1", ""), true)) << "no workspace";
    auto check = turn_of("pooled:1", "/w");
    check.kind = turn::RequestKind::check;
    EXPECT_TRUE(leases_box_ids(cfg, check, true)) << "a check";
    auto offering = turn_of("pooled:1", "/w");
    offering.offer = {"db"};
    EXPECT_TRUE(leases_box_ids(cfg, offering, true)) << "a turn offering services";
}

TEST(BoxIdsAhead, NoneForASessionsTurnOrFixedIds) {
    auto cfg = test::instance_config();
    auto in_session = turn_of("img", "");
    in_session.session = "s1";
    EXPECT_FALSE(leases_box_ids(cfg, in_session, false)) << "its session holds them";
    cfg.box_root = std::pair<std::uint32_t, std::uint32_t>{100000, 100000};
    EXPECT_FALSE(leases_box_ids(cfg, turn_of("img", ""), false)) << "root in a namespace";
    cfg.box_root.reset();
    cfg.user = "1234:1234";
    EXPECT_FALSE(leases_box_ids(cfg, turn_of("img", ""), false)) << "run.user's fixed ids";
}

} // namespace
} // namespace radial::daemon
