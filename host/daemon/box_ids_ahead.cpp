#include "daemon/box_ids_ahead.h"

#include <algorithm>

#include "config/box_identity.h"
#include "daemon/instance_claim.h"

namespace radial::daemon {
namespace {

// Whether the warm pool may give `req` one of its boxes, whose ids it holds already
// (WarmPool::claim): a turn with a workspace and no offered services, of an image the pool
// serves. Said yes to when unsure: such a turn, given no pool box, waits for an id as it starts.
bool may_take_pool_box(const config::HostConfig& cfg, const SpooledRequest& req) {
    return req.kind == turn::RequestKind::turn && !req.workspace.empty() && req.offer.empty() &&
           std::find(cfg.pool.images.begin(), cfg.pool.images.end(), req.image) !=
               cfg.pool.images.end();
}

} // namespace

bool leases_box_ids(const config::HostConfig& cfg, const SpooledRequest& req,
                    bool with_pool) noexcept {
    if (!req.session.empty() || cfg.box_root || !config::uses_box_id_range(cfg)) return false;
    return !with_pool || !may_take_pool_box(cfg, req);
}

turn::BoxIdLease lease_box_ids_ahead(const config::HostConfig& cfg, const SpooledRequest& req) {
    return turn::BoxIdLease::acquire(turn::box_id_lease_dir(default_claim_registry()),
                                     cfg.box_id_first, cfg.box_id_last,
                                     turn::box_label(cfg, req.kind, req.turn_id), cfg.state_dir);
}

} // namespace radial::daemon
