#include "cli/config_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "cli/runtime_setup.h"
#include "config/box_identity.h"
#include "config/config_text.h"
#include "loader/plugin_loader.h"
#include "log/logger.h"
#include "redaction/secret_set.h"
#include "redaction/stream_redactor.h"

namespace radial::cli {

std::optional<std::string> config_file(const std::optional<std::string>& flag,
                                       const std::string& default_path) {
    if (flag) return flag;
    if (const char* env = std::getenv("RADIAL_CONFIG"); env != nullptr && *env != '\0') {
        if (const auto problem = config::config_path_problem(env))
            throw config::ConfigError(
                fmt::format("reading config '{}' named by $RADIAL_CONFIG: {}; point RADIAL_CONFIG "
                            "at an existing file, or unset it to read {}",
                            env, problem->why, default_path));
        return std::string(env);
    }
    // Nothing at the default path is a machine without the package's config: the defaults
    // apply. Anything there — a link that leads nowhere, a directory, a file radiald may not
    // read — is the operator's config gone wrong, reported by config::load naming it, never
    // taken for no file: the defaults would drop every bound the file narrows (docs/design.md
    // §7.7).
    struct stat st {};
    if (::lstat(default_path.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
        return std::nullopt;
    return default_path;
}

std::vector<std::string> installed_runtimes(const std::vector<std::string>& dirs) {
    std::vector<std::string> ids;
    for (const auto& f : loader::plugin_files(dirs)) {
        try {
            ids.push_back(loader::load_plugin(f).info.id);
        } catch (const loader::LoadError&) {
        }
    }
    return ids;
}

namespace {

// [redact] values are secrets written into the file itself: a file every user may read gives them
// away before any turn runs (docs/design.md §10.1). Said, not refused: the operator may have
// reasons (a group of operators), and the packaged file holds none.
void warn_of_readable_secrets(const config::HostConfig& cfg) {
    if (cfg.redact.values.empty() || cfg.file.empty()) return;
    struct stat st {};
    // Its group may be operators the owner trusts (640); every user is nobody's choice.
    if (::stat(cfg.file.c_str(), &st) != 0 || (st.st_mode & S_IROTH) == 0) return;
    log::warn("config",
              "'{}' holds redact.values and is readable by every user (mode {:o}): anyone who can "
              "read it has those secrets; chmod 600 it (or 640 for a group of operators you "
              "trust), or name them with redact.envNames instead",
              cfg.file, st.st_mode & 07777);
}

// `message` with the file's own [redact] values and the values of its envNames masked, as far as
// the file parses: an error in another key may quote one (a value pasted into the wrong key, a
// secret named as a runtime), and no turn's redaction is installed yet (docs/design.md §10.2).
std::string masked_by_the_files_redact(const std::optional<std::string>& file,
                                       const std::string& text, const std::string& message) {
    if (!file) return message;
    try {
        // The bytes the load read: the path is never opened twice (a fifo put there since would
        // hold the command; another file would mask by another [redact]).
        const toml::table root = toml::parse(text, *file);
        redaction::SecretSet secrets;
        const auto add = [&](const std::string& name, std::string value) {
            try {
                secrets.add(name, std::move(value));
            } catch (const std::invalid_argument&) {
                // Too short to mask without masking ordinary text: left as the set would.
            }
        };
        std::size_t i = 0;
        if (const auto* values = root["redact"]["values"].as_array())
            for (const auto& v : *values)
                if (const auto s = v.value<std::string>())
                    add(fmt::format("redact.values.{}", i++), *s);
        if (const auto* names = root["redact"]["envNames"].as_array())
            for (const auto& n : *names)
                if (const auto name = n.value<std::string>())
                    if (const char* v = std::getenv(name->c_str()); v != nullptr && *v != '\0')
                        add(*name, v);
        return secrets.empty() ? message : redaction::Redactor(secrets).redact(message);
    } catch (const std::exception&) {
        return message; // not TOML: the error says so, and quotes no value of a [redact] table
    }
}

// config::load of `file`, its errors masked by the file's own [redact] table.
config::HostConfig load_masked(const std::optional<std::string>& file,
                               const std::optional<std::string>& runtime_override,
                               const config::KnownRuntimes& installed) {
    if (!file) return config::load(std::nullopt, runtime_override, executable_dir(), installed);
    // Read once (a file that cannot be read names its path only: nothing to mask yet).
    const std::string text = config::read_config_text(*file);
    try {
        return config::load_text(*file, text, runtime_override, executable_dir(), installed);
    } catch (const config::HostRefusalError& e) {
        throw config::HostRefusalError(masked_by_the_files_redact(file, text, e.what()));
    } catch (const config::ConfigError& e) {
        throw config::ConfigError(masked_by_the_files_redact(file, text, e.what()));
    }
}

} // namespace

config::HostConfig load_config(const std::optional<std::string>& flag,
                               const std::optional<std::string>& runtime_override) {
    config::HostConfig cfg = load_masked(config_file(flag), runtime_override, installed_runtimes);
    warn_of_readable_secrets(cfg);
    return cfg;
}

config::HostConfig reread_config(const std::optional<std::string>& flag,
                                 const config::HostConfig& running) {
    config::HostConfig cfg = load_masked(config_file(flag), std::nullopt, {});
    // A plugin installed since the start is not known without loading it, which a reload does
    // not: a runtime none of the start's is said, not refused (the restart looks again).
    const auto& found = running.runtimes_found;
    if (cfg.container_runtime != running.container_runtime &&
        cfg.plugin_dirs == running.plugin_dirs && !found.empty() &&
        std::find(found.begin(), found.end(), cfg.container_runtime) == found.end())
        log::warn("daemon",
                  "reload (SIGHUP): {}run.containerRuntime '{}' is none of the runtimes found when "
                  "the daemon started ({}); the restart that applies it looks again: 'radiald "
                  "config check --config {}' says now whether it is installed",
                  cfg.where("run.containerRuntime"), cfg.container_runtime, fmt::join(found, ", "),
                  cfg.file);
    // Only a range (or box user) that changed: the accounts were checked at the start, and the
    // scan walks every host account through NSS.
    if (cfg.box_id_first != running.box_id_first || cfg.box_id_last != running.box_id_last ||
        cfg.user != running.user)
        config::check_box_id_range_accounts(cfg);
    return cfg;
}

} // namespace radial::cli
