// host/daemon/session_reconcile.h — the sessions of a state directory at reconciliation
// (docs/design.md §13.12): a session whose box still runs is kept (adopted: its next turn finds
// it); one whose box ended (its idle timeout or maximum lifetime passed) or is gone is removed with
// everything radiald kept of it; a session box of this instance that no session names is removed.
#pragma once

#include <radial/host/runtime_client.hpp>
#include <string>
#include <vector>

#include "config/host_config.h"
#include "time/clock.h"

namespace radial::daemon {

struct SessionReconcile {
    std::vector<std::string> kept;   // session ids whose box runs
    std::vector<std::string> ended;  // session ids removed: their box had ended or was gone
    std::vector<std::string> strays; // box labels no session named, removed
};

// Never throws for one session: a box that cannot be inspected or removed is logged and its
// session kept for the next pass. Throws host::RuntimeError when the runtime cannot list boxes.
// A session's maximum lifetime is judged by `clock`'s wall time (docs/design.md §12.7).
SessionReconcile reconcile_sessions(const config::HostConfig& cfg,
                                    const host::RuntimeClient& client,
                                    const time::Clock& clock = time::system_clock());

} // namespace radial::daemon
