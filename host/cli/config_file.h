// host/cli/config_file.h — which config file a command reads, and reading it: every command
// reads the same file the packaged daemon does unless told otherwise (docs/design.md §7.7).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/host_config.h"

namespace radial::cli {

// The config file read when neither --config nor $RADIAL_CONFIG names one.
inline constexpr const char* kDefaultConfigPath = "/etc/radial/radiald.toml";

// The file a command reads: `flag` (--config) when given; else $RADIAL_CONFIG when set and not
// empty; else `default_path` when anything is there (a link that leads nowhere too: config::load
// then says what is wrong with it); else nullopt (the built-in defaults). Throws
// config::ConfigError when $RADIAL_CONFIG names no regular file, naming the variable and why: a
// file the operator named must never be silently replaced by the defaults (docs/design.md §7.7).
std::optional<std::string> config_file(const std::optional<std::string>& flag,
                                       const std::string& default_path = kDefaultConfigPath);

// The runtime ids of the plugins in `dirs` that load (a broken plugin is left out: the command
// that opens the runtime reports it). For config::load's KnownRuntimes.
std::vector<std::string> installed_runtimes(const std::vector<std::string>& dirs);

// config::load of config_file(flag), with `runtime_override` (--runtime) and installed_runtimes
// to tell a mistyped runtime id from a stray table. Throws config::ConfigError.
config::HostConfig load_config(const std::optional<std::string>& flag,
                               const std::optional<std::string>& runtime_override = std::nullopt);

// config::load of config_file(flag) for the reload of a daemon that runs `running`: it only reads.
// No plugin is loaded — a run.containerRuntime none of the runtimes the start found is logged
// (while run.pluginDir is unchanged; one installed since is not known), a changed run.pluginDir
// is not looked into — and the state directory a changed run.stateDir names is neither created
// nor given an instance id; these take effect at the next start only. Refused as at the start
// too: a changed run.boxIdRange (or run.user) that holds a host account's ids (docs/design.md
// §12.3). Throws config::ConfigError.
config::HostConfig reread_config(const std::optional<std::string>& flag,
                                 const config::HostConfig& running);

} // namespace radial::cli
