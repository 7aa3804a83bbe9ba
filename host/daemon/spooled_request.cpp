#include "daemon/spooled_request.h"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>

#include "redaction/json_redaction.h"
#include "turn/turn_secrets.h"

namespace radial::daemon {

namespace {
constexpr const char* kNotJournaled = "[not journaled before the claim]";
} // namespace

turn::TurnRequest to_turn_request(const SpooledRequest& r, const EnvLookup& lookup,
                                  const std::vector<std::string>& allowed) {
    return turn::with_secret_values(r, lookup,
                                    "set it where the daemon starts (e.g. Environment= or "
                                    "EnvironmentFile= in a systemd drop-in) and submit the turn "
                                    "again",
                                    allowed);
}

std::unique_ptr<redaction::Redactor> refusal_redactor(const SpooledRequest& r,
                                                      const EnvLookup& lookup,
                                                      const config::HostConfig& cfg) noexcept {
    try {
        // As to_turn_request, but a secret that is not set (the refusal's reason, maybe) has no
        // value to mask, and the others are still masked.
        turn::TurnRequest with_values = r;
        for (const auto& name : r.secrets)
            if (auto value = lookup(name))
                with_values.env.push_back({name, std::move(*value), true});
        redaction::SecretSet secrets =
            turn::secrets_before_the_box(with_values, cfg.redact, {}, /*skip_refused=*/true);
        try {
            turn::add_other_turns_secrets(secrets, cfg.state_dir);
        } catch (const std::exception&) {
            // The store unread: this turn's own secrets are still masked.
        }
        return std::make_unique<redaction::Redactor>(secrets);
    } catch (const std::exception&) {
        return nullptr;
    }
}

journal::TurnEntry queued_entry(const SpooledRequest& r, const config::HostConfig& cfg) {
    // Secret names only, and what the request quotes of a secret masked: the journal must never
    // learn a value, and the first row it writes stays in its file (the WAL) after the claim
    // rewrites it (docs/design.md §10.2). A [redact] value pasted into a plain variable is one.
    std::string request, image;
    if (auto redactor = refusal_redactor(r, turn::process_env, cfg)) {
        request = redaction::redact_json(*redactor, turn::request_journal_json(r));
        image = redactor->redact(r.image);
    } else {
        // Nothing to mask with: none of what could quote a secret is journaled until the claim,
        // whose turn session masks it or refuses the turn.
        SpooledRequest bare = r;
        for (auto& e : bare.env) e.value = kNotJournaled;
        for (auto& a : bare.argv) a = kNotJournaled;
        request = turn::request_journal_json(bare);
        image = kNotJournaled;
    }
    return {r.turn_id,
            turn::box_label(cfg, r.kind, r.turn_id),
            cfg.container_runtime,
            std::move(image),
            r.record_type,
            std::move(request),
            std::string(turn::to_string(r.kind))};
}

} // namespace radial::daemon
