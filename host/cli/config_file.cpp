#include "cli/config_file.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "cli/runtime_setup.h"
#include "loader/plugin_loader.h"
#include "log/logger.h"

namespace radial::cli {

std::optional<std::string> config_file(const std::optional<std::string>& flag) {
    if (flag) return flag;
    std::error_code ec;
    if (const char* env = std::getenv("RADIAL_CONFIG"); env != nullptr && *env != '\0') {
        if (!std::filesystem::is_regular_file(env, ec))
            throw config::ConfigError(fmt::format(
                "reading config '{}' named by $RADIAL_CONFIG: no such file; point RADIAL_CONFIG "
                "at an existing file, or unset it to read {}",
                env, kDefaultConfigPath));
        return std::string(env);
    }
    // A missing default file is a machine without the package's config: the defaults apply. One
    // that exists but cannot be read is reported by config::load, naming it.
    if (std::filesystem::exists(kDefaultConfigPath, ec)) return std::string(kDefaultConfigPath);
    return std::nullopt;
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

} // namespace

config::HostConfig load_config(const std::optional<std::string>& flag,
                               const std::optional<std::string>& runtime_override) {
    config::HostConfig cfg =
        config::load(config_file(flag), runtime_override, executable_dir(), installed_runtimes);
    warn_of_readable_secrets(cfg);
    return cfg;
}

config::HostConfig reread_config(const std::optional<std::string>& flag) {
    return config::load(config_file(flag), std::nullopt, executable_dir(), {});
}

} // namespace radial::cli
