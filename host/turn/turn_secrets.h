// host/turn/turn_secrets.h — the one place a turn's secrets are gathered (docs/design.md §10.1):
// the values of the request's secret variables, the operator's [redact] envNames and values,
// those of the secrets other turns of the state directory were given (for masking only), and
// what the session adds (the turn token, managed auth). `radiald turn` compiles them before it
// prints or writes anything of the request, so that no byte it writes carries one in clear.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/host_config.h"
#include "redaction/secret_set.h"
#include "redaction/stream_redactor.h"
#include "turn/turn_request.h"

namespace radial::turn {

// Reads a secret's value by name; nullopt when unset. Tests inject a map.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// radiald's own environment, for EnvLookup. [thread-safe as getenv]
std::optional<std::string> process_env(const std::string& name);

// The one place a request's secret names get their values (docs/design.md §10.1), for `radiald
// turn --secret` and for a daemon's claimed turn alike: `request` with each of request.secrets
// appended to env, its value from `lookup`, marked secret. Throws RequestError naming the first
// name that is no variable name or is not set (never a value), ending with `fix`: how to set it
// where this radiald runs — after a name `allowed` (run.secretNames) does not admit, which is
// never looked up, so that the refusal does not tell whether it is set (secret_name_refusal).
TurnRequest with_secret_values(TurnRequest request, const EnvLookup& lookup, std::string_view fix,
                               const std::vector<std::string>& allowed = {"*"});

// Why run.secretNames (`allowed`, shell patterns) does not admit the secret `name`, or nullopt
// when it does (docs/design.md §7.5). [thread-safe]
std::optional<RequestError> secret_name_refusal(const std::string& name,
                                                const std::vector<std::string>& allowed);

// The secrets known before the box: each secret variable of `request` with its value (request.env
// entries marked secret), then each of `extra_names` read from radiald's environment (secret
// names not yet resolved into request.env: `radiald turn --secret` before its flags are
// applied), then redact.envNames from radiald's environment, then redact.values (named
// "redact.values.N"). Throws std::invalid_argument naming a secret that SecretSet refuses (too
// short, inside a marker), never its value — or, with `skip_refused`, leaves that one out and
// keeps the others (early masking, which must not lose every secret to one bad one). Reads the
// process environment. [thread-safe as getenv]
redaction::SecretSet secrets_before_the_box(const TurnRequest& request,
                                            const config::RedactConfig& redact,
                                            const std::vector<std::string>& extra_names = {},
                                            bool skip_refused = false);

// Adds to `secrets`, for masking only (the box is not given them), the value in radiald's
// environment of each secret name another turn of `state_dir` was given (docs/design.md §13.12:
// a turn that reads one from a shared workspace must not print it in clear). A name this turn
// already has, one unset here, and a value SecretSet refuses are skipped. Throws
// TurnSetupError when the state directory's store cannot be read. [thread-safe as getenv]
void add_other_turns_secrets(redaction::SecretSet& secrets, const std::string& state_dir);

// Refuses a spec that would put a secret at rest (docs/design.md §6.3): the runtime hands every
// field but the secret variables to something that keeps it (the engine's create body, a swarm
// service), so none of them — the image, each argv word, each plain variable's name and value,
// the workdir, the user, the mounts, tmpfs targets, extra hosts and egress destinations — may
// hold what `redactor` (turn_secrets_redactor) masks. Throws RequestError naming the field and
// the secret (never the value) and the fix. [thread-safe]
void refuse_secrets_at_rest(const ContainerSpec& spec, const redaction::Redactor& redactor);

// The secrets refuse_secrets_at_rest looks for: of `secrets` (the turn's, as compiled for its
// redactor), the values of `request`'s secret variables and of its managed auth (codexAuth.N).
// Throws std::bad_alloc only.
redaction::Redactor turn_secrets_redactor(const TurnRequest& request,
                                          const redaction::SecretSet& secrets);

} // namespace radial::turn
