// The steps of TurnSession::run (turn_session.h), in its order.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "config/box_identity.h"
#include "daemon/instance_claim.h"
#include "log/logger.h"
#include "pool/warm_pool.h"
#include "redaction/json_redaction.h"
#include "session/instance_fingerprints.h"
#include "session/session_turn.h"
#include "session/snapshot_record.h"
#include "socket/box_socket.h"
#include "socket/socket_error.h"
#include "turn/box_root.h"
#include "turn/codex_auth.h"
#include "turn/handover_recovery.h"
#include "turn/output_tail.h"
#include "turn/request_policy.h"
#include "turn/state_dir_upkeep.h"
#include "turn/turn_egress.h"
#include "turn/turn_output_log.h"
#include "turn/turn_session_run.h"
#include "turn/workspace_handover.h"

namespace radial::turn {
namespace fs = std::filesystem;

namespace {

// The request as the journal keeps it: secret values replaced by their names, everything else
// through the turn's redactor as well (an argv may quote a secret).
std::string request_json(const TurnRequest& r, const redaction::Redactor& redactor) {
    return redaction::redact_json(redactor, request_journal_json(r));
}
} // namespace

void TurnSession::checkpoint(std::string_view point) const {
    if (env_.checkpoint_for_test) env_.checkpoint_for_test(point, request_.turn_id);
}

void TurnSession::claim(Run& run, JournalStart start) {
    const auto& id = request_.turn_id;
    if (start == JournalStart::claim_queued) {
        // Submitted before its secrets' values were known: masked now that they are, before the
        // claim, so that a journal failing between the two leaves a masked turn still queued (it
        // runs later), never a claimed one that no box runs or one whose request stays unmasked.
        env_.journal.redact_request(id, run.rec.image,
                                    request_json(request_, redactor_->current()));
        // Queued under the one-shot label its id gives: a session's turn runs in the session's
        // box, which reconciliation must find and keep (docs/design.md §13.12).
        if (session_) env_.journal.set_label(id, run.spec.label);
        env_.journal.set_state(id, journal::TurnState::claimed);
    } else {
        env_.journal.add_turn(
            {id, run.spec.label, run.rec.runtime, run.rec.image, request_.record_type,
             request_json(request_, redactor_->current()), run.rec.kind},
            journal::TurnState::claimed);
    }
    if (on_claimed_) on_claimed_();
    checkpoint("claimed");
}

std::optional<std::string> TurnSession::hold(Run& run, std::optional<WorkspaceLock> held) {
    if (auto problem = free_space_problem(env_.cfg.state_dir, env_.cfg.min_free_bytes))
        return problem;
    // One turn per workspace at a time, held until the session ends (workspace_lock.h).
    // Emplaced, not copy-initialised from `held`: GCC 12 then takes the lock's descriptor for
    // maybe-uninitialized.
    if (held) run.workspace_lock.emplace(std::move(*held));
    if (!run.workspace_lock && !request_.workspace.empty() && !env_.cfg.shared_workspaces) {
        try {
            run.workspace_lock = WorkspaceLock::try_acquire_workspace(
                request_.workspace, daemon::default_claim_registry());
        } catch (const std::exception& e) {
            return e.what();
        }
        if (!run.workspace_lock) return workspace_in_use(request_.workspace);
    }
    // Nor beside a box a killed radiald left writing into it: another session's box, or a
    // one-shot turn's, would go on writing beside this one, and this turn's hand-back would take
    // that box's uid for the owner. An earlier exec in this session's own box is no such box: the
    // exec's radial-init ends what it left before the command runs (docs/design.md §13.12).
    const std::string own_box = session_ ? session_->label : std::string();
    std::string orphan_label;
    const auto may_write = box_may_write(env_.client, env_.journal);
    if (const auto orphan =
            run.workspace_lock
                ? orphan_writing_into(handover_marker_dir(env_.cfg.state_dir), request_.workspace,
                                      [&](const std::string& turn_id) {
                                          orphan_label.clear(); // a throw: not another's
                                          const auto t = env_.journal.turn(turn_id);
                                          if (t) orphan_label = t->entry.label;
                                          if (!own_box.empty() && t && t->entry.label == own_box)
                                              return false;
                                          return may_write(turn_id);
                                      })
                : std::string();
        !orphan.empty())
        return orphan_refusal(request_.workspace, orphan, orphan_label, env_.cfg);
    // One turn per session at a time: an exec's end kills what else runs in the box (radial-init
    // as in docs/design.md §13.12), so a second turn would lose its processes.
    if (session_) {
        std::string refused;
        run.session_lock = session::lock_session(env_.cfg.state_dir, session_->id, refused);
        if (!run.session_lock) return refused;
        try {
            session::begin_session_turn(env_.cfg.state_dir, *session_, request_.turn_id);
        } catch (const std::exception& e) {
            return e.what();
        }
    }
    try {
        run.reserve.emplace(TerminalReserve::create(env_.cfg.state_dir, request_.turn_id));
    } catch (const std::exception& e) {
        return e.what();
    }
    return std::nullopt;
}

std::optional<std::string> TurnSession::lease_box_user(Run& run) {
    // Every box its own uid and gid, leased host-wide for as long as the box may run
    // (box_id_lease.h); run.user = "workspace-owner" keeps the owner's uid and leases the gid.
    // Ids the caller leased ahead (run()'s held_ids) serve the last case; any other frees them.
    std::optional<BoxIdLease> ahead;
    if (run.box_ids) ahead.emplace(std::move(*run.box_ids));
    run.box_ids.reset();
    auto& spec = run.spec;
    if (session_) {
        run.rec.box_user = spec.user; // the session holds its ids for as long as its box lives
    } else if (run.pooled) {
        // The pool box's, leased when it was made and freed when it is removed (pool_box.h).
        spec.user = (*run.pooled)->user();
        run.rec.box_user = spec.user;
        if (env_.cfg.box_root)
            run.rec.box_host_user =
                fmt::format("{}:{}", env_.cfg.box_root->first, env_.cfg.box_root->second);
    } else if (env_.cfg.box_root) {
        // Root in a user namespace of its own, an unprivileged id on the host: every box of this
        // runtime shares that id, so nothing is leased (docs/design.md §8.8).
        spec.user = kNamespacedRootUser;
        run.rec.box_user = spec.user;
        run.rec.box_host_user =
            fmt::format("{}:{}", env_.cfg.box_root->first, env_.cfg.box_root->second);
    } else if (config::uses_box_id_range(env_.cfg)) {
        // A warm turn's box may hold the id this turn needs a moment past its turn
        // (WarmPool::wait_reaped): leased again after each removal, for up to a minute.
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        if (ahead) run.box_ids.emplace(std::move(*ahead));
        while (!run.box_ids) {
            const std::uint64_t reaped = env_.pool != nullptr ? env_.pool->reaped() : 0;
            try {
                run.box_ids.emplace(BoxIdLease::acquire(
                    box_id_lease_dir(daemon::default_claim_registry()), env_.cfg.box_id_first,
                    env_.cfg.box_id_last, spec.label, env_.cfg.state_dir));
            } catch (const std::exception& e) {
                // Real time: the engine's removal of a real box (docs/design.md §12.7).
                const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    until - std::chrono::steady_clock::now());
                if (env_.pool == nullptr || left.count() <= 0 ||
                    !env_.pool->wait_reaped(reaped, left))
                    return e.what();
            }
        }
        const auto owner = spec.user.substr(0, spec.user.find(':'));
        spec.user = env_.cfg.user.empty() ? fmt::format("{0}:{0}", run.box_ids->id())
                                          : fmt::format("{}:{}", owner, run.box_ids->id());
        run.rec.box_user = spec.user;
    }
    return std::nullopt;
}

