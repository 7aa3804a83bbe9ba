// host/daemon/reconciler.h — startup orphan reconciliation (docs/design.md §8.3, docs/design.md
// §8.4; docs/design.md §8.4).
//
// A daemon killed mid-turn leaves boxes that may still hold a turn's secrets, and journal entries
// that say "claimed" or "started" forever. Before it takes a new turn, the daemon (or `radiald
// reconcile`) therefore:
//   1. lists the boxes labelled "radial-turn-<instanceId>-…" and "radial-check-<instanceId>-…"
//      (turn::instance_label_prefixes) and kills every one — ownership is an exact prefix match,
//      never a substring or regex (case C-04) — then lists again to verify;
//   2. gives every turn the journal shows claimed or started a terminal record: the one it kept
//      when the journal could not take it (terminal_reserve.h), else status "reclaimed" with what
//      was known (start time, records received); then removes what those turns left on the host;
//   3. scans the queue (turn_queue.h): queued turns keep their requests and run again; requests of
//      finished turns are removed; queued turns whose request is gone get an `error` record.
// The caller holds the state directory's exclusive lock, so no live turn of this instance exists.
#pragma once

#include <functional>
#include <radial/host/runtime_client.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/host_config.h"
#include "daemon/session_reconcile.h"
#include "daemon/turn_queue.h"
#include "journal/journal.h"
#include "time/clock.h"

namespace radial::daemon {

struct ReconcileReport {
    std::vector<std::string> killed_boxes;      // labels
    std::vector<std::string> reclaimed_turns;   // turn ids now `reclaimed`
    QueueScan queue;                            // what the queue scan did; runnable = queued again
    std::size_t stale_temp_files = 0;           // half-written submissions removed from spool/tmp
    std::vector<std::string> journaled_pending; // turns whose kept terminal record is now journaled
    std::vector<std::string> still_pending;     // turns whose kept record the journal still refuses
    std::size_t residue_removed = 0;            // per-turn directories and files removed
    SessionReconcile sessions;                  // session_reconcile.h

    // True when the pass changed nothing (a second restart after a clean one).
    bool nothing_done() const noexcept;
};

// The pass could not make its promise: a box of this instance could not be listed or killed, or
// is still there after being killed. The daemon must not start then. what() lists the labels.
class ReconcileError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The labels of boxes that are live turns of this process, asked for after the boxes are listed:
// a box listed then belonged to a turn registered before its box could start, so one missing from
// this set is an orphan (its turn ended, or the process that ran it died).
using LiveLabels = std::function<std::set<std::string>()>;

// Kills every box of this instance whose label `live` does not return, and every box whose label
// is in `recorded` (boxes this state directory recorded, perhaps under another instance id), then
// lists again and throws ReconcileError if one of them is still there. Returns the labels killed.
// Labels the runtime returns that do not start with the prefix they were listed for
// (turn::instance_label_prefixes), or are not the recorded label listed, are ignored (and logged):
// a runtime with a looser filter must not make us kill another instance's box. [thread-safe]
std::vector<std::string> kill_orphan_boxes(const config::HostConfig& cfg,
                                           const host::RuntimeClient& client,
                                           const LiveLabels& live,
                                           const std::vector<std::string>& recorded = {});

// Removes what turns left on the host — their socket directories (<stateDir>/turns/<id>) and the
// space reserved for their terminal records (<stateDir>/pending/<id>.json) — for every turn not in
// `keep`, except a terminal record still waiting for the journal and a session's identity files
// (session/session_record.h). Only call it while no other
// turn of this state directory can be live (the exclusive state-directory lock). Returns how many
// paths it removed; failures are logged. Throws journal::JournalError.
std::size_t sweep_turn_residue(const config::HostConfig& cfg, journal::Journal& journal,
                               const std::set<std::string>& keep);

// Runs the whole startup pass (see the file comment), logging one line per thing it does. Throws
// ReconcileError (boxes), journal::JournalError or SpoolError; the journal and spool parts are
// done even when killing a box failed, and the error is thrown after them. The records it writes
// are stamped with `clock`'s wall time (docs/design.md §12.7).
ReconcileReport reconcile(const config::HostConfig& cfg, const host::RuntimeClient& client,
                          journal::Journal& journal, const Spool& spool,
                          const time::Clock& clock = time::system_clock());

} // namespace radial::daemon
