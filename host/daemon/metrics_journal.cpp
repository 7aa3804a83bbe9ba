#include "daemon/metrics_journal.h"

namespace radial::daemon {

std::string_view journal_errc_name(journal::JournalErrc code) noexcept {
    using journal::JournalErrc;
    switch (code) {
        case JournalErrc::duplicate_turn: return "duplicate_turn";
        case JournalErrc::unknown_turn: return "unknown_turn";
        case JournalErrc::turn_finished: return "turn_finished";
        case JournalErrc::bad_transition: return "bad_transition";
        case JournalErrc::invalid_value: return "invalid_value";
        case JournalErrc::newer_schema: return "newer_schema";
        case JournalErrc::storage: return "storage";
    }
    return "unknown";
}

template <class F>
auto MetricsJournal::counted(F&& fn) -> decltype(fn()) {
    try {
        return fn();
    } catch (const journal::JournalError& e) {
        metrics_.journal_error(journal_errc_name(e.code()));
        throw;
    }
}

void MetricsJournal::add_turn(const journal::TurnEntry& entry, journal::TurnState initial) {
    try {
        inner_.add_turn(entry, initial);
    } catch (const journal::JournalError& e) {
        // A queued entry is added by both `radiald submit` and the daemon's spool scan, whichever
        // comes first; the other's duplicate is the race's expected answer, not a failure.
        if (!(initial == journal::TurnState::queued &&
              e.code() == journal::JournalErrc::duplicate_turn))
            metrics_.journal_error(journal_errc_name(e.code()));
        throw;
    }
}
void MetricsJournal::redact_request(std::string_view turn_id, std::string_view image,
                                    std::string_view request_json) {
    counted([&] { inner_.redact_request(turn_id, image, request_json); });
}
void MetricsJournal::set_state(std::string_view turn_id, journal::TurnState state) {
    counted([&] { inner_.set_state(turn_id, state); });
}
void MetricsJournal::set_label(std::string_view turn_id, std::string_view label) {
    counted([&] { inner_.set_label(turn_id, label); });
}
std::uint64_t MetricsJournal::append_record(std::string_view turn_id, std::string_view type,
                                            std::string_view payload_json) {
    return counted([&] { return inner_.append_record(turn_id, type, payload_json); });
}
void MetricsJournal::set_terminal(std::string_view turn_id, std::string_view status,
                                  std::string_view terminal_json) {
    counted([&] { inner_.set_terminal(turn_id, status, terminal_json); });
}
std::optional<journal::TurnDetails> MetricsJournal::turn(std::string_view turn_id) {
    return counted([&] { return inner_.turn(turn_id); });
}
std::vector<journal::TurnSummary> MetricsJournal::recent_turns(std::size_t limit) {
    return counted([&] { return inner_.recent_turns(limit); });
}
std::vector<journal::TurnSummary> MetricsJournal::in_flight() {
    return counted([&] { return inner_.in_flight(); });
}
std::vector<journal::TurnSummary> MetricsJournal::queued() {
    return counted([&] { return inner_.queued(); });
}
std::uint64_t MetricsJournal::prune(std::uint64_t max_age_ms, std::uint64_t max_bytes,
                                    const KeepFn& keep) {
    return counted([&] { return inner_.prune(max_age_ms, max_bytes, keep); });
}

} // namespace radial::daemon
