// host/cli/turn_command.h — `radiald turn`: run one turn in a box and report how it ended
// (docs/design.md §5 point 5).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace radial::cli {

struct TurnOptions {
    std::optional<std::string> config_file;
    std::optional<std::string> runtime;
    std::string image;
    std::optional<std::string> workspace;
    std::vector<std::string> env;     // NAME=VALUE
    std::vector<std::string> secrets; // NAME, value from radiald's environment
    std::optional<std::string> timeout;
    std::optional<std::string> record_file;
    std::optional<std::string> turn_id;
    std::string record_type = "result";
    std::vector<std::string> argv;
    std::optional<std::string> mode;            // --mode (turn/workspace_mode.h)
    std::optional<std::string> workspace_mount; // --workspace-mount
};

// Registers the subcommand's flags on `app`, bound to `opts`.
CLI::App* add_turn_command(CLI::App& app, TurnOptions& opts);

// Runs the turn. Returns the process exit status: the turn's exit code, 124 timed out, 125 the
// host or runtime failed, 130 interrupted. Writes the terminal record to --record-file.
int run_turn_command(const TurnOptions& opts);

} // namespace radial::cli
