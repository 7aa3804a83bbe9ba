// plugins/support/early_kills.h — kills that arrived before their run: remembered for a while, so
// that a `run` of that label arriving just after returns RADIAL_RUN_KILLED without starting.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace radial::plugin_support {

// The labels killed while no run of theirs was in flight, each for `ttl`, at most `capacity` of
// them (the oldest is forgotten first). The ABI's kill contract: "a run of that label that has not
// created its box yet never does" — also when the kill overtakes the run on the host's threads.
// [thread-safe]
class EarlyKills {
public:
    using Clock = std::chrono::steady_clock;

    explicit EarlyKills(std::chrono::milliseconds ttl = std::chrono::seconds(60),
                        std::size_t capacity = 4096)
        : ttl_(ttl), capacity_(capacity) {}

    // Remembers that `label` was killed at `now`.
    void remember(std::string_view label, Clock::time_point now);
    // Forgets `label` (its kill found and removed a box: it was a reconciliation, not an early
    // kill of a run to come).
    void forget(std::string_view label);
    // True, and forgets it, when `label` was killed within ttl before `now`.
    bool take(std::string_view label, Clock::time_point now);
    std::size_t size() const;

private:
    void expire(Clock::time_point now);

    std::chrono::milliseconds ttl_;
    std::size_t capacity_;
    mutable std::mutex mutex_;
    std::map<std::string, Clock::time_point, std::less<>> killed_at_;
};

} // namespace radial::plugin_support
