// host/time/clock.h — the clock the host reads and waits on (docs/design.md §12.7): steady time for
// intervals, timeouts and deadlines, wall time for the records' timestamps. Injected through
// turn::TurnEnvironment, daemon::DaemonSettings and socket::TurnSocketOptions, so that tests
// advance a ManualClock instead of waiting for real time to pass.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

namespace radial::time {

using SteadyPoint = std::chrono::steady_clock::time_point;
using WallPoint = std::chrono::system_clock::time_point;

// What the host asks of time. Implementations are thread-safe: every member may be called from
// any thread at once. Nothing here throws (beyond what std::mutex and std::condition_variable may).
class Clock {
public:
    virtual ~Clock() = default;

    // Monotonic time: what intervals, timeouts and deadlines are measured in.
    virtual SteadyPoint steady() const = 0;
    // Calendar time (UTC since the epoch): what records and logs are stamped with.
    virtual WallPoint wall() const = 0;

    // With `lock` held (it locks `cv`'s mutex), waits on `cv` until `pred()` is true or steady()
    // reaches `deadline`; returns pred(). Whoever makes pred() true notifies `cv` as usual; a
    // ManualClock's advance() also ends the wait.
    virtual bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            SteadyPoint deadline, const std::function<bool()>& pred) const = 0;

    // Blocks the calling thread until steady() reaches `deadline`.
    virtual void sleep_until(SteadyPoint deadline) const = 0;

    // How long (real milliseconds, >= 0) a poll(2) or a timed wait on something else may block
    // before the caller looks at steady() again for `deadline`: the time left for the system
    // clock, a short slice for a ManualClock (whose time moves only when advanced).
    virtual std::chrono::milliseconds poll_timeout(SteadyPoint deadline) const = 0;
};

// The real clocks: std::chrono::steady_clock and std::chrono::system_clock.
class SystemClock final : public Clock {
public:
    SteadyPoint steady() const override;
    WallPoint wall() const override;
    bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                    SteadyPoint deadline, const std::function<bool()>& pred) const override;
    void sleep_until(SteadyPoint deadline) const override;
    std::chrono::milliseconds poll_timeout(SteadyPoint deadline) const override;
};

// The process-wide SystemClock: the default wherever a clock is injected. Never destroyed.
const Clock& system_clock() noexcept;

// A clock for tests: its time moves only when advance() or set_wall() moves it. Waiters
// (wait_until, sleep_until) wake when an advance reaches their deadline; one that began waiting
// in the instant of an advance notices it within kPollSlice of real time.
class ManualClock final : public Clock {
public:
    // How long, in real time, a waiter or poll(2) blocks before it looks at the time again.
    static constexpr std::chrono::milliseconds kPollSlice{5};

    // Starts at steady time `steady_start` after the steady clock's epoch and at `wall_start`.
    explicit ManualClock(std::chrono::steady_clock::duration steady_start = std::chrono::hours(1),
                         WallPoint wall_start = WallPoint(std::chrono::seconds(1'767'225'600)));

    SteadyPoint steady() const override;
    WallPoint wall() const override;
    bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                    SteadyPoint deadline, const std::function<bool()>& pred) const override;
    void sleep_until(SteadyPoint deadline) const override;
    std::chrono::milliseconds poll_timeout(SteadyPoint deadline) const override;

    // Moves steady and wall time forward by `d` (>= 0; a negative one is ignored) and wakes
    // every waiter. [thread-safe]
    void advance(std::chrono::steady_clock::duration d);
    // Sets wall time alone (it may go backwards, as a real wall clock may). [thread-safe]
    void set_wall(WallPoint t);

private:
    mutable std::mutex mutex_;
    // Notified at each advance; sleep_until waits on it. Guarded by mutex_.
    mutable std::condition_variable advanced_;
    // The condition variables of wait_until calls under way, notified at each advance.
    mutable std::vector<std::condition_variable*> waiters_;
    SteadyPoint steady_;
    WallPoint wall_;
};

} // namespace radial::time
