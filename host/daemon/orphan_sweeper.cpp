#include "daemon/orphan_sweeper.h"

#include <algorithm>

#include "daemon/instance_claim.h"
#include "log/logger.h"
#include "session/session_record.h"
#include "turn/box_id_lease.h"

namespace radial::daemon {
using session::session_labels;

namespace {
constexpr std::chrono::milliseconds kFirstDelay{1000};
constexpr std::chrono::milliseconds kMaxDelay{30'000};
} // namespace

OrphanSweeper::OrphanSweeper(const config::HostConfig& cfg, const host::RuntimeClient& client,
                             LiveLabels live, std::function<void(std::size_t)> removed)
    : cfg_(cfg),
      client_(client),
      live_(std::move(live)),
      removed_(std::move(removed)),
      thread_([this] { loop(); }) {}

OrphanSweeper::~OrphanSweeper() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void OrphanSweeper::request() noexcept {
    {
        std::lock_guard lock(mutex_);
        pending_ = true;
    }
    cv_.notify_all();
}

void OrphanSweeper::loop() {
    std::unique_lock lock(mutex_);
    auto delay = kFirstDelay;
    for (;;) {
        cv_.wait(lock, [&] { return stop_ || pending_; });
        if (stop_) return;
        // A pause first: the turn that failed may still be winding down, and an engine that just
        // vanished is rarely back within milliseconds.
        if (cv_.wait_for(lock, delay, [&] { return stop_; })) return;
        pending_ = false;
        lock.unlock();
        bool ok = false;
        try {
            auto killed = kill_orphan_boxes(cfg_, client_, live_);
            ok = true;
            if (!killed.empty()) {
                log::info("reconcile", "sweep removed {} orphaned box(es)", killed.size());
                if (removed_) removed_(killed.size());
            }
            // Ids a turn kept leased for a box that might have outlived it (box_id_lease.h).
            std::vector<std::string> live = session_labels(cfg_);
            if (live_)
                for (const auto& l : live_()) live.push_back(l);
            for (const auto& l : turn::release_stale_box_id_leases(
                     turn::box_id_lease_dir(default_claim_registry()), cfg_.state_dir, live))
                log::info("reconcile", "freed box ids {0}:{0} of box '{1}'", l.id, l.label);
        } catch (const std::exception& e) {
            log::warn("reconcile", "sweep for orphaned boxes failed, retrying in {} ms: {}",
                      std::min(delay * 2, kMaxDelay).count(), e.what());
        }
        lock.lock();
        if (ok) {
            delay = kFirstDelay;
        } else {
            delay = std::min(delay * 2, kMaxDelay);
            pending_ = true;
        }
    }
}

} // namespace radial::daemon
