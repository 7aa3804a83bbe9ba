// plugins/docker/deadline.h — turning the millisecond counts of a spec and of [run.docker]
// (uint64, any value up to UINT64_MAX) into chrono budgets and deadlines that never overflow.
#pragma once

#include <chrono>
#include <cstdint>

namespace radial::docker {

using Clock = std::chrono::steady_clock;

// The longest budget the runtime ever waits for, about 100 years: "no limit" in practice, and
// small enough that steady_clock::now() + it, in nanoseconds, stays far inside int64.
inline constexpr std::chrono::milliseconds kLongestBudget{3'155'760'000'000};

// `ms` as a duration, saturated at kLongestBudget. Pure.
constexpr std::chrono::milliseconds budget_ms(std::uint64_t ms) noexcept {
    return ms >= static_cast<std::uint64_t>(kLongestBudget.count())
               ? kLongestBudget
               : std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

// `from` + `ms`, or Clock::time_point::max() (never) when that is past what the clock can
// represent. Pure. Rationale: a spec's timeout_ms is any uint64; 2^64-1 or 9999999999999 ms must
// mean "effectively no timeout", never a wrapped, already-passed deadline.
constexpr Clock::time_point deadline_after(Clock::time_point from, std::uint64_t ms) noexcept {
    const auto room =
        std::chrono::floor<std::chrono::milliseconds>(Clock::time_point::max() - from).count();
    if (room <= 0 || ms >= static_cast<std::uint64_t>(room)) return Clock::time_point::max();
    return from + std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

} // namespace radial::docker
