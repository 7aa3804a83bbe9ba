// host/cli/config_check.h — `radiald config check`: everything radiald would refuse at startup,
// found without starting anything (docs/design.md §7.4).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace radial::cli {

struct ConfigCheckOptions {
    std::optional<std::string> config_file;
};

// Registers `radiald config check [--config FILE]` on `app`; returns the `check` subcommand
// (parsed() tells whether it was given).
CLI::App* add_config_check_command(CLI::App& app, ConfigCheckOptions& opts);

// Parses and validates the config (every [run] key, [redact], the selected runtime's table, no
// table for another runtime), loads the selected plugin, creates it with its table, runs its
// preflight and the startup checks against its capabilities, then prints on stdout what radiald
// would use: config file, plugin, state directory, instance id, transport, limits, the runtime's
// settings. Changes nothing: no state directory, instance id, lock or journal is created.
// Exit status: 0 all good; 2 the config file is wrong (message "<file>:<line>:<col>: <key>: …");
// 1 the plugin could not be loaded or created (a key it refuses is named with its position), its
// preflight failed, the config asks for what the runtime cannot do, or run.boxIdRange is in use
// on this host (config/box_identity.h, as `radiald run` refuses it).
int run_config_check_command(const ConfigCheckOptions& opts);

} // namespace radial::cli
