#include "daemon/daemon.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>

#include "daemon/box_ids_ahead.h"
#include "daemon/daemon_error.h"
#include "daemon/instance_claim.h"
#include "daemon/reconciler.h"
#include "daemon/spool_watcher.h"
#include "daemon/workspace_view.h"
#include "log/logger.h"
#include "redaction/json_redaction.h"
#include "session/session_record.h"
#include "turn/handover_recovery.h"
#include "turn/terminal_reserve.h"
#include "turn/turn_setup_error.h"

namespace radial::daemon {

namespace {
int poll_timeout_ms(std::chrono::milliseconds d) {
    return static_cast<int>(std::clamp<long long>(d.count(), 0, 60'000));
}
} // namespace

Daemon::Daemon(const config::HostConfig& cfg, const host::RuntimeClient& client,
               journal::Journal& journal, turn::ResolvedTransport transport,
               DaemonSettings settings)
    : cfg_(cfg),
      client_(client),
      journal_(journal),
      settings_(std::move(settings)),
      clock_(*settings_.clock),
      env_{cfg,
           client,
           journal,
           transport,
           settings_.host_timeout_grace,
           settings_.checkpoint_for_test,
           settings_.clock},
      spool_(cfg.state_dir),
      queue_(cfg, journal, spool_, *settings_.clock),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      max_concurrent_turns_(cfg.max_concurrent_turns),
      shutdown_grace_ms_(cfg.shutdown_grace_ms),
      log_level_(cfg.log_level),
      backoff_(settings_.claim_retry_first, settings_.claim_retry_most) {
    if (!wake_fd_) throw DaemonError("creating the daemon's wake-up eventfd", errno);
    // A workspace a given-up call kept is free once it returns: a turn queued for it is
    // dispatched then, not at the next rescan. Through a descriptor of its own, since the call may
    // return after the daemon is gone (docs/design.md §3.7).
    auto wake = std::make_shared<internal::UniqueFd>(::fcntl(wake_fd_.get(), F_DUPFD_CLOEXEC, 0));
    if (!*wake) throw DaemonError("duplicating the daemon's wake-up eventfd", errno);
    env_.after_abandoned_call = [wake] {
        std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(wake->get(), &one, sizeof(one));
    };
}

Daemon::~Daemon() {
    sweeper_.reset();
    // Only when run() failed with turns still running: their boxes must not outlive the daemon.
    kill_running();
    // Entries stay in the map while their threads finish: each thread marks its own entry done.
    std::vector<std::thread*> threads;
    {
        std::lock_guard lock(mutex_);
        for (auto& [id, w] : workers_)
            if (w.thread.joinable()) threads.push_back(&w.thread);
    }
    for (auto* t : threads) t->join();
    stop_pool();
}

void Daemon::wake() noexcept {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof(one));
}

void Daemon::run_turn(const std::string& id, std::optional<SpooledRequest> req,
                      std::optional<turn::WorkspaceLock> workspace_lock,
                      std::optional<turn::BoxIdLease> box_ids) {
    bool failed = false, stays_queued = false;
    try {
        if (!req) req = spool_.load(id);
        if (req) {
            std::optional<turn::TurnSession> made;
            try {
                made.emplace(env_, to_turn_request(*req, settings_.env, cfg_.secret_names));
            } catch (const turn::TurnSetupError& e) {
                // Not the request's fault, yet no retry mends it (a damaged session record): the
                // turn ends with the reason now, rather than being claimed again without end.
                throw turn::RequestError(e.what());
            }
            turn::TurnSession& session = *made;
            bool skip = false;
            {
                std::lock_guard lock(mutex_);
                // Killing has begun before this turn was claimed: it stays queued for next time.
                skip = killing_;
                if (!skip) workers_.at(id).session = &session;
            }
            if (!skip) {
                // Submitted before its secrets' values were known: the spool's copy is masked once
                // the turn is claimed (nothing reads a claimed turn's request again). Not before:
                // a turn whose claim fails stays queued, and would run from the masked copy.
                session.set_on_claimed([this, &session, &id, &req] {
                    try {
                        spool_.overwrite(id, redaction::redact_json(session.redactor(),
                                                                    turn::request_to_json(*req)));
                    } catch (const std::exception& e) { // the turn is claimed: it runs on
                        log::warn("spool", "turn {}: {}", id, e.what());
                    }
                });
                turn::TerminalRecord rec;
                const auto started = clock_.steady();
                try {
                    rec = session.run([](std::uint32_t, std::string_view) {},
                                      turn::JournalStart::claim_queued, std::move(workspace_lock),
                                      std::move(box_ids));
                } catch (...) {
                    std::lock_guard lock(mutex_);
                    workers_.at(id).session = nullptr;
                    throw;
                }
                {
                    std::lock_guard lock(mutex_);
                    workers_.at(id).session = nullptr;
                }
                if (settings_.metrics)
                    settings_.metrics->turn_ended(rec.kind, to_string(rec.status),
                                                  clock_.steady() - started);
                if (!rec.journal_error.empty()) {
                    // Its request stays in the spool until the journal has the record: the spool
                    // scan leaves a started turn alone, and reconciliation finishes it after a
                    // crash.
                    std::lock_guard lock(mutex_);
                    pending_[id] = {std::string(to_string(rec.status)), rec.to_json()};
                } else {
                    if (settings_.checkpoint_for_test) settings_.checkpoint_for_test("retire", id);
                    queue_.retire(id);
                }
                // The next turn need not wait for the look for this one's box (an engine
                // request): its slot is free from here.
                {
                    std::lock_guard lock(mutex_);
                    workers_.at(id).finishing = true;
                }
                wake();
                if (settings_.checkpoint_for_test) settings_.checkpoint_for_test("box-look", id);
                failed = rec.status == turn::TurnStatus::error ||
                         box_may_remain(id, turn::box_label(cfg_, req->kind, id));
            }
        }
    } catch (const turn::RequestError& e) {
        // Refused before a turn session masked the request (its image, a path): masked here.
        const auto redactor = req ? refusal_redactor(*req, settings_.env, cfg_) : nullptr;
        // A session's turn is queued under the one-shot label its id gives until its claim: the
        // record of one refused before names the session's box, which it was to run in.
        if (req && !req->session.empty() && internal::is_turn_id(req->session)) try {
                journal_.set_label(id, session::session_label(cfg_, req->session));
            } catch (const journal::JournalError& je) {
                log::warn("daemon", "turn {}: {}", id, je.what());
            }
        refuse(id, e.what(), redactor.get());
    } catch (const SpoolBusy& e) {
        log::warn("daemon", "turn {}: {}", id, e.what()); // still queued: tried again later
        stays_queued = true;
    } catch (const SpoolError& e) {
        refuse(id, e.what());
    } catch (const journal::JournalError& e) {
        // Not queued any more, or the journal failed: nothing this thread can promise. A turn left
        // claimed or started is reclaimed at the next start; one left queued waits.
        log::error("daemon", "turn {}: {}", id, e.what());
        stays_queued = true;
    } catch (const std::exception& e) {
        log::error("daemon", "turn {}: {}", id, e.what());
        stays_queued = true;
    }
    {
        std::lock_guard lock(mutex_);
        auto& w = workers_.at(id);
        w.done = true;
        w.failed = failed;
        w.stays_queued = stays_queued;
    }
    wake();
}

void Daemon::refuse(const std::string& id, const std::string& why,
                    const redaction::Redactor* redactor) {
    if (settings_.metrics) settings_.metrics->turn_refused();
    // Not journaled: its request stays queued, and the record, not the turn, is tried again.
    if (auto kept = queue_.refuse(id, why, redactor)) {
        std::lock_guard lock(mutex_);
        pending_[id] = {kept->status, kept->json};
    }
}

void Daemon::retry_pending() {
    std::map<std::string, PendingRecord> pending;
    {
        std::lock_guard lock(mutex_);
        pending = pending_;
    }
    for (const auto& [id, p] : pending) {
        try {
            journal_.set_terminal(id, p.status, p.json);
            log::info("daemon", "turn {}: its terminal record (status '{}') is journaled now", id,
                      p.status);
        } catch (const journal::JournalError& e) {
            if (e.code() == journal::JournalErrc::storage) continue; // still full: next time
            if (e.code() != journal::JournalErrc::turn_finished) {
                log::error("daemon", "turn {}: journaling its kept terminal record: {}", id,
                           e.what());
                continue;
            }
            // Another process (reconcile) journaled it meanwhile: done either way.
        }
        turn::remove_pending(cfg_.state_dir, id);
        queue_.retire(id);
        std::lock_guard lock(mutex_);
        pending_.erase(id);
    }
}

std::size_t Daemon::occupied_slots() const {
    return static_cast<std::size_t>(std::count_if(
        workers_.begin(), workers_.end(), [](const auto& w) { return !w.second.finishing; }));
}

void Daemon::dispatch(TurnQueue& queue) {
    std::set<std::string> active;
    {
        std::lock_guard lock(mutex_);
        if (occupied_slots() >= max_concurrent_turns_) return;
        for (const auto& [id, w] : workers_) active.insert(id);
        // A refused turn whose record waits for the journal is not run again (refuse()).
        for (const auto& [id, p] : pending_) active.insert(id);
    }
    QueueScan scan;
    try {
        scan = queue.scan(active);
    } catch (const std::exception& e) {
        log::error("daemon", "scanning the queue: {}", e.what());
        return;
    }
    std::set<std::string> queued_ids(scan.runnable.begin(), scan.runnable.end());
    queued_ids.insert(active.begin(), active.end());
    backoff_.keep_only(queued_ids);
    std::erase_if(told_waiting_for_ids_, [&](const auto& id) { return !queued_ids.contains(id); });
    std::size_t queued = scan.runnable.size();
    const auto now = clock_.steady();
    std::string box_ids_full; // why run.boxIdRange has no id for this pass's turns, if it has none
    for (const auto& id : scan.runnable) {
        if (backoff_.waiting(id, now)) continue; // its last attempt failed (claim_backoff.h)
        {
            std::lock_guard lock(mutex_);
            if (occupied_slots() >= max_concurrent_turns_) break;
        }
        // One turn per workspace (turn/workspace_lock.h): a turn whose workspace another turn
        // holds stays queued, and is tried again at the next dispatch. The request read for it
        // goes on to the worker, which does not read it again.
        std::optional<SpooledRequest> req;
        std::optional<turn::WorkspaceLock> workspace_lock;
        if (!cfg_.shared_workspaces) {
            try {
                req = spool_.load(id);
                if (req && !req->workspace.empty()) {
                    workspace_lock = turn::WorkspaceLock::try_acquire_workspace(
                        req->workspace, default_claim_registry());
                    if (!workspace_lock) {
                        log::debug("daemon", "turn {}: waits: its workspace '{}' is in use", id,
                                   req->workspace);
                        continue;
                    }
                }
            } catch (const std::exception&) {
                // The worker reads the request again, and the session reports what is wrong with
                // it or its workspace.
                req.reset();
            }
        }
        if (!req) {
            try {
                req = spool_.load(id);
            } catch (const SpoolBusy& e) {
                log::warn("daemon", "turn {}: {}", id, e.what());
                continue; // tried again at the next dispatch
            } catch (const std::exception&) {
                req.reset(); // the worker reports it
            }
        }
        // Its box's ids (box_ids_ahead.h): while run.boxIdRange is full it stays queued, and so
        // does every turn after it in this pass, tried again at the next dispatch. Each says so
        // once, as a warning: a turn that waits without end (ids another state directory holds,
        // or a killed radiald's) must not look like an idle queue.
        std::optional<turn::BoxIdLease> box_ids;
        if (req && leases_box_ids(cfg_, *req, pool_ != nullptr)) {
            try {
                if (box_ids_full.empty()) box_ids.emplace(lease_box_ids_ahead(cfg_, *req));
            } catch (const turn::BoxIdsExhausted& e) {
                box_ids_full = e.what();
            } catch (const std::exception&) {
                // The worker leases them again, and its record says what is wrong.
            }
            if (!box_ids_full.empty()) {
                if (told_waiting_for_ids_.insert(id).second)
                    log::warn("daemon", "turn {}: waits: {}", id, box_ids_full);
                continue;
            }
            told_waiting_for_ids_.erase(id);
        }
        const std::string session_id = req ? req->session : std::string();
        std::lock_guard lock(mutex_);
        if (!session_id.empty() &&
            std::any_of(workers_.begin(), workers_.end(), [&](const auto& entry) {
                return !entry.second.done && entry.second.session_id == session_id;
            })) {
            log::debug("daemon", "turn {}: waits: its session '{}' runs another turn", id,
                       session_id);
            continue;
        }
        // Registered before its box can exist, so a sweep never takes it for an orphan.
        auto& w = workers_[id];
        w.session_id = session_id;
        --queued;
        log::info("daemon", "turn {}: claimed ({} running, {} queued)", id, occupied_slots(),
                  queued);
        w.thread = std::thread([this, id, read = std::move(req), held = std::move(workspace_lock),
                                ids = std::move(box_ids)]() mutable {
            run_turn(id, std::move(read), std::move(held), std::move(ids));
        });
    }
}

void Daemon::reap_finished() {
    std::vector<std::thread> done;
    bool sweep = false;
    {
        std::lock_guard lock(mutex_);
        for (auto it = workers_.begin(); it != workers_.end();) {
            if (!it->second.done) {
                ++it;
                continue;
            }
            sweep = sweep || it->second.failed;
            if (it->second.stays_queued) {
                const auto wait = backoff_.failed(it->first, clock_.steady());
                log::warn("daemon",
                          "turn {}: its attempt failed before it was recorded; not claimed again "
                          "for {} ms",
                          it->first, wait.count());
            } else {
                backoff_.forget(it->first);
            }
            done.push_back(std::move(it->second.thread));
            it = workers_.erase(it);
        }
    }
    for (auto& t : done) t.join();
    if (sweep && sweeper_) sweeper_->request();
}

void Daemon::kill_running() noexcept {
    std::lock_guard lock(mutex_);
    killing_ = true;
    for (auto& [id, w] : workers_) {
        if (w.session == nullptr) continue;
        if (w.session->interrupt(turn::StopReason::shutdown))
            log::warn("daemon", "turn {}: killing its box (shutdown)", id);
        else
            log::warn("daemon",
                      "turn {}: stopping it (shutdown); no box of it runs now (its command ended, "
                      "or had not started)",
                      id);
    }
}

std::optional<ReconcileReport> Daemon::reconcile_unless_stopped(StopSignals& signals) {
    // On its own thread, so that a stop signal is heard while an engine that does not answer holds
    // the pass for its CLI budgets: the daemon still stops within run.shutdownGrace.
    std::promise<ReconcileReport> promise;
    std::future<ReconcileReport> result = promise.get_future();
    std::thread pass([&] {
        try {
            promise.set_value(reconcile(cfg_, client_, journal_, spool_, clock_));
        } catch (...) {
            promise.set_exception(std::current_exception());
        }
    });
    std::optional<time::SteadyPoint> grace_end;
    for (;;) {
        std::chrono::milliseconds wait{100};
        if (grace_end) wait = std::min(wait, clock_.poll_timeout(*grace_end));
        if (result.wait_for(wait) == std::future_status::ready) break;
        if (grace_end && clock_.steady() >= *grace_end) {
            log::error("daemon",
                       "stopping: the startup reconciliation did not end within {} ms "
                       "(run.shutdownGrace); exiting without it (the next start runs it again)",
                       shutdown_grace_ms_);
            std::_Exit(70);
        }
        for (int sig : signals.take_each()) {
            if (sig == SIGHUP) {
                if (!reload_pending_)
                    log::info("daemon",
                              "SIGHUP during the startup reconciliation: reloading once it ends");
                reload_pending_ = true;
            } else if (sig != SIGTERM && sig != SIGINT) {
                ignore_signal(sig);
            } else if (!grace_end) {
                grace_end = clock_.steady() + std::chrono::milliseconds(shutdown_grace_ms_);
                log::info("daemon", "stopping: waiting up to {} ms for the startup reconciliation",
                          shutdown_grace_ms_);
            }
        }
    }
    pass.join();
    ReconcileReport report = result.get(); // rethrows the pass's error
    if (grace_end) {
        log::info("daemon", "stopped");
        return std::nullopt;
    }
    return report;
}

int Daemon::run(StopSignals& signals) {
    spool_.ensure_dirs();
    // Watching before the reconcile scan: a request renamed in meanwhile is seen by one or the
    // other.
    SpoolWatcher watcher(spool_.queue_dir());
    std::optional<ReconcileReport> report = reconcile_unless_stopped(signals);
    if (!report) return 0;
    // The orphans are gone: what the startup's recovery kept for them can be handed back now.
    turn::WorkspaceHandover::recover(turn::handover_marker_dir(cfg_.state_dir),
                                     turn::box_may_write(client_, journal_));
    if (report->nothing_done()) log::info("reconcile", "nothing to reconcile");
    for (const auto& id : report->still_pending)
        if (auto p = turn::read_pending(cfg_.state_dir, id)) {
            std::lock_guard lock(mutex_);
            pending_[id] = {p->status, p->json};
        }
    if (settings_.metrics)
        settings_.metrics->boxes_reclaimed(
            "startup", report->killed_boxes.size() + report->sessions.strays.size());
    // The pool before the sweeper: its thread's first live_labels() already sees the pool's boxes.
    start_pool();
    sweeper_.emplace(
        cfg_, client_, [this] { return live_labels(); },
        [m = settings_.metrics](std::size_t n) {
            if (m) m->boxes_reclaimed("sweep", n);
        });
    if (reload_pending_) reload();
    publish_workspace_view(cfg_); // what submit checks a workspace against (§12.5)

    log::info("daemon", "serving instance '{}' from '{}': runtime '{}', up to {} turn(s) at once",
              cfg_.instance_id, spool_.queue_dir(), client_.info().id, max_concurrent_turns_);

    bool stopping = false, killed = false, lost = false;
    time::SteadyPoint grace_end{}, kill_end{};
    auto next_scan = clock_.steady();
    auto next_retry = clock_.steady();
    auto has_pending = [this] {
        std::lock_guard lock(mutex_);
        return !pending_.empty();
    };
    for (;;) {
        if (clock_.steady() >= next_retry) {
            if (has_pending()) retry_pending();
            next_retry = clock_.steady() + settings_.pending_retry_interval;
        }
        if (!stopping && settings_.state_dir_lost)
            if (auto why = settings_.state_dir_lost()) {
                // Claimed from a spool it does not hold, a turn's record would go where no later
                // start finds it, and the turn would run again (state_dir_watch.h).
                log::error("daemon",
                           "{}: stopping, claiming no more turns; the running ones have {} ms to "
                           "finish; start radiald again to serve the state directory now at '{}'",
                           *why, shutdown_grace_ms_, cfg_.state_dir);
                stopping = lost = true;
                grace_end = clock_.steady() + std::chrono::milliseconds(shutdown_grace_ms_);
            }
        if (!stopping) {
            dispatch(queue_);
            next_scan = clock_.steady() + settings_.rescan_interval;
        }
        std::size_t running;
        {
            std::lock_guard lock(mutex_);
            running = workers_.size();
        }
        if (stopping && running == 0) break;
        publish_metrics();

        time::SteadyPoint until = next_scan;
        if (stopping) until = killed ? kill_end : grace_end;
        if (has_pending()) until = std::min(until, next_retry);
        if (snapshots_) until = std::min(until, snapshots_->due());
        if (auto retry = backoff_.due(clock_.steady()); retry && !stopping)
            until = std::min(until, *retry);
        // An id another state directory's turn frees wakes nothing here: looked for again soon.
        if (!told_waiting_for_ids_.empty() && !stopping)
            until = std::min(until, clock_.steady() + kBoxIdRetry);
        pollfd fds[3] = {
            {signals.fd(), POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}, {watcher.fd(), POLLIN, 0}};
        int n = ::poll(fds, 3, poll_timeout_ms(clock_.poll_timeout(until)));
        if (n < 0 && errno != EINTR)
            throw DaemonError("waiting for signals, finished turns and the spool (poll)", errno);

        if (fds[1].revents & POLLIN) {
            std::uint64_t count = 0;
            [[maybe_unused]] ssize_t r = ::read(wake_fd_.get(), &count, sizeof(count));
            reap_finished();
            if (pool_box_may_remain_.exchange(false) && sweeper_) sweeper_->request();
        }
        if (fds[2].revents & POLLIN) watcher.drain();
        int sigs = 0;
        if (fds[0].revents & POLLIN)
            for (int sig : signals.take_each()) {
                if (sig == SIGTERM || sig == SIGINT)
                    ++sigs;
                else if (sig == SIGHUP && !stopping)
                    reload();
                else
                    ignore_signal(sig);
            }
        if (sigs > 0) {
            if (!stopping) {
                stopping = true;
                grace_end = clock_.steady() + std::chrono::milliseconds(shutdown_grace_ms_);
                log::info("daemon",
                          "stopping: no new turns; {} running turn(s) have {} ms to finish",
                          running, shutdown_grace_ms_);
                --sigs;
            }
            if (sigs > 0 && !killed) {
                // The shutdown grace is cut short, not the boxes' own: a runtime's kill still gives
                // each box run.stopGrace to end (docs/design.md §13.1).
                log::warn("daemon",
                          "second stop signal: killing the running turns now, without the rest "
                          "of run.shutdownGrace (each box still has run.stopGrace, {} ms, to end)",
                          cfg_.stop_grace_ms);
                grace_end = clock_.steady();
            }
        }
        const auto now = clock_.steady();
        if (stopping && !killed && now >= grace_end) {
            killed = true;
            // Each box first gets its stop grace (run.stopGrace), all at once.
            kill_end = now + settings_.kill_budget + std::chrono::milliseconds(cfg_.stop_grace_ms);
            kill_running();
        } else if (killed && now >= kill_end) {
            log::error("daemon",
                       "killed turns did not end within {} ms; exiting without them (the "
                       "next start reconciles them)",
                       settings_.kill_budget.count() + cfg_.stop_grace_ms);
            std::_Exit(70);
        }
    }
    // The sweeper first, as in ~Daemon: a sweep under way while the pool removes its idle boxes
    // would find them in no live label and count them as its own.
    sweeper_.reset();
    stop_pool(); // every turn has ended: no box of it is claimed
    if (has_pending()) retry_pending();
    {
        std::lock_guard lock(mutex_);
        for (const auto& [id, p] : pending_)
            log::warn("daemon",
                      "turn {}: its terminal record (status '{}') could not be journaled before "
                      "the stop; it waits in '{}' for the next start",
                      id, p.status, turn::pending_path(cfg_.state_dir, id));
    }
    publish_metrics(true);
    log::info("daemon", "stopped");
    return lost ? 1 : 0;
}

} // namespace radial::daemon
