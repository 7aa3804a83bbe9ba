#include "turn/turn_session.h"

#include <fmt/format.h>

#include "log/log_redaction.h"
#include "log/logger.h"
#include "pool/pool_box.h"
#include "session/session_events.h"
#include "session/session_turn.h"
#include "socket/turn_token.h"
#include "turn/box_root.h"
#include "turn/codex_auth.h"
#include "turn/image_pin.h"
#include "turn/retention_clock.h"
#include "turn/turn_egress.h"
#include "turn/turn_secrets.h"
#include "turn/turn_session_run.h"

namespace radial::turn {

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
    if (request_.kind == RequestKind::check) check_lines_.emplace(request_.turn_id);
    if (request_.record_type.empty())
        throw RequestError(
            "the record type (--record-type, recordType in a turn file) must not be empty");
    try {
        redaction::SecretSet secrets = secrets_before_the_box(request_, env_.cfg.redact);
        secrets.add(kTokenEnv, token_);
        // Managed Codex auth: read once per turn, its tokens masked like every other secret.
        // A check carries no secrets (docs/design.md §4): no credentials, so no write-back.
        if (env_.cfg.codex_auth && request_.kind != RequestKind::check) {
            // Under the file's lock, beside other turns' write-backs (codex_auth.h).
            if (auto text =
                    read_codex_auth(codex_auth_path(env_.cfg.codex_auth_file), codex_auth_error_)) {
                std::size_t i = 0;
                for (const auto& v : codex_auth_secrets(*text, env_.cfg.redact.min_length))
                    secrets.add(fmt::format("codexAuth.{}", i++), v, /*chosen_by_box=*/true);
                next_codex_secret_ = i;
                codex_auth_ = std::move(*text);
            }
        }
        // Last, so that none of them can make this turn's own secrets refused (a value inside a
        // later marker). A store that cannot be read ends the turn in run(), before any box.
        try {
            add_other_turns_secrets(secrets, env_.cfg.state_dir);
        } catch (const std::exception& e) {
            store_error_ = e.what();
        }
        redactor_ = std::make_unique<redaction::GrowingRedactor>(secrets);
        log_redaction_ = log::redact_log_lines(redactor_->current());
        secrets_ = std::move(secrets);
    } catch (const std::invalid_argument& e) {
        throw RequestError(e.what());
    }
    // A refusal may quote the request (an image or a mount that holds a secret): masked too.
    try {
        // Names radiald prints and stores as they are — the turn id (the box's label, the output
        // log's file name, `radiald turns`) and the record type (the journal's records) — must
        // not hold a secret's value, which nothing would mask there (docs/design.md §10).
        for (const auto& [what, text] :
             {std::pair<const char*, const std::string&>{"the turn id", request_.turn_id},
              {"the record type", request_.record_type}})
            if (redactor_->current().redact(text) != text)
                throw RequestError(fmt::format(
                    "{} '{}' holds the value of a secret, which radiald would store and print "
                    "as it is there; choose one that does not",
                    what, text));
        if (!request_.session.empty()) {
            session_ = session::load_session(env_.cfg.state_dir, request_.session);
            if (!session_)
                throw RequestError(session::no_such_session(env_.cfg.state_dir, request_.session));
            if (auto why = session::other_runtime(*session_, env_.client.info().id))
                throw RequestError(*why);
            session::bind_request_to_session(request_, *session_, env_.cfg.mode);
        }
        spec_ = build_container_spec(request_, env_.cfg);
        refuse_secrets_at_rest(spec_, turn_secrets_redactor(request_, *secrets_));
        // Pinned once, here: the daemon's claim and `radiald turn` alike (docs/design.md §6.5).
        if (session_) {
            session::check_session_policy(*session_, spec_, env_.cfg, env_.client.info().id);
            session::check_session_image_pin(*session_, env_.cfg);
            session::check_session_box_ids(*session_, env_.cfg);
            session::make_session_exec(spec_, *session_, request_.workdir);
            session::check_session_lifetime(
                *session_, turn::elapsed_wall_time(
                               env_.cfg.state_dir, env_.clock->wall(),
                               {session_->created_clock_lead_ms, session_->created_boot_id}));
            session::check_session_workspace(*session_);
            image_digest_ = session_->image_digest;
        } else {
            image_digest_ = pin_image(spec_, request_.image, env_.client, env_.cfg);
            // A turn with a workspace, brokered egress or none, over the unix transport: what a
            // pool box can be given after it started (docs/design.md §13.14).
            if (env_.pool != nullptr && request_.kind == RequestKind::turn &&
                !request_.workspace.empty() && request_.offer.empty() &&
                env_.transport.transport == socket::Transport::unix_socket &&
                (turn_egress_rules(request_, env_.cfg).empty() || !egress_by_runtime(env_.client)))
                pool_shape_ = pool::box_shape(spec_);
        }
    } catch (const RequestError& e) {
        throw RequestError(redactor_->current().redact(e.what()));
    } catch (const TurnSetupError& e) {
        throw TurnSetupError(redactor_->current().redact(e.what()));
    }
}

