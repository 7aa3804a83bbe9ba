// host/turn/turn_session.h — everything the host does around one box (docs/design.md
// §3): the journal entry, the per-turn socket and token, the secret set and its redaction, the
// ContainerSpec, the run, and the terminal record. Shared by `radiald turn` and the daemon, so
// that both keep the same promises.
//
// Order of writes, so a crash at any point leaves the journal saying what was in flight:
// "claimed" when the session starts (a new journal entry for `radiald turn`, the queued entry's
// next state for the daemon), "started" before the box starts, the terminal record after the box
// is gone and the socket is closed.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <radial/host/runtime_client.hpp>
#include <string>
#include <string_view>

#include "config/host_config.h"
#include "journal/journal.h"
#include "log/log_redaction.h"
#include "log/logger.h"
#include "redaction/growing_redactor.h"
#include "redaction/stream_redactor.h"
#include "session/session_record.h"
#include "socket/box_socket.h"
#include "time/clock.h"
#include "turn/box_id_lease.h"
#include "turn/codex_rotation_watch.h"
#include "turn/output_drain.h"
#include "turn/terminal_record.h"
#include "turn/turn_request.h"
#include "turn/turn_runner.h"
#include "turn/turn_transport.h"
#include "turn/workspace_lock.h"

namespace radial::pool {
class WarmPool;
class ClaimedBox;
} // namespace radial::pool

namespace radial::turn {

// How a box reaches its turn socket (socket/box_socket.h).
using socket::kBoxSocketDir;
using socket::kSocketEnv;
using socket::kSocketFile;
using socket::kTokenEnv;

// A named point in a session (see TurnEnvironment::checkpoint_for_test): "claimed" (journal says
// claimed), "started" (journal says started, the box not yet asked for), "output" (each output
// chunk, before it is passed on), "terminal" (the box is gone, the terminal record not yet
// written).
using CheckpointFn = std::function<void(std::string_view point, const std::string& turn_id)>;

// What every turn of this host shares. All references must outlive the sessions.
struct TurnEnvironment {
    const config::HostConfig& cfg;
    const host::RuntimeClient& client;
    journal::Journal& journal;
    ResolvedTransport transport;
    // How long after a turn's timeout the host kills a box the runtime has not ended
    // (turn_runner.h). The default in production; in-process tests shorten it so that a runtime
    // that ignores timeouts ends a turn quickly.
    std::chrono::milliseconds host_timeout_grace = kHostTimeoutGrace;
    // Test-only: called at each checkpoint, from the thread running the session; the daemon's
    // crash tests stop a session there and SIGKILL the process (docs/design.md §12 "Tests"). Empty
    // in production.
    CheckpointFn checkpoint_for_test = {};
    // What the turn's timestamps, durations and host-side timeout are taken from, and what its
    // socket's summaries are timed by (docs/design.md §12.7). Not null; must outlive the sessions.
    const time::Clock* clock = &time::system_clock();
    // The daemon's warm pool (pool/warm_pool.h), or null: a turn whose box it can serve claims an
    // idle box of it instead of starting one (docs/design.md §13.14). Must outlive the sessions.
    pool::WarmPool* pool = nullptr;
    // Called on a call's thread once a run radiald gave up on has returned and its turn let go of
    // the workspace and ids it kept (docs/design.md §3.7): the daemon dispatches then, for a turn
    // waiting for that workspace. It may run after everything here is gone: it owns what it uses.
    std::function<void()> after_abandoned_call = {};
};

// How a session enters the journal (docs/design.md §12.3). add_claimed: a new entry in state
// claimed
// (`radiald turn`). claim_queued: the entry exists, queued (`radiald submit`), and moves to
// claimed (the daemon).
enum class JournalStart { add_claimed, claim_queued };

// Output as the operator may see it: already redacted. Called from plugin threads, serialised.
using RedactedOutputFn = std::function<void(std::uint32_t stream, std::string_view bytes)>;

// The exec that runs a turn in a warm pool's box: `spec`'s label, image, argv, env, workdir,
// timeout and user (turn_session_pool.cpp).
ContainerSpec pool_exec(const ContainerSpec& spec);

class TurnSession {
public:
    // Validates the request and builds the turn's secret set: every env value marked secret, the
    // turn token, and [redact]'s extras. Throws RequestError for a bad request or a secret the
    // set refuses (too short, …; the message names the secret, never its value). Touches
    // neither the journal nor the engine.
    TurnSession(const TurnEnvironment& env, TurnRequest request);
    ~TurnSession();
    TurnSession(const TurnSession&) = delete;
    TurnSession& operator=(const TurnSession&) = delete;

