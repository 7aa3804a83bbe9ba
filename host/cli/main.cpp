// radiald — runs agent turns and project checks in isolated boxes through runtime plugins.
#include <fmt/format.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <radial/host/run_call.hpp>
#include <sstream>

#include "cli/config_check.h"
#include "cli/config_file.h"
#include "cli/daemon_commands.h"
#include "cli/exit_status.h"
#include "cli/journal_commands.h"
#include "cli/logs_command.h"
#include "cli/open_file_limit.h"
#include "cli/policy_command.h"
#include "cli/runtime_setup.h"
#include "cli/session_command.h"
#include "cli/standard_output.h"
#include "cli/template_command.h"
#include "cli/turn_command.h"
#include "cli/unknown_flags.h"
#include "config/host_config.h"
#include "loader/plugin_loader.h"
#include "log/logger.h"
#include "redaction/no_core_dumps.h"
#include "redaction/stream_redactor.h"
#include "text/printable.h"

namespace {

// The values of the `--secret NAME` variables named anywhere on the command line: a parse error
// quotes the words it could not place, and one of them may be such a value. Names and values the
// secret set refuses are left to the turn's own checks.
radial::redaction::Redactor command_line_secrets(int argc, char** argv) {
    radial::redaction::SecretSet set;
    for (int i = 1; i < argc; ++i) {
        const std::string_view word = argv[i];
        std::string name;
        if (word == "--secret" && i + 1 < argc)
            name = argv[i + 1];
        else if (word.starts_with("--secret="))
            name = std::string(word.substr(9));
        else
            continue;
        const char* value = std::getenv(name.c_str());
        if (value == nullptr || *value == '\0') continue;
        try {
            set.add(name, value);
        } catch (const std::invalid_argument&) {
        }
    }
    return radial::redaction::Redactor(set);
}

// `radiald plugins`: every *.so in the plugin directories, usable or not, with why not.
int list_plugins(const std::optional<std::string>& config_file) {
    using namespace radial;
    config::HostConfig cfg;
    try {
        cfg = cli::load_config(config_file);
    } catch (const config::ConfigError& e) {
        return cli::report_error(e, cli::CommandKind::other, "loader");
    }
    int status = 0;
    std::map<std::string, std::string> ids;
    fmt::print("{:<12} {:<10} {:<5} {}\n", "ID", "VERSION", "ABI", "PATH");
    std::size_t found = 0;
    for (const auto& dir : cfg.plugin_dirs) {
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec))
            log::warn("loader", "plugin directory '{}' does not exist", dir);
    }
    for (const auto& f : loader::plugin_files(cfg.plugin_dirs)) {
        ++found;
        try {
            auto p = loader::load_plugin(f);
            fmt::print("{:<12} {:<10} {:<5} {}\n", p.info.id, text::printable(p.info.version),
                       fmt::format("{}.{}", p.info.abi_major, p.info.abi_minor),
                       text::printable(p.path));
            auto [it, inserted] = ids.emplace(p.info.id, p.path);
            if (!inserted) {
                log::error("loader", "plugins '{}' and '{}' both claim runtime id '{}'", it->second,
                           p.path, p.info.id);
                status = cli::kExitFailed;
            }
        } catch (const loader::LoadError& e) {
            status = cli::report_error(e, cli::CommandKind::other, "loader");
        }
    }
    if (found == 0) {
        log::error("loader", "no runtime plugins in {}", fmt::join(cfg.plugin_dirs, ", "));
        return cli::kExitFailed;
    }
    return status;
}

