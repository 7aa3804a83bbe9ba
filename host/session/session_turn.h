// host/session/session_turn.h — a turn of a session (docs/design.md §13.12): what the session
// fixed at create, a turn's request may not change; the turn runs as an exec in the session's box.
#pragma once

#include <radial/container_spec.hpp>

#include "session/session_record.h"
#include "turn/turn_request.h"

namespace radial::session {

// Fills `req`'s image, workspace and mode from the session, and refuses (RequestError naming the
// field) a request that sets any of them otherwise, or mounts, or a workspace mount: the session
// fixed them at create. A check is refused too: it carries no secrets and needs no kept box, and
// running one in a session would let a project's own command change what a later turn runs on.
void bind_request_to_session(turn::TurnRequest& req, const SessionRecord& session);

// The exec of a session turn: `spec` (built from the bound request) labelled as the session's box
// and run as its ids; what only a box's creation can apply (mounts, tmpfs, limits) is dropped, the
// box has it already.
void make_session_exec(ContainerSpec& spec, const SessionRecord& session);

} // namespace radial::session
