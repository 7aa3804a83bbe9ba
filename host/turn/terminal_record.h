// host/turn/terminal_record.h — the record written when a turn is over: how it ended, when,
// and through which runtime (docs/design.md §3).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "journal/journal.h"

namespace radial::turn {

// reclaimed: found in flight by startup reconciliation after the host that ran it stopped
// (docs/design.md §8.3). killed: the daemon shut down and the turn's grace ran out (docs/design.md
// §12.3).
enum class TurnStatus { succeeded, failed, timed_out, error, killed, reclaimed };

// How much of each output stream the terminal record keeps, in bytes.
inline constexpr std::size_t kOutputTailBytes = 4096;

std::string_view to_string(TurnStatus s) noexcept;

struct TerminalRecord {
    std::string turn_id;
    std::string kind = "turn"; // "turn" or "check" (docs/design.md §4)
    std::string runtime;       // plugin id
    std::string image;
    std::string label;
    TurnStatus status = TurnStatus::error;
    std::optional<std::int32_t> exit_code; // the workload's, when it ran to an exit
    std::optional<std::int32_t> signal;    // when a signal ended it
    // With a timeout or interrupt under run.stopGrace: whether the command ended by itself within
    // the grace after SIGTERM (true) or was killed after it (false); unset otherwise, or when the
    // runtime does not honour a grace.
    std::optional<bool> stopped_in_grace;
    std::string reason; // "", "timeout", "killed", "interrupted", "output aborted", "shutdown", …
    std::string error;  // the host's or runtime's message when status == error
    std::string stdout_tail; // the last kOutputTailBytes of each stream, already redacted
    std::string stderr_tail;
    std::chrono::system_clock::time_point started_at;
    std::chrono::system_clock::time_point ended_at;
    std::uint64_t duration_ms = 0;
    std::optional<std::uint64_t> records_received; // set by reconciliation: records the turn posted
    // Connections to the turn socket refused or evicted without the token (or over the limit),
    // when there were any.
    std::optional<std::uint64_t> connections_refused;
    // Output radiald could not deliver to its own reader within run.outputStall, in bytes of each
    // stream, when any was dropped (docs/design.md §3.6).
    struct OutputDropped {
        std::uint64_t stdout_bytes = 0;
        std::uint64_t stderr_bytes = 0;
    };
    std::optional<OutputDropped> output_dropped;
    // Records the box posted that were refused with 507 (a per-turn cap, the state file system's
    // floor, a failing disk; docs/design.md §9.6), when there were any.
    std::optional<std::uint64_t> records_refused;
    // Why the journal could not take this record when the turn ended (e.g. the state file system
    // was full); empty when it did. The record then waits in the turn's reserve
    // (terminal_reserve.h).
    std::string journal_error;
    // A session's exec the runtime said never ran (the box gone before it, or the exec refused:
    // host::SessionClient::exec_never_ran): the box is as the session's last turn left it, so
    // there is nothing to check. Not recorded.
    bool exec_never_ran = false;
    // Of those, one the runtime said never ran because the session's box had ended or was gone
    // (RADIAL_E_NOT_FOUND), not because it refused it now. Not recorded.
    bool session_box_gone = false;
    // radiald gave up on the runtime's run (or a session's exec) of the box after it outlived
    // its kills (docs/design.md §3.7): the box may still run, and keeps its workspace and ids
    // until the call returns or reconciliation removes it.
    bool call_abandoned = false;
    // What handing the workspace back did, when there is something to say (docs/design.md §3.9):
    // entries walked, setuid/setgid files whose bits it cleared, entries of the box's whose write
    // permission for all users it cleared, and whether it reached every entry (a walk stops after
    // turn::kWalkBudget).
    struct Handback {
        std::size_t entries = 0;
        std::size_t setid_cleared = 0;
        bool complete = true;
        std::size_t open_to_all_cleared = 0;
    };
    std::optional<Handback> handback;
    // "uid:gid" the box ran as when radiald leased its ids from run.boxIdRange (box_id_lease.h),
    // or the ids a reclaimed turn's box had.
    std::string box_user;
    // "uid:gid" on the host of a box that ran as root in a user namespace of its own
    // (docs/design.md §8.8); empty otherwise, when boxUser's ids are the host's.
    std::string box_host_user;
    // How long the runtime took to make the box before its command and to remove it after
    // (RADIAL_RUN_PHASE_TIMES), outside the command's timeout (docs/design.md §13.2).
    std::optional<std::uint64_t> create_ms, remove_ms;
    // The session the turn ran in (host/session/), when it ran in one.
    std::string session;
    // The content digest of the image the box ran ("sha256:<hex>", turn/image_pin.h), when the
    // runtime resolved it.
    std::string image_digest;

    // The process exit status `radiald turn` reports: the turn's own exit code; 124 when it timed
    // out (as timeout(1)); 125 when the host or runtime failed (as `docker run`) or the turn was
    // reclaimed; 137 when the host killed it. `interrupted` (radiald turn got SIGINT or SIGTERM):
    // 130 when the record says the interrupt stopped the turn (reason "interrupted", or an error);
    // a command that had already ended by itself keeps its own status (docs/design.md §14.4).
    int cli_exit_status(bool interrupted = false) const noexcept;

    // One JSON object: turnId, kind, runtime, image, label, status, exitCode, signal, reason,
    // error, callAbandoned, outputTail {stdout, stderr}, startedAt / endedAt (RFC 3339 UTC,
    // milliseconds), durationMs, recordsReceived, connectionsRefused, outputDropped {stdoutBytes,
    // stderrBytes}, recordsRefused, journalError, workspaceHandback, boxUser, session, imageDigest.
    // Absent values are omitted.
    std::string to_json() const;
};

// Who a turn is, as each of its terminal records names it: what is known of the turn before
// anything of it ran.
struct TurnSubject {
    std::string turn_id;
    std::string kind = "turn"; // "turn" or "check"
    std::string runtime;
    std::string image; // as written of the request: redacted where a secret is known
    std::string label;
};

// The journal's entry of a turn as its subject.
TurnSubject subject_of(const journal::TurnEntry& entry);

// The one way a terminal record is begun, wherever a turn ends (the session, the runner, the
// daemon's queue, reconciliation, a `radiald turn` that could not start): it names `who` and has
// `status`; the caller adds what the turn's end showed. [pure]
TerminalRecord terminal_record(const TurnSubject& who, TurnStatus status);

// The record of a turn that ended before a box of it ran: status error, `error`, started and
// ended `at`. [pure]
TerminalRecord error_record(const TurnSubject& who, std::string error,
                            std::chrono::system_clock::time_point at);

// RFC 3339 UTC with milliseconds: "2026-11-29T13:15:00.123Z".
std::string format_timestamp(std::chrono::system_clock::time_point t);
// The same for a time the journal stores: milliseconds since the Unix epoch.
std::string format_timestamp_ms(std::int64_t unix_ms);

} // namespace radial::turn
