// host/daemon/claim_backoff.cpp — see claim_backoff.h.
#include "daemon/claim_backoff.h"

#include <algorithm>

namespace radial::daemon {

std::chrono::milliseconds ClaimBackoff::failed(const std::string& id, time::SteadyPoint now) {
    Wait& w = waits_[id];
    w.last = w.last.count() == 0 ? first_ : std::min(most_, w.last * 2);
    w.until = now + w.last;
    return w.last;
}

bool ClaimBackoff::waiting(const std::string& id, time::SteadyPoint now) const {
    auto it = waits_.find(id);
    return it != waits_.end() && now < it->second.until;
}

std::optional<time::SteadyPoint> ClaimBackoff::due(time::SteadyPoint now) const {
    std::optional<time::SteadyPoint> earliest;
    for (const auto& [id, w] : waits_)
        if (now < w.until && (!earliest || w.until < *earliest)) earliest = w.until;
    return earliest;
}

void ClaimBackoff::keep_only(const std::set<std::string>& queued) {
    std::erase_if(waits_, [&](const auto& entry) { return !queued.contains(entry.first); });
}

} // namespace radial::daemon
