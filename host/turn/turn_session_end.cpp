// How a TurnSession's record is written once the turn is over (turn_session.h): kept in the
// turn's reserve as soon as the outcome is known, then journaled, then the reserve dropped
// (docs/design.md §11.5).
#include <fmt/format.h>

#include "log/logger.h"
#include "session/session_turn.h"
#include "turn/state_dir_upkeep.h"
#include "turn/turn_session_run.h"

namespace radial::turn {

namespace session_end {

// Every text field of a record through the turn's redactor (the output tails already were).
void redact_strings(TerminalRecord& r, const redaction::Redactor& redactor) {
    for (std::string* field : {&r.image, &r.label, &r.reason, &r.error, &r.journal_error})
        *field = redactor.redact(*field);
}

} // namespace session_end

void TurnSession::keep_outcome(Run& run, const TerminalRecord& ran) {
    if (!run.reserve) return;
    // On disk, so as redacted as the journal's copy would be (docs/design.md §10.2).
    learn_rotated_secrets();
    TerminalRecord kept = ran;
    session_end::redact_strings(kept, redactor_->current());
    if (auto failed = run.reserve->keep(std::move(kept)); !failed.empty())
        log::warn("turn",
                  "turn {}: {}; were radiald to stop before the journal takes the record, the "
                  "turn would be reclaimed without it",
                  request_.turn_id, failed);
}

TerminalRecord TurnSession::finish(Run& run, TerminalRecord r) {
    run.finishing = true;
    const auto& id = request_.turn_id;
    // A session's turn that ended before its exec started left nothing in the box to check: the
    // mark that would bar the session's snapshots goes (session_turn.h).
    if (session_ && run.exec_started_ms == 0)
        session::abandon_session_turn(env_.cfg.state_dir, session_->id, id, r);
    learn_rotated_secrets();
    session_end::redact_strings(r, redactor_->current());
    try {
        env_.journal.set_terminal(id, to_string(r.status), r.to_json());
        // Only now: until the journal has it, the reserve may be the record's only copy (a
        // crash in between is journaled from it by reconciliation, docs/design.md §8.4).
        if (run.reserve) run.reserve->release();
        prune_journal(env_.journal, env_.cfg, id);
        return r;
    } catch (const journal::JournalError& e) {
        r.journal_error = redactor_->current().redact(e.what());
    }
    std::string kept = run.reserve ? run.reserve->keep(r) : std::string("no space was reserved");
    if (kept.empty())
        log::error("journal",
                   "turn {}: {}; its terminal record (status '{}') waits in '{}' until the "
                   "journal can take it",
                   id, r.journal_error, to_string(r.status), run.reserve->path());
    else
        log::error("journal", "turn {}: {}; keeping its terminal record failed too: {}", id,
                   r.journal_error, kept);
    return r;
}

TerminalRecord TurnSession::fail(Run& run, const std::string& message) {
    run.close_socket();
    run.rec.status = TurnStatus::error;
    run.rec.error =
        message; // redacted by finish(), as every text field; the log line by its filter
    run.rec.ended_at = env_.clock->wall();
    log::error("turn", "turn {}: {}", request_.turn_id, run.rec.error);
    return finish(run, run.rec);
}

} // namespace radial::turn
