// The daemon's upkeep besides its turns (daemon.h): the warm pool, the boxes the orphan sweep
// must leave alone, and the figures `radiald status` reads.
#include <fmt/format.h>

#include "daemon/daemon.h"
#include "log/logger.h"
#include "pool/warm_pool.h"

namespace radial::daemon {

void Daemon::start_pool() {
    if (cfg_.pool.size == 0) return;
    pool::PoolSettings s = settings_.pool;
    if (s.max_age_ms == 0) s.max_age_ms = cfg_.pool.max_age_ms;
    // A box the pool could not remove is looked for by the orphan sweep, asked from the loop
    // thread (which owns the sweeper) once the wake-up reaches it.
    s.box_may_remain = [this] {
        pool_box_may_remain_ = true;
        wake();
    };
    // Its figures reach `radiald status` and the metrics when they change (docs/design.md §12.4):
    // the loop publishes them each time it wakes.
    s.stats_changed = [this, told = std::move(s.stats_changed)] {
        if (told) told();
        wake();
    };
    pool_ = std::make_unique<pool::WarmPool>(cfg_, client_, s);
    env_.pool = pool_.get();
    log::info("daemon", "warm pool: {} idle box(es) each of {}, at most {} s old", cfg_.pool.size,
              fmt::join(cfg_.pool.images, ", "), s.max_age_ms / 1000);
}

void Daemon::stop_pool() noexcept {
    std::unique_ptr<pool::WarmPool> pool;
    {
        // live_labels() reads pool_ under the lock, from the sweeper's thread.
        std::lock_guard lock(mutex_);
        env_.pool = nullptr;
        pool = std::move(pool_);
    }
    pool.reset(); // removes the idle boxes: outside the lock, it may take the engine's time
}

std::set<std::string> Daemon::live_labels() {
    std::lock_guard lock(mutex_);
    std::set<std::string> out;
    // Either kind's label: a worker is registered before its request is read, and an id is unique
    // across both kinds in the journal, so the other label can never be another box's.
    for (const auto& [id, w] : workers_)
        for (auto kind : {turn::RequestKind::turn, turn::RequestKind::check})
            out.insert(turn::box_label(cfg_, kind, id));
    // The pool's boxes: idle, being made, or claimed by a turn.
    if (pool_)
        for (const auto& l : pool_->labels()) out.insert(l);
    return out;
}

// A run may return without its box: a runtime whose engine stopped answering while it removed
// the box reports how the workload ended and leaves the box behind. So every turn's box is looked
// for once it has ended; one still listed, or a listing that fails, gets the orphan sweep, which
// retries until the engine answers again.
bool Daemon::box_may_remain(const std::string& id, const std::string& label) const noexcept {
    try {
        if (!client_.lists_box(label)) return false;
        log::warn("daemon", "turn {}: its box '{}' is still there after the turn; sweeping for it",
                  id, label);
        return true;
    } catch (const std::exception& e) {
        log::warn("daemon",
                  "turn {}: cannot tell whether its box '{}' is gone ({}); sweeping "
                  "for it until the runtime answers",
                  id, label, e.what());
        return true;
    }
}

void Daemon::publish_metrics(bool force) {
    if (!settings_.metrics) return;
    std::size_t running;
    {
        std::lock_guard lock(mutex_);
        running = occupied_slots();
    }
    try {
        settings_.metrics->set_turns(running, journal_.queued().size(),
                                     told_waiting_for_ids_.size());
    } catch (const std::exception& e) {
        log::debug("daemon", "metrics: counting the queued turns: {}", e.what()); // counted
    }
    if (pool_)
        for (const auto& p : pool_->stats())
            settings_.metrics->set_pool(p.image, p.mode, p.idle, p.target, p.hits, p.misses,
                                        !p.last_error.empty());
    if (!snapshots_)
        snapshots_.emplace(cfg_.state_dir, *settings_.metrics, std::chrono::seconds(30),
                           cfg_.min_free_bytes / 2 + (1u << 20), *settings_.clock);
    snapshots_->tick(force);
}

} // namespace radial::daemon
