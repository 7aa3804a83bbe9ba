#include "daemon/session_reconcile.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "daemon/instance_claim.h"
#include "log/logger.h"
#include "session/session_events.h"
#include "session/session_record.h"
#include "turn/box_id_lease.h"
#include "turn/box_user_env.h"
#include "turn/retention_clock.h"

namespace radial::daemon {

SessionReconcile reconcile_sessions(const config::HostConfig& cfg,
                                    const host::RuntimeClient& client, const time::Clock& clock) {
    SessionReconcile out;
    const std::string prefix = session::session_label_prefix(cfg);
    std::vector<std::string> boxes = client.list_by_label(prefix);
    const std::string leases = turn::box_id_lease_dir(default_claim_registry());
    // One reading of the retention clock for every session's end (docs/design.md §11.6).
    const turn::ClockLead lead = turn::current_clock_lead(cfg.state_dir);
    for (const auto& s : session::list_sessions(cfg.state_dir)) {
        // Another runtime's session: its box is not in this runtime's listing, and not gone.
        if (session::other_runtime(s, client.info().id)) {
            out.kept.push_back(s.id);
            continue;
        }
        bool present = std::find(boxes.begin(), boxes.end(), s.label) != boxes.end();
        boxes.erase(std::remove(boxes.begin(), boxes.end(), s.label), boxes.end()); // not a stray
        try {
            // Made under another instance id (run.instanceId changed since): not in the listing
            // above, so asked for by its own label (docs/design.md §8.4).
            if (!s.label.starts_with(prefix)) {
                const auto own = client.list_by_label(s.label);
                present = std::find(own.begin(), own.end(), s.label) != own.end();
            }
            // Past its maximum lifetime by the host's own record, a session ends whatever its
            // box says: a runtime whose box cannot remove itself (sandbox: its keeper ends the
            // processes, the stopped sandbox stays) is cleaned up here.
            // On the retention clock: a step of the wall clock ends no session early
            // (docs/design.md §11.6).
            const std::int64_t now_ms =
                std::chrono::duration_cast<std::chrono::milliseconds>(
                    turn::wall_less_lead(clock.wall(), lead,
                                         {s.created_clock_lead_ms, s.created_boot_id})
                        .time_since_epoch())
                    .count();
            const bool expired =
                s.max_lifetime_ms != 0 && s.created_at_ms > 0 && now_ms > 0 &&
                static_cast<std::uint64_t>(now_ms) >=
                    static_cast<std::uint64_t>(s.created_at_ms) + s.max_lifetime_ms;
            if (present && !expired) {
                const host::BoxState b = client.inspect(s.label);
                // A runtime that cannot tell keeps the session: its next turn finds out.
                if (!b.supported || b.state != RADIAL_BOX_ENDED) {
                    out.kept.push_back(s.id);
                    continue;
                }
            }
            if (present) client.kill(s.label);
            turn::release_box_id_lease_of(leases, s.label);
            std::error_code ec;
            std::filesystem::remove_all(session::session_identity_dir(cfg.state_dir, s.id), ec);
            // Where a session made by an earlier radiald kept it.
            std::filesystem::remove_all(turn::box_identity_dir(cfg.state_dir, s.id), ec);
            session::remove_session(cfg.state_dir, s.id);
            out.ended.push_back(s.id);
            session::journal_session_event(
                cfg.state_dir, s.id, "ended",
                expired   ? "its maximum lifetime passed, found by reconciliation"
                : present ? "its box had ended (idle timeout or maximum lifetime), found by "
                            "reconciliation"
                          : "its box is gone (ended and removed, or removed by hand), found by "
                            "reconciliation");
            log::info("reconcile", "session {}: its box {}; removed the session", s.id,
                      expired   ? "passed its maximum lifetime"
                      : present ? "had ended"
                                : "is gone");
        } catch (const std::exception& e) {
            log::warn("reconcile", "session {}: {}; kept for the next reconciliation", s.id,
                      e.what());
            out.kept.push_back(s.id);
        }
    }
    // What a `session create` killed before its record left: its lock, socket and identity
    // directories (the last would refuse the id for good: an identity directory is never taken
    // over).
    std::error_code ec;
    for (const auto& e :
         std::filesystem::directory_iterator(session::sessions_dir(cfg.state_dir), ec)) {
        const auto name = e.path().filename().string();
        for (const char* suffix : {".lock", ".run", ".identity"}) {
            if (!name.ends_with(suffix)) continue;
            const auto id = name.substr(0, name.size() - std::strlen(suffix));
            std::error_code rm;
            if (!std::filesystem::exists(session::sessions_dir(cfg.state_dir) + "/" + id + ".json",
                                         rm) &&
                !rm) {
                std::filesystem::remove_all(e.path(), rm);
                log::info("reconcile", "removed '{}', left by a session create that did not end",
                          e.path().string());
            }
        }
    }
    // A record that exists but cannot be read (not now, or not one radiald wrote) names its box
    // by the label its id gives: that box may be live, and is no stray (its ids stay leased).
    const std::vector<std::string> named = session::session_labels(cfg);
    for (const auto& label : boxes) {
        if (!label.starts_with(prefix)) continue;
        if (std::binary_search(named.begin(), named.end(), label)) {
            log::warn("reconcile",
                      "session box '{}' kept: its session's record cannot be read (said above); "
                      "mend or remove the record, then reconcile again",
                      label);
            continue;
        }
        try {
            client.kill(label);
            turn::release_box_id_lease_of(leases, label);
            out.strays.push_back(label);
            log::info("reconcile", "removed session box '{}', which no session names", label);
        } catch (const std::exception& e) {
            log::warn("reconcile", "removing session box '{}': {}", label, e.what());
        }
    }
    return out;
}

} // namespace radial::daemon