TurnSession::~TurnSession() = default;

bool TurnSession::interrupt(StopReason why) noexcept {
    std::lock_guard lock(runner_mutex_);
    stopped_ = why;
    stop_after_exec_ = true;
    if (runner_ == nullptr) return false;
    runner_->interrupt(why);
    return true;
}

// GCC 12 at -O2 reports the descriptor inside a moved-from std::optional<WorkspaceLock> as
// "may be used uninitialized" (a known false positive of its optional analysis); the optional is
// engaged only through its constructors, so the warning is off for this function alone.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
TerminalRecord TurnSession::run(const RedactedOutputFn& out, JournalStart start,
                                std::optional<WorkspaceLock> held,
                                std::optional<BoxIdLease> held_ids) {
    auto owned = std::make_unique<Run>();
    Run& run = *owned;
    // However run() leaves: a run whose call radiald gave up on is kept, not destroyed.
    struct KeepIfAbandoned {
        const TurnSession& session;
        std::unique_ptr<Run>& run;
        ~KeepIfAbandoned() {
            if (run->abandoned) session.keep_until_returned(std::move(run));
        }
    } keep{*this, owned};
    run.spec = spec_;
    if (held_ids) run.box_ids.emplace(std::move(*held_ids)); // taken up by lease_box_user()
    // What is written of the request (the record, the journal's columns) is redacted: an image
    // name or a path may hold a secret (docs/design.md §10.2).
    run.rec = terminal_record(
        {request_.turn_id, std::string(to_string(request_.kind)), env_.client.info().id,
         redactor_->current().redact(request_.image), run.spec.label},
        TurnStatus::error);
    run.rec.image_digest = image_digest_;
    if (session_) run.rec.session = session_->id;
    run.rec.started_at = env_.clock->wall();

    claim(run, start);
    // From the claim on, the journal says the turn is under way: whatever goes wrong in radiald
    // itself (no thread, no memory) ends it with its error record, never leaves it "started"
    // with nobody to end it (docs/design.md §12.2).
    try {
        if (!store_error_.empty()) return fail(run, store_error_);
        if (auto problem = hold(run, std::move(held))) return fail(run, *problem);
        claim_pool_box(run);
        if (auto problem = lease_box_user(run)) return fail(run, *problem);
        // A check gets no socket, and so no token either: it posts no records, its outcome is
        // its exit status and output (docs/design.md §4).
        if (request_.kind == RequestKind::turn) {
            if (auto problem = open_socket(run)) return fail(run, *problem);
            if (auto problem = open_egress(run)) return fail(run, *problem);
        }
        if (auto problem = prepare_box_user(run)) return fail(run, *problem);
        if (auto problem = remember_secrets()) return fail(run, *problem);
        return execute(run, out);
    } catch (const std::exception& e) {
        if (run.finishing) throw; // the record's own writing failed: finish() said what it could
        // A one-shot box that may have started goes with its turn; a session's box is the
        // session's, ended by its own deadlines or `session rm`, and a pool box the pool's.
        if (run.exec_started_ms != 0 && !session_ && !run.pooled) {
            bool gone = false;
            try {
                env_.client.kill(run.spec.label);
                gone = !env_.client.lists_box(run.spec.label);
            } catch (const std::exception& k) {
                log::error("turn", "turn {}: removing box '{}': {}", request_.turn_id,
                           run.spec.label, k.what());
            }
            // A box that may still run keeps its ids leased until reconciliation removes it
            // (box_id_lease.h), as after any error that leaves one.
            if (!gone && run.box_ids) run.box_ids->keep_for_reconcile();
        }
        return fail(run, fmt::format("radiald could not go on with the turn: {}", e.what()));
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

void TurnSession::keep_until_returned(std::unique_ptr<Run> run) const noexcept {
    const auto call = std::move(run->abandoned);
    // From here on lost rather than destroyed, should anything below fail: kept for ever, as a
    // killed radiald leaves it, for reconciliation to end the box and hand the workspace back.
    Run* kept = run.release();
    try {
        call->when_returned([kept, turn_id = request_.turn_id, then = env_.after_abandoned_call] {
            log::info("turn",
                      "turn {}: the call radiald gave up on has returned; handing the "
                      "workspace back and releasing the box's ids",
                      turn_id);
            delete kept;
            if (then) then();
        });
    } catch (...) {
    }
}

bool TurnSession::learn_rotated_secrets() {
    std::lock_guard lock(learn_mutex_);
    if (!codex_watch_) return false;
    const auto fresh = codex_watch_->new_tokens();
    if (fresh.empty()) return false;
    std::vector<redaction::Secret> more;
    for (const auto& v : fresh)
        more.push_back({fmt::format("codexAuth.{}", next_codex_secret_++), v, true});
    std::vector<std::string> refused;
    const bool grew = redactor_->grow(more, &refused);
    // Registered before the old registration goes, so no line is written between the two unmasked.
    if (grew) log_redaction_ = log::redact_log_lines(redactor_->current());
    log::info(
        "turn",
        "turn {}: the box refreshed its Codex credentials; {} new token(s) masked from now on",
        request_.turn_id, more.size() - refused.size());
    for (const auto& name : refused)
        log::warn("turn",
                  "turn {}: the refreshed Codex token {} cannot be masked safely (docs/design.md "
                  "§10.1): the write-back will still carry it",
                  request_.turn_id, name);
    return grew;
}

namespace {
// Every secret the turn knows but the Codex tokens themselves: none may be in a rotation.
std::vector<std::string> non_codex_values(const redaction::SecretSet& secrets) {
    std::vector<std::string> others;
    for (const auto& s : secrets.secrets())
        if (!s.name.starts_with("codexAuth.")) others.push_back(s.value);
    return others;
}
} // namespace

void TurnSession::watch_codex_rotation(Run& run, uid_t box_uid) {
    if (!codex_auth_ || !run.identity) return;
    std::lock_guard lock(learn_mutex_);
    codex_watch_ = std::make_unique<CodexRotationWatch>(run.identity->dir() + "/codex", box_uid,
                                                        *codex_auth_, non_codex_values(*secrets_));
}

void TurnSession::write_codex_back(Run& run) {
    // Once the box can no longer change them (codex_auth.h, docs/design.md §8.7). The file's
    // owner is the box user's id on the host: a namespaced root's is not 0 (§8.8).
    const auto owner = box_host_ids(run.spec.user, env_.cfg.box_root);
    if (!run.identity || !codex_auth_ || !owner) return;
    log_codex_write_back(
        request_.turn_id,
        write_back_codex_auth(run.identity->dir() + "/codex", owner->first,
                              codex_auth_path(env_.cfg.codex_auth_file), *codex_auth_,
                              non_codex_values(redactor_->secrets())));
}

} // namespace radial::turn