std::optional<std::string> TurnSession::open_socket(Run& run) {
    // The turn socket: bound before the box starts, gone before the terminal record is written.
    const auto& id = request_.turn_id;
    auto& spec = run.spec;
    run.quota.emplace(env_.cfg.state_dir, env_.cfg.max_records_per_turn,
                      env_.cfg.max_record_bytes_per_turn, env_.cfg.min_free_bytes);
    try {
        socket::TurnSocketOptions o;
        o.clock = env_.clock;
        o.token = token_;
        o.record_type = request_.record_type;
        o.max_body_bytes = env_.cfg.max_record_bytes;
        o.log_line = [id](std::string_view line) { log::warn("socket", "turn {}: {}", id, line); };
        o.transport = env_.transport.transport;
        if (o.transport == socket::Transport::unix_socket) {
            if (!session_ && !run.pooled)
                if (auto why = socket::turn_socket_path_problem(env_.cfg.state_dir, id);
                    !why.empty())
                    return why;
            // A session's box has its socket directory mounted since its create.
            // A pool box's since it was made.
            o.unix_path = session_ ? session::session_socket_dir(env_.cfg.state_dir, session_->id) +
                                         "/" + kSocketFile
                          : run.pooled ? (*run.pooled)->socket_dir() + "/" + kSocketFile
                                       : socket::turn_socket_path(env_.cfg.state_dir, id);
            if (::geteuid() == 0) o.unix_owner = box_host_ids(spec.user, env_.cfg.box_root);
        } else {
            o.tcp_host = env_.transport.bind_host;
        }
        auto stored_sink = [this, id, &run](std::string_view type, std::string_view payload) {
            // Value by value, so that the stored record stays JSON (docs/design.md §10.2).
            learn_rotated_secrets();
            const std::string stored = redaction::redact_json(redactor_->current(), payload);
            // The turn's share of the state directory (docs/design.md §9.6), counted in what is
            // stored: a short secret with a long name grows several times under its marker.
            if (auto refused = run.quota->admit(stored.size())) {
                if (run.quota_refused.fetch_add(1) == 0)
                    log::warn("socket", "turn {}: a posted record was refused: {}", id, *refused);
                throw socket::RecordQuotaError(*refused);
            }
            try {
                return env_.journal.append_record(id, type, stored);
            } catch (...) {
                run.quota->release(stored.size()); // not stored: not the turn's share either
                throw;
            }
        };
        auto sink = [id, &run, stored_sink](std::string_view type, std::string_view payload) {
            try {
                return stored_sink(type, payload);
            } catch (const journal::JournalError& e) {
                if (e.code() != journal::JournalErrc::storage) throw;
                // The box is told (507): a record it was not refused for must never look stored.
                if (run.refused_records.fetch_add(1) == 0)
                    log::error("journal", "turn {}: a posted record could not be stored: {}", id,
                               e.what());
                throw socket::StorageError(e.what());
            }
        };
        run.socket_dir = fs::path(o.unix_path).parent_path().string(); // before the move
        run.server.emplace(std::move(o), sink);
        // A session box that mounts unix sockets got its socket directory at create; a turn over
        // tcp would need a network route its create did not ask for. A runtime that mounts none
        // (sandbox) opens the turn's port to the exec instead (hostPorts).
        if (session_ && env_.transport.transport != socket::Transport::unix_socket &&
            env_.client.has_capability(RADIAL_CAP_UNIX_SOCKET_MOUNTS))
            throw TurnSetupError(
                "a session's turn needs the unix turn transport (its box's mounts are fixed at "
                "create); set run.turnTransport = \"unix\"");
        socket::BoxSocket placed;
        placed.transport = env_.transport.transport;
        placed.unix_dir = run.socket_dir;
        placed.mount_dir = !session_ && !run.pooled;
        // The box user is the runtime's default, unknown here: any uid in the box may connect.
        placed.any_uid = !box_host_ids(spec.user, env_.cfg.box_root) || ::geteuid() != 0;
        placed.box_host = env_.transport.box_host;
        placed.port = placed.transport == socket::Transport::tcp ? run.server->port() : 0;
        placed.token = token_;
        socket::place_turn_socket(placed, spec);
    } catch (const std::exception& e) {
        return fmt::format("binding the turn socket failed: {}", e.what());
    }
    return std::nullopt;
}

