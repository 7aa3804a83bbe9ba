#include "time/clock.h"

#include <algorithm>
#include <thread>

namespace radial::time {

// The one place the host reads the real clocks; everything else asks a Clock.
SteadyPoint SystemClock::steady() const { return std::chrono::steady_clock::now(); }

WallPoint SystemClock::wall() const { return std::chrono::system_clock::now(); }

bool SystemClock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                             SteadyPoint deadline, const std::function<bool()>& pred) const {
    return cv.wait_until(lock, deadline, pred);
}

void SystemClock::sleep_until(SteadyPoint deadline) const {
    std::this_thread::sleep_until(deadline);
}

std::chrono::milliseconds SystemClock::poll_timeout(SteadyPoint deadline) const {
    const auto left = deadline - steady();
    if (left <= SteadyPoint::duration::zero()) return std::chrono::milliseconds(0);
    return std::chrono::ceil<std::chrono::milliseconds>(left);
}

const Clock& system_clock() noexcept {
    // Never destroyed: threads still running at exit may read it.
    static const SystemClock* const clock = new SystemClock();
    return *clock;
}

ManualClock::ManualClock(std::chrono::steady_clock::duration steady_start, WallPoint wall_start)
    : steady_(steady_start), wall_(wall_start) {}

SteadyPoint ManualClock::steady() const {
    std::lock_guard lock(mutex_);
    return steady_;
}

WallPoint ManualClock::wall() const {
    std::lock_guard lock(mutex_);
    return wall_;
}

bool ManualClock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                             SteadyPoint deadline, const std::function<bool()>& pred) const {
    while (!pred()) {
        {
            std::lock_guard own(mutex_);
            if (steady_ >= deadline) return false;
            waiters_.push_back(&cv);
        }
        // advance() notifies `cv` without holding `lock`'s mutex, so a notification in the
        // instant before this wait begins is lost: the slice bounds how long that costs.
        cv.wait_for(lock, kPollSlice);
        std::lock_guard own(mutex_);
        waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &cv));
    }
    return true;
}

void ManualClock::sleep_until(SteadyPoint deadline) const {
    std::unique_lock lock(mutex_);
    advanced_.wait(lock, [&] { return steady_ >= deadline; });
}

std::chrono::milliseconds ManualClock::poll_timeout(SteadyPoint deadline) const {
    std::lock_guard lock(mutex_);
    return steady_ >= deadline ? std::chrono::milliseconds(0) : kPollSlice;
}

void ManualClock::advance(std::chrono::steady_clock::duration d) {
    if (d < std::chrono::steady_clock::duration::zero()) return;
    std::lock_guard lock(mutex_);
    steady_ += d;
    wall_ += std::chrono::duration_cast<WallPoint::duration>(d);
    advanced_.notify_all();
    for (auto* cv : waiters_) cv->notify_all();
}

void ManualClock::set_wall(WallPoint t) {
    std::lock_guard lock(mutex_);
    wall_ = t;
}

} // namespace radial::time
