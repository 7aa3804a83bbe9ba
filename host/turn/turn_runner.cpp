#include "turn/turn_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <thread>

#include "log/logger.h"

namespace radial::turn {

TurnRunner::TurnRunner(const host::RuntimeClient& client, ContainerSpec spec, std::string turn_id,
                       std::chrono::milliseconds host_grace,
                       std::optional<host::SessionClient> session, const time::Clock& clock)
    : client_(client),
      session_(std::move(session)),
      spec_(std::move(spec)),
      turn_id_(std::move(turn_id)),
      host_grace_(host_grace),
      clock_(clock) {}

void TurnRunner::interrupt(StopReason why) noexcept {
    stop_reason_ = why; // before the flag: run() reads the reason once it sees the flag
    interrupted_ = true;
    {
        // Under the lock, so that the watchdog cannot miss it between its look and its wait.
        std::lock_guard lock(mutex_);
    }
    // The kill is the watchdog's (watch()): a runtime's kill waits out the box's stop grace
    // (docs/design.md §13.1), and a daemon stopping its turns must not wait for each in turn.
    done_cv_.notify_all();
}

void TurnRunner::watch() {
    std::unique_lock lock(mutex_);
    // A timeout beyond ~30 years is "none": converting it to the clock's nanoseconds would
    // overflow.
    constexpr std::uint64_t kMaxWatchedTimeoutMs = 1'000'000'000'000ull;
    std::optional<time::SteadyPoint> timeout_due, interrupt_due;
    if (spec_.timeout_ms > 0 && spec_.timeout_ms < kMaxWatchedTimeoutMs)
        // The runtime's stop grace comes first (SIGTERM, then the kill).
        timeout_due = clock_.steady() + std::chrono::milliseconds(spec_.timeout_ms) +
                      std::chrono::milliseconds(spec_.stop_grace_ms) + host_grace_;
    // Until the run returns, the timeout passes, or an interrupt's kill has had its grace.
    for (;;) {
        const bool noted = interrupt_due.has_value();
        auto due = timeout_due ? timeout_due : interrupt_due;
        if (timeout_due && interrupt_due) due = std::min(*timeout_due, *interrupt_due);
        const auto until = due ? *due : clock_.steady() + std::chrono::hours(24 * 365);
        if (clock_.wait_until(lock, done_cv_, until,
                              [&] { return done_ || (interrupted_ && !noted); })) {
            if (done_) return;
            lock.unlock();
            try {
                note_kill();
                client_.kill(spec_.label);
            } catch (const std::exception& e) {
                log::error("turn", "turn {}: killing box '{}' after an interrupt failed: {}",
                           turn_id_, spec_.label, e.what());
            }
            lock.lock();
            interrupt_due = clock_.steady() + host_grace_; // killed once: the grace, then again
            continue;
        }
        if (due) break;
    }
    std::string after;
    if (timeout_due && clock_.steady() >= *timeout_due) {
        watchdog_fired_ = true;
        after = "its timeout";
    } else {
        after = "the interrupt's kill";
    }
    log::warn("turn", "turn {}: runtime did not end the box {} ms after {}; killing '{}'", turn_id_,
              host_grace_.count(), after, spec_.label);
    // Again after each further grace while the run has not returned: a kill the engine failed or
    // the plugin lost must not leave the turn, and its slot, held for ever.
    for (int attempt = 1;; ++attempt) {
        lock.unlock();
        try {
            note_kill();
            client_.kill(spec_.label);
        } catch (const std::exception& e) {
            log::error("turn", "turn {}: kill '{}' failed (attempt {}): {}", turn_id_, spec_.label,
                       attempt, e.what());
        }
        lock.lock();
        // At least a second apart, whatever the grace: the log must not flood.
        const auto again = std::max(host_grace_, std::chrono::milliseconds(1000));
        if (clock_.wait_until(lock, done_cv_, clock_.steady() + again, [this] { return done_; }))
            return;
        // A run that outlived that many kills ignores them: the turn stops waiting for it
        // (docs/design.md §3.7). The plugin's thread keeps the call; the run still holds the
        // box's workspace and ids (TurnSession).
        if (kills_ >= kGiveUpAfterKills && call_ != nullptr) {
            const auto call = call_;
            lock.unlock();
            const bool gave_up = call->give_up();
            lock.lock();
            if (gave_up)
                log::error("turn",
                           "turn {}: runtime '{}' has not returned {} ms after kill '{}' (attempt "
                           "{}); giving up on its {}",
                           turn_id_, client_.info().id, again.count(), spec_.label, attempt,
                           session_ ? "exec" : "run");
            return; // given up, or it returned meanwhile: run() has it either way
        }
        log::error("turn",
                   "turn {}: runtime '{}' has not returned {} ms after kill '{}' (attempt {}); "
                   "killing it again",
                   turn_id_, client_.info().id, again.count(), spec_.label, attempt);
    }
}

void TurnRunner::note_kill() {
    if (kills_++ == 0) first_kill_ = clock_.steady();
}

TerminalRecord TurnRunner::run(const host::OutputFn& on_output) {
    TerminalRecord rec = terminal_record(
        {turn_id_, "turn", client_.info().id, spec_.image, spec_.label}, TurnStatus::error);
    rec.started_at = clock_.wall();
    const auto t0 = clock_.steady();
    auto finish = [&] {
        rec.ended_at = clock_.wall();
        rec.duration_ms = static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::milliseconds>(clock_.steady() - t0).count());
        return rec;
    };

