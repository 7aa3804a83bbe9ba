#include "cli/config_file.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "cli/runtime_setup.h"
#include "loader/plugin_loader.h"

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

config::HostConfig load_config(const std::optional<std::string>& flag,
                               const std::optional<std::string>& runtime_override) {
    return config::load(config_file(flag), runtime_override, executable_dir(), installed_runtimes);
}

config::HostConfig reread_config(const std::optional<std::string>& flag) {
    return config::load(config_file(flag), std::nullopt, executable_dir(), {});
}

} // namespace radial::cli
