// host/daemon/turn_queue.h — the spool and the journal read together: which queued turns may run
// now, oldest first (docs/design.md §12.3, §4).
//
// The spool says what to run, the journal where each turn is. A scan reconciles the two: a request
// without a journal entry is journaled queued (it arrived without `radiald submit`, or the
// submitter died between its rename and its journal write); the request of a finished turn is
// removed; a request the daemon cannot read becomes a turn with an `error` terminal record; a turn
// the journal shows queued whose request is gone also gets an `error` record, so nothing submitted
// is silently dropped.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "config/host_config.h"
#include "daemon/spool.h"
#include "journal/journal.h"
#include "redaction/stream_redactor.h"
#include "time/clock.h"

namespace radial::daemon {

struct QueueScan {
    std::vector<std::string> runnable; // queued turns with a request, oldest first
    std::vector<std::string> admitted; // requests journaled as queued by this scan
    std::vector<std::string> cleared;  // requests of finished turns, removed
    std::vector<std::string> rejected; // unreadable requests: error terminal record, removed
    std::vector<std::string> lost;     // queued turns without a request: error terminal record
};

class TurnQueue {
public:
    // All references must outlive the queue. `cfg.instance_id` must be settled. The records it
    // writes are stamped with `clock`'s wall time (docs/design.md §12.7).
    TurnQueue(const config::HostConfig& cfg, journal::Journal& journal, const Spool& spool,
              const time::Clock& clock = time::system_clock())
        : cfg_(cfg), journal_(journal), spool_(spool), clock_(clock) {}

    // One pass over spool and journal (see the file comment). Turns in `active` — the ones this
    // process is running — are left alone entirely. Throws SpoolError or journal::JournalError when
    // the spool or journal cannot be read; a failure with one request is logged and skipped.
    // Not thread-safe: one thread scans (the daemon's dispatcher, or reconcile).
    QueueScan scan(const std::set<std::string>& active);

    // A refusal the journal did not take: the `error` terminal record, as JSON.
    struct UnjournaledRefusal {
        std::string status;
        std::string json;
    };
    // Writes an `error` terminal record for a queued turn that cannot run (bad request, missing
    // secret), and removes its request. When the journal does not take the record, the request
    // stays in the spool (the turn stays queued, nothing is lost) and the record is returned, for
    // the caller to journal later rather than run the turn again. Never throws; failures are
    // logged. With `redactor` (refusal_redactor of its request), the record's image and the
    // journal's copy of the request are masked too: a refusal may come before any turn session
    // masked them (docs/design.md §10.1). [thread-safe]
    std::optional<UnjournaledRefusal> refuse(
        const std::string& turn_id, const std::string& message,
        const redaction::Redactor* redactor = nullptr) noexcept;

    // Removes the request of a turn that has its terminal record. Never throws. [thread-safe]
    void retire(const std::string& turn_id) noexcept;

private:
    void admit(const std::string& turn_id, QueueScan& out);

    const config::HostConfig& cfg_;
    journal::Journal& journal_;
    const Spool& spool_;
    const time::Clock& clock_;
};

} // namespace radial::daemon
