// host/turn/turn_session_run.h — what one TurnSession::run holds while it runs: the box's spec as
// the steps complete it, the record so far, and everything that must live exactly as long as the
// turn — the locks, the leased ids, the terminal record's reserve, the socket and its egress
// broker, the box user's files. Internal to turn_session.cpp and turn_session_steps.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "egress/egress_broker.h"
#include "pool/warm_pool.h"
#include "socket/turn_socket_server.h"
#include "time/clock.h"
#include "turn/box_id_lease.h"
#include "turn/box_user_env.h"
#include "turn/record_quota.h"
#include "turn/terminal_reserve.h"
#include "turn/turn_session.h"
#include "turn/workspace_handover.h"

namespace radial::turn {

// Members in the order they are made; they are destroyed in reverse, so the broker goes before
// the socket (its socket lies in the socket's directory), and the locks and ids last.
struct TurnSession::Run {
    ContainerSpec spec;
    TerminalRecord rec;
    std::optional<TerminalReserve> reserve;
    std::optional<WorkspaceLock> workspace_lock;
    std::unique_ptr<WorkspaceLock> session_lock;
    std::optional<BoxIdLease> box_ids;
    std::atomic<std::uint64_t> refused_records{0}; // 507: the journal could not store them
    std::atomic<std::uint64_t> quota_refused{0};   // 507: past the turn's share
    std::optional<RecordQuota> quota;
    std::optional<socket::TurnSocketServer> server;
    std::string socket_dir; // the socket's directory, on the host
    std::unique_ptr<egress::EgressBroker> broker;
    std::optional<BoxIdentity> identity;
    // The workspace, the box user's while the box runs (workspace_handover.h).
    std::optional<WorkspaceHandover> handover;
    std::uint64_t exec_started_ms = 0;       // when the box's command was started, Unix epoch ms
    time::WallPoint exec_started_wall{};     // the same instant by the injected clock's wall
    time::SteadyPoint exec_started_steady{}; // and by its steady time
    bool finishing = false;                  // finish() was entered: the record is on its way
    // The run's call radiald gave up on (TurnRunner::abandoned_call), or null: this Run is then
    // kept, with the workspace, locks and ids its box may still use, until the plugin returns.
    std::shared_ptr<host::RunCall> abandoned;
    // The warm pool's box the turn claimed (docs/design.md §13.14), or null. Last, so destroyed
    // first: the box is gone and the workspace detached from it before anything else is undone.
    std::unique_ptr<pool::ClaimedBox> pooled;

    // The box can no longer reach radiald: the broker's connections closed and each receipt
    // written, the socket path gone and the token worthless.
    void close_socket() {
        broker.reset();
        server.reset();
    }
};

} // namespace radial::turn
