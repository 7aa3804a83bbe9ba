#include "turn/state_dir_upkeep.h"

#include <fmt/format.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "daemon/spool.h"
#include "log/logger.h"

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
                   const std::string& finished_turn) {
    if (cfg.journal_max_age_ms == 0 && cfg.journal_max_bytes == 0) return;
    // A finished turn whose request is still spooled is not yet retired: without its journal row
    // the daemon's next scan would take the request for a new one and run it again.
    const daemon::Spool spool(cfg.state_dir);
    auto keep = [&](const std::string& id) {
        std::error_code ec;
        return id == finished_turn || std::filesystem::exists(spool.request_path(id), ec) || ec;
    };
    try {
        if (auto n = journal.prune(cfg.journal_max_age_ms, cfg.journal_max_bytes, keep))
            log::info("journal",
                      "removed {} finished turn(s) past run.journalMaxAge or run.journalMaxBytes",
                      n);
    } catch (const std::exception& e) {
        // The turn's outcome is already journaled: retention failing costs it nothing.
        log::warn("journal", "{}", e.what());
    }
}

} // namespace radial::turn
