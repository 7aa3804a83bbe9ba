// plugins/support/early_kills.cpp — see early_kills.h.
#include "support/early_kills.h"

#include <algorithm>

namespace radial::plugin_support {

void EarlyKills::remember(std::string_view label, Clock::time_point now) {
    std::lock_guard lock(mutex_);
    expire(now);
    if (capacity_ == 0) return;
    if (auto it = killed_at_.find(label); it != killed_at_.end()) {
        it->second = now;
        return;
    }
    if (killed_at_.size() >= capacity_) {
        auto oldest = std::min_element(killed_at_.begin(), killed_at_.end(),
                                       [](auto& a, auto& b) { return a.second < b.second; });
        killed_at_.erase(oldest);
    }
    killed_at_.emplace(std::string(label), now);
}

void EarlyKills::forget(std::string_view label) {
    std::lock_guard lock(mutex_);
    if (auto it = killed_at_.find(label); it != killed_at_.end()) killed_at_.erase(it);
}

bool EarlyKills::take(std::string_view label, Clock::time_point now) {
    std::lock_guard lock(mutex_);
    expire(now);
    auto it = killed_at_.find(label);
    if (it == killed_at_.end()) return false;
    killed_at_.erase(it);
    return true;
}

std::size_t EarlyKills::size() const {
    std::lock_guard lock(mutex_);
    return killed_at_.size();
}

void EarlyKills::expire(Clock::time_point now) {
    std::erase_if(killed_at_, [&](const auto& entry) { return now - entry.second >= ttl_; });
}

} // namespace radial::plugin_support
