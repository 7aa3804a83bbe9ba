// host/cli/logs_command.h — `radiald logs [-f] [--since WHEN] [--tail N] [-t] TURN_ID`: a turn's
// output as its log kept it (docs/design.md §11.7), like `docker logs`: the box's stdout to stdout,
// its stderr to stderr; with -f, what it prints next, until the turn ends.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace radial::cli {

struct LogsOptions {
    std::optional<std::string> config_file;
    std::string turn_id;
    bool follow = false;
    std::optional<std::string> since; // a duration back from now ("10m") or an RFC 3339 time
    std::string tail = "all";         // the last N lines, or "all"
    bool timestamps = false;
};

CLI::App* add_logs_command(CLI::App& app, LogsOptions& opts);

// --since: a duration back from `now_ms` ("90s", "10m", "2h") or an RFC 3339 time
// ("2024-05-01T12:00:00Z", "…+02:00"), in unix milliseconds; nullopt for anything else.
// [thread-safe]
std::optional<std::int64_t> parse_since(std::string_view text, std::int64_t now_ms);

// --tail: "all" (nullopt inside) or a whole number of lines; the outer nullopt for anything else.
// [thread-safe]
std::optional<std::optional<std::size_t>> parse_tail(std::string_view text);

// Prints the turn's log. Returns 0; 1 when the turn is unknown, kept no log or the log cannot be
// read; 2 for a bad --since, --tail or config. With follow, returns once the log's end record is
// read, or once the journal says the turn is no longer in flight (a radiald that died mid-turn
// leaves no end record).
int run_logs_command(const LogsOptions& opts);

} // namespace radial::cli
