#include "turn/state_dir_upkeep.h"

#include <fmt/format.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include "daemon/spool.h"
#include "log/logger.h"
#include "turn/turn_output_log.h"

namespace radial::turn {

// A turn's journal writes and its terminal record need room, and a turn that cannot record how it
// ended should not run at all.
std::optional<std::string> free_space_problem(const std::string& state_dir, std::uint64_t reserve) {
    if (reserve == 0) return std::nullopt;
    struct statvfs st {};
    if (::statvfs(state_dir.c_str(), &st) != 0)
        return fmt::format(
            "checking the free space of the state directory '{}' failed: {}; check "
            "run.stateDir",
            state_dir, std::strerror(errno));
    std::uint64_t free_bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
    if (free_bytes >= reserve) return std::nullopt;
    return fmt::format(
        "the file system of the state directory '{}' has {} bytes free, less than "
        "run.minFreeBytes ({} bytes); the turn was not started: free space there, "
        "or lower run.minFreeBytes",
        state_dir, free_bytes, reserve);
}

void prune_journal(journal::Journal& journal, const config::HostConfig& cfg,
                   const std::string& finished_turn, const RetentionClocks& clocks) {
    // The turns the journal removes take their output logs with them (docs/design.md §11.7).
    std::vector<std::string> pruned;
    if (cfg.journal_max_age_ms != 0 || cfg.journal_max_bytes != 0) {
        // A finished turn whose request is still spooled is not yet retired: without its journal
        // row the daemon's next scan would take the request for a new one and run it again.
        const daemon::Spool spool(cfg.state_dir);
        auto keep = [&](const std::string& id) {
            std::error_code ec;
            const bool kept =
                id == finished_turn || std::filesystem::exists(spool.request_path(id), ec) || ec;
            if (!kept) pruned.push_back(id); // prune() removes every turn `keep` lets go
            return kept;
        };
        // The journal measures ages on the wall clock; where that is ahead of the retention
        // clock (it stepped forward), the bound widens by as much (docs/design.md §11.6).
        std::uint64_t max_age = cfg.journal_max_age_ms;
        if (max_age != 0) {
            const auto t = advance_retention_clock(cfg.state_dir, clocks);
            const auto ahead = static_cast<std::uint64_t>(t.wall_ms - t.now_ms);
            max_age = ahead > UINT64_MAX - max_age ? UINT64_MAX : max_age + ahead;
        }
        try {
            if (auto n = journal.prune(max_age, cfg.journal_max_bytes, keep))
                log::info(
                    "journal",
                    "removed {} finished turn(s) past run.journalMaxAge or run.journalMaxBytes", n);
        } catch (const std::exception& e) {
            // The turn's outcome is already journaled: retention failing costs it nothing.
            log::warn("journal", "{}", e.what());
            pruned.clear(); // the transaction was rolled back: those turns are still there
        }
    }
    try {
        // Never the log of a turn in flight: its file is still written, or may be again.
        std::optional<std::set<std::string>> running;
        auto is_running = [&](const std::string& id) {
            if (!running) {
                running.emplace();
                for (const auto& t : journal.in_flight()) running->insert(t.turn_id);
            }
            return running->count(id) > 0;
        };
        prune_turn_logs(cfg.state_dir, pruned, cfg.turn_logs_max_bytes, is_running);
    } catch (const std::exception& e) {
        // Without the journal's word on what runs, no log goes.
        log::warn("turn", "removing old turn logs: {}", e.what());
    }
}

} // namespace radial::turn
