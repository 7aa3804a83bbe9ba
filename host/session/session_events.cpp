#include "session/session_events.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <radial/internal/unique_fd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

#include "fs/durable_file.h"
#include "log/logger.h"
#include "session/session_record.h"
#include "turn/terminal_record.h"

namespace radial::session {
namespace {

std::string events_path(const std::string& state_dir) {
    return sessions_dir(state_dir) + "/events.jsonl";
}

} // namespace

void journal_session_event(const std::string& state_dir, const std::string& session_id,
                           const std::string& event, const std::string& detail) noexcept {
    const std::string path = events_path(state_dir);
    try {
        // Real time: the sessions' commands take no clock (docs/design.md §12.7).
        const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
        const nlohmann::json line = {{"at", turn::format_timestamp_ms(now)},
                                     {"session", session_id},
                                     {"event", event},
                                     {"detail", detail}};
        const std::string text =
            line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
        ::mkdir(sessions_dir(state_dir).c_str(), 0700);
        fs_util::append_line(path, text);
    } catch (const std::exception& e) {
        log::warn("session", "session {}: journaling '{}' in '{}': {}", session_id, event, path,
                  e.what());
    }
}

std::vector<nlohmann::json> read_session_events(const std::string& state_dir,
                                                const std::string& session_id) {
    std::vector<nlohmann::json> out;
    std::ifstream in(events_path(state_dir));
    for (std::string line; std::getline(in, line);) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_object() || !j.contains("session") || !j["session"].is_string()) continue;
        if (session_id.empty() || j["session"] == session_id) out.push_back(std::move(j));
    }
    return out;
}

std::string no_such_session(const std::string& state_dir, const std::string& session_id) {
    std::vector<nlohmann::json> events;
    try {
        events = read_session_events(state_dir, session_id);
    } catch (const std::exception&) {
    }
    const auto text = [&](const char* key) {
        const auto& e = events.back();
        return e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : std::string("?");
    };
    if (!events.empty() && text("event") == "ended")
        return fmt::format(
            "session '{}' ended at {} ({}); it runs no more turns: create a new one with 'radiald "
            "session create'",
            session_id, text("at"), text("detail"));
    return fmt::format(
        "session '{}' is not one of this state directory's; create it with 'radiald session "
        "create', or see 'radiald session ls'",
        session_id);
}

} // namespace radial::session
