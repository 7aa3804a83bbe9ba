#include "daemon/spooled_request.h"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>

#include "turn/turn_secrets.h"

namespace radial::daemon {

turn::TurnRequest to_turn_request(const SpooledRequest& r, const EnvLookup& lookup) {
    return turn::with_secret_values(r, lookup,
                                    "set it where the daemon starts (e.g. Environment= or "
                                    "EnvironmentFile= in a systemd drop-in) and submit the turn "
                                    "again");
}

journal::TurnEntry queued_entry(const SpooledRequest& r, const config::HostConfig& cfg) {
    // Secret names only: the journal must never learn a value, and none is known here anyway.
    return {r.turn_id,
            turn::box_label(cfg, r.kind, r.turn_id),
            cfg.container_runtime,
            r.image,
            r.record_type,
            turn::request_journal_json(r),
            std::string(turn::to_string(r.kind))};
}

} // namespace radial::daemon