// What main does, but for standard output's errors, which main says after it.
int run(int argc, char** argv) {
    using namespace radial;
    // Every secret a turn is given passes through this process: none may reach a core file.
    if (!redaction::forbid_core_dumps()) {
        std::fprintf(stderr, "radiald: cannot turn off core dumps (setrlimit, prctl): %s\n",
                     std::strerror(errno));
        return cli::kExitHostFault;
    }
    // Nothing radiald makes is writable by others before its own chmod, whatever the caller's
    // umask: a file under the state directory may be an order to radiald (docs/design.md §3.9).
    ::umask(::umask(0) | 022);
    // Many turns' sockets, relays and logs at once (docs/design.md §12.2).
    cli::raise_open_file_limit();
    // A closed terminal must not kill the daemon mid-turn; write errors are handled where they
    // occur.
    std::signal(SIGPIPE, SIG_IGN);

    CLI::App app{
        "radiald: runs agent turns and project checks in isolated boxes through runtime plugins"};
    app.require_subcommand(0, 1);
    bool version = false;
    bool verbose = false;
    app.add_flag("--version", version, "Print the version and the runtime ABI version");
    app.add_flag("-v,--verbose", verbose, "Log debug lines too");
    std::string log_format = "text";
    app.add_option("--log-format", log_format,
                   "Log lines as 'text' (radiald[<component>] <level>: <message>) or 'json' (one "
                   "object per line, for log shippers)")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();

    cli::TurnOptions turn_opts;
    auto* turn_cmd = cli::add_turn_command(app, turn_opts);
    cli::TurnOptions check_opts;
    auto* check_cmd = cli::add_check_command(app, check_opts);

    std::optional<std::string> plugins_config;
    auto* plugins_cmd =
        app.add_subcommand("plugins", "List the runtime plugins found (id, version, ABI, path)");
    plugins_cmd->add_option("--config", plugins_config, "Config file (TOML)")
        ->check(CLI::ExistingFile);

    cli::DaemonOptions submit_opts, run_opts, reconcile_opts, status_opts;
    auto* submit_cmd = cli::add_submit_command(app, submit_opts);
    auto* run_cmd = cli::add_run_command(app, run_opts);
    auto* reconcile_cmd = cli::add_reconcile_command(app, reconcile_opts);
    auto* status_cmd = cli::add_status_command(app, status_opts);

    cli::ConfigCheckOptions config_check_opts;
    auto* config_check_cmd = cli::add_config_check_command(app, config_check_opts);

    cli::JournalOptions records_opts, turns_opts;
    auto* records_cmd = cli::add_records_command(app, records_opts);
    auto* turns_cmd = cli::add_turns_command(app, turns_opts);
    cli::LogsOptions logs_opts;
    auto* logs_cmd = cli::add_logs_command(app, logs_opts);

    cli::SessionOptions session_opts;
    const auto session_cmds = cli::add_session_commands(app, session_opts);

    cli::PolicyOptions policy_opts;
    const auto policy_cmds = cli::add_policy_commands(app, policy_opts);

    cli::TemplateOptions template_opts;
    auto* template_export_cmd = cli::add_template_export_command(app, template_opts);

    // Before CLI11, which reports a mistyped flag as whatever its value then breaks; in the log
    // format asked for, which CLI11 has not read yet.
    for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i) {
        const std::string_view word = argv[i];
        if (word == "--log-format" && i + 1 < argc)
            log::set_format(log::parse_format(argv[i + 1]).value_or(log::Format::text));
        else if (word.starts_with("--log-format="))
            log::set_format(log::parse_format(word.substr(13)).value_or(log::Format::text));
    }
    if (auto bad = cli::check_unknown_flags(app, argc, argv)) {
        log::error("cli", "{}", bad->message);
        return bad->in_box_command ? cli::kExitHostFault : cli::kExitUsage;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        std::ostringstream out, err;
        int status = app.exit(e, out, err);
        const auto secrets = command_line_secrets(argc, argv);
        std::cout << secrets.redact(out.str()) << std::flush;
        std::cerr << secrets.redact(err.str()) << std::flush;
        // `radiald turn` (and check) reports every failure before the box as 125, as `docker run`
        // does (docs/design.md §14.4).
        if (status != 0 && (turn_cmd->parsed() || check_cmd->parsed())) return cli::kExitHostFault;
        return status == 0 ? cli::kExitOk : cli::kExitUsage;
    }
    if (verbose) log::set_min_level(log::Level::debug);
    log::set_format(log::parse_format(log_format).value_or(log::Format::text));

    if (version) {
        fmt::print("{} (runtime ABI {}.{})\n", cli::host_version(), RADIAL_RT_ABI_MAJOR,
                   RADIAL_RT_ABI_MINOR);
        return 0;
    }
    const int status = [&] {
        if (turn_cmd->parsed()) return cli::run_turn_command(turn_opts);
        if (check_cmd->parsed()) return cli::run_turn_command(check_opts);
        if (plugins_cmd->parsed()) return list_plugins(plugins_config);
        if (records_cmd->parsed()) return cli::run_records_command(records_opts);
        if (turns_cmd->parsed()) return cli::run_turns_command(turns_opts);
        if (logs_cmd->parsed()) return cli::run_logs_command(logs_opts);
        if (submit_cmd->parsed()) return cli::run_submit_command(submit_opts);
        run_opts.verbose = verbose;
        if (run_cmd->parsed()) return cli::run_run_command(run_opts);
        if (reconcile_cmd->parsed()) return cli::run_reconcile_command(reconcile_opts);
        if (status_cmd->parsed()) return cli::run_status_command(status_opts);
        if (template_export_cmd->parsed()) return cli::run_template_export_command(template_opts);
        if (session_cmds.create->parsed()) return cli::run_session_create(session_opts);
        if (session_cmds.rm->parsed()) return cli::run_session_rm(session_opts);
        if (session_cmds.ls->parsed()) return cli::run_session_ls(session_opts);
        if (session_cmds.snapshot->parsed()) return cli::run_session_snapshot(session_opts);
        if (session_cmds.snapshots->parsed()) return cli::run_session_snapshots(session_opts);
        if (session_cmds.snapshot_rm->parsed()) return cli::run_session_snapshot_rm(session_opts);
        if (config_check_cmd->parsed()) return cli::run_config_check_command(config_check_opts);
        if (policy_cmds.ls->parsed()) return cli::run_policy_ls(policy_opts);
        if (policy_cmds.allow->parsed()) return cli::run_policy_allow(policy_opts);
        if (policy_cmds.deny->parsed()) return cli::run_policy_deny(policy_opts);
        std::cout << app.help();
        return cli::kExitUsage;
    }();
    // A run (or exec) radiald gave up on still has a thread in the plugin's code (docs/design.md
    // §3.7): the process ends, once what it wrote is flushed, without the static destructors and
    // library unloads an ordinary exit would run beside that thread.
    if (host::RunCall::ever_abandoned()) {
        std::cerr.flush();
        cli::exit_now(status); // flushes standard output and says if it could not take it
    }
    return status;
}

} // namespace

int main(int argc, char** argv) {
    // Before anything is printed: a command whose output was lost must not exit 0, whichever of
    // its returns it took (docs/design.md §14.4).
    radial::cli::watch_standard_output();
    return radial::cli::finish_standard_output(run(argc, argv));
}
