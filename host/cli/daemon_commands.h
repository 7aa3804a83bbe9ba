// host/cli/daemon_commands.h — the daemon's commands (docs/design.md §12): `radiald submit` (§1),
// `radiald run` (§2), `radiald reconcile` (§4) and `radiald status` (§5).
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <optional>
#include <string>

namespace radial::cli {

struct DaemonOptions {
    std::optional<std::string> config_file;
    std::string request_file; // submit: the turn file (TOML)
    bool json = false;        // status: one JSON object instead of text
    std::size_t limit = 10;   // status: how many recent turns
    bool verbose = false;     // run: --verbose was given (it overrides run.logLevel)
};

// Each registers its subcommand's flags on `app`, bound to `opts`.
CLI::App* add_submit_command(CLI::App& app, DaemonOptions& opts);
CLI::App* add_run_command(CLI::App& app, DaemonOptions& opts);
CLI::App* add_reconcile_command(CLI::App& app, DaemonOptions& opts);
CLI::App* add_status_command(CLI::App& app, DaemonOptions& opts);

// Runs the startup validation (open_checked_runtime, without preflight), validates the turn file,
// enqueues it atomically, journals it queued and prints its turn id. Exit status: 0 enqueued; 1
// the request was refused (nothing enqueued); 2 the config (also one the runtime refuses), state
// directory or journal failed.
int run_submit_command(const DaemonOptions& opts);

// Startup validation and preflight (open_checked_runtime), lock, reconcile, serve until
// SIGTERM/SIGINT. Exit status: 0 after a clean shutdown; 1 when it could not start (a config the
// runtime refuses, preflight, lock, reconciliation; the message says which); 2 config.
int run_run_command(const DaemonOptions& opts);

// The startup reconciliation alone, printed, after the same startup validation. It takes the state
// directory's lock, so it refuses to run beside a daemon on the same state directory (that daemon's
// turns are live, not orphans). Exit status: 0 done; 1 refused or failed; 2 config.
int run_reconcile_command(const DaemonOptions& opts);

// Queued, running and recent turns of the state directory, and whether a daemon holds it.
// Exit status: 0; 2 config or journal failed.
int run_status_command(const DaemonOptions& opts);

} // namespace radial::cli
