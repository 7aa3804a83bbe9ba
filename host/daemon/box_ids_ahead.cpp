#include "daemon/box_ids_ahead.h"

#include "config/box_identity.h"
#include "daemon/instance_claim.h"

namespace radial::daemon {

bool leases_box_ids(const config::HostConfig& cfg, const SpooledRequest& req,
                    bool with_pool) noexcept {
    return req.session.empty() && !with_pool && !cfg.box_root && config::uses_box_id_range(cfg);
}

turn::BoxIdLease lease_box_ids_ahead(const config::HostConfig& cfg, const SpooledRequest& req) {
    return turn::BoxIdLease::acquire(turn::box_id_lease_dir(default_claim_registry()),
                                     cfg.box_id_first, cfg.box_id_last,
                                     turn::box_label(cfg, req.kind, req.turn_id), cfg.state_dir);
}

} // namespace radial::daemon