std::optional<std::string> TurnSession::open_egress(Run& run) {
    // The broker beside the socket (the unix transport: its directory is the box's /run/radial),
    // revoked with the socket when the box is gone (docs/design.md §9.7).
    const auto& id = request_.turn_id;
    try {
        const auto rules = turn_egress_rules(request_, env_.cfg);
        TurnEdges edges{env_.cfg.workspaces.identity_of(request_.workspace),
                        turn_offers(request_, env_.cfg)};
        if (!edges.offers.empty() && egress_by_runtime(env_.client))
            throw TurnSetupError(
                "offer: the runtime enforces egress with its own policy and has no radiald "
                "broker to serve through; run the serving turn on docker with run.docker.boxInit");
        if (!rules.empty() && egress_by_runtime(env_.client)) {
            hand_egress_to_runtime(rules, env_.cfg, env_.client, session_.has_value(), run.spec);
            return std::nullopt;
        }
        if ((!rules.empty() || !edges.offers.empty()) &&
            env_.transport.transport != socket::Transport::unix_socket)
            throw TurnSetupError(
                "egress: the broker is reached through the turn's socket directory, which only "
                "the unix turn transport mounts; set run.turnTransport = \"unix\"");
        std::optional<std::pair<uid_t, gid_t>> owner;
        if (::geteuid() == 0) owner = box_host_ids(run.spec.user, env_.cfg.box_root);
        run.broker = open_turn_egress(
            rules, env_.cfg, env_.client, run.socket_dir, id, owner, run.spec,
            [this] {
                learn_rotated_secrets();
                return redactor_->current();
            },
            [this, id](const std::string& type, const std::string& receipt) {
                env_.journal.append_record(id, type,
                                           redaction::redact_json(redactor_->current(), receipt));
            },
            edges);
    } catch (const std::exception& e) {
        return redactor_->current().redact(e.what());
    }
    return std::nullopt;
}

