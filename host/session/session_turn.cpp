#include "session/session_turn.h"

#include <fmt/format.h>

namespace radial::session {

void bind_request_to_session(turn::TurnRequest& req, const SessionRecord& session) {
    if (req.kind != turn::RequestKind::turn)
        throw turn::RequestError(fmt::format(
            "a check does not run in a session (it needs no kept box, and would change what the "
            "session's later turns run on); run it without --session '{}'",
            session.id));
    auto fixed = [&](const char* what, std::string& field, const std::string& value) {
        if (!field.empty() && field != value)
            throw turn::RequestError(fmt::format(
                "session '{}' was created with {} '{}'; a turn of it cannot change that (drop "
                "the {} from the turn, or create another session)",
                session.id, what, value, what));
        field = value;
    };
    fixed("image", req.image, session.image);
    fixed("workspace", req.workspace, session.workspace);
    fixed("mode", req.mode, session.mode);
    if (!req.mounts.empty() || !req.workspace_mount.empty())
        throw turn::RequestError(fmt::format(
            "session '{}' fixed its mounts at create; a turn of it cannot add any", session.id));
}

void make_session_exec(ContainerSpec& spec, const SessionRecord& session) {
    ContainerSpec exec;
    exec.label = session.label;
    exec.image = session.image; // for the record and the log: the box runs it already
    exec.argv = std::move(spec.argv);
    exec.env = std::move(spec.env);
    exec.workdir = session.workdir;
    exec.timeout_ms = spec.timeout_ms;
    exec.user = session.user;
    spec = std::move(exec);
}

} // namespace radial::session
