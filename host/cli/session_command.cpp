#include "cli/session_command.h"

#include <fmt/format.h>
#include <radial/internal/names.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <radial/host/session_client.hpp>
#include <radial/units.hpp>

#include "cli/command_signals.h"
#include "cli/config_file.h"
#include "cli/exit_status.h"
#include "cli/instance.h"
#include "cli/runtime_setup.h"
#include "config/bounded_units.h"
#include "config/box_identity.h"
#include "config/instance_id.h"
#include "daemon/instance_claim.h"
#include "log/log_redaction.h"
#include "log/logger.h"
#include "session/session_events.h"
#include "session/session_record.h"
#include "session/session_turn.h"
#include "session/snapshot_record.h"
#include "turn/box_id_lease.h"
#include "turn/box_root.h"
#include "turn/box_user_env.h"
#include "turn/handover_recovery.h"
#include "turn/image_pin.h"
#include "turn/retention_clock.h"
#include "turn/turn_request.h"
#include "turn/turn_session.h"
#include "turn/workspace_lock.h"

namespace radial::cli {
namespace {
namespace fs = std::filesystem;
using session::policy_generation;

// A session limit: 0 (none), or from 10 s (a box must live long enough for a turn to reach it)
// to 365 days, written as every duration of radiald is (ms, s, m, h: no days).
std::uint64_t duration_flag(const std::string& flag, const std::string& text) {
    constexpr std::uint64_t kLeast = 10'000, kMost = 365ull * 24 * 3600 * 1000;
    std::uint64_t ms = 0;
    // "0", "0s", "0.0h": no limit. Not any duration that rounds to 0 ms ("0.4ms" is too short).
    const std::string number = text.substr(0, text.find_first_not_of("0123456789."));
    if (!number.empty() && number.find_first_not_of("0.") == std::string::npos &&
        units::parse_duration_ms(text) == 0u)
        return 0;
    if (auto problem = config::duration_problem(text, ms, kLeast, kMost, "30m or 8h (0: no limit)");
        !problem.empty()) {
        if (!text.empty() && text.back() == 'd' && !units::parse_duration_ms(text))
            problem += "; a day is written 24h (365 days: 8760h)";
        throw turn::RequestError(flag + " " + problem);
    }
    return ms;
}

std::string lease_dir() { return turn::box_id_lease_dir(daemon::default_claim_registry()); }

// A create of an id in use: the session's, or another create's under way (or a killed one's,
// whose directories reconciliation removes). Each is named with the fix that works for it: `session
// rm` knows only sessions with a record, and a killed create left none.
turn::RequestError session_exists(const std::string& state_dir, const std::string& id) {
    bool recorded = true; // a record that cannot be read is one `session rm` can remove
    try {
        recorded = session::load_session(state_dir, id).has_value();
    } catch (const std::exception&) {
    }
    if (recorded)
        return turn::RequestError(fmt::format(
            "--session-id '{0}': session '{0}' exists already; remove it with 'radiald session rm "
            "{0}', or pick another --session-id",
            id));
    return turn::RequestError(fmt::format(
        "--session-id '{0}': another 'radiald session create' is making session '{0}', or one "
        "was killed while it did and left its directories ('radiald session ls' does not list "
        "it); once no create runs, 'radiald reconcile' removes what a killed one left. Or pick "
        "another --session-id",
        id));
}

} // namespace

config::HostConfig load_session_config(const SessionOptions& o) {
    auto cfg = load_config(o.config_file, o.runtime);
    log::install_log_redaction();
    config::settle_instance_id(cfg);
    return cfg;
}

std::unique_ptr<Instance> open_session_instance(const SessionOptions& o, const char* who) {
    return Instance::open(load_session_config(o), {who, daemon::StateDirLock::Mode::shared, true});
}

SessionCommands add_session_commands(CLI::App& app, SessionOptions& o) {
    auto* cmd = app.add_subcommand(
        "session", "Boxes that live for a session: its turns run in it (radiald turn --session)");
    cmd->require_subcommand(1);
    auto common = [&](CLI::App* c) {
        c->add_option("--config", o.config_file, "Config file (TOML)")->check(CLI::ExistingFile);
        c->add_option("--runtime", o.runtime, "Runtime id, overriding run.containerRuntime");
    };
    auto* create = cmd->add_subcommand(
        "create", "Create a session's box, started idle; prints the session's id");
    common(create);
    auto* image = create->add_option("--image", o.image, "Image the session's box runs");
    create
        ->add_option("--from-snapshot", o.from_snapshot,
                     "Start from a snapshot (its tag or image name; radiald session snapshots) "
                     "instead of --image")
        ->excludes(image);
    create->add_option("--workspace", o.workspace,
                       "Host directory mounted read-write into the box (at /work)");
    create->add_option("--mode", o.mode, "Workspace mode: read-only or workspace-write");
    create
        ->add_option("--idle-timeout", o.idle_timeout,
                     "End the box after this long without a turn (0: never; else 10s to 8760h, "
                     "365 days; units ms, s, m, h)")
        ->capture_default_str();
    create
        ->add_option("--max-lifetime", o.max_lifetime,
                     "End the box this long after its create, turns or not (0: never; else 10s to "
                     "8760h, 365 days; units ms, s, m, h)")
        ->capture_default_str();
    create->add_option("--session-id", o.id, "Session id (a-z, 0-9, '-'); default: generated");
    auto* rm = cmd->add_subcommand("rm", "Remove a session's box and what radiald kept of it");
    common(rm);
    rm->add_option("id", o.id, "The session's id")->required();
    auto* ls = cmd->add_subcommand("ls", "List this state directory's sessions");
    common(ls);
    ls->add_flag("--json", o.json, "One JSON array instead of text");
    SessionCommands out{create, rm, ls, nullptr, nullptr, nullptr};
    add_snapshot_commands(*cmd, o, out);
    return out;
}

int run_session_create(const SessionOptions& o) {
    // A stop signal makes the create undo what it made, as a failure does (docs/design.md §13.12).
    std::optional<CommandSignals> signals;
    bool box_left = false; // a box the runtime could not say it removed
    try {
        signals.emplace();
        // The flags first: a mistyped limit is said before anything is opened or loaded.
        const auto idle_timeout_ms = duration_flag("--idle-timeout", o.idle_timeout);
        const auto max_lifetime_ms = duration_flag("--max-lifetime", o.max_lifetime);
        auto instance = open_session_instance(o, "radiald session create");
        const auto& cfg = instance->cfg();
        const auto sessions = host::SessionClient::of(instance->runtime());
        if (cfg.codex_auth)
            throw turn::RequestError(
                "run.codexAuth: a session's turns do not get the Codex credentials yet; unset "
                "run.codexAuth to create sessions");
        session::SessionRecord rec;
        rec.id = o.id.empty() ? turn::new_turn_id() : o.id;
        if (!internal::is_turn_id(rec.id))
            throw turn::RequestError(fmt::format(
                "--session-id '{}': a session id must be 1 to {} characters of a-z, 0-9 and '-', "
                "not starting with '-' (or leave --session-id out for a generated one)",
                rec.id, turn::kMaxTurnIdBytes));
        // Before any box: a session whose turns cannot bind their socket is of no use.
        check_session_socket_fits(cfg, rec.id);
        // Said before the image is looked at; the directory's mkdir below settles a race.
        if (std::error_code ec;
            fs::exists(fs::symlink_status(session::session_socket_dir(cfg.state_dir, rec.id), ec)))
            throw session_exists(cfg.state_dir, rec.id);
        rec.label = session::session_label(cfg, rec.id);
        rec.idle_timeout_ms = idle_timeout_ms;
        rec.scan_key = session::new_fingerprint_key();
        rec.max_lifetime_ms = max_lifetime_ms;

        // What the box is made from, pinned to its digest where the runtime keeps snapshots.
        std::string image = o.image;
        std::string snapshot_digest; // what the snapshot's name must still be
        if (!o.from_snapshot.empty()) {
            const auto snap = session::find_snapshot(cfg.state_dir, o.from_snapshot);
            if (!snap)
                throw turn::RequestError(fmt::format(
                    "--from-snapshot '{}': no such snapshot in state directory '{}'; see "
                    "'radiald session snapshots'",
                    o.from_snapshot, cfg.state_dir));
            if (snap->digest.empty())
                throw turn::RequestError(fmt::format(
                    "--from-snapshot '{}': that snapshot is incomplete (its radiald ended while "
                    "the engine committed it); remove it with 'radiald session snapshot-rm {}' "
                    "and take it again",
                    o.from_snapshot, snap->tag));
            image = snap->image;
            snapshot_digest = snap->digest;
            rec.from_snapshot = snap->image;
        } else if (image.empty()) {
            throw turn::RequestError("session create needs --image IMAGE or --from-snapshot NAME");
        }

        // The one-shot box's policy, hardening and workspace, without its command.
        turn::TurnRequest req;
        req.turn_id = rec.id;
        req.image = image;
        req.workspace = o.workspace;
        req.mode = o.mode;
        req.argv = {"true"};
        ContainerSpec spec = turn::build_container_spec(req, cfg);
        spec.label = rec.label;
        spec.argv.clear();
        // Pinned as a one-shot turn's image is, and checked against run.allowedImages' pins.
        rec.image_digest = turn::pin_image(spec, image, instance->runtime(), cfg);
        // The name is the engine's to move (a tag put on another image since): the session is
        // made from what the snapshot recorded, or not at all.
        if (!snapshot_digest.empty() && rec.image_digest != snapshot_digest)
            throw turn::RequestError(fmt::format(
                "--from-snapshot '{}': its image '{}' is {} now, not the {} the snapshot recorded "
                "(the name was put on another image since); remove it with 'radiald session "
                "snapshot-rm {}' and take it again",
                o.from_snapshot, image, rec.image_digest, snapshot_digest, o.from_snapshot));
        rec.image = image;
        rec.runtime = instance->runtime().info().id;
        rec.mode = o.mode;
        rec.workdir = spec.workdir;
        if (!o.workspace.empty()) {
            rec.workspace = spec.mounts.front().source;
            rec.workspace_id = session::workspace_identity(rec.workspace);
        }
        // Not a box's uid (a turn on it now has it handed over): a later hand-back to that uid
        // would give the files to whichever box is leased it next.
        if (struct stat st{}; !rec.workspace.empty() && ::geteuid() == 0 &&
                              ::stat(rec.workspace.c_str(), &st) == 0 &&
                              !(st.st_uid >= cfg.box_id_first && st.st_uid <= cfg.box_id_last) &&
                              !(cfg.box_root && st.st_uid == cfg.box_root->first))
            rec.workspace_owner = fmt::format("{}:{}", st.st_uid, st.st_gid);
        rec.policy = policy_generation(spec, cfg, instance->runtime().info().id, rec.workspace,
                                       o.mode.empty() ? cfg.mode : o.mode);

        // Its own ids for as long as the box lives (box_id_lease.h): freed by `session rm`.
        std::optional<turn::BoxIdLease> ids;
        if (cfg.box_root) {
            spec.user = turn::kNamespacedRootUser; // docs/design.md §8.8: nothing to lease
        } else if (config::uses_box_id_range(cfg)) {
            ids.emplace(turn::BoxIdLease::acquire(lease_dir(), cfg.box_id_first, cfg.box_id_last,
                                                  rec.label, cfg.state_dir));
            const auto owner = spec.user.substr(0, spec.user.find(':'));
            spec.user = cfg.user.empty() ? fmt::format("{0}:{0}", ids->id())
                                         : fmt::format("{}:{}", owner, ids->id());
        }
        rec.user = spec.user;
        // Each turn binds its socket in this directory, mounted at /run/radial for the box's life.
        const std::string run_dir = session::session_socket_dir(cfg.state_dir, rec.id);
        fs::create_directories(session::sessions_dir(cfg.state_dir));
        ::chmod(session::sessions_dir(cfg.state_dir).c_str(), 0700);
        if (::mkdir(run_dir.c_str(), 0700) != 0) {
            // The session exists, or another create of the same id got there first (a killed
            // create's directory is reconciliation's to remove): before any box.
            if (errno == EEXIST) throw session_exists(cfg.state_dir, rec.id);
            throw turn::TurnSetupError(
                fmt::format("creating '{}': {}", run_dir, std::strerror(errno)));
        }
        // Whatever fails from here leaves nothing of the session on the host.
        bool made = false;
        struct Undo {
            const std::string& state_dir;
            const std::string& id;
            const bool& made;
            ~Undo() {
                if (!made) session::remove_session(state_dir, id);
            }
        } undo{cfg.state_dir, rec.id, made};
        session::session_lock_dir(cfg.state_dir, rec.id);
        // A runtime that cannot mount a unix socket (sandbox) gives each turn a tcp socket and
        // the exec its port instead (turn_session.cpp).
        if (instance->runtime().has_capability(RADIAL_CAP_UNIX_SOCKET_MOUNTS))
            spec.mounts.push_back({run_dir, turn::kBoxSocketDir, true}); // as box_socket.cpp
        std::optional<turn::BoxIdentity> identity;
        // The identity a one-shot turn's box gets, a fixed run.user's too (turn_session_steps.cpp,
        // prepare_box_user).
        if (const auto host_ids = turn::box_host_ids(rec.user, cfg.box_root);
            host_ids && instance->runtime().has_capability(RADIAL_CAP_HOST_UID_MOUNTS)) {
            identity.emplace(session::session_identity_dir(cfg.state_dir, rec.id), host_ids->first,
                             host_ids->second, std::nullopt, cfg.box_root.has_value());
            // Its variables go with each exec (session_turn.h): a snapshot of the box keeps
            // what it was created with (docs/design.md §13.12).
            identity->apply(spec, cfg.home_size_bytes, false);
            rec.box_user = identity->user_name();
        }
        // Real time: the commands run in a process of their own and take no clock (docs/design.md
        // §12.7).
        rec.created_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
        // Its maximum lifetime is measured on the retention clock (docs/design.md §11.6).
        const auto lead = turn::current_clock_lead(cfg.state_dir);
        rec.created_clock_lead_ms = lead.lead_ms;
        rec.created_boot_id = lead.boot_id;
        // The box first, then its record: a radiald killed between the two leaves a box no
        // session names, which reconciliation removes (daemon/session_reconcile.h).
        // A box the runtime could not say it removed keeps its ids leased until reconciliation
        // removes it; the error said is the one that failed the command, not the removal's.
        auto keep_ids_unless_gone = [&] {
            bool gone = false;
            try {
                gone = !instance->runtime().lists_box(rec.label);
            } catch (const std::exception& e) {
                log::warn("session", "session {}: could not list box '{}': {}", rec.id, rec.label,
                          e.what());
            }
            box_left = !gone;
            if (!gone && ids) ids->keep_for_reconcile();
        };
        stop_if_asked(*signals); // before the box: what is made so far goes with the unwinding
        try {
            sessions.create(spec, rec.idle_timeout_ms, rec.max_lifetime_ms);
        } catch (...) {
            keep_ids_unless_gone();
            throw;
        }
        try {
            // A signal during the engine's create is seen once it returned: the box goes again.
            stop_if_asked(*signals);
            session::save_session(cfg.state_dir, rec);
            stop_if_asked(*signals);
        } catch (...) {
            try {
                instance->runtime().kill(rec.label);
            } catch (const std::exception& e) {
                log::warn("session",
                          "session {}: could not remove box '{}': {}; 'radiald reconcile' "
                          "removes it",
                          rec.id, rec.label, e.what());
            }
            keep_ids_unless_gone();
            throw;
        }
        made = true;
        if (identity) identity->keep();
        if (ids) ids->keep_for_reconcile();
        session::journal_session_event(
            cfg.state_dir, rec.id, "created",
            rec.from_snapshot.empty()
                ? fmt::format("image {} ({})", rec.image, rec.image_digest)
                : fmt::format("snapshot {} ({})", rec.from_snapshot, rec.image_digest));
        log::info("session", "session {}: box '{}' started (ids {})", rec.id, rec.label, rec.user);
        fmt::print("{}\n", rec.id);
        return kExitOk;
    } catch (const Interrupted& e) {
        log::error(
            "session", "{}: the session was not created; {}", e.what(),
            box_left ? "its box is left for 'radiald reconcile' to remove" : "nothing is left");
        return kExitInterrupted;
    } catch (const std::exception& e) {
        report_error(e, CommandKind::turn, "session");
        return kExitHostFault;
    }
}

namespace {

int remove_session_now(const SessionOptions& o) {
    // An id radiald never makes names no session: refused as one that is not there (1), not as a
    // failure of the host (docs/design.md §14.4).
    if (!internal::is_turn_id(o.id)) {
        log::error("session",
                   "session id '{}' is not one radiald makes (a-z, 0-9, '-'); see 'radiald "
                   "session ls'",
                   o.id);
        return kExitFailed;
    }
    try {
        auto instance = open_session_instance(o, "radiald session rm");
        const auto& cfg = instance->cfg();
        auto rec = session::load_session(cfg.state_dir, o.id);
        if (!rec) {
            log::error("session",
                       "no session '{}' in state directory '{}'; see 'radiald session "
                       "ls'",
                       o.id, cfg.state_dir);
            return kExitFailed;
        }
        // Another runtime's box would be left running, its session forgotten.
        if (auto why = session::other_runtime(*rec, instance->runtime().info().id)) {
            log::error("session", "{}", *why);
            return kExitFailed;
        }
        // Not under a running turn: it would write the record back, and its own record would
        // blame its command for the box's removal.
        auto lock =
            turn::WorkspaceLock::try_acquire(session::session_lock_dir(cfg.state_dir, o.id));
        if (!lock) {
            log::error(
                "session",
                "session '{}' is running a turn; remove it once the turn ended (interrupting "
                "the turn removes the session's box too)",
                o.id);
            return kExitFailed;
        }
        instance->runtime().kill(rec->label);
        // What a turn of it whose radiald was killed left the box's: handed back before the ids
        // go back to the pool, since the next box given them would own that tree (docs/design.md
        // §3.9). Only the notes whose box the runtime now says ended are acted on.
        turn::WorkspaceHandover::recover(
            turn::handover_marker_dir(cfg.state_dir),
            turn::box_may_write(instance->runtime(), instance->journal()));
        turn::release_box_id_lease_of(lease_dir(), rec->label);
        std::error_code ec;
        // Its own only: <stateDir>/identity/<id> is a one-shot turn's of the same id, which may
        // be running (docs/design.md §13.12).
        fs::remove_all(session::session_identity_dir(cfg.state_dir, rec->id), ec);
        session::remove_session(cfg.state_dir, rec->id);
        session::journal_session_event(cfg.state_dir, rec->id, "ended",
                                       "removed by 'radiald session rm'");
        fmt::print("removed session {}\n", rec->id);
        return kExitOk;
    } catch (const std::exception& e) {
        report_error(e, CommandKind::turn, "session");
        return kExitHostFault;
    }
}

} // namespace

int run_session_rm(const SessionOptions& o) {
    // A stop signal lets the removal finish, then is said (docs/design.md §13.12).
    return finish_despite_signals(fmt::format("session '{}' was being removed", o.id),
                                  CommandKind::turn, [&] { return remove_session_now(o); });
}

int run_session_ls(const SessionOptions& o) {
    try {
        // A reader: no lock, so it lists beside a daemon serving the state directory.
        const auto cfg = load_session_config(o);
        const auto checked = open_checked_runtime(cfg, false);
        const auto& runtime = checked.client;
        const auto boxes = runtime.list_by_label(session::session_label_prefix(cfg));
        nlohmann::json out = nlohmann::json::array();
        const auto sessions = session::list_sessions(cfg.state_dir);
        // Said, not left to an empty output (stdout stays the list's, empty, for a script).
        if (sessions.empty() && !o.json)
            log::info("session", "no sessions in state directory '{}'", cfg.state_dir);
        for (const auto& s : sessions) {
            std::string box = "gone";
            if (session::other_runtime(s, runtime.info().id)) {
                box = "runtime " + s.runtime + "'s"; // not this runtime's to look for
            } else if (std::find(boxes.begin(), boxes.end(), s.label) != boxes.end()) {
                // Listed is not running: a box that ended by itself stays until reconciliation.
                const auto state = runtime.inspect(s.label);
                box = state.supported && state.state == RADIAL_BOX_ENDED ? "ended" : "present";
            }
            if (o.json) {
                out.push_back(
                    {{"id", s.id},
                     {"image", s.image},
                     {"workspace", s.workspace},
                     {"boxUser", s.user},
                     {"box", box},
                     {"idleTimeoutMs", s.idle_timeout_ms},
                     {"maxLifetimeMs", s.max_lifetime_ms},
                     {"createdAt", turn::format_timestamp_ms(s.created_at_ms)},
                     {"imageDigest", s.image_digest},
                     {"fromSnapshot", s.from_snapshot},
                     {"turns", s.manifest.size()},
                     {"snapshots", s.no_snapshot_because.empty() && s.unchecked_turn.empty()
                                       ? "allowed"
                                       : "refused"},
                     {"events", session::read_session_events(cfg.state_dir, s.id)}});
            } else {
                fmt::print("{}  {}  {}  box {}  created {}\n", s.id, s.image,
                           s.workspace.empty() ? "-" : s.workspace, box,
                           turn::format_timestamp_ms(s.created_at_ms));
            }
        }
        if (o.json)
            fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
        return kExitOk;
    } catch (const std::exception& e) {
        return report_error(e, CommandKind::other, "session");
    }
}

} // namespace radial::cli