std::optional<std::string> TurnSession::prepare_box_user(Run& run) {
    // The box user's passwd, group, home and variables (docs/design.md §8.7, C-25): only where
    // the box runs as spec.user and host files keep their ids in it. Elsewhere the runtime's own
    // user and home apply, and the log says so.
    auto& spec = run.spec;
    if (session_ && env_.cfg.codex_auth)
        return "run.codexAuth: a session's turns do not get the Codex credentials yet; run the "
               "turn without --session, or unset run.codexAuth";
    // The session's box got its identity at create, and a pool box when it was made.
    if (session_ || run.pooled) return std::nullopt;
    if (const auto ids = box_host_ids(spec.user, env_.cfg.box_root);
        ids && env_.client.has_capability(RADIAL_CAP_HOST_UID_MOUNTS) && user_is_honoured(spec)) {
        if (!codex_auth_error_.empty()) return codex_auth_error_;
        try {
            run.identity.emplace(box_identity_dir(env_.cfg.state_dir, request_.turn_id), ids->first,
                                 ids->second, codex_auth_, env_.cfg.box_root.has_value());
            run.identity->apply(spec, env_.cfg.home_size_bytes);
            watch_codex_rotation(run, ids->first);
        } catch (const std::exception& e) {
            return fmt::format("preparing the box user's home failed: {}", e.what());
        }
        return std::nullopt;
    }
    // Refused at startup for such runtimes (runtime_setup.cpp); never silently without it.
    if (env_.cfg.codex_auth)
        return fmt::format(
            "run.codexAuth: runtime '{}' does not run the box as '{}' with host-uid mounts, so "
            "it cannot get the Codex credentials",
            run.rec.runtime, spec.user);
    log::info("turn",
              "turn {}: runtime '{}' keeps its own box user and home (it does not run the box as "
              "'{}' with host-uid mounts), so radiald sets no HOME, passwd or group",
              request_.turn_id, run.rec.runtime, spec.user);
    return std::nullopt;
}

