// host/daemon/daemon.h — `radiald run` (docs/design.md §12.3): reconcile, then claim queued turns
// as their requests arrive and run up to run.maxConcurrentTurns of them at once, each through a
// turn::TurnSession on its own thread, until SIGTERM or SIGINT. SIGHUP reloads what can change
// without a restart (config_reload.h: the concurrency limit, the shutdown grace, the log level)
// and logs every other change as waiting for one; SIGUSR1, SIGUSR2 and SIGALRM are logged and
// ignored, never a silent death.
//
// Stopping is an escalation with budgets, each step logged: the first signal stops claiming and
// gives running turns run.shutdownGrace to finish; when the grace runs out, or at a second signal,
// their boxes are killed and their terminal records say `killed`; queued turns stay in the spool
// for the next start. If a killed turn's thread has still not returned after run.stopGrace and
// `kill_budget`, the process exits 70 without waiting further — the journal is consistent after
// every write, and the next start reconciles whatever is left.
//
// A turn whose terminal record the journal refuses (the state file system is full) keeps it in its
// reserve (turn/terminal_reserve.h); the daemon offers it to the journal again every
// `pending_retry_interval` until it is taken, and only then removes the turn's request from the
// spool. One still refused at exit waits on disk for the next start's reconciliation.
#pragma once

#include <radial/internal/unique_fd.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <radial/host/runtime_client.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/host_config.h"
#include "daemon/claim_backoff.h"
#include "daemon/metrics.h"
#include "daemon/metrics_snapshot.h"
#include "daemon/orphan_sweeper.h"
#include "daemon/reconciler.h"
#include "daemon/spool.h"
#include "daemon/spooled_request.h"
#include "daemon/stop_signals.h"
#include "daemon/turn_queue.h"
#include "journal/journal.h"
#include "pool/warm_pool.h"
#include "time/clock.h"
#include "turn/turn_session.h"
#include "turn/turn_transport.h"
#include "turn/workspace_lock.h"

