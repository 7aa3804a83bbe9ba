#include "daemon/reconciler.h"

#include <fmt/format.h>
#include <radial/internal/init_exit.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "config/bounded_units.h"
#include "daemon/instance_claim.h"
#include "log/logger.h"
#include "pool/pool_box.h"
#include "session/session_record.h"
#include "turn/box_id_lease.h"
#include "turn/box_user_env.h"
#include "turn/terminal_record.h"
#include "turn/terminal_reserve.h"
#include "turn/turn_request.h"
#include "turn/workspace_lock.h"

namespace radial::daemon {
using session::session_labels;

namespace {

using Clock = std::chrono::system_clock;

// How long a killed box may still be listed before reconciliation calls it a failure.
constexpr std::chrono::seconds kVerifyBudget{5};

Clock::time_point at(std::int64_t ms) { return Clock::time_point(std::chrono::milliseconds(ms)); }

// What reconciliation saw of a reclaimed turn's box when it listed and removed boxes.
enum class BoxFate {
    removed,   // listed (running, or ended and not yet removed) and removed now
    gone,      // not listed: removed before, or never created
    unchecked, // listing or removing the boxes failed
};

// What the runtime's `inspect` said of the box before reconciliation removed it (ABI 1.1,
// docs/design.md §8.4): nothing when it cannot tell, or why asking failed.
struct BoxSeen {
    std::optional<host::BoxState> state; // supported answers only
    std::string unknown_because;         // why nothing is known, for the reason text
};

// "exit 42", "out of memory, exit 137", "signal 9": how an ended box's workload ended.
std::string ending_text(const host::BoxState& b) {
    std::string out;
    if (b.flags & RADIAL_RUN_OOM_KILLED) out = "out of memory";
    if (b.flags & RADIAL_RUN_EXITED)
        out += (out.empty() ? "" : ", ") + fmt::format("exit {}", b.exit_code);
    if (b.flags & RADIAL_RUN_SIGNALED)
        out += (out.empty() ? "" : ", ") + fmt::format("signal {}", b.term_signal);
    return out.empty() ? "how is not known" : out;
}

// What the journal knew of an in-flight turn, plus what reconciliation saw of its box, as its
// terminal record: only what is known (docs/design.md §8.4).
// `pooled`: the turn ran in a box of the warm pool, as an exec (docs/design.md §13.14).
turn::TerminalRecord reclaimed_record(const journal::TurnDetails& t, BoxFate fate,
                                      const BoxSeen& seen, Clock::time_point now, bool pooled,
                                      const config::HostConfig& cfg) {
    turn::TerminalRecord rec =
        turn::terminal_record(turn::subject_of(t.entry), turn::TurnStatus::reclaimed);
    rec.records_received = t.records.size();
    rec.ended_at = now;
    const journal::StateChange* claimed = nullptr;
    const journal::StateChange* started = nullptr;
    for (const auto& s : t.states) {
        if (s.state == journal::TurnState::claimed) claimed = &s;
        if (s.state == journal::TurnState::started) started = &s;
    }
    const host::BoxState* box = seen.state ? &*seen.state : nullptr;
    // A session's turn is an exec in the session's box: what became of the box is not what
    // became of the exec, and the box is the session's, not the turn's (docs/design.md §13.12).
    const auto request = nlohmann::json::parse(t.entry.request_json, nullptr, false);
    const std::string session =
        request.is_object() && request.contains("session") && request["session"].is_string()
            ? request["session"].get<std::string>()
            : std::string();
    if (started != nullptr && !session.empty()) {
        rec.started_at = at(started->at_ms);
        const bool running = box != nullptr && box->state == RADIAL_BOX_RUNNING;
        rec.session = session;
        rec.reason = fmt::format(
            "the radiald running it stopped while it ran as an exec in the box of session '{}'; "
            "{}; how its command ended is not known",
            session,
            running ? "the box, the session's, was kept: the exec ends at its own deadline inside "
                      "it (radial-init), or when the session's next turn starts"
                    : "the session's box had ended or was gone when reconciliation looked");
    } else if (started != nullptr && pooled) {
        // The same for a warm pool box: its PID 1 ends at the box's idle deadline, whatever the
        // exec did, so its ending says nothing of the turn's command.
        rec.started_at = at(started->at_ms);
        rec.reason = fmt::format(
            "the radiald running it stopped while it ran as an exec in warm pool box '{}'; {}; "
            "how its command ended is not known",
            t.entry.label,
            box != nullptr && box->state == RADIAL_BOX_ENDED
                ? fmt::format("the box had ended ({}), which is its own end, not the exec's",
                              ending_text(*box))
            : fate == BoxFate::removed ? std::string("reconciliation removed the box")
            : fate == BoxFate::gone
                ? std::string("the box was gone when reconciliation looked")
                : std::string("reconciliation could not remove the box (see its log)"));
    } else if (started != nullptr && box != nullptr && box->state == RADIAL_BOX_ENDED) {
        rec.started_at = at(started->at_ms);
        if (box->flags & RADIAL_RUN_EXITED) rec.exit_code = box->exit_code;
        if (box->flags & RADIAL_RUN_SIGNALED) rec.signal = box->term_signal;
        // The box's PID 1, radial-init, exits 124 when it ends the box at the turn's deadline
        // (docs/design.md §3.7), read as an exec's is. When the box ended is not known: that the
        // deadline had passed by now is all there is to go on, and the reason says so.
        const auto requested = request.is_object() && request.contains("timeoutMs") &&
                                       request["timeoutMs"].is_number_unsigned()
                                   ? request["timeoutMs"].get<std::uint64_t>()
                                   : std::uint64_t{0};
        const std::uint64_t timeout_ms = turn::turn_timeout_ms(requested, cfg);
        const bool at_deadline =
            (box->flags & RADIAL_RUN_EXITED) &&
            radial::internal::init_timed_out(
                box->exit_code, timeout_ms != 0,
                timeout_ms != 0 && now >= rec.started_at + std::chrono::milliseconds(timeout_ms));
        rec.reason =
            at_deadline ? fmt::format(
                              "the box had ended at the turn's deadline ({}: radial-init's exit "
                              "when the timeout of {} passed, as timeout(1); a command's own exit "
                              "124 before then would read the same, when the box ended not being "
                              "known) before radiald came back; ",
                              ending_text(*box), config::duration_text(timeout_ms))
                        : fmt::format("the box had ended by itself ({}) before radiald came back; ",
                                      ending_text(*box));
        switch (fate) {
            case BoxFate::removed: rec.reason += "reconciliation read how and removed it"; break;
            case BoxFate::gone:
                rec.reason += "it was gone when reconciliation came to remove it";
                break;
            case BoxFate::unchecked:
                rec.reason += "reconciliation could not remove it (see its log)";
                break;
        }
    } else if (started != nullptr) {
        rec.started_at = at(started->at_ms);
        const bool running = box != nullptr && box->state == RADIAL_BOX_RUNNING;
        const std::string unknown =
            seen.unknown_because.empty()
                ? std::string("how its command ended is not known")
                : fmt::format("how its command ended is not known: {}", seen.unknown_because);
        switch (fate) {
            case BoxFate::removed:
                rec.reason = running
                                 ? "the radiald running it stopped while its box ran; its box was "
                                   "still running and was killed and removed by reconciliation"
                                 : fmt::format(
                                       "the radiald running it stopped while its box ran; "
                                       "its box was still there and was removed by "
                                       "reconciliation ({})",
                                       unknown);
                break;
            case BoxFate::gone:
                // "Started" is journaled before the box is made: with nothing of the box seen
                // and nothing posted from it, whether it ever ran is not known either.
                rec.reason =
                    t.records.empty()
                        ? fmt::format(
                              "the radiald running it stopped after the turn started; no box of "
                              "it was there when reconciliation looked: it may never have been "
                              "made, or it ran and was removed ({})",
                              unknown)
                        : fmt::format(
                              "the radiald running it stopped while its box ran (it posted {} "
                              "record(s)); its box was already gone when reconciliation looked "
                              "({})",
                              t.records.size(), unknown);
                break;
            case BoxFate::unchecked:
                rec.reason = running ? "the radiald running it stopped while its box ran; its "
                                       "box was still running, and reconciliation could not "
                                       "remove it (see its log)"
                                     : "the radiald running it stopped while its box ran; "
                                       "reconciliation could not list or remove its box (see "
                                       "its log)";
                break;
        }
    } else {
        rec.started_at = claimed != nullptr ? at(claimed->at_ms) : rec.ended_at;
        rec.reason = "the radiald running it stopped after claiming it, before its box started";
    }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(rec.ended_at - rec.started_at)
                  .count();
    rec.duration_ms = ms > 0 ? static_cast<std::uint64_t>(ms) : 0;
    return rec;
}

// Asks the runtime what became of the box of every turn that had started and has no record yet,
// before any box is removed: afterwards there is nothing left to ask.
std::map<std::string, BoxSeen> inspect_boxes(const config::HostConfig& cfg,
                                             const host::RuntimeClient& client,
                                             journal::Journal& journal) {
    std::map<std::string, BoxSeen> out;
    for (const auto& summary : journal.in_flight()) {
        auto t = journal.turn(summary.turn_id);
        if (!t || t->terminal_json || t->entry.label.empty()) continue;
        if (turn::read_pending(cfg.state_dir, summary.turn_id)) continue;
        bool started = false;
        for (const auto& s : t->states) started = started || s.state == journal::TurnState::started;
        if (!started) continue;
        BoxSeen& seen = out[t->entry.label];
        try {
            host::BoxState b = client.inspect(t->entry.label);
            if (b.supported && b.state != RADIAL_BOX_UNKNOWN)
                seen.state = b;
            else
                seen.unknown_because =
                    fmt::format("runtime '{}' cannot tell how a box ended", client.info().id);
        } catch (const host::RuntimeError& e) {
            seen.unknown_because = fmt::format("asking runtime '{}' failed", client.info().id);
            log::warn("reconcile", "turn {}: asking runtime '{}' how box '{}' ended: {}",
                      t->entry.turn_id, client.info().id, t->entry.label, e.what());
        }
    }
    return out;
}

// The labels of the boxes this state directory recorded and no live turn can own now (the caller
// holds the exclusive lock): those of turns that started and have no terminal record, and those
// of box id leases a killed radiald left — but a session's box, which a turn of the session ran
// in as an exec (session_reconcile.h keeps or ends it, and removes one no session names).
std::vector<std::string> recorded_labels(const config::HostConfig& cfg, journal::Journal& journal) {
    std::vector<std::string> labels;
    for (const auto& summary : journal.in_flight())
        if (auto t = journal.turn(summary.turn_id); t && !t->terminal_json)
            labels.push_back(t->entry.label);
    for (auto& label : turn::unheld_box_id_lease_labels(
             turn::box_id_lease_dir(default_claim_registry()), cfg.state_dir))
        labels.push_back(std::move(label));
    const std::vector<std::string> sessions = session_labels(cfg);
    const std::string session_prefix = session::session_label_prefix(cfg);
    std::erase_if(labels, [&](const std::string& l) {
        return l.starts_with(session_prefix) ||
               std::find(sessions.begin(), sessions.end(), l) != sessions.end();
    });
    return labels;
}

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "'" : ", '") + s + "'";
    return out;
}