std::optional<std::string> TurnSession::remember_secrets() const {
    try {
        session::remember_secrets(env_.cfg.state_dir, *secrets_, kTokenEnv);
    } catch (const std::exception& e) {
        // Never run without it: a snapshot could hold the secret (docs/design.md §13.12).
        return fmt::format(
            "{}; the turn did not start, since a session's snapshot could otherwise "
            "hold one of its secrets unseen",
            e.what());
    }
    return std::nullopt;
}

TerminalRecord TurnSession::execute(Run& run, const RedactedOutputFn& out) {
    const auto& id = request_.turn_id;
    auto& spec = run.spec;
    try {
        env_.journal.set_state(id, journal::TurnState::started);
    } catch (const journal::JournalError& e) {
        return fail(run, fmt::format("the box was not started: {}", e.what()));
    }
    checkpoint("started");
    std::optional<host::SessionClient> sessions;
    if (session_ || run.pooled) {
        try {
            sessions.emplace(host::SessionClient::of(env_.client));
        } catch (const host::RuntimeError& e) {
            return fail(run, e.what());
        }
    }
    if (run.pooled) {
        // The workspace reaches the box now, with the mode's flags from its first moment.
        try {
            (*run.pooled)
                ->bind_workspace(spec.mounts.front().source, spec.mounts.front().read_only);
        } catch (const std::exception& e) {
            return fail(run, fmt::format("binding the workspace into pool box '{}' failed: {}",
                                         spec.label, e.what()));
        }
    }
    TurnRunner runner(env_.client, run.pooled ? pool_exec(spec) : spec, id, env_.host_timeout_grace,
                      std::move(sessions), *env_.clock);
    {
        // One critical section for the check and the registration: a stop that lands between
        // them would otherwise reach neither this check nor the runner.
        std::lock_guard lock(runner_mutex_);
        if (stopped_) {
            run.close_socket();
            const bool shutdown = *stopped_ == StopReason::shutdown;
            run.rec.status = shutdown ? TurnStatus::killed : TurnStatus::failed;
            run.rec.reason = shutdown ? "shutdown" : "interrupted";
            run.rec.ended_at = env_.clock->wall();
            return finish(run, run.rec);
        }
        runner_ = &runner;
    }
    // Unregistered however execute() leaves, a throw included, before the runner is destroyed:
    // a stop arriving then must not reach a runner that is gone. A call the runner gave up on is
    // the run's however it leaves too: a throw after the give-up must not hand the workspace
    // back while the box may still use it (docs/design.md §3.7).
    struct Unregister {
        TurnSession& session;
        Run& run;
        const TurnRunner& runner;
        ~Unregister() {
            std::lock_guard lock(session.runner_mutex_);
            session.runner_ = nullptr;
            if (!run.abandoned) run.abandoned = runner.abandoned_call();
        }
    } unregister{*this, run, runner};
    // The workspace is the box user's while the box runs, its owner's again once it is gone.
    // Only when the runtime runs the box as spec.user: a VM boundary that supersedes it writes
    // as its own user, and the tree must not change hands for nothing.
    // The workspace is the spec's first mount (build_container_spec), at /work or its host path;
    // a session's, as the session recorded it.
    if (const auto ids = box_host_ids(spec.user, env_.cfg.box_root);
        ids && !request_.workspace.empty() && (session_ || run.pooled || user_is_honoured(spec)))
        run.handover.emplace(
            session_ ? session_->workspace : spec.mounts.front().source, ids->first, ids->second,
            handover_marker_dir(env_.cfg.state_dir) + "/" + id,
            // A session's mode as bound to the request: its record's, or run.mode for a record
            // that kept none (session_turn.h).
            session_ ? request_.mode == "workspace-write" : !spec.mounts[0].read_only,
            session_ ? numeric_user(session_->workspace_owner) : std::nullopt,
            session_ ? session_->workspace_id : std::string());
    // The request's host paths (the workspace, then its mounts: build_container_spec's order) as
    // they were checked, as late as radiald can look: a link put on one since would have dockerd
    // mount another tree (docs/design.md §3.4).
    if (run.handover && !run.handover->moved().empty())
        return fail(run, run.handover->moved() + "; the box was not started");
    if (!session_ && !run.pooled) {
        const std::size_t checked = std::min(
            spec.mounts.size(), (request_.workspace.empty() ? 0 : 1) + request_.mounts.size());
        for (std::size_t i = 0; i < checked; ++i)
            if (auto moved = moved_host_source(spec.mounts[i].source); !moved.empty())
                return fail(run, "mount source " + moved + "; the box was not started");
    }
    redaction::StreamRedactor out_redactor = redactor_->current().stream(),
                              err_redactor = redactor_->current().stream();
    std::uint64_t redactor_generation = redactor_->generation();
    std::string stdout_tail, stderr_tail, buffer;
    // The whole output, redacted, for `radiald logs` (docs/design.md §11.7).
    auto output_log = TurnOutputLog::open(env_.cfg.state_dir, id, env_.cfg.turn_log_max_bytes,
                                          env_.cfg.min_free_bytes, *env_.clock);
    auto emit = [&](std::uint32_t stream, std::string_view bytes) {
        if (bytes.empty()) return;
        if (output_log) output_log->write(stream, bytes);
        append_output_tail(stream == RADIAL_STREAM_STDERR ? stderr_tail : stdout_tail, bytes,
                           kOutputTailBytes);
        out(stream, bytes);
    };
    run.exec_started_steady = env_.clock->steady();
    run.exec_started_wall = env_.clock->wall();
    run.exec_started_ms =
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                       run.exec_started_wall.time_since_epoch())
                                       .count());
    TerminalRecord ran = runner.run([&](std::uint32_t stream, std::string_view bytes) {
        checkpoint("output");
        // A token the harness refreshed and wrote before printing it is masked (§8.7).
        learn_rotated_secrets();
        if (const auto g = redactor_->generation(); g != redactor_generation) {
            const auto now = redactor_->current();
            out_redactor.rebase(now);
            err_redactor.rebase(now);
            redactor_generation = g;
        }
        buffer.clear();
        (stream == RADIAL_STREAM_STDERR ? err_redactor : out_redactor).feed(bytes, buffer);
        emit(stream, buffer);
        return true;
    });
    {
        std::lock_guard lock(runner_mutex_);
        runner_ = nullptr;
    }
    run.abandoned = runner.abandoned_call();
    // Used by one turn, never returned: the workspace leaves the box before it is given back, and
    // the pool's reaper removes the box off the turn's path (pool/warm_pool.h).
    if (run.pooled) {
        (*run.pooled)->detach_workspace();
        run.pooled.reset();
    }
    buffer.clear();
    out_redactor.flush(buffer);
    emit(RADIAL_STREAM_STDOUT, buffer);
    buffer.clear();
    err_redactor.flush(buffer);
    emit(RADIAL_STREAM_STDERR, buffer);
    output_log.reset(); // its end record: `radiald logs -f` stops there
    drain_output(drain_output_, id, env_.cfg.output_stall_ms, ran);
    ran.stdout_tail = std::move(stdout_tail);
    ran.stderr_tail = std::move(stderr_tail);

    const auto refused = run.server ? run.server->connection_stats().total() : 0;
    run.close_socket();
    if (refused > 0) ran.connections_refused = refused;
    return settle(run, std::move(ran));
}

