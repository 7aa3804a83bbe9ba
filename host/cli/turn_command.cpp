#include "cli/turn_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <radial/units.hpp>

#include "cli/command_signals.h"
#include "cli/config_file.h"
#include "cli/exit_status.h"
#include "cli/instance.h"
#include "cli/output_delivery.h"
#include "cli/runtime_setup.h"
#include "config/bounded_units.h"
#include "config/box_identity.h"
#include "config/instance_id.h"
#include "daemon/spool.h"
#include "daemon/state_dir_lock.h"
#include "daemon/test_pause.h"
#include "fs/file_kind.h"
#include "fs/pinned_directory.h"
#include "log/log_redaction.h"
#include "log/logger.h"
#include "turn/turn_request.h"
#include "turn/turn_secrets.h"
#include "turn/turn_session.h"

namespace radial::cli {
namespace {

// "1st", "2nd", "3rd", "4th", ..., "11th", "21st".
std::string ordinal(std::size_t n) {
    const std::size_t tens = n % 100, ones = n % 10;
    const char* suffix = tens >= 11 && tens <= 13 ? "th"
                         : ones == 1              ? "st"
                         : ones == 2              ? "nd"
                         : ones == 3              ? "rd"
                                                  : "th";
    return std::to_string(n) + suffix;
}

// What the flags add to the request: --timeout, --env, and --secret with its value from radiald's
// own environment (docs/design.md §3.1). Throws turn::RequestError naming the flag.
void add_flags_to_request(const TurnOptions& o, turn::TurnRequest& req,
                          const config::HostConfig& cfg) {
    if (o.timeout) {
        std::uint64_t ms = 0;
        if (auto problem = config::duration_problem(*o.timeout, ms, 1, turn::kMaxTimeoutMs,
                                                    "90s, 5m or 1500ms");
            !problem.empty())
            throw turn::RequestError("--timeout " + problem);
        req.timeout_ms = ms;
    }
    for (std::size_t i = 0; i < o.env.size(); ++i) {
        const std::string& e = o.env[i];
        auto eq = e.find('=');
        std::string name = e.substr(0, eq);
        // Nothing of an argument that does not parse is quoted back: a secret passed the wrong
        // way (`--env "$TOKEN"`, a value whose '=' padding reads as the separator) would be
        // printed and kept in the record file. Its position says which.
        if (eq == std::string::npos || !is_env_name(name))
            throw turn::RequestError(fmt::format(
                "--env (the {} of {}): {}; pass NAME=VALUE with NAME matching "
                "[A-Za-z_][A-Za-z0-9_]* (NAME=, for an empty value); its text is not shown, as it "
                "may be a secret",
                ordinal(i + 1), o.env.size(),
                eq == std::string::npos ? "it has no '='"
                : name.empty()          ? "the name before '=' is empty"
                                        : "the text before '=' is not a variable name"));
        req.env.push_back({name, e.substr(eq + 1), false});
    }
    // Where a workspace appears means nothing without one: more likely a workspace forgotten. A
    // session's turn is told its session fixed its mounts (session_turn.h).
    if (!req.workspace_mount.empty() && req.workspace.empty() && req.session.empty())
        throw turn::RequestError(fmt::format(
            "--workspace-mount {} without --workspace: the {} has no workspace to mount; pass "
            "--workspace DIR, or drop --workspace-mount",
            req.workspace_mount, req.kind == turn::RequestKind::check ? "check" : "turn"));
    if (req.kind == turn::RequestKind::check && !req.secrets.empty())
        throw turn::RequestError(
            fmt::format("--secret {}: a check carries no secrets; drop --secret, or run the "
                        "command as a turn (radiald turn) if it needs one",
                        req.secrets.front()));
    try {
        req = turn::with_secret_values(std::move(req), turn::process_env,
                                       "export it in the shell that runs radiald turn",
                                       cfg.secret_names);
    } catch (const turn::RequestError& e) {
        throw turn::RequestError(fmt::format("--secret: {}", e.what()));
    }
}

// The --record-file's directory, opened before any box starts and written only through that
// descriptor afterwards: a box that may change the directory (a record file in the workspace) can
// never redirect radiald's write elsewhere (fs/pinned_directory.h).
struct RecordFile {
    std::string path;
    std::string name;
    fs_util::PinnedDirectory dir;
};

// --record-file cannot be opened or written; names the path. A RequestError, so that it maps to
// 125 like every failure of the turn's request (docs/design.md §14.4).
class RecordFileError : public turn::RequestError {
public:
    using turn::RequestError::RequestError;
};

// Checked before any box starts: a record that cannot be written must not cost a turn. Throws
// RecordFileError naming the path.
RecordFile open_record_file(const std::string& path) {
    namespace fs = std::filesystem;
    const fs::path dest(path);
    const std::string name = dest.filename().string();
    struct stat st {};
    const bool exists = ::lstat(path.c_str(), &st) == 0;
    if (name.empty() || name == "." || name == ".." || (exists && S_ISDIR(st.st_mode)))
        throw RecordFileError(fmt::format(
            "--record-file '{}' is a directory; name a file in it, e.g. '{}/record.json'", path,
            fs::path(path).lexically_normal().string()));
    // The record is renamed into place: whatever is at the name is replaced, never written
    // through. Only a regular file is the operator's to replace; a device (/dev/full), a fifo or
    // a link (/dev/stdout) would be destroyed, its target never written (docs/design.md §11.4).
    if (exists && S_ISLNK(st.st_mode))
        throw RecordFileError(fmt::format(
            "--record-file '{}' is a symbolic link (to '{}'); radiald replaces what is at the "
            "name and never writes through a link: name the file itself, or a path where "
            "nothing is",
            path, fs_util::link_target(dest)));
    if (exists && !S_ISREG(st.st_mode))
        throw RecordFileError(fmt::format(
            "--record-file '{}' is {}, not a regular file; radiald replaces what is at the name "
            "and would destroy it: name a regular file, or a path where nothing is",
            path, fs_util::file_kind(st.st_mode)));
    const std::string dir = dest.has_parent_path() ? dest.parent_path().string() : ".";
    try {
        return RecordFile{path, name, fs_util::PinnedDirectory::open(dir)};
    } catch (const fs_util::FsError& e) {
        throw RecordFileError(fmt::format("--record-file '{}': {}", path, e.what()));
    }
}

// Publishes the record (all of it or none of it under its name). Throws RecordFileError naming
// the path.
void write_record(const RecordFile& file, const std::string& json) {
    try {
        // 0600: the record holds the last output of each stream, which may quote what the box
        // read from the workspace, as the output log does (docs/design.md §11.7).
        file.dir.publish(file.name, json + "\n", 0600);
    } catch (const fs_util::FsError& e) {
        throw RecordFileError(fmt::format("--record-file '{}': {}", file.path, e.what()));
    }
}

// A terminal record for a turn that failed before its box could run (bad config, no plugin, no
// engine): the operator who asked for a record gets one either way.
void write_early_record(const TurnOptions& o, const std::string& turn_id,
                        const std::string& runtime, const std::string& message) {
    if (!o.record_file) return;
    // Real time: the commands run in a process of their own and take no clock (docs/design.md
    // §12.7).
    const auto rec = turn::error_record(
        {log::redact_registered(turn_id), std::string(turn::to_string(o.request.kind)), runtime,
         log::redact_registered(o.request.image), ""},
        log::redact_registered(message), std::chrono::system_clock::now());
    try {
        write_record(open_record_file(*o.record_file), rec.to_json());
    } catch (const std::exception& e) {
        log::error("turn", "{}", e.what());
    }
}

} // namespace

namespace {

// The options a turn and a check share; `what` is "Turn" or "Check", `id_flag` its id option.
void add_box_options(CLI::App* cmd, TurnOptions& o, const std::string& what,
                     const std::string& id_flag, const std::string& secret_help) {
    cmd->add_option("--config", o.config_file, "Config file (TOML)")->check(CLI::ExistingFile);
    cmd->add_option("--runtime", o.runtime, "Runtime id, overriding run.containerRuntime");
    cmd->add_option("--image", o.request.image,
                    what == "Turn" ? "Image (or template) to run; required unless the turn runs "
                                     "in a --session"
                                   : "Image (or template) to run; required");
    cmd->add_option("--workspace", o.request.workspace,
                    "Host directory mounted at /work (the workdir); read-write unless --mode "
                    "read-only");
    cmd->add_option("--env", o.env,
                    "NAME=VALUE for the box (not secret; visible in radiald's argv)")
        ->allow_extra_args(false);
    cmd->add_option("--secret", o.request.secrets, secret_help)->allow_extra_args(false);
    cmd->add_option("--mode", o.request.mode,
                    "read-only or workspace-write (the box's private writable layer); default: "
                    "run.mode");
    cmd->add_option("--workspace-mount", o.request.workspace_mount,
                    "Where the workspace appears: /work, or same-path (its host path); default: "
                    "run.workspaceMount");
    cmd->add_option("--timeout", o.timeout,
                    what + " timeout, e.g. 90s, 5m, 1500ms (default: none)");
    cmd->add_option("--record-file", o.record_file, "Write the terminal record (JSON) here");
    cmd->add_option(id_flag, o.request.turn_id, what + " id (a-z, 0-9, '-'); default: generated");
}

} // namespace

CLI::App* add_turn_command(CLI::App& app, TurnOptions& o) {
    auto* cmd = app.add_subcommand("turn", "Run one turn in a box and report how it ended");
    add_box_options(cmd, o, "Turn", "--turn-id",
                    "NAME of a variable in radiald's environment passed to the box as a secret");
    cmd->add_option("--egress", o.request.egress,
                    "A destination HOST:PORT the box may reach through its egress broker "
                    "(repeatable; each within run.egress.allow)")
        ->allow_extra_args(false);
    cmd->add_option("--offer", o.request.offer,
                    "A service of the turn's workspace (run.workspaces.NAME.serve) the box offers "
                    "to the peers its policy names (repeatable)")
        ->allow_extra_args(false);
    cmd->add_option("--session", o.request.session,
                    "Run the turn in this session's box ('radiald session create'), as an exec; "
                    "the session fixed its image, workspace and mode");
    cmd->add_option("--record-type", o.request.record_type,
                    "The only record type the box may post to its turn socket")
        ->capture_default_str();
    cmd->add_option("argv", o.request.argv, "The command to run in the box, after '--'")
        ->required();
    cmd->footer(
        "Exit status: the turn's own exit code; 124 when it timed out; 125 when the host "
        "or runtime failed; 130 when interrupted.");
    return cmd;
}

CLI::App* add_check_command(CLI::App& app, TurnOptions& o) {
    o.request.kind = turn::RequestKind::check;
    auto* cmd = app.add_subcommand(
        "check",
        "Run one check (a project's own command: tests, lint, a build) in a box, without secrets "
        "or a turn socket, and report how it ended");
    add_box_options(
        cmd, o, "Check", "--check-id",
        "Refused: a check carries no secrets (run a turn for a command that needs one)");
    cmd->add_option("argv", o.request.argv, "The command to run in the box, after '--'")
        ->required();
    cmd->footer(
        "Exit status: the check's own exit code; 124 when it timed out; 125 when the host "
        "or runtime failed; 130 when interrupted.");
    return cmd;
}

int run_turn_command(const TurnOptions& o) {
    turn::TurnRequest req;
    config::HostConfig cfg;
    std::optional<RecordFile> record_file;
    // Shared: turns side by side are fine, but not beside a daemon or reconcile on this state
    // directory, whose startup pass would take this turn's box for an orphan (docs/design.md
    // §8.6).
    std::unique_ptr<Instance> instance;
    std::optional<turn::TurnEnvironment> env;
    std::optional<turn::TurnSession> session;
    // The request's secrets masked in every line and record from the first byte written of the
    // request (a flag, an image name, a message quoting either), before the session takes over.
    log::RedactionRegistration early_redaction;
    // Everything before the box: each failure is 125 (docs/design.md §14.4), and an operator
    // who asked for a record gets one — unless the record file itself is what failed.
    try {
        // The flags' secrets before the config is read: its errors may quote a flag (--runtime).
        log::install_log_redaction();
        early_redaction = log::redact_log_lines(redaction::Redactor(turn::secrets_before_the_box(
            o.request, config::RedactConfig{}, o.request.secrets, /*skip_refused=*/true)));
        cfg = load_config(o.config_file, o.runtime);
        // A secret the set refuses (too short, a bad name) is left out here, the others kept;
        // it refuses the turn in its session, after the failures that must come first (the
        // box-id range's).
        early_redaction = log::redact_log_lines(redaction::Redactor(turn::secrets_before_the_box(
            o.request, cfg.redact, o.request.secrets, /*skip_refused=*/true)));
        config::settle_instance_id(cfg);
        req = o.request;
        if (req.turn_id.empty()) req.turn_id = turn::new_turn_id();
        // A request the flags make malformed, or a record file that cannot be written, is
        // reported after a box-id range in use (Instance::open's first step) but refuses the turn
        // before anything of the instance is taken.
        std::exception_ptr request_failed;
        try {
            turn::validate_turn_id(req.turn_id);
            add_flags_to_request(o, req, cfg);
            if (o.record_file) record_file.emplace(open_record_file(*o.record_file));
        } catch (...) {
            request_failed = std::current_exception();
        }
        if (request_failed) {
            config::check_box_id_range(cfg);
            std::rethrow_exception(request_failed);
        }
        instance = Instance::open(cfg, {"radiald turn", daemon::StateDirLock::Mode::shared, true});
        // A submitted request waiting under this id would be taken for this turn's and never run
        // (docs/design.md §12.1): the id is taken.
        if (const auto queued = daemon::Spool(cfg.state_dir).request_path(req.turn_id);
            std::filesystem::exists(queued))
            throw turn::RequestError(
                fmt::format("turn id '{}' belongs to a request waiting in the daemon's spool "
                            "('{}'); choose another --turn-id",
                            req.turn_id, queued));
        env.emplace(instance->turn_environment());
        env->host_timeout_grace = daemon::host_grace_from_env_for_test();
        session.emplace(*env, req);
    } catch (const std::exception& e) {
        const int status = report_error(e, CommandKind::turn, "turn");
        if (!dynamic_cast<const RecordFileError*>(&e))
            write_early_record(o, req.turn_id, cfg.container_runtime, e.what());
        return status;
    }

    // Ctrl-C, SIGTERM, or a closed terminal (SIGHUP, SIGQUIT) kills the box rather than leaving
    // it running; SIGUSR1, SIGUSR2 and SIGALRM mean nothing to a turn: logged and ignored, never a
    // death that leaves the box running (docs/design.md §12.3).
    std::optional<CommandSignals> signals;
    try {
        signals.emplace(CommandSignals::Options{
            .component = "turn",
            .subject = "turn " + session->turn_id() + ": ",
            .on_first_stop =
                [&session](int) {
                    // Before the line: logging may wait up to run.outputStall for a slow reader.
                    if (session->interrupt())
                        log::warn("turn", "turn {}: interrupted; killing its box",
                                  session->turn_id());
                    else
                        log::warn("turn",
                                  "turn {}: interrupted; no box of it runs now (its command "
                                  "ended, or had not started): what radiald still does for it "
                                  "stops",
                                  session->turn_id());
                },
            .second_stop_ends = false,
        });
    } catch (const std::exception& e) {
        // Logged here rather than by report_error: the turn id is context the error lacks.
        log::error("turn", "turn {}: setting up signal handling: {}", session->turn_id(), e.what());
        return exit_status_for(e, CommandKind::turn);
    }
    // The thread ends and the previous handlers come back.
    bool interrupted = false;
    auto stop_signal_thread = [&] {
        if (!signals) return;
        signals->stop();
        interrupted = signals->stop_asked() != 0;
        signals.reset();
    };

    // The box's output and radiald's own lines reach the caller in the order they were made,
    // through a writer that a reader which takes nothing cannot hold (docs/design.md §3.6).
    std::optional<OutputDelivery> delivery;
    try {
        delivery.emplace(STDOUT_FILENO, STDERR_FILENO,
                         std::chrono::milliseconds(cfg.output_stall_ms));
    } catch (const std::exception& e) {
        stop_signal_thread();
        log::error("turn", "turn {}: starting the output writer: {}", session->turn_id(), e.what());
        return kExitHostFault;
    }
    struct LogThroughDelivery {
        OutputDelivery& d;
        explicit LogThroughDelivery(OutputDelivery& delivery) : d(delivery) {
            log::set_sink([this](std::string_view line) {
                std::string l(line);
                l.push_back('\n');
                d.write(OutputDelivery::Channel::log, l);
            });
        }
        ~LogThroughDelivery() {
            d.close();
            log::set_sink({});
        }
    } log_through_delivery(*delivery);
    session->set_output_drain([&] { return delivery->drain_box_output(); });

    turn::TerminalRecord rec;
    try {
        rec = session->run([&](std::uint32_t stream, std::string_view bytes) {
            delivery->write(stream == RADIAL_STREAM_STDERR ? OutputDelivery::Channel::box_stderr
                                                           : OutputDelivery::Channel::box_stdout,
                            bytes);
        });
    } catch (const std::exception& e) {
        // The only exception out of a session is the journal's (docs/design.md §14.2): it
        // refused the turn before its box could start, so nothing ran.
        stop_signal_thread();
        log::error(error_component(e, "turn"), "turn {}: {}", session->turn_id(), e.what());
        write_early_record(o, req.turn_id, cfg.container_runtime, e.what());
        return kExitHostFault;
    }
    stop_signal_thread();
    if (!rec.journal_error.empty())
        log::error("journal",
                   "turn {}: the journal is missing this turn's terminal record (it says "
                   "'journalError' in the record); `radiald reconcile` or the daemon's next start "
                   "journals it once there is space",
                   req.turn_id);

    if (record_file) {
        try {
            write_record(*record_file, rec.to_json());
        } catch (const RecordFileError& e) {
            // Where the record is instead, when the journal took it.
            log::error("turn", "turn {}: {}{}", req.turn_id, e.what(),
                       rec.journal_error.empty()
                           ? fmt::format("; the terminal record is in the journal: radiald "
                                         "records {}",
                                         req.turn_id)
                           : std::string());
            return kExitHostFault;
        }
    }
    // An interrupt that came after the command ended by itself changed nothing of its outcome:
    // the status is the record's (docs/design.md §14.4).
    static_assert(kExitInterrupted == 130);
    return rec.cli_exit_status(interrupted);
}

} // namespace radial::cli