    const std::string& turn_id() const noexcept { return request_.turn_id; }

    // Runs the turn to its end (blocks) and returns its terminal record, which is also in the
    // journal — or, when the journal cannot take it (a full disk), carries `journal_error` and
    // waits in the turn's reserve (terminal_reserve.h) for whoever journals it later. Output
    // reaches `out` redacted, as it arrives. A failure of the host or runtime is a record with
    // status error, not an exception, and so is a state file system with less free space than
    // run.minFreeBytes (the box is then never started). Only a journal that refuses the turn's
    // claim throws (JournalError): nothing has started then — with claim_queued that includes a
    // turn that is not (or no longer) queued, which the session then leaves alone. A workspace
    // another turn holds (workspace_lock.h) is an error record unless run.sharedWorkspaces; a
    // caller that took the workspace's lock itself (the daemon, which leaves such a turn queued)
    // passes it as `held`; one that leased the box's ids itself (the daemon, which leaves a turn
    // queued while run.boxIdRange is full) passes them as `held_ids`, leased under the box's
    // label (box_label()). Call once.
    TerminalRecord run(const RedactedOutputFn& out, JournalStart start = JournalStart::add_claimed,
                       std::optional<WorkspaceLock> held = std::nullopt,
                       std::optional<BoxIdLease> held_ids = std::nullopt);

    // Set before run(): called once the box is gone and every byte of its output was passed to
    // `out`; returns what of it could not reach the reader (docs/design.md §3.6). The record says
    // so (outputDropped), and the outcome's line is logged after it returned.
    void set_output_drain(OutputDrainFn drain) { drain_output_ = std::move(drain); }

    // Set before run(): called once the journal holds the turn as claimed, before anything of the
    // box. The daemon masks the spool's copy of the request there: never before the claim, since
    // a turn whose claim failed stays queued and runs later from that copy.
    void set_on_claimed(std::function<void()> f) { on_claimed_ = std::move(f); }

    // Stops the turn, now or when it gets that far; the terminal record says why (StopReason).
    // After its command ended, what radiald still does for it that may take long — the check of
    // a session turn's changes for its secrets — ends too (the session then takes no snapshot).
    // Returns whether a box of the turn was being run (and is now killed). [thread-safe]
    bool interrupt(StopReason why = StopReason::interrupted) noexcept;

    // The compiled secret set of this turn as it is now: it grows while the box runs when the
    // harness refreshes its Codex tokens (docs/design.md §8.7). [thread-safe]
    redaction::Redactor redactor() const { return redactor_->current(); }

private:
    // What one run() holds while it runs (turn_session_run.h).
    struct Run;

