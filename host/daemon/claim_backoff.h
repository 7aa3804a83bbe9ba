// host/daemon/claim_backoff.h — when a queued turn whose last attempt failed before it was
// recorded (the journal refused its claim, its request was busy, an unexpected error) may be tried
// again. The turn stays queued after such a failure, and without a wait the daemon would claim it
// again at once, for as long as the cause lasts: a read-only journal would keep a core busy and
// fill the log (docs/design.md §12.2). The wait doubles with each failure in a row, from `first`
// up to `most`; a turn that is recorded, or runs, is forgotten.
//
// Times are steady time points of the daemon's clock. Not thread-safe: the daemon's loop thread
// alone uses it.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "time/clock.h"

namespace radial::daemon {

class ClaimBackoff {
public:
    // `first` > 0 and `most` >= `first` (the caller's settings; not checked again here).
    ClaimBackoff(std::chrono::milliseconds first, std::chrono::milliseconds most)
        : first_(first), most_(most) {}

    // Turn `id`'s attempt ended at `now` with the turn still queued. Returns how long it waits
    // before the next attempt.
    std::chrono::milliseconds failed(const std::string& id, time::SteadyPoint now);
    // Turn `id` ran or was recorded: its next failure waits `first` again.
    void forget(const std::string& id) { waits_.erase(id); }
    // Whether turn `id` must not be claimed at `now`.
    bool waiting(const std::string& id, time::SteadyPoint now) const;
    // The earliest time after `now` a waiting turn may be tried again (what the loop's poll
    // waits for), or none when no turn waits past `now`.
    std::optional<time::SteadyPoint> due(time::SteadyPoint now) const;
    // Forgets every turn not in `queued` (the queue's runnable turns and those running): one
    // cancelled or run by another process meanwhile.
    void keep_only(const std::set<std::string>& queued);

private:
    struct Wait {
        std::chrono::milliseconds last{0};
        time::SteadyPoint until{};
    };
    std::chrono::milliseconds first_, most_;
    std::map<std::string, Wait> waits_;
};

} // namespace radial::daemon
