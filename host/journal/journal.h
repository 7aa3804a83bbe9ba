// host/journal/journal.h — the turn journal: what the host knows about every turn, kept so that a
// crash at any point leaves a record of what was in flight (docs/design.md §11).
//
// Per turn it holds the request (as JSON carrying secret NAMES only — the caller strips values
// before the journal ever sees the request, and the journal adds nothing), each state change in
// order with its time, every accepted record with a per-turn sequence number, and the terminal
// record. The host writes "started" before the box starts and the terminal record after the box
// is gone, so after a crash `in_flight()` names exactly the turns whose boxes may still exist.
//
// Thread-safety: every member function of a Journal may be called from several threads at once
// (the turn-socket thread appends records while the turn thread writes states). The SQLite
// implementation does this with one connection guarded by one mutex, held for the whole of each
// call, so every call is one transaction and calls never interleave. Several processes may also
// open the same file: each write takes SQLite's write lock before it reads what it will change.
//
// Rationale for the state rules: states only move forward (queued → claimed → started) and
// "finished" is reached only through set_terminal(), so a journal never holds a finished turn
// without its terminal record, nor a record appended after it. A refused write changes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace radial::journal {

// Where a turn is in its life. Ordered: a turn only moves to a later state.
enum class TurnState { queued, claimed, started, finished };

// "queued", "claimed", "started", "finished" (the spelling stored and printed). [thread-safe]
constexpr std::string_view to_string(TurnState s) noexcept {
    switch (s) {
        case TurnState::queued: return "queued";
        case TurnState::claimed: return "claimed";
        case TurnState::started: return "started";
        case TurnState::finished: return "finished";
    }
    return "unknown";
}

// Why a journal call was refused, for callers that react differently (e.g. the turn socket answers
// a record after the terminal differently from a full disk). The message says the same in words.
enum class JournalErrc {
    duplicate_turn, // add_turn: the id is already in the journal
    unknown_turn,   // no turn with that id
    turn_finished,  // the turn already has its terminal record
    bad_transition, // a state that is not later than the current one, or `finished` by set_state
    invalid_value,  // empty id or type, or text that is not valid JSON
    newer_schema,   // the file was written by a newer radiald
    storage,        // SQLite or the file system failed (disk full, permissions, damaged file)
};

// Every journal failure. what() reads "<what was being done> in '<journal path>': <cause>; <fix>",
// e.g. "appending a record to turn 't1' in '/var/lib/radial/journal.sqlite3': turn 't1' already
// has its terminal record (status 'succeeded'); records after the terminal are refused".
class JournalError : public std::runtime_error {
public:
    JournalError(JournalErrc code, const std::string& message)
        : std::runtime_error(message), code_(code) {}
    JournalErrc code() const noexcept { return code_; }

private:
    JournalErrc code_;
};

// What the host records when it first learns of a turn. All fields are stored as given.
struct TurnEntry {
    std::string turn_id;       // unique in the journal; not empty
    std::string label;         // the box label, "radial-<kind>-<instanceId>-<turnId>"
    std::string runtime;       // plugin id, e.g. "docker"
    std::string image;         // the image the box runs
    std::string record_type;   // the one record type the turn socket accepts for this turn
    std::string request_json;  // the request as JSON, secret NAMES only (never values)
    std::string kind = "turn"; // "turn" or "check" (docs/design.md §4)
};

// One state change: the state entered and when, in unix milliseconds (the journal's clock).
struct StateChange {
    TurnState state = TurnState::queued;
    std::int64_t at_ms = 0;
};

// One accepted record. `seq` is 1 for a turn's first record, then 2, 3, … with no gaps.
struct StoredRecord {
    std::uint64_t seq = 0;
    std::string type;
    std::string payload_json;
    std::int64_t received_at_ms = 0; // unix milliseconds
};

// Everything the journal holds about one turn.
struct TurnDetails {
    TurnEntry entry;
    std::vector<StateChange> states;          // oldest first; the first is add_turn's initial state
    std::vector<StoredRecord> records;        // by seq
    std::optional<std::string> terminal_json; // present once set_terminal() succeeded
    std::string status;                       // the terminal status; empty until then
};

// One line of a turn listing.
struct TurnSummary {
    std::string turn_id, label, runtime, image;
    TurnState state = TurnState::queued; // the latest state
    std::string status;                  // the terminal status; empty until finished
    std::int64_t created_at_ms = 0;      // unix milliseconds of add_turn
    std::int64_t updated_at_ms = 0;      // unix milliseconds of the latest write to the turn
    std::uint64_t record_count = 0;
    std::string kind = "turn"; // "turn" or "check"
};

