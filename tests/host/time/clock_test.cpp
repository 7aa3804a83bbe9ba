// The clock the host reads and waits on (docs/design.md §12.7): a ManualClock moves only when
// advanced, and an advance wakes whoever waits for a deadline it reaches.
#include "time/clock.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace radial::time {
namespace {

using namespace std::chrono_literals;

TEST(ManualClock, MovesOnlyWhenAdvanced) {
    ManualClock clock;
    const SteadyPoint s0 = clock.steady();
    const WallPoint w0 = clock.wall();
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(clock.steady(), s0);
    EXPECT_EQ(clock.wall(), w0);
    clock.advance(90s);
    EXPECT_EQ(clock.steady() - s0, 90s);
    EXPECT_EQ(clock.wall() - w0, 90s);
    clock.advance(-5s); // ignored: steady time never goes back
    EXPECT_EQ(clock.steady() - s0, 90s);
    clock.set_wall(WallPoint(1000s));
    EXPECT_EQ(clock.wall(), WallPoint(1000s));
    EXPECT_EQ(clock.steady() - s0, 90s);
}

// A waiter for a deadline an hour away returns as soon as the clock is advanced past it, not an
// hour later, and says its predicate is still false.
TEST(ManualClock, AnAdvanceWakesAWaiterAtItsDeadline) {
    ManualClock clock;
    std::mutex m;
    std::condition_variable cv;
    const SteadyPoint deadline = clock.steady() + 1h;
    std::promise<void> waiting;
    auto waited = std::async(std::launch::async, [&] {
        std::unique_lock lock(m);
        waiting.set_value();
        return clock.wait_until(lock, cv, deadline, [] { return false; });
    });
    waiting.get_future().wait();
    clock.advance(59min);
    EXPECT_EQ(waited.wait_for(100ms), std::future_status::timeout) << "woke before its deadline";
    clock.advance(1min);
    ASSERT_EQ(waited.wait_for(10s), std::future_status::ready);
    EXPECT_FALSE(waited.get());
}

// Its predicate still ends the wait, through the caller's own notify, without any advance.
TEST(ManualClock, APredicateEndsTheWaitWithoutAnAdvance) {
    ManualClock clock;
    std::mutex m;
    std::condition_variable cv;
    bool ready = false;
    auto waited = std::async(std::launch::async, [&] {
        std::unique_lock lock(m);
        return clock.wait_until(lock, cv, clock.steady() + 1h, [&] { return ready; });
    });
    {
        std::lock_guard lock(m);
        ready = true;
    }
    cv.notify_all();
    ASSERT_EQ(waited.wait_for(10s), std::future_status::ready);
    EXPECT_TRUE(waited.get());
}

TEST(ManualClock, SleepUntilEndsAtTheAdvanceThatReachesIt) {
    ManualClock clock;
    const SteadyPoint deadline = clock.steady() + 10min;
    auto slept = std::async(std::launch::async, [&] { clock.sleep_until(deadline); });
    EXPECT_EQ(clock.poll_timeout(deadline), ManualClock::kPollSlice);
    clock.advance(9min);
    EXPECT_EQ(slept.wait_for(100ms), std::future_status::timeout);
    clock.advance(1min);
    EXPECT_EQ(slept.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(clock.poll_timeout(deadline), 0ms);
}

TEST(SystemClock, PollTimeoutIsTheTimeLeftAndNeverNegative) {
    const Clock& clock = system_clock();
    EXPECT_EQ(clock.poll_timeout(clock.steady() - 1s), 0ms);
    const auto left = clock.poll_timeout(clock.steady() + 10s);
    EXPECT_GT(left, 9s);
    EXPECT_LE(left, 10s);
    std::mutex m;
    std::condition_variable cv;
    std::unique_lock lock(m);
    EXPECT_FALSE(clock.wait_until(lock, cv, clock.steady() + 10ms, [] { return false; }));
}

} // namespace
} // namespace radial::time
