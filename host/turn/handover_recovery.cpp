// host/turn/handover_recovery.cpp — see handover_recovery.h.
#include "turn/handover_recovery.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <radial/internal/unique_fd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fs/open_no_links.h"
#include "log/logger.h"
#include "session/session_record.h"

namespace radial::turn {

WorkspaceHandover::BoxMayWrite box_may_write(const host::RuntimeClient& client,
                                             journal::Journal& journal) {
    return [&client, &journal](const std::string& turn_id) {
        const auto turn = journal.turn(turn_id); // a journal error: thrown, so the note is kept
        if (!turn || turn->entry.label.empty()) return false;
        const host::BoxState st = client.inspect(turn->entry.label);
        if (!st.supported) return false;
        return st.state != RADIAL_BOX_GONE && st.state != RADIAL_BOX_ENDED;
    };
}

std::size_t forget_earlier_session_notes(const std::string& marker_dir,
                                         const std::string& own_turn_id,
                                         const std::string& session_label,
                                         const std::string& note_ids,
                                         journal::Journal& journal) noexcept {
    std::size_t removed = 0;
    try {
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(marker_dir, ec)) {
            const std::string turn_id = entry.path().filename().string();
            if (turn_id == own_turn_id || turn_id.starts_with(kNoteBeingWritten)) continue;
            internal::UniqueFd fd(
                ::open(entry.path().c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
            if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue; // its turn still runs
            // The same directory handed to the same ids, or this hand-back did not cover it.
            std::string first;
            std::ifstream note(entry.path());
            std::getline(note, first);
            if (note_ids.empty() || first != note_ids) continue;
            try {
                const auto turn = journal.turn(turn_id);
                if (!turn || turn->entry.label != session_label) continue;
            } catch (const std::exception&) {
                continue;
            }
            if (::unlink(entry.path().c_str()) == 0) {
                ++removed;
                log::info("turn",
                          "turn {}: the hand-over note its killed radiald left is done with: "
                          "turn {} of the same session handed the workspace back after its exec",
                          turn_id, own_turn_id);
            }
        }
    } catch (const std::exception& e) {
        log::warn("turn", "looking for earlier hand-over notes in '{}': {}", marker_dir, e.what());
    }
    return removed;
}

std::string orphan_writing_into(const std::string& marker_dir, const std::string& workspace,
                                const WorkspaceHandover::BoxMayWrite& may_write) noexcept {
    try {
        internal::UniqueFd root = fs_util::open_no_links(workspace, O_RDONLY | O_DIRECTORY);
        struct stat ws {};
        if (!root || ::fstat(root.get(), &ws) != 0) return {};
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(marker_dir, ec)) {
            if (entry.path().filename().string().starts_with(kNoteBeingWritten)) continue;
            internal::UniqueFd fd(
                ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
            // Held: its turn runs, under the workspace's lock (or run.sharedWorkspaces).
            if (!fd || ::flock(fd.get(), LOCK_SH | LOCK_NB) != 0) continue;
            std::ifstream in(entry.path());
            std::string line;
            std::getline(in, line);
            std::istringstream ids(line);
            unsigned long owner_uid = 0, owner_gid = 0, box_uid = 0, box_gid = 0;
            unsigned long long dev = 0, ino = 0;
            if (!(ids >> owner_uid >> owner_gid >> box_uid >> box_gid >> dev >> ino) ||
                dev != ws.st_dev || ino != ws.st_ino)
                continue;
            const std::string turn_id = entry.path().filename().string();
            bool writes = true;
            try {
                writes = !may_write || may_write(turn_id);
            } catch (const std::exception&) {
            }
            if (writes) return turn_id;
        }
    } catch (const std::exception&) {
    }
    return {};
}

std::string orphan_refusal(const std::string& workspace, const std::string& turn_id,
                           const std::string& label, const config::HostConfig& cfg) {
    // By the sessions' records, not this instance's label prefix: a session made under an
    // earlier run.instanceId keeps its label, and reconciliation keeps its box too.
    std::string session;
    try {
        for (const auto& s : session::list_sessions(cfg.state_dir))
            if (!label.empty() && s.label == label) session = s.id;
    } catch (const std::exception&) {
    }
    if (!session.empty()) {
        return fmt::format(
            "workspace '{}' is still written by turn {} in the box of session '{}', which a "
            "killed radiald left running; a turn of that session ends what the exec left "
            "(radiald turn --session {} -- true), or 'radiald session rm {}' removes its box and "
            "'radiald reconcile' then hands the workspace back",
            workspace, turn_id, session, session, session);
    }
    return fmt::format(
        "workspace '{}' is still written by the box of turn {}, which a killed radiald left "
        "running; 'radiald reconcile' removes that box and hands the workspace back",
        workspace, turn_id);
}

} // namespace radial::turn
