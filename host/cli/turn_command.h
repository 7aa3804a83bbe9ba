// host/cli/turn_command.h — `radiald turn` and `radiald check`: run one turn (or one check) in a
// box and report how it ended (docs/design.md §3, §4).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "turn/turn_request.h"

namespace radial::cli {

// The flags of `radiald turn` / `radiald check`. Those that are request fields are bound to the
// request itself (turn/turn_request.h); the rest are parsed into it by run_turn_command().
struct TurnOptions {
    std::optional<std::string> config_file;
    std::optional<std::string> runtime;
    // image, workspace (empty: none), argv, secrets (names), record type, id (empty: generated)
    // and kind.
    turn::TurnRequest request;
    std::vector<std::string> env;       // NAME=VALUE, into request.env
    std::optional<std::string> timeout; // a duration, into request.timeout_ms
    std::optional<std::string> record_file;
};

// Registers the subcommand's flags on `app`, bound to `opts`.
CLI::App* add_turn_command(CLI::App& app, TurnOptions& opts);

// Registers `radiald check` (docs/design.md §4) on `app`, bound to `opts`, whose request kind it
// sets to check: no --record-type (a check gets no turn socket), and --secret only to refuse it
// with a clear message.
CLI::App* add_check_command(CLI::App& app, TurnOptions& opts);

// Runs the turn or check. Returns the process exit status: the turn's exit code, 124 timed out, 125
// the host or runtime failed, 130 interrupted. Writes the terminal record to --record-file.
int run_turn_command(const TurnOptions& opts);

} // namespace radial::cli
