// host/daemon/config_reload.h — what SIGHUP may change in a running daemon (docs/design.md
// §12.3): the keys read only by the daemon's own loop, at the moment they are used, take their new
// value; every other key is bound to something made at startup (the loaded plugin, the state
// directory's lock and journal, the instance claim) or read by running turns' threads, and
// changes at the next restart only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace radial::daemon {

// The keys a reload applies: run.maxConcurrentTurns (the next claim sees it), run.shutdownGrace
// (the next stop uses it) and run.logLevel (the next line is judged by it).
bool is_reloadable_key(std::string_view key);

// A key whose value differs between two versions of the config file.
struct ConfigChange {
    std::string
        key; // dotted, as written in the file: "run.maxConcurrentTurns", "run.docker.memory"
    bool reloadable = false; // is_reloadable_key(key)
};

// The keys set in one of the TOML documents `before` and `after` and not in the other, or set to
// different values, in key order; a table is compared key by key, an array as a whole. Throws
// config::ConfigError when either does not parse.
std::vector<ConfigChange> changed_keys(const std::string& before, const std::string& after);

} // namespace radial::daemon