TerminalRecord TurnSession::settle(Run& run, TerminalRecord ran) {
    const auto& id = request_.turn_id;
    const auto& spec = run.spec;
    // What the session knew before the box, beside what the runner saw of it: the request's image
    // by name and the digest that ran (image_pin.h), the box's user, the session and the kind.
    ran.box_user = run.rec.box_user;
    ran.box_host_user = run.rec.box_host_user;
    ran.session = run.rec.session;
    ran.image = run.rec.image;
    ran.image_digest = run.rec.image_digest;
    ran.kind = run.rec.kind;
    if (auto n = run.refused_records.load() + run.quota_refused.load()) ran.records_refused = n;
    // Before anything below can take time or fail: the box is gone, its outcome known
    // (docs/design.md §11.5).
    keep_outcome(run, ran);
    // What the exec left in the box may not carry its secrets into a snapshot (docs/design.md
    // §13.12): what changed since it started, or everything when the wall clock was stepped.
    // A call radiald gave up on may still run in the box (docs/design.md §3.7): nothing the box
    // may still use is settled — the session's turn, the workspace, the ids, the credentials —
    // and the run keeps them until the plugin returns (TurnSession::run).
    if (run.abandoned) {
        checkpoint("terminal");
        TerminalRecord done = finish(run, std::move(ran));
        log_outcome(done);
        return done;
    }
    if (session_ && ran.exec_never_ran)
        session::abandon_session_turn(env_.cfg.state_dir, session_->id, id, ran);
    else if (session_)
        session::end_session_turn(
            env_.client, env_.cfg.state_dir, session_->id, id, spec,
            session::manifest_egress(request_.egress, env_.cfg.egress), ran.exit_code,
            ran.status == TurnStatus::error ? ran.error : std::string(), redactor_->secrets(),
            redactor_->current(),
            session::changes_window_start_ms(run.exec_started_wall, run.exec_started_steady,
                                             env_.clock->wall(), env_.clock->steady()),
            *env_.clock, &stop_after_exec_);
    if (session_ && ::geteuid() == 0) {
        // Root's again between turns: the next turn binds its socket there before the box may
        // touch the directory.
        const std::string dir = session::session_socket_dir(env_.cfg.state_dir, session_->id);
        if (::lchown(dir.c_str(), 0, 0) != 0)
            log::warn("turn", "turn {}: taking back '{}': {}", id, dir, std::strerror(errno));
    }
    if (run.handover) {
        run.handover->give_back();
        const WalkReport& back = run.handover->report();
        if (back.setid_cleared > 0 || back.open_to_all_cleared > 0 || !back.complete)
            ran.handback = TerminalRecord::Handback{back.visited, back.setid_cleared, back.complete,
                                                    back.open_to_all_cleared};
        // An exec that ran and ended in the session's box ended what earlier execs left there:
        // this whole hand-back covers their writes too.
        if (session_ && back.complete && !ran.exec_never_ran && ran.status != TurnStatus::error)
            forget_earlier_session_notes(handover_marker_dir(env_.cfg.state_dir), id,
                                         session_->label, run.handover->note_ids(), env_.journal);
    }
    if (auto n = run.refused_records.load())
        log::error("journal",
                   "turn {}: {} posted record(s) could not be stored and were refused (507)", id,
                   n);
    // A box the runtime could not say is gone may still run as its ids: they stay leased until
    // reconciliation removes it (box_id_lease.h).
    bool box_may_live = false;
    if (run.box_ids && ran.status == TurnStatus::error) {
        bool gone = false;
        try {
            gone = !env_.client.lists_box(spec.label);
        } catch (const std::exception&) {
        }
        if (!gone) {
            log::warn("turn",
                      "turn {}: box '{}' may still exist; its ids {} stay leased until 'radiald "
                      "reconcile' removes it",
                      id, spec.label, spec.user);
            run.box_ids->keep_for_reconcile();
            box_may_live = true;
        }
    }
    if (!box_may_live) write_codex_back(run);
    run.box_ids.reset();
    checkpoint("terminal");
    TerminalRecord done = finish(run, std::move(ran));
    log_outcome(done);
    return done;
}

} // namespace radial::turn
