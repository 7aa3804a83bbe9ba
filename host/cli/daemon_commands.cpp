#include "cli/daemon_commands.h"

#include <fmt/format.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/config_file.h"
#include "cli/count_option.h"
#include "cli/exit_status.h"
#include "cli/instance.h"
#include "cli/runtime_setup.h"
#include "config/box_identity.h"
#include "config/instance_id.h"
#include "config/pool_keys.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "daemon/metrics_endpoint_keeper.h"
#include "daemon/metrics_journal.h"
#include "daemon/reconciler.h"
#include "daemon/spool.h"
#include "daemon/startup_signals.h"
#include "daemon/state_dir_lock.h"
#include "daemon/state_dir_watch.h"
#include "daemon/test_pause.h"
#include "daemon/turn_file.h"
#include "daemon/workspace_view.h"
#include "journal/journal_sqlite.h"
#include "log/log_redaction.h"
#include "log/logger.h"
#include "redaction/stream_redactor.h"
#include "session/session_turn.h"
#include "socket/box_socket.h"
#include "text/printable.h"
#include "turn/handover_recovery.h"
#include "turn/turn_request.h"
#include "turn/turn_secrets.h"
#include "turn/workspace_handover.h"

#ifndef RADIAL_VERSION
#define RADIAL_VERSION "0.0.0"
#endif