namespace fs = std::filesystem;

// The per-turn files a turn leaves on the host while it runs: its socket directory, the space
// reserved for its terminal record and the box's passwd and group (docs/design.md §8.7). All are
// named after the turn, so one list covers them.
std::vector<fs::path> residue_of(const std::string& state_dir, const std::string& turn_id) {
    return {fs::path(state_dir) / "turns" / turn_id, turn::pending_path(state_dir, turn_id),
            turn::box_identity_dir(state_dir, turn_id)};
}

} // namespace

std::size_t sweep_turn_residue(const config::HostConfig& cfg, journal::Journal& journal,
                               const std::set<std::string>& keep) {
    std::set<std::string> ids;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(cfg.state_dir) / "turns", ec))
        ids.insert(e.path().filename().string());
    for (const auto& e : fs::directory_iterator(fs::path(cfg.state_dir) / "identity", ec))
        ids.insert(e.path().filename().string());
    for (const auto& e : fs::directory_iterator(fs::path(cfg.state_dir) / "pending", ec)) {
        std::string name = e.path().filename().string();
        if (name.ends_with(".json")) ids.insert(name.substr(0, name.size() - 5));
    }
    // A session's files are under sessions/ (docs/design.md §13.12): an id here is a turn's, also
    // where a session has the same id — but for a session made before its identity moved there,
    // whose box still mounts identity/<id>.
    std::set<std::string> older_sessions;
    for (const auto& s : session::list_sessions(cfg.state_dir)) {
        std::error_code gone;
        if (!fs::exists(session::session_identity_dir(cfg.state_dir, s.id), gone))
            older_sessions.insert(s.id);
    }
    std::size_t removed = 0;
    for (const auto& id : ids) {
        if (keep.count(id) || older_sessions.count(id)) continue;
        // A record still waiting for the journal is the only copy of how its turn ended.
        if (auto t = journal.turn(id);
            (!t || !t->terminal_json) && turn::read_pending(cfg.state_dir, id))
            continue;
        for (const auto& p : residue_of(cfg.state_dir, id)) {
            std::error_code rm;
            if (fs::remove_all(p, rm) > 0) ++removed;
            if (rm)
                log::warn("reconcile", "turn {}: removing '{}': {}", id, p.string(), rm.message());
        }
    }
    return removed;
}

