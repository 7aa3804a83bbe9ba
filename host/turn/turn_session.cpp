#include "turn/turn_session.h"

#include <fmt/format.h>
#include <radial/internal/names.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>

#include "config/box_identity.h"
#include "daemon/instance_claim.h"
#include "log/log_redaction.h"
#include "log/logger.h"
#include "redaction/json_redaction.h"
#include "session/session_turn.h"
#include "socket/socket_error.h"
#include "socket/turn_socket_server.h"
#include "socket/turn_token.h"
#include "turn/box_id_lease.h"
#include "turn/box_root.h"
#include "turn/box_user_env.h"
#include "turn/codex_auth.h"
#include "turn/image_pin.h"
#include "turn/output_drain.h"
#include "turn/output_tail.h"
#include "turn/record_quota.h"
#include "turn/state_dir_upkeep.h"
#include "turn/terminal_reserve.h"
#include "turn/turn_egress.h"
#include "turn/turn_output_log.h"
#include "turn/turn_secrets.h"
#include "turn/workspace_handover.h"

namespace radial::turn {
namespace fs = std::filesystem;

namespace {

// The request as the journal keeps it: secret values replaced by their names, everything else
// through the turn's redactor as well (an argv may quote a secret).
std::string request_json(const TurnRequest& r, const redaction::Redactor& redactor) {
    return redaction::redact_json(redactor, request_journal_json(r));
}

// Every text field of a record through the turn's redactor (the output tails already were).
void redact_strings(TerminalRecord& r, const redaction::Redactor& redactor) {
    for (std::string* field : {&r.image, &r.label, &r.reason, &r.error, &r.journal_error})
        *field = redactor.redact(*field);
}

} // namespace

bool TurnSession::user_is_honoured(const ContainerSpec& spec) const {
    try {
        for (const auto& d : env_.client.describe(spec))
            if (d.field == RADIAL_FIELD_USER) return d.disposition == RADIAL_DISP_HONOURED;
    } catch (const host::RuntimeError&) {
        // The run reports the runtime's failure; the hand-over is moot then.
        return false;
    }
    return true;
}

TurnSession::TurnSession(const TurnEnvironment& env, TurnRequest request)
    : env_(env), request_(std::move(request)), token_(socket::mint_turn_token()) {
    if (request_.turn_id.empty()) request_.turn_id = new_turn_id();
    if (request_.record_type.empty()) throw RequestError("the record type must not be empty");
    try {
        redaction::SecretSet secrets = secrets_before_the_box(request_, env_.cfg.redact);
        secrets.add(kTokenEnv, token_);
        // Managed Codex auth: read once per turn, its tokens masked like every other secret.
        if (env_.cfg.codex_auth) {
            // Under the file's lock, beside other turns' write-backs (codex_auth.h).
            if (auto text =
                    read_codex_auth(codex_auth_path(env_.cfg.codex_auth_file), codex_auth_error_)) {
                std::size_t i = 0;
                for (const auto& v : codex_auth_secrets(*text, env_.cfg.redact.min_length))
                    secrets.add(fmt::format("codexAuth.{}", i++), v);
                codex_auth_ = std::move(*text);
            }
        }
        redactor_ = std::make_unique<redaction::Redactor>(secrets);
        secrets_ = std::move(secrets);
    } catch (const std::invalid_argument& e) {
        throw RequestError(e.what());
    }
    // A refusal may quote the request (an image or a mount that holds a secret): masked too.
    try {
        if (!request_.session.empty()) {
            session_ = session::load_session(env_.cfg.state_dir, request_.session);
            if (!session_)
                throw RequestError(
                    fmt::format("session '{}' is not one of this state directory's; create it with "
                                "'radiald session create', or see 'radiald session ls'",
                                request_.session));
            session::bind_request_to_session(request_, *session_);
        }
        spec_ = build_container_spec(request_, env_.cfg);
        // Pinned once, here: the daemon's claim and `radiald turn` alike (docs/design.md §6.5).
        if (session_) {
            session::make_session_exec(spec_, *session_);
            image_digest_ = session_->image_digest;
        } else {
            image_digest_ = pin_image(spec_, request_.image, env_.client, env_.cfg);
        }
    } catch (const RequestError& e) {
        throw RequestError(redactor_->redact(e.what()));
    } catch (const TurnSetupError& e) {
        throw TurnSetupError(redactor_->redact(e.what()));
    }
}

TurnSession::~TurnSession() = default;

void TurnSession::interrupt(StopReason why) noexcept {
    std::lock_guard lock(runner_mutex_);
    stopped_ = why;
    if (runner_ != nullptr) runner_->interrupt(why);
}

// GCC 12 at -O2 reports the descriptor inside a moved-from std::optional<WorkspaceLock> as
// "may be used uninitialized" (a known false positive of its optional analysis); the optional is
// engaged only through its constructors, so the warning is off for this function alone.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
TerminalRecord TurnSession::run(const RedactedOutputFn& out, JournalStart start,
                                std::optional<WorkspaceLock> held) {
    auto log_redaction = log::redact_log_lines(*redactor_);
    const auto& id = request_.turn_id;

    ContainerSpec spec = spec_;
    TerminalRecord rec;
    rec.turn_id = id;
    rec.kind = std::string(to_string(request_.kind));
    rec.runtime = env_.client.info().id;
    // What is written of the request (the record, the journal's columns) is redacted: an image
    // name or a path may hold a secret (docs/design.md §10.2).
    rec.image = redactor_->redact(request_.image);
    rec.label = spec.label;
    rec.image_digest = image_digest_;
    if (session_) rec.session = session_->id;
    rec.started_at = env_.clock->wall();

    auto checkpoint = [&](std::string_view point) {
        if (env_.checkpoint_for_test) env_.checkpoint_for_test(point, id);
    };
    if (start == JournalStart::claim_queued) {
        env_.journal.set_state(id, journal::TurnState::claimed);
        // Submitted before its secrets' values were known: masked now that they are.
        env_.journal.redact_request(id, rec.image, request_json(request_, *redactor_));
    } else {
        env_.journal.add_turn({id, spec.label, rec.runtime, rec.image, request_.record_type,
                               request_json(request_, *redactor_), rec.kind},
                              journal::TurnState::claimed);
    }
    checkpoint("claimed");

    // Every terminal record goes through here: into the journal, or — when the journal cannot
    // take it (a full disk) — into the space the turn reserved, and onto the record either way.
    std::optional<TerminalReserve> reserve;
    auto finish = [&](TerminalRecord r) {
        redact_strings(r, *redactor_);
        try {
            env_.journal.set_terminal(id, to_string(r.status), r.to_json());
            if (reserve) reserve->release();
            prune_journal(env_.journal, env_.cfg, id);
            return r;
        } catch (const journal::JournalError& e) {
            r.journal_error = redactor_->redact(e.what());
        }
        std::string kept = reserve ? reserve->keep(r) : std::string("no space was reserved");
        if (kept.empty())
            log::error("journal",
                       "turn {}: {}; its terminal record (status '{}') waits in '{}' until the "
                       "journal can take it",
                       id, r.journal_error, to_string(r.status), reserve->path());
        else
            log::error("journal", "turn {}: {}; keeping its terminal record failed too: {}", id,
                       r.journal_error, kept);
        return r;
    };
    auto fail = [&](const std::string& message) {
        rec.status = TurnStatus::error;
        rec.error =
            message; // redacted by finish(), as every text field; the log line by its filter
        rec.ended_at = env_.clock->wall();
        log::error("turn", "turn {}: {}", id, rec.error);
        return finish(rec);
    };

    if (auto problem = free_space_problem(env_.cfg.state_dir, env_.cfg.min_free_bytes))
        return fail(*problem);
    // One turn per workspace at a time, held until the session ends (workspace_lock.h).
    // Emplaced, not copy-initialised from `held`: GCC 12 then takes the lock's descriptor for
    // maybe-uninitialized.
    std::optional<WorkspaceLock> workspace_lock;
    if (held) workspace_lock.emplace(std::move(*held));
    if (!workspace_lock && !request_.workspace.empty() && !env_.cfg.shared_workspaces) {
        try {
            workspace_lock = WorkspaceLock::try_acquire(request_.workspace);
        } catch (const std::exception& e) {
            return fail(e.what());
        }
        if (!workspace_lock) return fail(workspace_in_use(request_.workspace));
    }
    // One turn per session at a time: an exec's end kills what else runs in the box (radial-init
    // as in docs/design.md §13.12), so a second turn would lose its processes.
    std::unique_ptr<WorkspaceLock> session_lock;
    if (session_) {
        std::string refused;
        session_lock = session::lock_session(env_.cfg.state_dir, session_->id, refused);
        if (!session_lock) return fail(refused);
        try {
            session::begin_session_turn(env_.cfg.state_dir, session_->id, id);
        } catch (const std::exception& e) {
            return fail(e.what());
        }
    }
    try {
        reserve.emplace(TerminalReserve::create(env_.cfg.state_dir, id));
    } catch (const std::exception& e) {
        return fail(e.what());
    }
    // Every box its own uid and gid, leased host-wide for as long as the box may run
    // (box_id_lease.h); run.user = "workspace-owner" keeps the owner's uid and leases the gid.
    std::optional<BoxIdLease> box_ids;
    if (session_) {
        rec.box_user = spec.user; // the session holds its ids for as long as its box lives
    } else if (env_.cfg.box_root) {
        // Root in a user namespace of its own, an unprivileged id on the host: every box of this
        // runtime shares that id, so nothing is leased (docs/design.md §8.8).
        spec.user = kNamespacedRootUser;
        rec.box_user = spec.user;
        rec.box_host_user =
            fmt::format("{}:{}", env_.cfg.box_root->first, env_.cfg.box_root->second);
    } else if (config::uses_box_id_range(env_.cfg)) {
        try {
            box_ids.emplace(BoxIdLease::acquire(box_id_lease_dir(daemon::default_claim_registry()),
                                                env_.cfg.box_id_first, env_.cfg.box_id_last,
                                                spec.label, env_.cfg.state_dir));
        } catch (const std::exception& e) {
            return fail(e.what());
        }
        const auto owner = spec.user.substr(0, spec.user.find(':'));
        spec.user = env_.cfg.user.empty() ? fmt::format("{0}:{0}", box_ids->id())
                                          : fmt::format("{}:{}", owner, box_ids->id());
        rec.box_user = spec.user;
    }

    // The turn socket: bound before the box starts, gone before the terminal record is written.
    // A check gets none, and so no token either: it posts no records, its outcome is its exit
    // status and output (docs/design.md §4).
    std::atomic<std::uint64_t> refused_records{0}; // 507: the journal could not store them
    std::atomic<std::uint64_t> quota_refused{0};   // 507: past the turn's share
    RecordQuota quota(env_.cfg.state_dir, env_.cfg.max_records_per_turn,
                      env_.cfg.max_record_bytes_per_turn, env_.cfg.min_free_bytes);
    std::optional<socket::TurnSocketServer> server;
    // The turn's egress, when it names any; reset before `server` wherever that is, so its socket
    // is out of the directory before the server removes it.
    std::unique_ptr<egress::EgressBroker> broker;
    std::string egress_dir; // the socket directory, on the host
    if (request_.kind == RequestKind::turn) {
        try {
            socket::TurnSocketOptions o;
            o.clock = env_.clock;
            o.token = token_;
            o.record_type = request_.record_type;
            o.max_body_bytes = env_.cfg.max_record_bytes;
            o.log_line = [id](std::string_view line) {
                log::warn("socket", "turn {}: {}", id, line);
            };
            o.transport = env_.transport.transport;
            if (o.transport == socket::Transport::unix_socket) {
                fs::path turns = fs::path(env_.cfg.state_dir) / "turns";
                fs::create_directories(turns);
                // Only root enters the turns directory: a box reaches its socket through a mount.
                ::chmod(turns.c_str(), 0700);
                o.unix_path = (turns / id / kSocketFile).string();
                // A session's box has its socket directory mounted since its create.
                if (session_)
                    o.unix_path = session::session_socket_dir(env_.cfg.state_dir, session_->id) +
                                  "/" + kSocketFile;
                if (::geteuid() == 0) o.unix_owner = box_host_ids(spec.user, env_.cfg.box_root);
            } else {
                o.tcp_host = env_.transport.bind_host;
            }
            auto stored_sink = [this, id, &quota_refused, &quota](std::string_view type,
                                                                  std::string_view payload) {
                // The turn's share of the state directory (docs/design.md §9.6).
                if (auto refused = quota.admit(payload.size())) {
                    if (quota_refused.fetch_add(1) == 0)
                        log::warn("socket", "turn {}: a posted record was refused: {}", id,
                                  *refused);
                    throw socket::RecordQuotaError(*refused);
                }
                try {
                    // Value by value, so that the stored record stays JSON (docs/design.md §10.2).
                    return env_.journal.append_record(id, type,
                                                      redaction::redact_json(*redactor_, payload));
                } catch (...) {
                    quota.release(payload.size()); // not stored: not the turn's share either
                    throw;
                }
            };
            auto sink = [id, &refused_records, stored_sink](std::string_view type,
                                                            std::string_view payload) {
                try {
                    return stored_sink(type, payload);
                } catch (const journal::JournalError& e) {
                    if (e.code() != journal::JournalErrc::storage) throw;
                    // The box is told (507): a record it was not refused for must never look
                    // stored.
                    if (refused_records.fetch_add(1) == 0)
                        log::error("journal", "turn {}: a posted record could not be stored: {}",
                                   id, e.what());
                    throw socket::StorageError(e.what());
                }
            };
            const fs::path socket_dir = fs::path(o.unix_path).parent_path(); // before the move
            egress_dir = socket_dir.string();
            server.emplace(std::move(o), sink);
            // A session box that mounts unix sockets got its socket directory at create; a turn
            // over tcp would need a network route its create did not ask for. A runtime that
            // mounts none (sandbox) opens the turn's port to the exec instead (hostPorts).
            if (session_ && env_.transport.transport != socket::Transport::unix_socket &&
                env_.client.has_capability(RADIAL_CAP_UNIX_SOCKET_MOUNTS))
                throw TurnSetupError(
                    "a session's turn needs the unix turn transport (its box's "
                    "mounts are fixed at create); set run.turnTransport = "
                    "\"unix\"");
            if (env_.transport.transport == socket::Transport::unix_socket) {
                const fs::path& dir = socket_dir;
                if (!box_host_ids(spec.user, env_.cfg.box_root) || ::geteuid() != 0) {
                    // The box user is the runtime's default, unknown here: let any uid in the box
                    // connect. The 0700 turns directory still keeps every other local user out.
                    ::chmod(dir.c_str(), 0711);
                    ::chmod((dir / kSocketFile).c_str(), 0666);
                }
                if (!session_) spec.mounts.push_back({dir.string(), kBoxSocketDir, false});
                spec.env.push_back(
                    {kSocketEnv, fmt::format("unix://{}/{}", kBoxSocketDir, kSocketFile), false});
            } else {
                spec.host_ports.push_back(server->port());
                spec.env.push_back(
                    {kSocketEnv,
                     fmt::format("tcp://{}:{}", env_.transport.box_host, server->port()), false});
            }
            spec.env.push_back({kTokenEnv, token_, true});
        } catch (const std::exception& e) {
            return fail(fmt::format("binding the turn socket failed: {}", e.what()));
        }
        // The broker beside the socket (the unix transport: its directory is the box's
        // /run/radial), revoked with the socket when the box is gone (docs/design.md §9.7).
        try {
            const auto rules = turn_egress_rules(request_, env_.cfg);
            if (!rules.empty() && egress_by_runtime(env_.client)) {
                hand_egress_to_runtime(rules, env_.cfg, env_.client, session_.has_value(), spec);
            } else {
                if (!rules.empty() && env_.transport.transport != socket::Transport::unix_socket)
                    throw TurnSetupError(
                        "egress: the broker is reached through the turn's socket directory, "
                        "which only the unix turn transport mounts; set run.turnTransport = "
                        "\"unix\"");
                std::optional<std::pair<uid_t, gid_t>> owner;
                if (::geteuid() == 0) owner = box_host_ids(spec.user, env_.cfg.box_root);
                broker = open_turn_egress(
                    rules, env_.cfg, env_.client, egress_dir, id, owner, spec,
                    [this, id](const std::string& type, const std::string& receipt) {
                        env_.journal.append_record(id, type,
                                                   redaction::redact_json(*redactor_, receipt));
                    });
            }
        } catch (const std::exception& e) {
            server.reset();
            return fail(redactor_->redact(e.what()));
        }
    }

    // The box user's passwd, group, home and variables (docs/design.md §8.7, C-25): only where
    // the box runs as spec.user and host files keep their ids in it. Elsewhere the runtime's own
    // user and home apply, and the log says so.
    std::optional<BoxIdentity> identity;
    if (session_ && env_.cfg.codex_auth) {
        broker.reset();
        server.reset();
        return fail(
            "run.codexAuth: a session's turns do not get the Codex credentials yet; run "
            "the turn without --session, or unset run.codexAuth");
    } else if (session_) {
        // The session's box got its identity at create (session_command.cpp).
    } else if (const auto ids = box_host_ids(spec.user, env_.cfg.box_root);
               ids && env_.client.has_capability(RADIAL_CAP_HOST_UID_MOUNTS) &&
               user_is_honoured(spec)) {
        if (!codex_auth_error_.empty()) {
            broker.reset();
            server.reset();
            return fail(codex_auth_error_);
        }
        try {
            identity.emplace(env_.cfg.state_dir, id, ids->first, ids->second, codex_auth_,
                             env_.cfg.box_root.has_value());
            identity->apply(spec, env_.cfg.home_size_bytes);
        } catch (const std::exception& e) {
            broker.reset();
            server.reset();
            return fail(fmt::format("preparing the box user's home failed: {}", e.what()));
        }
    } else if (env_.cfg.codex_auth) {
        // Refused at startup for such runtimes (runtime_setup.cpp); never silently without it.
        broker.reset();
        server.reset();
        return fail(
            fmt::format("run.codexAuth: runtime '{}' does not run the box as '{}' with "
                        "host-uid mounts, so it cannot get the Codex credentials",
                        rec.runtime, spec.user));
    } else {
        log::info("turn",
                  "turn {}: runtime '{}' keeps its own box user and home (it does not run the box "
                  "as '{}' with host-uid mounts), so radiald sets no HOME, passwd or group",
                  id, rec.runtime, spec.user);
    }

    try {
        env_.journal.set_state(id, journal::TurnState::started);
    } catch (const journal::JournalError& e) {
        broker.reset();
        server.reset();
        return fail(fmt::format("the box was not started: {}", e.what()));
    }
    checkpoint("started");
    std::optional<host::SessionClient> sessions;
    if (session_) {
        try {
            sessions.emplace(host::SessionClient::of(env_.client));
        } catch (const host::RuntimeError& e) {
            broker.reset();
            server.reset();
            return fail(e.what());
        }
    }
    TurnRunner runner(env_.client, spec, id, env_.host_timeout_grace, std::move(sessions),
                      *env_.clock);
    {
        // One critical section for the check and the registration: a stop that lands between
        // them would otherwise reach neither this check nor the runner.
        std::lock_guard lock(runner_mutex_);
        if (stopped_) {
            broker.reset();
            server.reset();
            bool shutdown = *stopped_ == StopReason::shutdown;
            rec.status = shutdown ? TurnStatus::killed : TurnStatus::failed;
            rec.reason = shutdown ? "shutdown" : "interrupted";
            rec.ended_at = env_.clock->wall();
            return finish(rec);
        }
        runner_ = &runner;
    }
    // The workspace is the box user's while the box runs, its owner's again once it is gone.
    // Only when the runtime runs the box as spec.user: a VM boundary that supersedes it writes
    // as its own user, and the tree must not change hands for nothing.
    std::optional<WorkspaceHandover> handover;
    // The workspace is the spec's first mount (build_container_spec), at /work or its host path;
    // a session's, as the session recorded it.
    if (const auto ids = box_host_ids(spec.user, env_.cfg.box_root);
        ids && !request_.workspace.empty() && (session_ || user_is_honoured(spec)))
        handover.emplace(
            session_ ? session_->workspace : spec.mounts.front().source, ids->first, ids->second,
            handover_marker_dir(env_.cfg.state_dir) + "/" + id,
            session_ ? session_->mode == "workspace-write" : !spec.mounts[0].read_only);
    redaction::StreamRedactor out_redactor = redactor_->stream(),
                              err_redactor = redactor_->stream();
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
    const auto exec_started_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(env_.clock->wall().time_since_epoch())
            .count());
    TerminalRecord ran = runner.run([&](std::uint32_t stream, std::string_view bytes) {
        checkpoint("output");
        buffer.clear();
        (stream == RADIAL_STREAM_STDERR ? err_redactor : out_redactor).feed(bytes, buffer);
        emit(stream, buffer);
        return true;
    });
    {
        std::lock_guard lock(runner_mutex_);
        runner_ = nullptr;
    }
    buffer.clear();
    out_redactor.flush(buffer);
    emit(RADIAL_STREAM_STDOUT, buffer);
    buffer.clear();
    err_redactor.flush(buffer);
    emit(RADIAL_STREAM_STDERR, buffer);
    output_log.reset(); // its end record: `radiald logs -f` stops there
    drain_output(drain_output_, id, env_.cfg.output_stall_ms, ran);

