#include "cli/config_check.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "cli/config_file.h"
#include "cli/exit_status.h"
#include "cli/runtime_setup.h"
#include "config/box_identity.h"
#include "config/host_config.h"
#include "config/instance_id.h"
#include "config/metrics_endpoint.h"
#include "config/state_dir_trust.h"
#include "egress/egress_broker.h"
#include "log/log_redaction.h"
#include "log/logger.h"
#include "redaction/secret_set.h"
#include "redaction/stream_redactor.h"
#include "text/printable.h"
#include "turn/turn_secrets.h"

namespace radial::cli {
namespace {

// What `radiald run` would start with. The runtime is created and preflighted; nothing on disk.

// Every startup check radiald applies to a config and its runtime, in the order `radiald turn`
// applies them (docs/design.md §7.4). This is the only place config check opens a runtime, so it
// can follow any change to the startup checks by changing this one function. Throws StartupError.
CheckedRuntime open_checked(const config::HostConfig& cfg) {
    std::vector<std::string> installed;
    host::RuntimeClient client = open_runtime(cfg, /*preflight=*/true, &installed);
    auto transport = resolve_turn_transport(cfg, client);
    check_config_against_runtime(cfg, client);
    auto box_root = resolve_box_root(cfg, client);
    check_pool_ids(cfg, box_root);
    return CheckedRuntime{std::move(client), std::move(transport), std::move(box_root),
                          std::move(installed)};
}

std::string duration_text(std::uint64_t ms) {
    return ms % 1000 == 0 ? fmt::format("{}s", ms / 1000) : fmt::format("{}ms", ms);
}

std::string entry_text(const host::ConfigEntry& e) {
    switch (e.kind) {
        case RADIAL_CONFIG_INT: return std::to_string(e.int_value);
        case RADIAL_CONFIG_BOOL: return e.int_value ? "true" : "false";
        case RADIAL_CONFIG_FLOAT: return fmt::format("{}", e.float_value);
        case RADIAL_CONFIG_STRING_ARRAY:
            return e.items.empty() ? "[]" : fmt::format("[\"{}\"]", fmt::join(e.items, "\", \""));
        default: return fmt::format("\"{}\"", e.string_value);
    }
}

// Why radiald could not create entries in the directory `dir` (a read-only file system, no write
// or search permission for radiald's user), or "" when it could.
std::string unwritable(const std::string& dir) {
    if (::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) == 0) return "";
    const int err = errno;
    if (err == EROFS) return fmt::format("'{}' is on a read-only file system", dir);
    return fmt::format("radiald (uid {}) cannot create files in '{}': {}", ::geteuid(), dir,
                       std::strerror(err));
}

// The nearest directory at or above `path` that exists: where a missing one would be created.
std::filesystem::path existing_ancestor(std::filesystem::path path) {
    std::error_code ec;
    while (path.has_relative_path() && !std::filesystem::exists(path, ec))
        path = path.parent_path();
    return path;
}

// The state directory as config check finds it, without creating it. Throws StartupError when a
// daemon could never use it: every turn journals there (docs/design.md §11).
std::string state_dir_text(const config::HostConfig& cfg) {
    namespace fs = std::filesystem;
    std::error_code ec;
    auto st = fs::status(cfg.state_dir, ec);
    if (st.type() == fs::file_type::not_found) {
        const auto parent = existing_ancestor(cfg.state_dir);
        if (auto why = unwritable(parent); !why.empty())
            throw StartupError(fmt::format(
                "{}run.stateDir: '{}' does not exist and cannot be created: {}; create it for "
                "radiald's user or choose another directory",
                cfg.where("run.stateDir"), cfg.state_dir, why));
        return cfg.state_dir + " (created at first start)";
    }
    if (ec)
        throw StartupError(
            fmt::format("{}run.stateDir: cannot look at '{}': {}; fix its permissions "
                        "or choose another directory",
                        cfg.where("run.stateDir"), cfg.state_dir, ec.message()));
    if (st.type() != fs::file_type::directory)
        throw StartupError(
            fmt::format("{}run.stateDir: '{}' exists and is not a directory; remove it "
                        "or choose another path",
                        cfg.where("run.stateDir"), cfg.state_dir));
    // What `run` and `turn` refuse: a directory another user could change (docs/design.md §15).
    config::check_state_dir_trust(cfg.state_dir);
    if (auto why = unwritable(cfg.state_dir); !why.empty())
        throw StartupError(fmt::format(
            "{}run.stateDir: {}: radiald keeps its journal and its turns' sockets there; make it "
            "writable (remount it read-write) or choose another directory",
            cfg.where("run.stateDir"), why));
    return cfg.state_dir + " (exists)";
}

// run.metrics as `radiald run` would serve it: a unix socket needs its directory, and a path that
// holds anything but a socket is refused there (docs/design.md §12.6). A TCP address is bound at
// start only: binding it here would fail whenever the daemon already serves it.
void check_metrics_endpoint(const config::HostConfig& cfg) {
    if (cfg.metrics.empty()) return;
    std::string problem;
    const auto where = config::parse_metrics_endpoint(cfg.metrics, problem);
    if (!where || where->kind != config::MetricsEndpoint::Kind::unix_socket) return;
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(where->path).parent_path();
    std::error_code ec;
    std::string why;
    const auto st = fs::status(dir, ec);
    if (st.type() == fs::file_type::not_found) {
        // The packaged unit makes /run/radial at its start (RuntimeDirectory=) and removes it at
        // its stop: missing now is no proof it will be then.
        log::warn("config",
                  "{}run.metrics: the socket's directory '{}' does not exist now; radiald run "
                  "serves no metrics until it does (it tries again every 30 s; the packaged unit "
                  "makes /run/radial at its start)",
                  cfg.where("run.metrics"), dir.string());
        return;
    }
    if (ec)
        why = fmt::format("cannot look at the socket's directory '{}': {}", dir.string(),
                          ec.message());
    else if (st.type() != fs::file_type::directory)
        why = fmt::format("'{}' is not a directory", dir.string());
    else if (why = unwritable(dir.string()); !why.empty())
        why += "; make it writable for radiald's user or pick another path";
    else if (auto st = fs::symlink_status(where->path, ec);
             !ec && st.type() != fs::file_type::not_found && st.type() != fs::file_type::socket)
        why = fmt::format("'{}' exists and is not a socket; remove it or pick another path",
                          where->path);
    if (!why.empty())
        throw StartupError(
            fmt::format("{}run.metrics: radiald run could not serve the metrics "
                        "there: {}",
                        cfg.where("run.metrics"), why));
}

// The literal secrets of [redact] as every turn would compile them: one the set refuses (shorter
// than minLength, inside a marker) refuses every turn, found here rather than at the first turn.
void check_redact_values(const config::HostConfig& cfg) {
    redaction::SecretSet set(cfg.redact.min_length);
    for (std::size_t i = 0; i < cfg.redact.values.size(); ++i) {
        try {
            set.add(fmt::format("redact.values.{}", i), cfg.redact.values[i]);
        } catch (const std::invalid_argument& e) {
            throw StartupError(
                fmt::format("{}redact.values: {}", cfg.where("redact.values"), e.what()));
        }
    }
}

std::string instance_id_text(const config::HostConfig& cfg) {
    if (!cfg.instance_id.empty()) return cfg.instance_id + " (run.instanceId)";
    const std::string file = cfg.state_dir + "/" + config::kInstanceIdFile;
    // read_persisted_instance_id creates nothing, unlike settle_instance_id.
    if (auto id = config::read_persisted_instance_id(cfg.state_dir))
        return fmt::format("{} (generated, kept in {})", *id, file);
    return fmt::format("generated at first start (kept in {})", file);
}

} // namespace

