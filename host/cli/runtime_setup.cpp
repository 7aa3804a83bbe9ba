#include "cli/runtime_setup.h"

#include "log/logger.h"

#include <boost/dll/runtime_symbol_info.hpp>
#include <fmt/format.h>

namespace radial::cli {

#ifndef RADIAL_VERSION
#define RADIAL_VERSION "0.0.0"
#endif

std::string host_version() { return std::string("radiald ") + RADIAL_VERSION; }

std::string executable_dir() {
    return boost::dll::program_location().parent_path().string();
}

host::RuntimeClient open_runtime(const config::HostConfig& cfg, bool preflight) {
    loader::LoadedPlugin plugin;
    try {
        auto plugins = loader::load_plugins(cfg.plugin_dirs);
        plugin = loader::select_plugin(plugins, cfg.container_runtime, cfg.plugin_dirs);
    } catch (const loader::LoadError& e) {
        throw StartupError(e.what());
    }
    log::debug("loader", "runtime '{}' {} from '{}'", plugin.info.id, plugin.info.version, plugin.path);

    std::string tag = "plugin:" + plugin.info.id;
    auto log_fn = [tag](std::uint32_t level, std::string_view message) {
        log::write(static_cast<log::Level>(level > 3 ? 3 : level), tag, message);
    };
    auto client = [&] {
        try {
            return host::RuntimeClient::create(plugin.library, plugin.descriptor,
                                               cfg.runtime_section, plugin.path, host_version(),
                                               log_fn);
        } catch (const host::RuntimeError& e) {
            if (!e.key().empty() && e.code() == RADIAL_E_INVALID) {
                std::string key = cfg.runtime_section.section + "." + e.key();
                throw StartupError(fmt::format("{}{}: {}", cfg.where(key), key, e.what()));
            }
            throw StartupError(fmt::format("creating runtime '{}' from '{}': {}", plugin.info.id,
                                           plugin.path, e.what()));
        }
    }();
    if (preflight) {
        try {
            client.preflight();
        } catch (const host::RuntimeError& e) {
            throw StartupError(fmt::format("runtime '{}' cannot run boxes: {}", plugin.info.id, e.what()));
        }
    }
    return client;
}

} // namespace radial::cli
