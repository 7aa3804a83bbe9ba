// tests/plugins/support/run_registry_test.cpp — the runs in flight by label
// (plugin-api/support/run_registry.cpp), and the small owners it builds on (WakeEvent).
#include <gtest/gtest.h>
#include <poll.h>
#include <radial/support/run_registry.h>

#include <chrono>
#include <radial/plugin/runtime.hpp>
#include <thread>

namespace radial::plugin_support {
namespace {

using namespace std::chrono_literals;

bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
}

TEST(plugin_support_run_registry, ASecondRunOfOneLabelIsRefused) {
    RunRegistry registry;
    auto first = registry.enter("radial-turn-a-1");
    try {
        registry.enter("radial-turn-a-1");
        FAIL() << "two runs of one label";
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), RADIAL_E_INVALID);
        EXPECT_EQ(e.key(), "label");
    }
    auto other = registry.enter("radial-turn-a-10");
    EXPECT_FALSE(other.run().kill_requested());
}

TEST(plugin_support_run_registry, KillReachesExactlyTheLabelAndWakesItsLoop) {
    RunRegistry registry;
    auto a = registry.enter("radial-turn-a-1");
    auto b = registry.enter("radial-turn-a-10");
    EXPECT_EQ(registry.request_kill("radial-turn-a-"), nullptr) << "never a prefix";
    EXPECT_FALSE(readable(a.run().wake().fd()));
    auto killed = registry.request_kill("radial-turn-a-1");
    ASSERT_NE(killed, nullptr);
    EXPECT_TRUE(a.run().kill_requested());
    EXPECT_FALSE(b.run().kill_requested());
    EXPECT_TRUE(readable(a.run().wake().fd()));
    a.run().wake().drain();
    EXPECT_FALSE(readable(a.run().wake().fd()));
}

TEST(plugin_support_run_registry, WaitFinishedReturnsWhenTheRunLeaves) {
    RunRegistry registry;
    std::shared_ptr<ActiveRun> killed;
    std::thread runner([&] {
        auto r = registry.enter("radial-turn-a-2");
        std::this_thread::sleep_for(200ms);
    });
    while (!(killed = registry.request_kill("radial-turn-a-2"))) std::this_thread::yield();
    EXPECT_FALSE(killed->on_run_thread());
    EXPECT_TRUE(killed->wait_finished(5s));
    runner.join();
    EXPECT_EQ(registry.request_kill("radial-turn-a-2"), nullptr) << "it left the registry";
}

} // namespace
} // namespace radial::plugin_support
