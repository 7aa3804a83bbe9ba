// The processes a command started, found and ended (docs/design.md §14.6): only the process seen
// is signalled, never one given its pid since, and a grandchild goes with its parent.
#include "isolation/descendant_processes.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>

#include "../../support/host_processes.h"
#include "../../support/process_runner.h"

namespace radial::isolation {
namespace {
using namespace std::chrono_literals;

bool among(const std::vector<ProcessIdentity>& all, pid_t pid) {
    return std::any_of(all.begin(), all.end(), [&](const auto& p) { return p.pid == pid; });
}

// A pid freed and given to another process between the look and the signal was signalled: the
// start time the look saw now has to be the process's still, checked through a pidfd.
TEST(DescendantProcesses, OnlyTheProcessSeenIsSignalled) {
    test::BackgroundProcess child({"sleep", "600"});
    ASSERT_TRUE(test::wait_until([&] { return among(live_descendants(), child.pid()); }, 30s));
    const auto ticks = process_start_ticks(child.pid());
    ASSERT_TRUE(ticks);
    EXPECT_FALSE(kill_if_same({child.pid(), *ticks + 1})) << "another process of the same pid";
    EXPECT_TRUE(child.running());
    EXPECT_TRUE(kill_if_same({child.pid(), *ticks}));
    EXPECT_EQ(child.wait(30s), SIGKILL);
    EXPECT_FALSE(process_start_ticks(child.pid()));
}

TEST(DescendantProcesses, AGrandchildIsFoundAndEndedWithItsParent) {
    test::BackgroundProcess parent({"sh", "-c", "sleep 600 & wait"});
    pid_t grandchild = 0;
    ASSERT_TRUE(test::wait_until(
        [&] {
            for (const auto& p : live_descendants())
                if (p.pid != parent.pid()) grandchild = p.pid;
            return grandchild != 0;
        },
        30s));
    kill_descendants();
    EXPECT_EQ(parent.wait(30s), SIGKILL);
    EXPECT_TRUE(test::wait_until([&] { return !among(live_descendants(), grandchild); }, 30s));
}

} // namespace
} // namespace radial::isolation
