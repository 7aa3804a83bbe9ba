// host/config/run_keys.h — the keys of radiald's config file's tables ([run], [run.egress],
// [redact]), each with its reader and its bounds (docs/configuration.md is the reference; the
// reasons for the bounds are beside each reader).
#pragma once

#include <toml++/toml.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/config_reader.h"
#include "config/host_config.h"

namespace radial::config {

// What [run] says that is settled only once the whole file is read.
struct RunTable {
    std::vector<std::string> plugin_dirs;              // run.pluginDir as written
    std::string state_dir;                             // run.stateDir as written
    std::map<std::string, const toml::table*> runtime; // [run.NAME] for any other table
};

// Reads [run] into `cfg` and `out`. Throws ConfigError naming the key.
void read_run_table(Reader& r, const toml::table& run, HostConfig& cfg, RunTable& out);

// Reads [redact] into `cfg`. Throws ConfigError naming the key.
void read_redact_table(Reader& r, const toml::table& redact, HostConfig& cfg);

// The keys `table` ("run", "run.egress", "run.pool" or "redact") may hold, in the order the readers
// list them; empty for any other table. For the check that docs/configuration.md documents each
// one.
std::vector<std::string> table_keys(std::string_view table);

} // namespace radial::config
