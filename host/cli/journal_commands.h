// host/cli/journal_commands.h — `radiald records TURN_ID [--json]` and `radiald turns`: what the
// turn journal holds, for an operator (docs/design.md §11).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "config/host_config.h"
#include "journal/journal.h"

namespace radial::cli {

struct JournalOptions {
    std::optional<std::string> config_file;
    std::string turn_id;
    bool json = false;
    std::size_t limit = 20;
};

// Opens the journal of `cfg`'s state directory without creating one. Nullptr, after logging why,
// when there is none or this user may not read it; throws JournalError.
std::unique_ptr<journal::Journal> open_existing_journal(const config::HostConfig& cfg);

CLI::App* add_records_command(CLI::App& app, JournalOptions& opts);
CLI::App* add_turns_command(CLI::App& app, JournalOptions& opts);

// Prints a turn's accepted records (seq, type, payload) and its terminal record. Returns 0, or
// 1 when the turn is unknown, 125 when the config or journal cannot be read.
int run_records_command(const JournalOptions& opts);

// Prints the most recent turns, newest first: id, state, status, records, created time.
int run_turns_command(const JournalOptions& opts);

} // namespace radial::cli
