// The warm pool's part of TurnSession::run (turn_session.h, docs/design.md §13.14): a turn the
// pool can serve claims an idle box of it; the box's label, ids and socket directory become the
// turn's, and its workspace is stacked on the box's /work just before the exec.
#include <fmt/format.h>

#include "log/logger.h"
#include "pool/warm_pool.h"
#include "turn/turn_session_run.h"

namespace radial::turn {

void TurnSession::claim_pool_box(Run& run) {
    if (!pool_shape_ || session_ || env_.pool == nullptr) return;
    const auto& id = request_.turn_id;
    const std::string& mode = request_.mode.empty() ? env_.cfg.mode : request_.mode;
    // The pool box's exec carries no mounts: the host stacks the workspace itself, so the runtime
    // is asked about the turn's own mounts here (an engine's data root elsewhere, its socket:
    // docs/design.md §7.5). One it refuses starts no pool box; the turn's own run refuses it.
    try {
        for (const auto& d : env_.client.describe(run.spec))
            if (d.field == RADIAL_FIELD_MOUNTS && d.disposition == RADIAL_DISP_REFUSED) return;
    } catch (const host::RuntimeError&) {
        return; // the turn's own run reports the runtime's failure
    }
    run.pooled = env_.pool->claim(request_.image, mode, *pool_shape_);
    if (!run.pooled) return;
    const std::string label = (*run.pooled)->label();
    // Reconciliation looks for the box the journal names: this one from now on.
    try {
        env_.journal.set_label(id, label);
    } catch (const journal::JournalError& e) {
        log::warn("turn",
                  "turn {}: not taking pool box '{}' (the journal could not name it: {}); "
                  "it starts its own box",
                  id, label, e.what());
        run.pooled.reset();
        return;
    }
    run.spec.label = label;
    run.rec.label = label;
    log::info("turn", "turn {}: runs in pool box '{}'", id, label);
}

ContainerSpec pool_exec(const ContainerSpec& spec) {
    // What an exec carries (radial_session_ext.exec); the box has the rest since it was made.
    ContainerSpec exec;
    exec.label = spec.label;
    exec.image = spec.image; // for the record and the log: the box runs it already
    exec.argv = spec.argv;
    exec.env = spec.env;
    exec.workdir = spec.workdir;
    exec.timeout_ms = spec.timeout_ms;
    exec.user = spec.user;
    return exec;
}

} // namespace radial::turn
