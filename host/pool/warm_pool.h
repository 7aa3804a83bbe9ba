// host/pool/warm_pool.h — the warm pool (docs/design.md §13.14): per image of [run.pool], a
// number of idle, started boxes (pool_box.h) made before turns arrive, which a turn of that class
// claims instead of starting a box of its own.
//
// Refilling runs on run.pool.refillConcurrency threads of the pool's own: a thread makes one box
// at a time for the class furthest below its size, while the boxes made and being made stay
// within run.pool.memoryBudget (each counts run.memory). A box older than its maximum age less
// `claim_margin` is no longer handed out but removed and replaced, so that a claimed box never
// meets its PID 1's own end at that age. A class is settled again after a miss of its image or
// while its image is unresolved, so an image rebuilt or made after the start is served. A create
// that fails is logged and its class retried after a pause of its own that doubles up to a
// minute, while the other classes are made meanwhile. An idle box that ended behind the pool's
// back (the runtime's `inspect`) is removed and replaced within 10 s, and never handed out. A
// claimed box is the claiming turn's: it is never returned.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <radial/host/runtime_client.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/host_config.h"
#include "pool/pool_box.h"

namespace radial::pool {

struct PoolSettings {
    // The longest an idle box lives (run.pool.maxAge; tests give less than its 10 s minimum).
    std::uint64_t max_age_ms = 10 * 60'000;
    // How long before its maximum age a box is no longer handed out.
    std::chrono::milliseconds claim_margin{5'000};
    // The first pause after a failed create; it doubles up to a minute.
    std::chrono::milliseconds retry_pause{1'000};
    // Told, on a pool thread, when a box may have been left behind: its removal failed, or a
    // create failed after the runtime may have made it. The pool forgets its label then, so the
    // owner must look for it (the daemon asks its orphan sweep, docs/design.md §8.5). Must be
    // thread-safe and quick; may be empty.
    std::function<void()> box_may_remain;
    // Told, on the thread that changed them, when the figures stats() gives changed: a box made,
    // claimed, missed or removed. The daemon wakes its loop, which publishes them for `radiald
    // status` and the metrics then, not at its next rescan (docs/design.md §12.4). Must be
    // thread-safe and quick (called with the pool's lock held); may be empty.
    std::function<void()> stats_changed;
};

// One class's figures, for `radiald status` and the metrics.
struct PoolStats {
    std::string image;
    std::string mode;
    std::size_t idle = 0;   // started, unclaimed
    std::size_t target = 0; // run.pool.size
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    std::string last_error; // why the last create failed ("" once one succeeded)
};

class WarmPool;

// Why `cfg`'s [run.pool] cannot run on `client`'s runtime (no sessions, no mount propagation, no
// unix socket mounts, radiald not root), or nullopt; nullopt without a pool. For the startup
// checks every command shares (docs/design.md §7.4) and the pool itself. [thread-safe]
std::optional<std::string> pool_refusal(const config::HostConfig& cfg,
                                        const host::RuntimeClient& client);

// A box a turn claimed. When it goes, the box is handed to the pool's reaper, which removes it
// off the turn's path (a box serves one turn; its removal is not the turn's to wait for); the
// pool counts its label as its own until then. The caller detaches the workspace first
// (PoolBox::detach_workspace).
class ClaimedBox {
public:
    ClaimedBox(std::unique_ptr<PoolBox> box, WarmPool& pool) : box_(std::move(box)), pool_(pool) {}
    ~ClaimedBox();
    ClaimedBox(const ClaimedBox&) = delete;
    ClaimedBox& operator=(const ClaimedBox&) = delete;
    PoolBox* operator->() const noexcept { return box_.get(); }
    PoolBox& operator*() const noexcept { return *box_; }

private:
    std::unique_ptr<PoolBox> box_;
    WarmPool& pool_;
};

class WarmPool {
public:
    // Settles each image's class (settle_pool_class: a refused image throws turn::RequestError
    // naming run.pool) and starts refilling. The runtime must offer sessions and mount propagation
    // (refused by name otherwise, host::RuntimeError). `cfg` and `client` must outlive the pool.
    WarmPool(const config::HostConfig& cfg, const host::RuntimeClient& client,
             PoolSettings settings);
    // Stops refilling (waiting for creates under way) and removes every idle box. Boxes claimed
    // and not yet destroyed are their turns'.
    ~WarmPool();
    WarmPool(const WarmPool&) = delete;
    WarmPool& operator=(const WarmPool&) = delete;

    // An idle box of the class whose shape is `shape` (box_shape() of the turn's spec), or null:
    // a miss, counted for the class of `image` (the request's image name) in `mode` (the turn's
    // workspace mode) when the pool serves it. An idle box the runtime says has ended is removed
    // and the next one tried, never handed out. [thread-safe]
    std::unique_ptr<ClaimedBox> claim(const std::string& image, const std::string& mode,
                                      const ContainerSpec& shape);

    // Every box label the pool made and that is not yet removed: idle, being made, or claimed.
    // What the orphan sweep must leave alone. [thread-safe]
    std::set<std::string> labels() const;

    std::vector<PoolStats> stats() const; // [thread-safe]

    // Removes `box` on the reaper's thread, and forgets its label once it is gone. [thread-safe]
    void retire(std::unique_ptr<PoolBox> box);

    // How many retired boxes the reaper has removed so far. [thread-safe]
    std::uint64_t reaped() const;
    // Waits up to `budget` until a retired box is removed after `since` (what reaped() said),
    // and with it the id of run.boxIdRange it held; false at once when none was removed since and
    // none is waiting for removal. A turn that found every id taken waits for it: a warm turn's
    // box holds its id a moment past its turn, whose daemon slot the next turn may already have
    // (docs/design.md §13.14). [thread-safe]
    bool wait_reaped(std::uint64_t since, std::chrono::milliseconds budget);

private:
    struct Class {
        PoolClass cls;
        std::deque<std::unique_ptr<PoolBox>> idle; // oldest first
        std::size_t making = 0;
        // Settle the class again at the next refill turn (a miss of its image).
        bool resettle = false;
        // Bumped when the class is settled anew: a box begun before is not handed out.
        std::uint64_t generation = 0;
        // After a failed create: no box of it is begun before retry_at; the pause doubles.
        std::chrono::steady_clock::time_point retry_at{};
        std::chrono::milliseconds pause{0};
        PoolStats stats;
    };

    void refill_loop();
    void tell_stats_changed() const {
        if (settings_.stats_changed) settings_.stats_changed();
    }
    // Removes retired boxes, one at a time, until stopped and none is left.
    void reap_loop();
    // Removes `box` (PoolBox::destroy); when the runtime did not say it is gone, tells
    // settings_.box_may_remain.
    void remove(std::unique_ptr<PoolBox> box) noexcept;
    // The class to make a box for now, or null. Caller holds mutex_.
    Class* neediest();
    // Whether the runtime says the box `label` is no longer running (gone, or its PID 1 ended);
    // false when it cannot tell. One runtime call (inspect), outside the lock.
    bool box_has_ended(const std::string& label) const;
    // Every kLivenessCheck at most, on one refill thread: asks after each idle box
    // (box_has_ended) and removes those that ended (an engine restarted without live-restore),
    // so that their class is made again before its turns come, not at the boxes' age.
    void drop_ended();
    // A box started at or before this is past its age less the claim margin: not handed out.
    std::chrono::steady_clock::time_point oldest_fresh_start() const;
    // Removes idle boxes past their age (outside the lock).
    void expire();
    // Settles again each class a miss flagged, or whose image was not resolved to a digest: an
    // image rebuilt under its name, or one that was not on the engine at start. A class whose spec
    // changed gets the new one, and its idle boxes are retired (outside the lock).
    void resettle();

    const config::HostConfig& cfg_;
    const host::RuntimeClient& client_;
    PoolSettings settings_;
    mutable std::mutex mutex_;
    mutable std::condition_variable changed_;
    std::deque<Class> classes_; // a deque: a Class holds boxes and is never copied
    std::set<std::string> out_; // labels of boxes made or being made, until removed
    std::size_t boxes_ = 0;     // idle + being made: what the memory budget bounds
    std::deque<std::unique_ptr<PoolBox>> retired_;                // claimed boxes whose turn ended
    bool reaping_ = false;                                        // the reaper is removing one
    std::uint64_t reaped_ = 0;                                    // retired boxes removed
    std::chrono::steady_clock::time_point next_liveness_check_{}; // drop_ended()
    bool stop_ = false;
    std::thread reaper_;
    std::vector<std::thread> threads_; // last: started once everything above is
};

} // namespace radial::pool
