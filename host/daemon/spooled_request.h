// host/daemon/spooled_request.h — a request as the spool keeps it (docs/design.md §12.1):
// everything needed to run the turn later, with secrets by NAME only. Their values are read from
// the daemon's environment when the turn is claimed and are never written to the spool or the
// journal.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <radial/container_spec.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/host_config.h"
#include "journal/journal.h"
#include "redaction/stream_redactor.h"
#include "turn/turn_request.h"
#include "turn/turn_secrets.h"

namespace radial::daemon {

// The spool keeps the one request type (turn/turn_request.h) as request_to_json() writes it, with
// secrets by name only.
using SpooledRequest = turn::TurnRequest;

using turn::EnvLookup;
using turn::process_env;

// The request to run: turn::with_secret_values with the daemon's fix (set the variable where the
// daemon starts). Throws turn::RequestError naming the first secret that is not set (never a
// value).
// `allowed`: run.secretNames, checked before any lookup.
turn::TurnRequest to_turn_request(const SpooledRequest& r, const EnvLookup& lookup,
                                  const std::vector<std::string>& allowed = {"*"});

// What masks the secret values `r` names (those `lookup` knows; one that is unset or refused is
// left out), the operator's [redact] secrets and other turns' ones: for a refusal, whose record
// and journal entry may quote the request before any turn session compiled them (docs/design.md
// §10.1). nullptr when none could be compiled. Never throws. [thread-safe as getenv]
std::unique_ptr<redaction::Redactor> refusal_redactor(const SpooledRequest& r,
                                                      const EnvLookup& lookup,
                                                      const config::HostConfig& cfg) noexcept;

// The journal entry of a queued request: its kind, its label (turn::box_label), cfg's runtime, and
// the request JSON with secret names only, masked by refusal_redactor (with this process's
// environment): a [redact] value or a named secret's value that a plain variable, an argv word
// or the image quotes is never written. When nothing could be compiled to mask with, the values
// that could quote one (env values, argv, image) are left out until the claim. `cfg.instance_id`
// must be settled.
journal::TurnEntry queued_entry(const SpooledRequest& r, const config::HostConfig& cfg);

} // namespace radial::daemon
