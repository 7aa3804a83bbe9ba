// What a SIGHUP compares (docs/design.md §12.3): the keys whose values differ between the file the
// daemon started with and the file now, and which of them a reload applies.
#include "daemon/config_reload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/host_config.h"

namespace radial::daemon {

TEST(ConfigReload, NamesEachChangedAddedAndRemovedKeyAndWhetherItIsReloaded) {
    const std::string before =
        "[run]\nmaxConcurrentTurns = 2\nstateDir = \"/srv/a\"\nallowedImages = [\"a/*\"]\n"
        "[run.docker]\nmemory = \"1g\"\n";
    const std::string after =
        "[run]\nmaxConcurrentTurns = 3\nstateDir = \"/srv/a\"\nallowedImages = [\"a/*\", \"b\"]\n"
        "shutdownGrace = \"5s\"\n[run.docker]\n";
    const auto changes = changed_keys(before, after);
    ASSERT_EQ(changes.size(), 4u);
    EXPECT_EQ(changes[0].key, "run.allowedImages");
    EXPECT_FALSE(changes[0].reloadable);
    EXPECT_EQ(changes[1].key, "run.docker.memory"); // removed
    EXPECT_FALSE(changes[1].reloadable);
    EXPECT_EQ(changes[2].key, "run.maxConcurrentTurns");
    EXPECT_TRUE(changes[2].reloadable);
    EXPECT_EQ(changes[3].key, "run.shutdownGrace"); // added
    EXPECT_TRUE(changes[3].reloadable);
}

TEST(ConfigReload, TheSameValuesWrittenDifferentlyAreNoChange) {
    EXPECT_TRUE(changed_keys("[run]\nmaxConcurrentTurns = 2 # two\n",
                             "# a comment\n[run]\n\nmaxConcurrentTurns   =   2\n")
                    .empty());
    EXPECT_TRUE(changed_keys("", "").empty());
}

TEST(ConfigReload, AFileThatDoesNotParseIsAConfigError) {
    EXPECT_THROW(changed_keys("[run]\n", "[run\n"), config::ConfigError);
}

} // namespace radial::daemon
