// host/session/session_events.h — the journal of sessions (docs/design.md §13.12): each session's
// creation, each snapshot, and its end with the reason, appended one JSON object per line to
// "<stateDir>/sessions/events.jsonl" (never rewritten; synced before the call returns).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace radial::session {

// Appends {"at", "session", "event", "detail"}: `event` is "created", "snapshot",
// "snapshot-reused" or "ended"; `detail` says what (the image, the snapshot's name, why it
// ended). Never throws: a journal that cannot be written is logged, the session goes on.
void journal_session_event(const std::string& state_dir, const std::string& session_id,
                           const std::string& event, const std::string& detail) noexcept;

// The events of `session_id` ("" for every session), oldest first. Lines that are not such an
// object (a line cut by a crash) are skipped.
std::vector<nlohmann::json> read_session_events(const std::string& state_dir,
                                                const std::string& session_id);

// Why a turn naming session `session_id`, which has no record, cannot run: that it ended, when and
// why (its last event, "ended"), or that there is no such session; with what to do instead.
// Never throws but std::bad_alloc.
std::string no_such_session(const std::string& state_dir, const std::string& session_id);

} // namespace radial::session
