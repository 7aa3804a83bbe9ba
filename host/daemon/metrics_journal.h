// host/daemon/metrics_journal.h — a journal that counts its failures (docs/design.md §12.6): it
// hands every call to the journal it wraps and, when one throws JournalError, counts it in
// Metrics::journal_error by its code before rethrowing. The daemon and every turn it runs use the
// journal through it, so each failure is counted once, at its source, whoever catches it.
#pragma once

#include "daemon/metrics.h"
#include "journal/journal.h"

namespace radial::daemon {

// Thread-safety: as the wrapped journal's (every call is [thread-safe]); `inner` and `metrics`
// must outlive it. Throws exactly what the wrapped journal throws. One answer is not counted: a
// duplicate_turn from add_turn of a queued entry, which submit and the spool scan race to add.
class MetricsJournal final : public journal::Journal {
public:
    MetricsJournal(journal::Journal& inner, Metrics& metrics) : inner_(inner), metrics_(metrics) {}

    void add_turn(const journal::TurnEntry& entry, journal::TurnState initial) override;
    void redact_request(std::string_view turn_id, std::string_view image,
                        std::string_view request_json) override;
    void set_state(std::string_view turn_id, journal::TurnState state) override;
    void set_label(std::string_view turn_id, std::string_view label) override;
    std::uint64_t append_record(std::string_view turn_id, std::string_view type,
                                std::string_view payload_json) override;
    void set_terminal(std::string_view turn_id, std::string_view status,
                      std::string_view terminal_json) override;
    std::optional<journal::TurnDetails> turn(std::string_view turn_id) override;
    std::vector<journal::TurnSummary> recent_turns(std::size_t limit) override;
    std::vector<journal::TurnSummary> in_flight() override;
    std::vector<journal::TurnSummary> queued() override;
    std::uint64_t prune(std::uint64_t max_age_ms, std::uint64_t max_bytes,
                        const KeepFn& keep) override;

private:
    template <class F>
    auto counted(F&& fn) -> decltype(fn());

    journal::Journal& inner_;
    Metrics& metrics_;
};

// JournalErrc's name as the journal_errors_total label spells it ("storage", "unknown_turn", …).
std::string_view journal_errc_name(journal::JournalErrc code) noexcept;

} // namespace radial::daemon