namespace radial::cli {

namespace {

// The config with its instance id settled. Throws ConfigError.
config::HostConfig load_settled_config(const DaemonOptions& o) {
    auto cfg = cli::load_config(o.config_file);
    config::settle_instance_id(cfg);
    return cfg;
}

} // namespace

CLI::App* add_submit_command(CLI::App& app, DaemonOptions& o) {
    auto* cmd = app.add_subcommand(
        "submit",
        "Queue a turn or check request (TOML, kind = \"check\" for a check) for the daemon; "
        "prints its id");
    cmd->add_option("--config", o.config_file, "Config file (TOML)")->check(CLI::ExistingFile);
    cmd->add_option("request", o.request_file, "The turn request file (TOML)")->required();
    return cmd;
}

CLI::App* add_run_command(CLI::App& app, DaemonOptions& o) {
    auto* cmd =
        app.add_subcommand("run", "Run the daemon: reconcile, then run queued turns until SIGTERM");
    cmd->add_option("--config", o.config_file, "Config file (TOML)")->check(CLI::ExistingFile);
    return cmd;
}

CLI::App* add_reconcile_command(CLI::App& app, DaemonOptions& o) {
    auto* cmd = app.add_subcommand("reconcile",
                                   "Remove orphaned boxes and reclaim interrupted turns, once");
    cmd->add_option("--config", o.config_file, "Config file (TOML)")->check(CLI::ExistingFile);
    return cmd;
}

CLI::App* add_status_command(CLI::App& app, DaemonOptions& o) {
    auto* cmd = app.add_subcommand("status", "Show the daemon's queued, running and recent turns");
    cmd->add_option("--config", o.config_file, "Config file (TOML)")->check(CLI::ExistingFile);
    cmd->add_option("-n,--limit", o.limit, "How many recent turns")
        ->check(count_of("turns"))
        ->capture_default_str();
    cmd->add_flag("--json", o.json, "One JSON object instead of text");
    return cmd;
}

int run_submit_command(const DaemonOptions& o) {
    try {
        const auto cfg = load_settled_config(o);
        // The daemon's startup validation, without the preflight (submitting starts no box): a
        // turn is never queued for a daemon that would refuse to start on this config.
        config::check_box_id_range(cfg);
        const auto runtime = open_checked_runtime(cfg, false);
        daemon::SpooledRequest req = daemon::read_turn_file(o.request_file);
        if (req.turn_id.empty()) req.turn_id = turn::new_turn_id();
        // The same checks the daemon applies when it builds the box, so a request that cannot run
        // is refused here rather than failing later.
        try {
            // A session's turn takes what the session fixed (session/session_turn.h).
            if (!req.session.empty()) {
                auto rec = session::load_session(cfg.state_dir, req.session);
                if (!rec)
                    throw turn::RequestError(fmt::format(
                        "session '{}' is not one of this state directory's; see 'radiald session "
                        "ls'",
                        req.session));
                if (auto why = session::other_runtime(*rec, cfg.container_runtime))
                    throw turn::RequestError(*why);
                session::bind_request_to_session(req, *rec, cfg.mode);
            } else if (req.kind == turn::RequestKind::turn &&
                       runtime.transport.transport == socket::Transport::unix_socket) {
                if (auto why = socket::turn_socket_path_problem(cfg.state_dir, req.turn_id);
                    !why.empty())
                    throw turn::RequestError(why);
            }
            const auto spec = turn::build_container_spec(
                daemon::to_turn_request(
                    req, [](const std::string&) { return std::optional<std::string>("x"); },
                    cfg.secret_names),
                cfg);
            // What the running daemon sees there, which a unit's PrivateTmp= or ProtectHome= can
            // make another directory than this shell's (docs/design.md §12.5).
            if (const auto holder = daemon::StateDirLock::probe(cfg.state_dir);
                holder && holder->exclusive)
                if (const auto view = daemon::read_workspace_view(cfg.state_dir))
                    for (std::size_t i = 0; i < spec.mounts.size(); ++i)
                        daemon::check_daemon_sees(
                            i == 0 && !req.workspace.empty()
                                ? std::string("workspace")
                                : "mount at '" + spec.mounts[i].target + "': source",
                            spec.mounts[i].source, cfg, *view);
        } catch (const turn::RequestError& e) {
            throw turn::RequestError(fmt::format("{}: {}", o.request_file, e.what()));
        }
        auto journal = journal::open_sqlite_journal(journal_path(cfg));
        if (journal->turn(req.turn_id)) {
            log::error("submit",
                       "{}: id: turn '{}' is already in the journal; turn ids are unique, "
                       "pick another id or leave it out to have one generated",
                       o.request_file, req.turn_id);
            return kExitFailed;
        }
        daemon::Spool spool(cfg.state_dir);
        if (!spool.enqueue(req)) {
            log::error("submit", "{}: id: turn '{}' is already queued; pick another id",
                       o.request_file, req.turn_id);
            return kExitFailed;
        }
        // The request is in the spool now, so the daemon will run it whatever happens next; the
        // journal entry makes it visible right away (the daemon adds it itself if we die here).
        // A journal that fails now (busy past its timeout, full) does not unqueue the turn: it is
        // reported queued, with its id, so that a caller who retries does not run it twice.
        try {
            journal->add_turn(daemon::queued_entry(req, cfg), journal::TurnState::queued);
        } catch (const journal::JournalError& e) {
            if (e.code() != journal::JournalErrc::duplicate_turn)
                log::warn("submit",
                          "{}: turn '{}' is queued, but the journal could not list it yet ({}); "
                          "the daemon journals it when it claims it",
                          o.request_file, req.turn_id, e.what());
        }
        // Queued either way; said, so that nobody waits on a turn no daemon is there to run.
        // A lock that cannot be read says nothing: "not running" would be a guess
        // (docs/design.md §12.4).
        try {
            const auto holder = daemon::StateDirLock::probe(cfg.state_dir);
            // An exclusive holder that wrote no command yet is a daemon starting (or a
            // reconcile, which is as brief): no warning either.
            if (!holder || !holder->exclusive ||
                (!holder->command.empty() && !holder->command.starts_with("radiald run")))
                log::warn("submit",
                          "turn '{}' is queued, but no daemon serves state directory '{}' "
                          "({}run.stateDir) now: it runs once 'radiald run' starts on it (e.g. "
                          "'systemctl start radiald'); 'radiald status' shows the queue",
                          req.turn_id, cfg.state_dir, cfg.where("run.stateDir"));
        } catch (const daemon::LockError&) {
        }
        fmt::print("{}\n", req.turn_id);
        return kExitOk;
    } catch (const std::exception& e) {
        return report_error(e, CommandKind::other, "submit");
    }
}

int run_run_command(const DaemonOptions& o) {
    try {
        log::install_log_redaction();
        // Stop, reload, or logged and ignored: no signal a process manager or an operator sends
        // by habit kills the daemon without a line, from its first step (docs/design.md §12.3).
        // Until the loop hears them, the start's own thread does (startup_signals.h).
        daemon::StopSignals signals({SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM});
        daemon::StartupSignals starting(signals);
        // Before the instance: the runtime it holds tells these of its calls until it is gone.
        daemon::Metrics metrics(RADIAL_VERSION);
        auto cfg = load_settled_config(o);
        // The config's own secrets masked in every line the daemon logs, a runtime's error
        // quoting a setting among them, not only in its turns' (docs/design.md §10.2).
        const auto own_redaction = log::redact_log_lines(redaction::Redactor(
            turn::secrets_before_the_box({}, cfg.redact, {}, /*skip_refused=*/true)));
        auto instance =
            Instance::open(std::move(cfg), {"radiald run", daemon::StateDirLock::Mode::exclusive});
        if (auto why = instance->cfg().box_root ? std::nullopt
                                                : config::turn_id_shortfall(instance->cfg()))
            log::warn("daemon", "{}", *why);
        if (!config::host_proc_hides_other_users())
            log::warn("daemon",
                      "the host's /proc shows every process's arguments to every user, a box's "
                      "among them: a box can publish what it holds there; mount /proc with "
                      "hidepid=invisible (docs/design.md §15.3)");
        daemon::DaemonSettings settings;
        settings.checkpoint_for_test = daemon::pause_point_from_env_for_test();
        settings.host_timeout_grace = daemon::host_grace_from_env_for_test();
        settings.verbose = o.verbose;
        if (!o.verbose)
            log::set_min_level(
                log::parse_level(instance->cfg().log_level).value_or(log::Level::info));
        settings.config_text = instance->cfg().file_text;
        auto watch = std::make_shared<daemon::StateDirWatch>(std::vector<std::string>{
            instance->cfg().state_dir + "/" + daemon::kLockFile, journal_path(instance->cfg())});
        settings.state_dir_lost = [watch] { return watch->lost(); };
        settings.reload_config = [o, running = &instance->cfg()] {
            daemon::ReloadedConfig next;
            // One read: the keys applied and the text compared are the same version of the file.
            next.cfg = reread_config(o.config_file, *running);
            next.text = next.cfg.file_text;
            return next;
        };
        // docs/design.md §12.6: every plugin call timed, every journal failure counted, from here.
        instance->runtime().set_call_observer(
            [&metrics](std::string_view call, std::chrono::nanoseconds elapsed, bool ok) {
                metrics.plugin_call(call, elapsed, ok);
            });
        daemon::MetricsJournal journal(instance->journal(), metrics);
        settings.metrics = &metrics;
        // run.metrics was validated with the config; it needs a restart to change
        // (config_reload.h). One it cannot serve yet is no reason to run no turn
        // (metrics_endpoint_keeper.h).
        std::optional<daemon::MetricsEndpointKeeper> endpoint;
        std::string problem;
        if (auto where = config::parse_metrics_endpoint(instance->cfg().metrics, problem)) {
            daemon::MetricsServerOptions mo;
            mo.endpoint = *where;
            mo.render = [&metrics] { return metrics.text(); };
            endpoint.emplace(std::move(mo));
        }
        daemon::Daemon d(instance->cfg(), instance->runtime(), journal, instance->transport(),
                         std::move(settings));
        starting.done();
        return d.run(signals);
    } catch (const daemon::ReconcileError& e) {
        log::error("reconcile", "{}; not serving until they are gone", e.what());
        return exit_status_for(e, CommandKind::other);
    } catch (const std::exception& e) {
        return report_error(e, CommandKind::other, "daemon");
    }
}

int run_reconcile_command(const DaemonOptions& o) {
    try {
        log::install_log_redaction();
        // The same startup as `radiald run`: a config the daemon would refuse is not one to
        // reconcile for either. The hand-over recovery comes after the pass.
        auto instance = Instance::open(
            load_settled_config(o),
            {"radiald reconcile", daemon::StateDirLock::Mode::exclusive, false, false});
        const auto& cfg = instance->cfg();
        daemon::Spool spool(cfg.state_dir);
        auto r = daemon::reconcile(cfg, instance->runtime(), instance->journal(), spool);
        // After the orphans are gone, so nothing writes as the box user any more.
        const auto handed_back = turn::WorkspaceHandover::recover(
            turn::handover_marker_dir(cfg.state_dir),
            turn::box_may_write(instance->runtime(), instance->journal()));
        // Labels are what the runtime listed, checked for the prefix only: printable
        // (docs/design.md §14.7).
        for (const auto& l : r.killed_boxes) fmt::print("removed box {}\n", text::printable(l));
        for (const auto& id : r.reclaimed_turns) fmt::print("reclaimed turn {}\n", id);
        for (const auto& id : r.sessions.ended)
            fmt::print("removed session {} (its box had ended or was gone)\n", id);
        for (const auto& l : r.sessions.strays)
            fmt::print("removed session box {} (no session names it)\n", text::printable(l));
        for (const auto& id : r.journaled_pending)
            fmt::print("journaled the kept terminal record of turn {}\n", id);
        for (const auto& id : r.still_pending)
            fmt::print("turn {}: its kept terminal record still cannot be journaled\n", id);
        if (r.residue_removed)
            fmt::print("removed {} path(s) left by ended turns\n", r.residue_removed);
        for (const auto& id : r.queue.admitted) fmt::print("journaled turn {} (queued)\n", id);
        for (const auto& id : r.queue.rejected)
            fmt::print("refused turn {} (unreadable request)\n", id);
        for (const auto& id : r.queue.lost) fmt::print("refused turn {} (request gone)\n", id);
        for (const auto& id : r.queue.cleared)
            fmt::print("removed the request of finished turn {}\n", id);
        if (r.stale_temp_files)
            fmt::print("removed {} half-written submission(s)\n", r.stale_temp_files);
        for (const auto& id : r.queue.runnable)
            fmt::print("queued turn {} runs when the daemon starts\n", id);
        if (handed_back) fmt::print("handed {} workspace(s) back to their owners\n", handed_back);
        if (r.nothing_done() && handed_back == 0) fmt::print("nothing to reconcile\n");
        return r.still_pending.empty() ? kExitOk : kExitFailed;
    } catch (const std::exception& e) {
        return report_error(e, CommandKind::other, "reconcile");
    }
}

} // namespace radial::cli
