// The bubblewrap example's process records: a kill reaches the recorded process and never one that
// took its pid later.
#include "box_registry.h"

#include <gtest/gtest.h>
#include <radial/support/child_process.h>
#include <signal.h>

#include <chrono>

namespace radial::bubblewrap {
namespace {

using namespace std::chrono_literals;
using plugin_support::ChildProcess;

ChildProcess start_sleep() {
    return ChildProcess::start("/bin/sleep", {"60"}, {{"PATH", "/usr/bin:/bin"}});
}

TEST(BubblewrapProcessId, ASignalReachesTheRecordedProcess) {
    ChildProcess child = start_sleep();
    const auto id = ProcessId::of(child.pid());
    ASSERT_TRUE(id.has_value());
    EXPECT_TRUE(id->alive());
    EXPECT_TRUE(id->signal(SIGKILL));
    const auto status = child.reap_within(30s);
    ASSERT_TRUE(status.has_value()) << "the recorded process did not end";
    EXPECT_EQ(status->signal, SIGKILL);
    // Gone (reaped): nothing is sent, and the record says so.
    EXPECT_FALSE(id->alive());
    EXPECT_FALSE(id->signal(SIGKILL));
}

TEST(BubblewrapProcessId, AStaleRecordNeverSignalsTheProcessNowHoldingItsPid) {
    ChildProcess child = start_sleep();
    auto id = ProcessId::of(child.pid());
    ASSERT_TRUE(id.has_value());
    // The record of an earlier process with the same pid: another start time.
    ProcessId stale = *id;
    stale.start += 1;
    EXPECT_FALSE(stale.alive());
    EXPECT_FALSE(stale.signal(SIGKILL));
    EXPECT_FALSE(stale.signal(SIGTERM));
    EXPECT_FALSE(child.reap_within(200ms).has_value()) << "the process now holding the pid was hit";
    EXPECT_TRUE(id->alive());
}

TEST(BubblewrapProcessId, NoPidIsNeverSignalled) {
    EXPECT_FALSE(ProcessId{}.signal(SIGKILL));
    EXPECT_FALSE(ProcessId::of(0).has_value());
}

} // namespace
} // namespace radial::bubblewrap