// The seam. Implementations: journal_sqlite.h. Every function below is [thread-safe] (see the
// file comment) and throws JournalError (nothing else but std::bad_alloc) when it is refused or
// the store fails; a refused or failed call leaves the journal unchanged.
class Journal {
public:
    virtual ~Journal() = default;

    // Adds a turn in state `initial` (queued, claimed or started) and records that state as its
    // first state change. Errors: duplicate_turn if the id exists; invalid_value for an empty id,
    // `request_json` that is not valid JSON, or `initial` == finished. (docs/design.md §11.1).
    virtual void add_turn(const TurnEntry& entry, TurnState initial) = 0;

    // Replaces the turn's image and request with `image` and `request_json` (a JSON object): their
    // redacted forms, once the secrets a submitted request named are known (the daemon's claim).
    // Throws JournalError(unknown_turn, invalid_value).
    virtual void redact_request(std::string_view turn_id, std::string_view image,
                                std::string_view request_json) = 0;

    // Moves the turn to a later state (queued → claimed → started; skipping is allowed) and records
    // the change with the current time. Durable when it returns (the host relies on "started"
    // being on disk before the box starts). Errors: unknown_turn; turn_finished; bad_transition
    // if `state` is not later than the current one or is finished (use set_terminal).
    // (docs/design.md §11.1).
    virtual void set_state(std::string_view turn_id, TurnState state) = 0;

    // Names the box the turn runs in, when it is not the one its entry was added with (a turn
    // that claimed a warm pool's box, docs/design.md §13.14): what reconciliation looks for.
    // Durable when it returns. Errors: unknown_turn; turn_finished; invalid_value for an empty
    // label.
    virtual void set_label(std::string_view turn_id, std::string_view label) = 0;

    // Stores one accepted record of `type` with its JSON payload and the current time, and returns
    // its sequence number (1 for the turn's first record). Concurrent appends to one turn get
    // distinct, gap-free numbers. Errors: unknown_turn; turn_finished (records after the terminal
    // are refused); invalid_value for an empty type or a payload that is not valid JSON.
    // (docs/design.md §11.1).
    virtual std::uint64_t append_record(std::string_view turn_id, std::string_view type,
                                        std::string_view payload_json) = 0;

    // Stores the terminal record (JSON text) and `status` (e.g. "succeeded"), and moves the turn to
    // finished, in one transaction. From any earlier state (a queued turn can be cancelled).
    // Errors: unknown_turn; turn_finished if it already has one; invalid_value for an empty status
    // or `terminal_json` that is not valid JSON. (docs/design.md §11.1).
    virtual void set_terminal(std::string_view turn_id, std::string_view status,
                              std::string_view terminal_json) = 0;

    // Everything about one turn, or nullopt if the journal has no such turn. (docs/design.md
    // §11.1).
    virtual std::optional<TurnDetails> turn(std::string_view turn_id) = 0;

    // The `limit` most recently added turns, newest first (ties by insertion order).
    // (docs/design.md §11.1).
    virtual std::vector<TurnSummary> recent_turns(std::size_t limit) = 0;

    // Turns claimed or started and without a terminal record, oldest first: after a crash, the
    // turns whose boxes startup reconciliation must look for. (docs/design.md §11.1).
    virtual std::vector<TurnSummary> in_flight() = 0;

    // Turns still queued, oldest first (the order to dispatch them in). (docs/design.md §11.1).
    virtual std::vector<TurnSummary> queued() = 0;

    // Retention (docs/design.md §11.6): removes finished turns — their states, records and
    // terminal records — whose terminal record was written more than `max_age_ms` ago, then,
    // while the file's pages in use hold more than `max_bytes`, the finished turns that ended
    // first. Never a turn without its terminal record, nor one `keep` names (a request still
    // spooled, the turn just finished). At most 512 turns by each bound per call, so one call's
    // transaction stays short; the next call goes on. 0 for a bound: none. Returns how many
    // turns were removed; one transaction.
    using KeepFn = std::function<bool(const std::string& turn_id)>;
    virtual std::uint64_t prune(std::uint64_t max_age_ms, std::uint64_t max_bytes,
                                const KeepFn& keep) = 0;
};

} // namespace radial::journal