CLI::App* add_config_check_command(CLI::App& app, ConfigCheckOptions& o) {
    auto* config_cmd = app.add_subcommand("config", "Work with radiald's config file");
    config_cmd->require_subcommand(1);
    auto* cmd = config_cmd->add_subcommand(
        "check",
        "Validate the config, load and preflight its runtime, print what radiald would use; "
        "changes nothing");
    cmd->add_option("--config", o.config_file, "Config file (TOML)")->check(CLI::ExistingFile);
    cmd->footer(
        "Exit status: 0 the config is usable; 2 the config file is wrong; 1 the runtime "
        "cannot be loaded, refuses a setting or fails its preflight.");
    return cmd;
}

int run_config_check_command(const ConfigCheckOptions& o) {
    // The config's own secrets masked in all it prints: a runtime's error, or a setting, may quote
    // one (docs/design.md §10.2).
    log::RedactionRegistration redaction;
    std::optional<redaction::Redactor> redactor;
    try {
        const auto cfg = load_config(o.config_file);
        log::install_log_redaction();
        redactor.emplace(turn::secrets_before_the_box({}, cfg.redact, {}, /*skip_refused=*/true));
        redaction = log::redact_log_lines(*redactor);
        check_socket_paths_fit(cfg);
        // Ranges that do not do what they seem to (docs/design.md §9.7): said, not refused.
        for (const auto& w : egress::ceiling_warnings(cfg.egress)) log::warn("config", "{}", w);
        const std::string state = state_dir_text(cfg);
        check_metrics_endpoint(cfg);
        check_redact_values(cfg);
        const std::string instance = instance_id_text(cfg);
        // What `radiald run` and `radiald turn` refuse at startup (docs/design.md §8.7).
        config::check_box_id_range(cfg);
        auto checked = open_checked(cfg);
        const auto& info = checked.client.info();
        const auto& t = checked.transport;

        fmt::print("config          {}\n",
                   cfg.file.empty() ? "(none: built-in defaults)" : cfg.file);
        fmt::print("runtime         {} {} (ABI {}.{}), preflight passed\n", info.id, info.version,
                   info.abi_major, info.abi_minor);
        fmt::print("plugin          {}\n", checked.client.plugin_path());
        fmt::print("plugin dirs     {}\n", fmt::join(cfg.plugin_dirs, ", "));
        fmt::print("state dir       {}\n", state);
        fmt::print("instance id     {}\n", instance);
        fmt::print("host /proc      {}\n",
                   config::host_proc_hides_other_users()
                       ? "hides other users' processes (hidepid)"
                       : "shows every process's arguments to every user: a box can publish what "
                         "it holds there; mount /proc with hidepid=invisible "
                         "(docs/design.md §15.3)");
        if (t.transport == socket::Transport::unix_socket)
            fmt::print(
                "transport       unix: {}/turns/<turnId>/turn.sock, /run/radial/turn.sock in the "
                "box\n",
                cfg.state_dir);
        else
            fmt::print("transport       tcp: bound on {}, boxes connect to {}\n", t.bind_host,
                       t.box_host);
        fmt::print("limits          maxConcurrentTurns {}, shutdownGrace {}, maxRecordBytes {}\n",
                   cfg.max_concurrent_turns, duration_text(cfg.shutdown_grace_ms),
                   cfg.max_record_bytes);
        if (!cfg.network.empty()) fmt::print("network         {}\n", cfg.network);
        if (!cfg.user.empty()) fmt::print("box user        {}\n", cfg.user);
        // What a workspace-write turn can install (docs/design.md §8.8).
        if (const auto& root = checked.box_root.ids)
            fmt::print(
                "box root        root in a user namespace of its own (host ids {}:{}): "
                "workspace-write turns can install into the image's system directories\n",
                root->first, root->second);
        else
            fmt::print(
                "box root        none: boxes never run as root, so workspace-write turns cannot "
                "install into the image's system directories ({})\n",
                checked.box_root.why_not);
        fmt::print("[{}]{}\n", cfg.runtime_section.section,
                   cfg.runtime_section.entries.empty()
                       ? " (nothing set: the runtime's defaults)"
                       : " (as set; the runtime's defaults for the rest)");
        // A TOML string may hold any control character ("\u001b"): shown escaped (§14.7).
        for (const auto& e : cfg.runtime_section.entries)
            fmt::print("  {} = {}\n", text::printable(e.key),
                       text::printable(redactor->redact(entry_text(e))));
        fmt::print("config ok\n");
        return kExitOk;
    } catch (const std::exception& e) {
        // A config error is 2; the runtime refusing the config or failing preflight is 1
        // (docs/design.md §14.4).
        return report_error(e, CommandKind::other, "config");
    }
}

} // namespace radial::cli