    try {
        for (const auto& d : client_.describe(spec_)) {
            if (d.disposition == RADIAL_DISP_REFUSED) {
                rec.status = TurnStatus::error;
                rec.error = fmt::format("runtime '{}' refuses {}: {}", rec.runtime,
                                        field_name(d.field), d.note);
                log::error("turn", "turn {}: {}", turn_id_, rec.error);
                return finish();
            }
            if (d.disposition == RADIAL_DISP_SUPERSEDED)
                log::info("turn", "turn {}: runtime '{}' supersedes {}: {}", turn_id_, rec.runtime,
                          field_name(d.field), d.note);
        }
    } catch (const host::RuntimeError& e) {
        rec.status = TurnStatus::error;
        rec.error = fmt::format("runtime '{}' could not describe the turn's spec: {}", rec.runtime,
                                e.what());
        log::error("turn", "turn {}: {}", turn_id_, rec.error);
        return finish();
    }
    auto stopped = [&] {
        bool shutdown = stop_reason_ == StopReason::shutdown;
        rec.status = shutdown ? TurnStatus::killed : TurnStatus::failed;
        rec.reason = shutdown ? "shutdown" : "interrupted";
    };
    if (interrupted_) {
        stopped();
        return finish();
    }

    // Host-side timeout and kill: the backstop for a plugin that does not return (watch()).
    std::thread watchdog([this] { watch(); });
    // Ended and joined however run() leaves from here, a throw included: a joinable thread
    // destroyed would end the process.
    struct AtExit {
        std::function<void()> fn;
        ~AtExit() { fn(); }
    } join_watchdog{[&] {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        done_cv_.notify_all();
        if (watchdog.joinable()) watchdog.join();
    }};
    log::info("turn", "turn {}: starting box '{}' (runtime '{}', image '{}')", turn_id_,
              spec_.label, rec.runtime, spec_.image);
    try {
        if (spec_.stop_grace_ms > 0 && !client_.has_capability(RADIAL_CAP_STOP_GRACE))
            log::debug("turn",
                       "turn {}: runtime '{}' gives no stop grace (it does not report {}): at a "
                       "timeout or interrupt its box is ended at once, run.stopGrace aside",
                       turn_id_, rec.runtime, RADIAL_CAP_STOP_GRACE);
        // On a thread of its own, which the turn stops waiting for once the watchdog gave up on
        // a run that ignores its kills (watch()).
        const auto call =
            session_ ? session_->start_exec(spec_, on_output) : client_.start_run(spec_, on_output);
        {
            std::lock_guard lock(mutex_);
            call_ = call;
        }
        const std::optional<host::RunOutcome> returned = call->wait();
        if (!returned) {
            join_watchdog.fn(); // after its last kill: kills_ and first_kill_ are its
            abandoned_ = call;
            rec.status = TurnStatus::error;
            rec.call_abandoned = true;
            rec.error = fmt::format(
                "runtime '{}' did not return from its {} of box '{}' after {} kills over {} s; "
                "radiald gave up on the call: the box may still be running, and keeps its "
                "workspace and ids until the call returns or 'radiald reconcile' (or the "
                "daemon's next start) removes it",
                rec.runtime, session_ ? "exec" : "run", spec_.label, kills_,
                std::chrono::duration_cast<std::chrono::seconds>(clock_.steady() - first_kill_)
                    .count());
            return finish();
        }
        const host::RunOutcome& out = *returned;
        if (std::string breach = host::run_result_breach(out, spec_); !breach.empty()) {
            rec.status = TurnStatus::error;
            rec.error = fmt::format(
                "runtime '{}' returned a run result that {}, which the plugin ABI does not allow "
                "(radial/runtime_plugin.h, RADIAL_RUN_*): how the box ended is not known; check "
                "the plugin with radial-conformance and report it to its author",
                rec.runtime, breach);
            join_watchdog.fn();
            return finish();
        }
        if (out.flags & RADIAL_RUN_EXITED) rec.exit_code = out.exit_code;
        if (out.flags & RADIAL_RUN_SIGNALED) rec.signal = out.term_signal;
        if (out.flags & RADIAL_RUN_PHASE_TIMES) {
            rec.create_ms = out.create_ms;
            rec.remove_ms = out.remove_ms;
        }
        // Said only where a grace was asked of a runtime that honours one (docs/design.md §13.1).
        if ((out.flags & (RADIAL_RUN_TIMED_OUT | RADIAL_RUN_KILLED)) && spec_.stop_grace_ms > 0 &&
            client_.has_capability(RADIAL_CAP_STOP_GRACE))
            rec.stopped_in_grace = (out.flags & RADIAL_RUN_STOPPED_IN_GRACE) != 0;
        if ((out.flags & RADIAL_RUN_TIMED_OUT) || watchdog_fired_) {
            rec.status = TurnStatus::timed_out;
            rec.reason = "timeout";
        } else if (interrupted_) {
            stopped();
        } else if (out.flags & RADIAL_RUN_OUTPUT_ABORTED) {
            rec.status = TurnStatus::failed;
            rec.reason = "output aborted";
        } else if (out.flags & RADIAL_RUN_KILLED) {
            rec.status = TurnStatus::failed;
            rec.reason = "killed";
        } else if ((out.flags & RADIAL_RUN_EXITED) && out.exit_code == 0) {
            rec.status = TurnStatus::succeeded;
        } else {
            rec.status = TurnStatus::failed;
            if (out.flags & RADIAL_RUN_OOM_KILLED) rec.reason = "out of memory";
        }
    } catch (const host::RuntimeError& e) {
        rec.status = TurnStatus::error;
        rec.error = fmt::format("runtime '{}': {}", rec.runtime, e.what());
        rec.exec_never_ran = session_ && host::SessionClient::exec_never_ran(e.code());
        rec.session_box_gone = session_ && e.code() == RADIAL_E_NOT_FOUND;
    }
    join_watchdog.fn();

    // The outcome's line is the caller's to log (log_outcome), once the box's last output is out.
    return finish();
}

void log_outcome(const TerminalRecord& rec) {
    if (rec.status == TurnStatus::error)
        log::error("turn", "turn {}: {}", rec.turn_id, rec.error);
    else
        log::info("turn", "turn {}: {}{} after {} ms", rec.turn_id, to_string(rec.status),
                  rec.exit_code ? fmt::format(" (exit code {})", *rec.exit_code) : std::string(),
                  rec.duration_ms);
}

} // namespace radial::turn
