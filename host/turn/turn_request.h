// host/turn/turn_request.h — what one turn asks for, and the ContainerSpec the host builds from
// it (docs/design.md §3).
#pragma once

#include <radial/internal/names.h>

#include <cstdint>
#include <optional>
#include <radial/container_spec.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "config/host_config.h"

namespace radial::turn {

// A turn request the operator cannot run as given. what() names the flag or field and the fix.
class RequestError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// What a request asks for: a turn (an agent's command, with its turn socket and secrets) or a
// check (a project's own command: no secrets, no turn socket; docs/design.md §4).
enum class RequestKind { turn, check };

// "turn" or "check" (the spelling stored in requests, journals and terminal records). [thread-safe]
std::string_view to_string(RequestKind k) noexcept;

// The kind spelled `text`, or nullopt for anything else. [thread-safe]
std::optional<RequestKind> parse_request_kind(std::string_view text) noexcept;

// The one request type (docs/design.md §3.1): what `radiald turn` and `radiald check` build from
// their flags, what a request file is read into (daemon/turn_file.h), what the spool and the
// journal keep (request_to_json) and what every entry point runs. New fields go at the end, so
// positional initialisers keep their meaning, and into request_to_json / request_from_json.
struct TurnRequest {
    std::string turn_id; // empty: one is generated
    std::string image;
    std::string workspace; // host directory mounted read-write at /work; empty: none
    // Plain variables; and, once the secrets are resolved (they are read from radiald's
    // environment when the turn runs), the secrets with their values, marked secret.
    std::vector<EnvVar> env;
    std::vector<std::string> argv;
    std::uint64_t timeout_ms = 0;       // 0: no timeout
    std::string record_type = "result"; // the only record type the turn socket accepts
    // Later fields (last, so existing positional initialisers keep their meaning):
    std::string workdir{}; // absolute, in the box; empty: /work with a workspace, else the image's
    std::vector<Mount> mounts{};        // further mounts: absolute source and target
    std::vector<std::string> secrets{}; // names of variables taken from radiald's environment
    RequestKind kind = RequestKind::turn;
    // workspace_mode.h; empty: the operator's run.mode / run.workspaceMount
    std::string mode{};            // "read-only" | "workspace-write"
    std::string workspace_mount{}; // "/work" | "same-path"
    // A session's id (host/session/): the turn runs as an exec in that session's box, whose image,
    // workspace, mode and mounts the session fixed; empty: a box of its own.
    std::string session{};
    // Destinations the box may reach through its egress broker ("host:port", docs/design.md
    // §9.7), each within run.egress; empty: none, the box has no network at all.
    std::vector<std::string> egress{};
    // Services of the turn's workspace its box offers to other workspaces' turns (names of
    // run.workspaces.<its workspace>.serve, docs/design.md §9.7 "Between boxes"); empty: none.
    std::vector<std::string> offer{};

    friend bool operator==(const TurnRequest&, const TurnRequest&) = default;
};

// The version of the JSON shape request_to_json writes. Version 1 (the previous release's spool
// files) had no "version" and no "kind" field and is read as a turn.
inline constexpr int kRequestJsonVersion = 2;

// The request as one JSON object — the spool file's content and the journal's request column:
// {"version", "kind", "turnId", "image", "argv", "workdir"?, "workspace"?, "env": {NAME: value},
// "secrets": [NAME], "mounts": [{source, target, readOnly}], "timeoutMs"?, "recordType"}. Secret
// variables appear by name only, never their values, whether resolved or not. [thread-safe]
std::string request_to_json(const TurnRequest& r);

// Parses what request_to_json wrote, in this or an earlier version. Throws RequestError saying
// what is wrong ("field 'argv' must be an array of strings") for text radiald did not write, or
// a version newer than kRequestJsonVersion. Secrets come back by name (in `secrets`). [thread-safe]
TurnRequest request_from_json(std::string_view text);

// The longest timeout a turn may have, from every source (--timeout, a request's timeout, a
// spooled timeoutMs): units::kMaxDurationMs, 30 days (docs/design.md §7.3).
inline constexpr std::uint64_t kMaxTimeoutMs = 30ull * 24 * 3'600'000;

// The fixed path the workspace is mounted at inside the box, and the turn's workdir.
inline constexpr const char* kWorkspaceTarget = "/work";

// A fresh turn id: UTC time plus 48 random bits, e.g. "20261129t131500-3f2a9c01d4e5".
// Safe for box labels. Throws TurnSetupError (turn_setup_error.h) when /dev/urandom cannot be
// read. [thread-safe]
std::string new_turn_id();

// The longest turn id, in bytes; with the prefix and a 32-byte instance id the label stays within
// the 128 bytes a box label may have.
using internal::kMaxTurnIdBytes; // radial/internal/names.h, with is_turn_id

// Throws RequestError unless `id` is 1..kMaxTurnIdBytes of [a-z0-9-], not starting with '-'.
void validate_turn_id(const std::string& id);

// Throws RequestError when the request carries what its kind may not: a check names no secret,
// neither in `secrets` nor as a secret env entry (docs/design.md §4). [thread-safe]
void check_request_kind(const TurnRequest& req);

// The box label of a turn: "radial-turn-<instanceId>-<turnId>" (docs/design.md §8.2).
std::string turn_label(const config::HostConfig& cfg, const std::string& turn_id);

// The box label of a request of `kind`: turn_label() for a turn, "radial-check-<instanceId>-<id>"
// for a check (docs/design.md §4, §8.1). [thread-safe]
std::string box_label(const config::HostConfig& cfg, RequestKind kind, const std::string& id);

// The label prefixes that are exactly this instance's, one per kind: "radial-turn-<instanceId>-"
// and "radial-check-<instanceId>-" (docs/design.md §8.2), and the warm pool's
// "radial-pool-<instanceId>-" (§13.14). [thread-safe]
std::vector<std::string> instance_label_prefixes(const config::HostConfig& cfg);

// A turn's timeout in milliseconds (0: none): `requested_ms` (the request's own) when not 0, else
// run.defaultTimeout, else run.maxTimeout (docs/design.md §3.7). Not checked against
// run.maxTimeout (build_container_spec refuses one above it). [pure]
std::uint64_t turn_timeout_ms(std::uint64_t requested_ms, const config::HostConfig& cfg);

// The request as the journal keeps it: request_to_json(r), compact. Callers redact it further
// with the turn's secret set. [thread-safe]
std::string request_journal_json(const TurnRequest& r);

// Builds the spec: label, image, argv, env (secrets marked), the workspace as the spec's first
// mount, at /work or its host path (workspaceMount) and the workdir there, read-only or not and
// the root filesystem read-only or not by the turn's mode (workspace_mode.h), further mounts, the
// workdir, the timeout, run.network, the host's bounds (run.memory, run.cpus, run.pidsLimit;
// docs/design.md §6.4) and the box user. The user is run.user when set, else the
// workspace's owner when that is not root (so files the turn writes belong to whoever owns the
// workspace), else left to the runtime's non-root default. Throws RequestError for a mode or
// workspaceMount that is not one of theirs, a workspace that is not an existing directory, a mount
// whose source does not exist or whose paths are not absolute, a relative workdir, an empty argv or
// image, a bad turn id, a check that names a secret, or anything the request policy refuses
// (request_policy.h: workspace and mount sources, mount targets, the image, the record type, the
// exec limits). The workspace and mount sources in the spec are their resolved forms. Every entry
// point (turn, submit, the daemon's claim) builds its spec here, so all apply the same checks.
ContainerSpec build_container_spec(const TurnRequest& req, const config::HostConfig& cfg);

} // namespace radial::turn
