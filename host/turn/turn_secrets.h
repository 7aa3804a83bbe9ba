// host/turn/turn_secrets.h — the one place a turn's secrets are gathered (docs/design.md §10.1):
// the values of the request's secret variables, the operator's [redact] envNames and values, and
// what the session adds (the turn token, managed auth). `radiald turn` compiles them before it
// prints or writes anything of the request, so that no byte it writes carries one in clear.
#pragma once

#include <string>
#include <vector>

#include "config/host_config.h"
#include "redaction/secret_set.h"
#include "turn/turn_request.h"

namespace radial::turn {

// The secrets known before the box: each secret variable of `request` with its value (request.env
// entries marked secret), then each of `extra_names` read from radiald's environment (secret
// names not yet resolved into request.env: `radiald turn --secret` before its flags are
// applied), then redact.envNames from radiald's environment, then redact.values (named
// "redact.values.N"). Throws std::invalid_argument naming a secret that SecretSet refuses (too
// short, inside a marker), never its value. Reads the process environment. [thread-safe as
// getenv]
redaction::SecretSet secrets_before_the_box(const TurnRequest& request,
                                            const config::RedactConfig& redact,
                                            const std::vector<std::string>& extra_names = {});

} // namespace radial::turn