    // The steps of run(), in its order (turn_session_steps.cpp). A step that cannot go on returns
    // the problem (a message for the error record); run() then ends the turn through fail().
    void claim(Run& run, JournalStart start);
    // The workspace's lock (or `held`), the session's, and the terminal record's reserve.
    std::optional<std::string> hold(Run& run, std::optional<WorkspaceLock> held);
    // The ids the box runs as: the session's, a pool box's a turn claimed, a namespaced root, or
    // ids leased for this box.
    std::optional<std::string> lease_box_user(Run& run);
    // A warm pool's idle box, when the pool has one of this turn's class: its label, ids and
    // socket directory become the turn's (docs/design.md §13.14).
    void claim_pool_box(Run& run);
    // The turn socket, bound, and placed in the box (socket/box_socket.h); a turn only.
    std::optional<std::string> open_socket(Run& run);
    // The turn's egress broker beside the socket, or the runtime's own policy; a turn only.
    std::optional<std::string> open_egress(Run& run);
    // The box user's passwd, group, home and variables where the box runs as spec.user.
    std::optional<std::string> prepare_box_user(Run& run);
    // Keeps the fingerprints of the turn's secrets in the state directory, before the box can
    // write one to a host path a session's box reads (session/instance_fingerprints.h).
    std::optional<std::string> remember_secrets() const;
    // Starts the box and runs it to its end; returns the terminal record, written.
    TerminalRecord execute(Run& run, const RedactedOutputFn& out);
    // After the box: the workspace given back, the ids and credentials settled, the record
    // completed and written.
    TerminalRecord settle(Run& run, TerminalRecord ran);
    // The outcome, as soon as the box is gone: redacted and synced into the turn's reserve, so a
    // crash before the journal takes the record leaves the true record for reconciliation
    // (docs/design.md §11.5). A failure is logged; finish() still journals the record.
    void keep_outcome(Run& run, const TerminalRecord& ran);
    // The one way a terminal record leaves a session: redacted, into the journal or, when the
    // journal cannot take it, into the turn's reserve.
    TerminalRecord finish(Run& run, TerminalRecord r);
    // An error record with `message`; the socket and broker are closed before it is written.
    TerminalRecord fail(Run& run, const std::string& message);
    void checkpoint(std::string_view point) const;
    // Keeps `run` — the workspace handed over and locked, the session's lock, the leased ids, the
    // box user's home — until the call its runner gave up on returns, then lets go of it on that
    // call's thread, as a turn that ended lets go (docs/design.md §3.7). Never, should the plugin
    // never return: its radiald's exit leaves them as a killed radiald does.
    void keep_until_returned(std::unique_ptr<Run> run) const noexcept;
    // Reads the box's Codex credentials when they changed (codex_rotation_watch.h) and adds the
    // tokens it refreshed to the turn's secrets, its log filter included: called before each
    // piece of output, record and receipt is masked. True when the set grew. [thread-safe]
    bool learn_rotated_secrets();
    // run.codexAuth: watches the box's credentials once its identity exists (as `box_uid`), and
    // writes the rotated ones back to the operator's file once the box is gone.
    void watch_codex_rotation(Run& run, uid_t box_uid);
    void write_codex_back(Run& run);

    // Whether the runtime runs the box as spec.user (rather than superseding or refusing it).
    bool user_is_honoured(const ContainerSpec& spec) const;

    const TurnEnvironment& env_;
    TurnRequest request_;
    // The session the turn runs in (request.session), as recorded at its create.
    std::optional<session::SessionRecord> session_;
    ContainerSpec spec_;
    // What of the box a warm pool's box must have been made with (pool::box_shape), for a turn
    // the pool may serve; unset for any other.
    std::optional<ContainerSpec> pool_shape_;
    // The content digest the box runs (image_pin.h), or the session's; empty when unresolved.
    std::string image_digest_;
    std::string token_;
    // A check's log lines say "check <id>" (log/logger.h), for as long as the session lives.
    std::optional<log::CheckLines> check_lines_;
    std::unique_ptr<redaction::GrowingRedactor> redactor_;
    // redactor_'s secrets masked in every log line for the session's life, from its construction
    // on: a line logged while the spec is built or the image pinned may quote the request.
    // Registered again, under learn_mutex_, each time the set grows.
    log::RedactionRegistration log_redaction_;
    // The secrets redactor_ was compiled from before the box (a session remembers their
    // fingerprints); redactor_->secrets() also holds those learned since.
    std::optional<redaction::SecretSet> secrets_;
    // The box's Codex credentials, watched while it runs (set in prepare_box_user), and the
    // number the next learned token's name takes; both guarded by learn_mutex_.
    std::mutex learn_mutex_;
    std::unique_ptr<CodexRotationWatch> codex_watch_;
    std::size_t next_codex_secret_ = 0;
    // run.codexAuth: the credentials read for this turn, or why they could not be (never both).
    std::optional<std::string> codex_auth_;
    std::string codex_auth_error_;
    // Why the state directory's store of other turns' secrets could not be read; run() ends the
    // turn with it (turn_secrets.h, add_other_turns_secrets).
    std::string store_error_;
    std::function<void()> on_claimed_;
    OutputDrainFn drain_output_;
    std::mutex runner_mutex_; // guards runner_ against interrupt() racing the end of run()
    TurnRunner* runner_ = nullptr;
    std::optional<StopReason> stopped_;        // set by interrupt(), guarded by runner_mutex_
    std::atomic<bool> stop_after_exec_{false}; // set by interrupt(): ends the changes' check
};

} // namespace radial::turn
