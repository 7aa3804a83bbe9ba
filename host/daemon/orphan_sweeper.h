// host/daemon/orphan_sweeper.h — reconciliation while the daemon runs (docs/design.md §8.3,
// docs/design.md §12 "engine disappears mid-turn").
//
// A turn may leave its box behind: the engine stopped answering, so the runtime could neither
// follow nor remove it (the turn then ends with status error, or with whatever the runtime could
// tell, its box still listed or not listable). Nothing else would ever remove that box until the
// next restart, so after such a turn the daemon asks for a sweep: kill every box of this instance
// that is not a live turn (reconciler.h, kill_orphan_boxes), retried with a growing pause (1 s,
// then doubling up to 30 s) until one sweep succeeds — that is, until the engine is back.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <radial/host/runtime_client.hpp>
#include <thread>

#include "config/host_config.h"
#include "daemon/reconciler.h"

namespace radial::daemon {

class OrphanSweeper {
public:
    // Starts the sweeper's thread (idle until request()). All references must outlive it.
    // `removed` (may be empty) is told, on the sweeper's thread, how many boxes a sweep removed
    // (none: not called).
    OrphanSweeper(const config::HostConfig& cfg, const host::RuntimeClient& client, LiveLabels live,
                  std::function<void(std::size_t)> removed = {});
    // Stops and joins the thread (waiting for a sweep in progress, bounded by the runtime's own
    // call budgets).
    ~OrphanSweeper();
    OrphanSweeper(const OrphanSweeper&) = delete;
    OrphanSweeper& operator=(const OrphanSweeper&) = delete;

    // Asks for a sweep in about a second, retried until one succeeds. [thread-safe]
    void request() noexcept;

private:
    void loop();

    const config::HostConfig& cfg_;
    const host::RuntimeClient& client_;
    LiveLabels live_;
    std::function<void(std::size_t)> removed_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool pending_ = false;
    bool stop_ = false;
    std::thread thread_; // last: started once everything it reads is initialised
};

} // namespace radial::daemon
