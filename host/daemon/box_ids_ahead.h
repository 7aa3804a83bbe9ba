// host/daemon/box_ids_ahead.h — a queued turn's box ids, leased as the daemon claims it.
//
// A turn leases its box's uid and gid from run.boxIdRange as it starts (turn/box_id_lease.h).
// Leased only then, a turn claimed while every id is held would end in an error although nothing
// is wrong but the moment. The daemon leases them before it claims the turn instead, and leaves a
// turn that finds the range full queued, to be tried again at its next dispatch, as it does for a
// workspace another turn holds (docs/design.md §8.7).
#pragma once

#include "config/host_config.h"
#include "daemon/spooled_request.h"
#include "turn/box_id_lease.h"

namespace radial::daemon {

// Whether the box of `req` leases ids of run.boxIdRange as its turn starts: not a session's
// turn (its session holds them), not beside a warm pool (`with_pool`) a turn the pool may serve
// (a turn with a workspace of an image in run.pool.images: its boxes hold their ids), not when
// boxes run as root in a user namespace of their own (HostConfig::box_root, docs/design.md §8.8)
// or as run.user's fixed ids. Never throws.
bool leases_box_ids(const config::HostConfig& cfg, const SpooledRequest& req,
                    bool with_pool) noexcept;

// Leases them under the label its box will have (turn::box_label()), for TurnSession::run's
// held_ids. Throws turn::BoxIdsExhausted while every id is held, turn::TurnSetupError when the
// leases' directory cannot be used. Thread-safe.
turn::BoxIdLease lease_box_ids_ahead(const config::HostConfig& cfg, const SpooledRequest& req);

} // namespace radial::daemon
