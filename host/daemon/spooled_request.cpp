#include "daemon/spooled_request.h"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>

namespace radial::daemon {

std::optional<std::string> process_env(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
}

turn::TurnRequest to_turn_request(const SpooledRequest& r, const EnvLookup& lookup) {
    turn::TurnRequest t = r;
    for (const auto& name : r.secrets) {
        auto value = lookup(name);
        if (!value)
            throw turn::RequestError(fmt::format(
                "secret '{}' is not set in radiald's environment; set it where the daemon starts "
                "(e.g. Environment= or EnvironmentFile= in a systemd drop-in) and submit the turn "
                "again",
                name));
        t.env.push_back({name, *value, true});
    }
    return t;
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
