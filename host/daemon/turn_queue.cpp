#include "daemon/turn_queue.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "log/logger.h"
#include "redaction/json_redaction.h"
#include "turn/terminal_record.h"
#include "turn/turn_request.h"

namespace radial::daemon {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

// Longer than a submit takes from its spool file to its journal entry.
constexpr std::chrono::seconds kStaleRequest{5};

// Whether the file at `path` was last written before `then`; false when it cannot be told.
bool spooled_before(const std::string& path, time::WallPoint then) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return false;
    const auto written = time::WallPoint(std::chrono::duration_cast<time::WallPoint::duration>(
        std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    return written < then;
}

} // namespace

std::optional<TurnQueue::UnjournaledRefusal> TurnQueue::refuse(
    const std::string& turn_id, const std::string& message,
    const redaction::Redactor* redactor) noexcept {
    std::optional<UnjournaledRefusal> made;
    try {
        turn::TurnSubject who{turn_id, "turn", cfg_.container_runtime, "",
                              turn::turn_label(cfg_, turn_id)};
        if (auto t = journal_.turn(turn_id)) {
            who = turn::subject_of(t->entry);
            if (redactor != nullptr) {
                who.image = redactor->redact(who.image);
                // A secret across the request's tokens leaves no object to keep: then none.
                auto request = nlohmann::json::parse(
                    redaction::redact_json(*redactor, t->entry.request_json), nullptr, false);
                journal_.redact_request(turn_id, who.image,
                                        request.is_object() ? request.dump() : "{}");
            }
        }
        const auto rec = turn::error_record(
            who, redactor != nullptr ? redactor->redact(message) : message, clock_.wall());
        made = UnjournaledRefusal{std::string(to_string(rec.status)), rec.to_json()};
        journal_.set_terminal(turn_id, made->status, made->json);
        log::error("daemon", "turn {}: refused: {}", turn_id, message);
    } catch (const std::exception& e) {
        // The request stays: removed, the turn would be refused later as "gone from the spool",
        // its real reason lost (docs/design.md §12.2).
        log::error("daemon",
                   "turn {}: refused: {}; recording that failed ({}), so its request "
                   "stays in the spool",
                   turn_id, message, e.what());
        return made;
    }
    retire(turn_id);
    return std::nullopt;
}

void TurnQueue::retire(const std::string& turn_id) noexcept {
    try {
        spool_.remove(turn_id);
    } catch (const std::exception& e) {
        // The next scan sees a finished turn's request and removes it then.
        log::warn("spool", "turn {}: {}", turn_id, e.what());
    }
}

void TurnQueue::admit(const std::string& id, QueueScan& out) {
    std::optional<SpooledRequest> req;
    try {
        req = spool_.load(id);
        if (!req) return; // gone meanwhile
    } catch (const SpoolBusy& e) {
        log::warn("spool", "turn {}: {}", id, e.what()); // admitted at a later scan
        return;
    } catch (const SpoolError& e) {
        // Journaled as a turn of its own, so the operator finds out why it never ran.
        journal::TurnEntry entry{
            id, turn::turn_label(cfg_, id), cfg_.container_runtime, "", "result", "{}"};
        try {
            journal_.add_turn(entry, journal::TurnState::queued);
        } catch (const journal::JournalError& je) {
            if (je.code() != journal::JournalErrc::duplicate_turn) throw;
        }
        refuse(id, e.what());
        out.rejected.push_back(id);
        return;
    }
    try {
        journal_.add_turn(queued_entry(*req, cfg_), journal::TurnState::queued);
        // The daemon's watch usually sees a submit's request a moment before the submit journals
        // it, which is no news; a request that waited longer is what this exists for: a submit
        // that died between the two (docs/design.md §12.1).
        const bool stale = spooled_before(spool_.request_path(id), clock_.wall() - kStaleRequest);
        log::write(stale ? log::Level::info : log::Level::debug, "spool",
                   fmt::format("turn {}: queued (its request was in the spool before its "
                               "journal entry)",
                               id));
        out.admitted.push_back(id);
    } catch (const journal::JournalError& e) {
        // The submitter wrote it between our two reads: it is queued either way.
        if (e.code() != journal::JournalErrc::duplicate_turn) throw;
    }
    if (auto t = journal_.turn(id);
        t && !t->states.empty() && t->states.back().state == journal::TurnState::queued)
        out.runnable.push_back(id);
}

QueueScan TurnQueue::scan(const std::set<std::string>& active) {
    QueueScan out;
    // The journal first, then the spool: a turn journaled queued had its request renamed into the
    // spool before (submit's order), so a queued turn missing from the later listing is truly gone.
    std::vector<journal::TurnSummary> queued = journal_.queued();
    std::vector<std::string> files = spool_.list();
    std::set<std::string> queued_ids;
    for (const auto& t : queued) queued_ids.insert(t.turn_id);

    for (const auto& t : queued)
        if (!active.count(t.turn_id) && std::binary_search(files.begin(), files.end(), t.turn_id))
            out.runnable.push_back(t.turn_id);
    for (const auto& id : files) {
        if (active.count(id) || queued_ids.count(id)) continue;
        try {
            auto t = journal_.turn(id);
            if (!t) {
                admit(id, out);
            } else if (t->terminal_json && !t->states.empty() &&
                       t->states.front().state != journal::TurnState::queued) {
                // The journal's turn never waited in the queue: a `radiald turn` ran under this
                // id, and this request never ran. Kept, not removed (docs/design.md §12.1).
                spool_.set_aside(id,
                                 "its turn id was taken by a turn run directly ('radiald "
                                 "turn') before the daemon ran it; it never ran: submit it "
                                 "again under another id");
                out.rejected.push_back(id);
            } else if (t->terminal_json) {
                retire(id);
                out.cleared.push_back(id);
            } else if (!t->states.empty() && t->states.back().state == journal::TurnState::queued) {
                out.runnable.push_back(id); // submitted after the journal snapshot
            }
            // claimed or started and not ours: in flight elsewhere (reconciliation's business).
        } catch (const journal::JournalError& e) {
            log::error("spool", "turn {}: {}", id, e.what());
        }
    }
    for (const auto& t : queued) {
        const auto& id = t.turn_id;
        if (active.count(id) || std::binary_search(files.begin(), files.end(), id) ||
            contains(out.runnable, id))
            continue;
        auto now = journal_.turn(id);
        if (!now || now->states.empty() || now->states.back().state != journal::TurnState::queued)
            continue;
        refuse(id, fmt::format("its request '{}' is gone from the spool; submit the turn again",
                               spool_.request_path(id)));
        out.lost.push_back(id);
    }
    return out;
}

} // namespace radial::daemon