    const auto refused = server ? server->connection_stats().total() : 0;
    broker.reset(); // every connection of the box closed, each receipt written, its socket gone
    server.reset(); // the socket path is gone and the token worthless from here on
    // What the exec left in the box may not carry its secrets into a snapshot (docs/design.md
    // §13.12). A second's slack: an inode's change time is coarser than the clock read above.
    if (session_)
        session::end_session_turn(env_.client, env_.cfg.state_dir, session_->id, id, spec,
                                  ran.exit_code, *secrets_, *redactor_,
                                  exec_started_ms > 1000 ? exec_started_ms - 1000 : 0);
    if (session_ && ::geteuid() == 0) {
        // Root's again between turns: the next turn binds its socket there before the box may
        // touch the directory.
        const std::string dir = session::session_socket_dir(env_.cfg.state_dir, session_->id);
        if (::lchown(dir.c_str(), 0, 0) != 0)
            log::warn("turn", "turn {}: taking back '{}': {}", id, dir, std::strerror(errno));
    }
    if (handover) {
        handover->give_back();
        const WalkReport& back = handover->report();
        if (back.setid_cleared > 0 || !back.complete)
            ran.handback =
                TerminalRecord::Handback{back.visited, back.setid_cleared, back.complete};
    }
    if (refused > 0) ran.connections_refused = refused;
    if (auto n = refused_records.load())
        log::error("journal",
                   "turn {}: {} posted record(s) could not be stored and were refused "
                   "(507)",
                   id, n);

