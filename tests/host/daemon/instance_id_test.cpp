// Instance identity (docs/design.md §8.6): configured, or generated once and persisted in the state
// dir.
#include "config/instance_id.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <thread>

#include "../../support/temp_dir.h"

namespace radial::config {
namespace {

TEST(InstanceId, GeneratedOncePersistedAndReused) {
    test::TempDir d;
    std::string dir = d / "state";
    EXPECT_EQ(read_persisted_instance_id(dir), std::nullopt);
    std::string id = persisted_instance_id(dir);
    EXPECT_THAT(id, ::testing::MatchesRegex("[a-z0-9]{12}"));
    EXPECT_EQ(test::read_file(dir + "/instance-id"), id + "\n");
    EXPECT_EQ(persisted_instance_id(dir), id);
    EXPECT_EQ(read_persisted_instance_id(dir), id);
    test::TempDir other;
    EXPECT_NE(persisted_instance_id(other.path()), id);
}

TEST(InstanceId, AConfiguredIdWinsAndNothingIsWritten) {
    test::TempDir d;
    HostConfig cfg;
    cfg.state_dir = d / "state";
    cfg.instance_id = "inst1";
    settle_instance_id(cfg);
    EXPECT_EQ(cfg.instance_id, "inst1");
    EXPECT_FALSE(std::filesystem::exists(cfg.state_dir));
    cfg.instance_id.clear();
    settle_instance_id(cfg);
    EXPECT_EQ(cfg.instance_id, test::read_file(cfg.state_dir + "/instance-id").substr(0, 12));
}

TEST(InstanceId, ConcurrentFirstStartsAgreeOnOneId) {
    test::TempDir d;
    std::mutex m;
    std::set<std::string> ids;
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
        threads.emplace_back([&] {
            auto id = persisted_instance_id(d / "state");
            std::lock_guard lock(m);
            ids.insert(id);
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(ids.size(), 1u);
}

TEST(InstanceId, ADamagedFileIsRefusedNamingIt) {
    test::TempDir d;
    d.write("instance-id", "inst-1\n");
    try {
        persisted_instance_id(d.path());
        FAIL() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_EQ(
            std::string(e.what()),
            "reading the instance id '" + d.path() +
                "/instance-id': 'inst-1' is not an instance "
                "id ([a-z0-9]{1,32}); set run.instanceId, or delete the file to have a new id "
                "generated once no box of the old one remains");
    }
}

} // namespace
} // namespace radial::config