namespace radial::daemon {

// A config file read again for SIGHUP: its validated form and its text.
struct ReloadedConfig {
    config::HostConfig cfg;
    std::string text;
};

struct DaemonSettings {
    // How often the spool is scanned with no event at all: the safety net under inotify.
    std::chrono::milliseconds rescan_interval{30'000};
    // How long killed turns may take to return before the process gives up on them (exit 70).
    std::chrono::milliseconds kill_budget{60'000};
    // How often a terminal record the journal refused (a full disk) is offered to it again.
    std::chrono::milliseconds pending_retry_interval{2'000};
    // How long a queued turn whose attempt failed before it was recorded (the journal refused its
    // claim) waits before the next one: `claim_retry_first`, doubled with each failure in a row up
    // to `claim_retry_most` (claim_backoff.h).
    std::chrono::milliseconds claim_retry_first{1'000};
    std::chrono::milliseconds claim_retry_most{60'000};
    // How long after a turn's timeout a box the runtime has not ended is killed
    // (turn::TurnEnvironment::host_timeout_grace).
    std::chrono::milliseconds host_timeout_grace = turn::kHostTimeoutGrace;
    // Where secrets' values come from (radiald's environment).
    EnvLookup env = process_env;
    // Why the state directory the daemon serves is no longer the one at its path
    // (state_dir_watch.h), or nullopt; asked before each claim. Once it says why, the daemon
    // claims nothing more, stops as at SIGTERM, and run() returns 1. Unset: never asked.
    std::function<std::optional<std::string>()> state_dir_lost = {};
    // SIGHUP (docs/design.md §12.3): reads the config file again and validates it; throws
    // config::ConfigError (or any std::exception) to keep the running config. Unset: SIGHUP is
    // logged and ignored.
    std::function<ReloadedConfig()> reload_config = {};
    // The text of the config file the daemon started with ("" when it read none): what a reload
    // compares the file's new text with, key by key (config_reload.h).
    std::string config_text;
    // --verbose was given: debug lines stay on whatever run.logLevel a reload brings.
    bool verbose = false;
    // The daemon's figures (metrics.h), or none. Set: the daemon counts its turns into them,
    // keeps the running and queued gauges, and writes their snapshot for `radiald status`
    // (metrics_snapshot.h). Must outlive the daemon.
    Metrics* metrics = nullptr;
    // Test-only: see turn::TurnEnvironment::checkpoint_for_test, plus the daemon's own point
    // "retire" (terminal record written, request not yet removed from the spool).
    turn::CheckpointFn checkpoint_for_test = {};
    // What every interval, grace, budget and duration above is measured on, and what the turns
    // and the metrics snapshots are stamped with (docs/design.md §12.7); the turns' environment
    // gets it too. Not null; must outlive the daemon.
    const time::Clock* clock = &time::system_clock();
    // The warm pool's settings, with cfg.pool.size > 0 (docs/design.md §13.14); a max_age_ms of 0
    // takes run.pool.maxAge. Tests shorten the age below the key's minimum.
    pool::PoolSettings pool = [] {
        pool::PoolSettings s;
        s.max_age_ms = 0;
        return s;
    }();
};

class Daemon {
public:
    // All references must outlive the daemon; `cfg.instance_id` must be settled and the caller
    // must hold the state directory's exclusive lock (state_dir_lock.h). Throws DaemonError when
    // its wake-up eventfd cannot be made.
    Daemon(const config::HostConfig& cfg, const host::RuntimeClient& client,
           journal::Journal& journal, turn::ResolvedTransport transport,
           DaemonSettings settings = {});
    // Joins every thread still running (run() normally leaves none).
    ~Daemon();
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Reconciles (reconciler.h), then serves until `signals` says stop and every turn has ended
    // (see the file comment). Returns 0 after a clean shutdown. Throws ReconcileError, SpoolError,
    // journal::JournalError or DaemonError (daemon_error.h) when it cannot start or its poll fails;
    // once serving, failures of single turns are logged and recorded, never thrown. Call once,
    // from one thread.
    int run(StopSignals& signals);

private:
    struct Worker {
        std::thread thread;
        turn::TurnSession* session = nullptr; // while its run() is on; guarded by mutex_
        bool done = false;                    // guarded by mutex_
        bool failed = false; // its box may be left (status error, or still listed): sweep
        // Its attempt failed before the turn was recorded, and the turn stays queued: it waits
        // (claim_backoff.h). Guarded by mutex_.
        bool stays_queued = false;
        // Its turn is recorded and retired; only the look for its box is left, so its slot is
        // free for the next turn. Guarded by mutex_.
        bool finishing = false;
        // The session its turn runs in (empty: none): one turn per session at a time, so another
        // turn of it stays queued meanwhile (docs/design.md §13.12). Set when claimed.
        std::string session_id;
    };

    // A terminal record the journal has not taken yet (see turn/terminal_reserve.h).
    struct PendingRecord {
        std::string status;
        std::string json;
    };

    // Records a queued turn that cannot run as refused (TurnQueue::refuse), keeping the record in
    // pending_ when the journal did not take it.
    void refuse(const std::string& id, const std::string& why,
                const redaction::Redactor* redactor = nullptr);
    void retry_pending();
    // SIGHUP: applies the reloadable keys of the file's new version and logs each change.
    void reload();
    // Makes `level` (run.logLevel) the lowest logged one, unless --verbose; logs the change.
    void apply_log_level(const std::string& level);
    // Logs a signal the daemon does not act on (SIGUSR1, SIGUSR2, SIGALRM).
    static void ignore_signal(int signo);
    // The workers that hold a slot (all but those finishing). Caller holds mutex_.
    std::size_t occupied_slots() const;
    void dispatch(TurnQueue& queue);
    // The startup reconciliation, or nullopt when a stop signal came during it and it ended
    // within run.shutdownGrace; exits 70 when it did not. Rethrows the pass's errors.
    std::optional<ReconcileReport> reconcile_unless_stopped(StopSignals& signals);
    // Runs a claimed turn: `req` is its request as dispatch() read it (none: read it here),
    // `workspace_lock` its workspace's and `box_ids` its box's, taken by dispatch() (or none).
    void run_turn(const std::string& turn_id, std::optional<SpooledRequest> req,
                  std::optional<turn::WorkspaceLock> workspace_lock,
                  std::optional<turn::BoxIdLease> box_ids);
    void reap_finished();
    void kill_running() noexcept;
    void wake() noexcept;
    std::set<std::string> live_labels();
    // Sets the running and queued gauges and writes the snapshot when it is due (or `force`).
    void publish_metrics(bool force = false);
    bool box_may_remain(const std::string& turn_id, const std::string& label) const noexcept;
    // Starts the warm pool when run.pool.size is set, after the startup reconciliation; throws
    // what its classes' settling throws (pool/warm_pool.h).
    void start_pool();
    // Removes the pool's idle boxes; call once no turn runs.
    void stop_pool() noexcept;

    const config::HostConfig& cfg_;
    const host::RuntimeClient& client_;
    journal::Journal& journal_;
    DaemonSettings settings_;
    const time::Clock& clock_; // *settings_.clock
    turn::TurnEnvironment env_;
    Spool spool_;
    TurnQueue queue_;
    internal::UniqueFd wake_fd_;                   // eventfd: a worker finished
    std::atomic<bool> pool_box_may_remain_{false}; // the pool left a box to the sweep
    std::mutex mutex_;                      // guards workers_' entries' session/done, and killing_
    std::map<std::string, Worker> workers_; // by turn id; inserted and erased on the loop thread
    bool killing_ = false;
    // The reloadable keys' values (config_reload.h), read and written on the loop thread only.
    std::size_t max_concurrent_turns_;
    std::uint64_t shutdown_grace_ms_;
    std::string log_level_;
    bool reload_pending_ = false; // a SIGHUP came during the startup reconciliation
    std::map<std::string, PendingRecord> pending_; // by turn id; guarded by mutex_
    ClaimBackoff backoff_;                         // loop thread only
    std::set<std::string> told_waiting_for_ids_;   // loop thread only: said once per turn
    // How soon a turn waiting for a box id looks again: an id another state directory's turn
    // frees wakes nothing of this daemon's.
    static constexpr std::chrono::milliseconds kBoxIdRetry{2'000};
    std::optional<OrphanSweeper> sweeper_;
    std::optional<MetricsSnapshotWriter> snapshots_; // with settings_.metrics; loop thread only
    std::unique_ptr<pool::WarmPool> pool_; // with run.pool; made and reset on the loop thread
};

} // namespace radial::daemon
