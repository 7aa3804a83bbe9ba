// host/turn/turn_setup_error.h — the exception type for preparing a turn on the host
// (docs/design.md §14.2): drawing its id, writing the box user's passwd, group and Codex
// credentials, fitting them into the spec. A refused request is a RequestError (turn_request.h),
// the turn socket's failures a TransportError (turn_transport.h).
#pragma once

#include <stdexcept>

namespace radial::turn {

// what() is one line naming the path or the spec field and the fix (docs/design.md §14.3). A
// TurnSession turns it into the turn's `error` record (exit 125 for `radiald turn`); a command that
// draws a turn id reports it through host/cli/exit_status.h (exit 1).
class TurnSetupError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Every id of run.boxIdRange is leased or in use (box_id_lease.h): nothing is wrong but the
// moment. The daemon leaves such a turn queued; `radiald turn` reports it like any setup error.
class BoxIdsExhausted : public TurnSetupError {
public:
    using TurnSetupError::TurnSetupError;
};

} // namespace radial::turn