    // A box the runtime could not say is gone may still run as its ids: they stay leased until
    // reconciliation removes it (box_id_lease.h).
    bool box_may_live = false;
    if (box_ids && ran.status == TurnStatus::error) {
        bool gone = false;
        try {
            gone = env_.client.list_by_label(spec.label).empty();
        } catch (const std::exception&) {
        }
        if (!gone) {
            log::warn("turn",
                      "turn {}: box '{}' may still exist; its ids {} stay leased until "
                      "'radiald reconcile' removes it",
                      id, spec.label, spec.user);
            box_ids->keep_for_reconcile();
            box_may_live = true;
        }
    }
    // Rotated credentials back to the operator's file, once the box can no longer change them
    // (codex_auth.h, docs/design.md §8.7).
    // The file's owner is the box user's id on the host: a namespaced root's is not 0 (§8.8).
    if (const auto owner = box_host_ids(spec.user, env_.cfg.box_root);
        identity && codex_auth_ && !box_may_live && owner)
        log_codex_write_back(
            id, write_back_codex_auth(identity->dir() + "/codex", owner->first,
                                      codex_auth_path(env_.cfg.codex_auth_file), *codex_auth_));
    box_ids.reset();
    ran.box_user = rec.box_user;
    ran.box_host_user = rec.box_host_user;
    ran.session = rec.session;
    // The request's image by name, and the digest that ran beside it (image_pin.h).
    ran.image = rec.image;
    ran.image_digest = rec.image_digest;
    ran.kind = rec.kind;
    ran.stdout_tail = std::move(stdout_tail);
    ran.stderr_tail = std::move(stderr_tail);
    if (auto n = refused_records.load() + quota_refused.load()) ran.records_refused = n;
    checkpoint("terminal");
    TerminalRecord done = finish(std::move(ran));
    log_outcome(done);
    return done;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

} // namespace radial::turn