bool ReconcileReport::nothing_done() const noexcept {
    return killed_boxes.empty() && reclaimed_turns.empty() && journaled_pending.empty() &&
           sessions.ended.empty() && sessions.strays.empty() && still_pending.empty() &&
           residue_removed == 0 && queue.admitted.empty() && queue.cleared.empty() &&
           queue.rejected.empty() && queue.lost.empty() && stale_temp_files == 0;
}

std::vector<std::string> kill_orphan_boxes(const config::HostConfig& cfg,
                                           const host::RuntimeClient& client,
                                           const LiveLabels& live,
                                           const std::vector<std::string>& recorded) {
    // Turns' and checks' boxes alike (docs/design.md §4, §8.2): one listing per prefix, and a
    // label counts as ours only when it starts with the prefix it was listed for.
    std::vector<std::string> prefixes = turn::instance_label_prefixes(cfg);
    // A box this state directory recorded under another instance id (run.instanceId changed, or
    // the instance-id file was removed, since) is listed by its own label, and only that label
    // counts (docs/design.md §8.4).
    std::set<std::string> exact;
    for (const auto& label : recorded) {
        if (label.empty() || std::any_of(prefixes.begin(), prefixes.end(),
                                         [&](const auto& p) { return label.starts_with(p); }))
            continue;
        if (exact.insert(label).second) prefixes.push_back(label);
    }
    std::set<std::string> keep;
    std::set<std::string> foreign; // said once each, not on every listing of the checks below
    auto ours = [&](const std::string& prefix, const std::vector<std::string>& labels,
                    std::vector<std::string>& out) {
        for (const auto& l : labels) {
            if (exact.count(prefix) && l != prefix) continue; // another box whose label it begins
            if (!l.starts_with(prefix)) {
                if (foreign.insert(l).second)
                    log::warn("reconcile",
                              "runtime '{}' listed box '{}' for prefix '{}'; not ours, left "
                              "alone",
                              client.info().id, l, prefix);
                continue;
            }
            if (!keep.count(l)) out.push_back(l);
        }
    };
    std::vector<std::string> found;
    std::string listing; // the prefix being listed, for the error
    try {
        std::vector<std::pair<std::string, std::vector<std::string>>> listed;
        for (const auto& prefix : prefixes) {
            listing = prefix;
            listed.emplace_back(prefix, client.list_by_label(prefix));
        }
        if (live) keep = live();
        for (const auto& [prefix, labels] : listed) ours(prefix, labels, found);
    } catch (const host::RuntimeError& e) {
        throw ReconcileError(
            fmt::format("listing the boxes of instance '{}' (prefix '{}') through "
                        "runtime '{}': {}",
                        cfg.instance_id, listing, client.info().id, e.what()));
    }
    std::vector<std::string> killed, failed;
    for (const auto& label : found) {
        try {
            client.kill(label);
            killed.push_back(label);
            log::info("reconcile", "removed orphaned box '{}'", label);
        } catch (const host::RuntimeError& e) {
            failed.push_back(label);
            log::error("reconcile", "removing orphaned box '{}': {}", label, e.what());
        }
    }
    if (found.empty()) return killed;
    // Verify: a kill that returned is supposed to mean gone, but an engine may list a box it is
    // still tearing down for a moment; one still listed after kVerifyBudget is not reclaimed.
    std::vector<std::string> still;
    // Real time: waits for a real engine to tear a box down (docs/design.md §12.7).
    const auto deadline = std::chrono::steady_clock::now() + kVerifyBudget;
    for (;;) {
        std::vector<std::string> left;
        try {
            for (const auto& prefix : prefixes) ours(prefix, client.list_by_label(prefix), left);
        } catch (const host::RuntimeError& e) {
            throw ReconcileError(
                fmt::format("checking that the orphaned boxes of instance '{}' are "
                            "gone: {}",
                            cfg.instance_id, e.what()));
        }
        still.clear();
        for (const auto& l : left)
            if (std::find(found.begin(), found.end(), l) != found.end()) still.push_back(l);
        if (still.empty() || std::chrono::steady_clock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!still.empty() || !failed.empty())
        throw ReconcileError(fmt::format(
            "orphaned boxes of instance '{}' could not be removed: {}; check the engine (runtime "
            "'{}') and remove them by hand if needed",
            cfg.instance_id, join(still.empty() ? failed : still), client.info().id));
    return killed;
}

ReconcileReport reconcile(const config::HostConfig& cfg, const host::RuntimeClient& client,
                          journal::Journal& journal, const Spool& spool, const time::Clock& clock) {
    ReconcileReport report;
    const std::map<std::string, BoxSeen> seen = inspect_boxes(cfg, client, journal);
    std::exception_ptr box_failure;
    try {
        report.killed_boxes = kill_orphan_boxes(cfg, client, {}, recorded_labels(cfg, journal));
    } catch (const ReconcileError&) {
        // The journal part still runs: those turns are over whatever happens to their boxes.
        box_failure = std::current_exception();
    }
    // What a radiald killed with pool boxes left on the host: their workspaces' mounts and
    // directories (pool/pool_box.h); their boxes went with the instance's above.
    if (!box_failure) {
        if (const auto n = pool::clear_pool_dir(cfg.state_dir))
            log::info("reconcile", "detached {} mount(s) a killed radiald's pool boxes left", n);
    }
    // Sessions whose box ended are removed, running ones kept (session_reconcile.h); before the
    // leases, so an ended session's ids are free below.
    if (!box_failure) {
        try {
            report.sessions = reconcile_sessions(cfg, client, clock);
        } catch (const host::RuntimeError& e) {
            log::warn("reconcile", "listing the session boxes: {}; sessions left as they are",
                      e.what());
        }
    }
    // The ids of boxes a killed radiald left (box_id_lease.h): free once those boxes are gone.
    std::map<std::string, std::uint32_t> freed_ids;
    if (!box_failure)
        for (auto& l :
             turn::release_stale_box_id_leases(turn::box_id_lease_dir(default_claim_registry()),
                                               cfg.state_dir, session_labels(cfg))) {
            log::info("reconcile", "freed box ids {0}:{0} of box '{1}'", l.id, l.label);
            freed_ids[l.label] = l.id;
        }

    // The workspace lock files no turn holds, of this radiald's and other instances' turns that
    // ended or died (docs/design.md §3.9): they would otherwise pile up in the claim registry.
    try {
        if (const auto n = turn::sweep_workspace_locks(default_claim_registry()))
            log::info("reconcile", "removed {} workspace lock file(s) no turn holds", n);
    } catch (const std::exception& e) {
        log::warn("reconcile", "sweeping the workspace lock files: {}", e.what());
    }

    for (const auto& summary : journal.in_flight()) {
        auto t = journal.turn(summary.turn_id);
        if (!t || t->terminal_json) continue;
        // Its real terminal record, kept when the journal could not take it: that is what
        // happened, so it is journaled as it is, not replaced by "reclaimed".
        if (auto p = turn::read_pending(cfg.state_dir, summary.turn_id)) {
            try {
                journal.set_terminal(p->turn_id, p->status, p->json);
            } catch (const journal::JournalError& e) {
                if (e.code() != journal::JournalErrc::storage) throw;
                report.still_pending.push_back(p->turn_id);
                log::error("reconcile",
                           "turn {}: its terminal record (status '{}') still cannot be "
                           "journaled: {}",
                           p->turn_id, p->status, e.what());
                continue;
            }
            report.journaled_pending.push_back(p->turn_id);
            log::info("reconcile", "turn {}: journaled its kept terminal record (status '{}')",
                      p->turn_id, p->status);
            continue;
        }
        BoxFate fate = box_failure ? BoxFate::unchecked
                       : std::find(report.killed_boxes.begin(), report.killed_boxes.end(),
                                   t->entry.label) != report.killed_boxes.end()
                           ? BoxFate::removed
                           : BoxFate::gone;
        auto it = seen.find(t->entry.label);
        const bool pooled = t->entry.label.rfind(pool::pool_label_prefix(cfg), 0) == 0;
        turn::TerminalRecord rec = reclaimed_record(
            *t, fate, it != seen.end() ? it->second : BoxSeen{}, clock.wall(), pooled, cfg);
        if (auto f = freed_ids.find(t->entry.label); f != freed_ids.end())
            rec.box_user = fmt::format("{0}:{0}", f->second);
        journal.set_terminal(rec.turn_id, to_string(rec.status), rec.to_json());
        report.reclaimed_turns.push_back(rec.turn_id);
        log::info("reconcile", "turn {}: reclaimed ({} record{} received; {})", rec.turn_id,
                  *rec.records_received, *rec.records_received == 1 ? "" : "s", rec.reason);
    }
    // No turn of this state directory is live now (the caller holds its exclusive lock).
    report.residue_removed = sweep_turn_residue(cfg, journal, {});
    if (report.residue_removed)
        log::info("reconcile", "removed {} file(s) and directories left by turns that ended",
                  report.residue_removed);

    spool.ensure_dirs();
    TurnQueue queue(cfg, journal, spool, clock);
    report.queue = queue.scan({});
    for (const auto& id : report.queue.runnable)
        log::info("reconcile", "turn {}: queued, will run", id);
    for (const auto& id : report.queue.cleared)
        log::info("reconcile", "turn {}: finished; removed its request from the spool", id);
    report.stale_temp_files = spool.remove_stale_temp_files(std::chrono::hours(1));
    if (report.stale_temp_files)
        log::info("reconcile", "removed {} half-written submission(s) from the spool",
                  report.stale_temp_files);
    if (box_failure) std::rethrow_exception(box_failure);
    return report;
}

} // namespace radial::daemon
