#include "cli/journal_commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/config_file.h"
#include "cli/count_option.h"
#include "cli/exit_status.h"
#include "cli/runtime_setup.h"
#include "journal/journal_sqlite.h"
#include "log/logger.h"
#include "text/exact_json.h"
#include "turn/terminal_record.h"

namespace radial::cli {

// Reading commands must not leave a fresh empty journal behind a mistyped --config.
std::unique_ptr<journal::Journal> open_existing_journal(const config::HostConfig& cfg) {
    std::string path = journal_path(cfg);
    std::error_code ec;
    const bool exists = std::filesystem::exists(path, ec);
    // "No journal" only when there is none: a state directory this user may not look into (the
    // daemon's, 0700 root) is a permission problem, and says so (docs/design.md §12.4).
    if (ec || (exists && ::access(path.c_str(), R_OK) != 0)) {
        const std::error_code why = ec ? ec : std::error_code(errno, std::generic_category());
        log::error("journal", "cannot read the journal at '{}': {}; {}", path, why.message(),
                   why == std::errc::permission_denied
                       ? fmt::format("run this as root or as the owner of the state directory "
                                     "'{}' (uid {} may not read it)",
                                     cfg.state_dir, ::geteuid())
                       : std::string("check run.stateDir"));
        return nullptr;
    }
    if (!exists) {
        log::error("journal",
                   "no journal at '{}'; no turn has run with this state directory "
                   "(run.stateDir)",
                   path);
        return nullptr;
    }
    return journal::open_sqlite_journal_for_reading(path);
}

namespace {

std::unique_ptr<journal::Journal> open_existing(const JournalOptions& o) {
    return open_existing_journal(load_config(o.config_file));
}

} // namespace

CLI::App* add_records_command(CLI::App& app, JournalOptions& o) {
    auto* cmd = app.add_subcommand("records", "Print a turn's records and its terminal record");
    cmd->add_option("--config", o.config_file, "Config file (TOML)")->check(CLI::ExistingFile);
    cmd->add_option("turn_id", o.turn_id, "The turn's id")->required();
    cmd->add_flag("--json", o.json, "One JSON object instead of text");
    return cmd;
}

CLI::App* add_turns_command(CLI::App& app, JournalOptions& o) {
    auto* cmd =
        app.add_subcommand("turns", "List recent turns and checks with their kind and status");
    cmd->add_option("--config", o.config_file, "Config file (TOML)")->check(CLI::ExistingFile);
    cmd->add_option("-n,--limit", o.limit, "How many turns")
        ->check(count_of("turns"))
        ->capture_default_str();
    cmd->add_flag("--json", o.json, "JSON lines instead of a table");
    return cmd;
}

int run_records_command(const JournalOptions& o) {
    try {
        auto journal = open_existing(o);
        if (!journal) return kExitFailed;
        auto t = journal->turn(o.turn_id);
        if (!t) {
            log::error("journal",
                       "no turn '{}' in the journal; 'radiald turns' lists the known ones",
                       o.turn_id);
            return kExitFailed;
        }
        if (o.json) {
            nlohmann::ordered_json j;
            j["turnId"] = t->entry.turn_id;
            j["kind"] = t->entry.kind;
            j["state"] = std::string(journal::to_string(
                t->states.empty() ? journal::TurnState::queued : t->states.back().state));
            auto records = nlohmann::ordered_json::array();
            for (const auto& r : t->records)
                records.push_back(
                    {{"seq", r.seq},
                     {"type", r.type},
                     {"receivedAt", turn::format_timestamp_ms(r.received_at_ms)},
                     {"payload", nlohmann::ordered_json::parse(r.payload_json, nullptr, false)}});
            j["records"] = records;
            j["terminal"] = t->terminal_json
                                ? nlohmann::ordered_json::parse(*t->terminal_json, nullptr, false)
                                : nlohmann::ordered_json(nullptr);
            // Every number here is unsigned or parsed: a posted "-0" prints as "-0".
            fmt::print("{}\n", text::for_terminal(text::dump_exact(j, 2)));
            return 0;
        }
        fmt::print("turn {}  ({} records)\n", t->entry.turn_id, t->records.size());
        for (const auto& r : t->records)
            fmt::print("#{} {} {} {}\n", r.seq, turn::format_timestamp_ms(r.received_at_ms), r.type,
                       text::for_terminal(r.payload_json));
        if (t->terminal_json)
            fmt::print("terminal: {}\n",
                       text::for_terminal(
                           nlohmann::json::parse(*t->terminal_json, nullptr, false)
                               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
        else
            fmt::print("terminal: none yet (state {})\n",
                       journal::to_string(t->states.empty() ? journal::TurnState::queued
                                                            : t->states.back().state));
        return 0;
    } catch (const std::exception& e) {
        return report_error(e, CommandKind::other, "journal");
    }
}

int run_turns_command(const JournalOptions& o) {
    try {
        auto journal = open_existing(o);
        if (!journal) return kExitFailed;
        auto turns = journal->recent_turns(o.limit);
        if (!o.json)
            fmt::print("{:<32} {:<5} {:<9} {:<10} {:>7}  {}\n", "TURN", "KIND", "STATE", "STATUS",
                       "RECORDS", "CREATED");
        for (const auto& t : turns) {
            if (o.json) {
                nlohmann::ordered_json j{{"turnId", t.turn_id},
                                         {"kind", t.kind},
                                         {"label", t.label},
                                         {"runtime", t.runtime},
                                         {"image", t.image},
                                         {"state", std::string(journal::to_string(t.state))},
                                         {"status", t.status},
                                         {"records", t.record_count},
                                         {"createdAt", turn::format_timestamp_ms(t.created_at_ms)}};
                fmt::print("{}\n",
                           j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
            } else {
                fmt::print("{:<32} {:<5} {:<9} {:<10} {:>7}  {}\n", t.turn_id, t.kind,
                           journal::to_string(t.state), t.status.empty() ? "-" : t.status,
                           t.record_count, turn::format_timestamp_ms(t.created_at_ms));
            }
        }
        return 0;
    } catch (const std::exception& e) {
        return report_error(e, CommandKind::other, "journal");
    }
}

} // namespace radial::cli
