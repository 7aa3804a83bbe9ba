// host/turn/turn_request.h — what one turn asks for, and the ContainerSpec the host builds from
// it (docs/design.md §3).
#pragma once

#include <cstdint>
#include <radial/container_spec.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/host_config.h"

namespace radial::turn {

// A turn request the operator cannot run as given. what() names the flag or field and the fix.
class RequestError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct TurnRequest {
    std::string turn_id; // empty: one is generated
    std::string image;
    std::string workspace; // host directory mounted read-write at /work; empty: none
    std::vector<EnvVar> env;
    std::vector<std::string> argv;
    std::uint64_t timeout_ms = 0;       // 0: no timeout
    std::string record_type = "result"; // the only record type the turn socket accepts
    // Issue 5 §1 (last, so existing positional initialisers keep their meaning):
    std::string workdir{}; // absolute, in the box; empty: /work with a workspace, else the image's
    std::vector<Mount> mounts{}; // further mounts: absolute source and target
    // workspace_mode.h; empty: the operator's run.mode / run.workspaceMount
    std::string mode{};            // "read-only" | "workspace-write"
    std::string workspace_mount{}; // "/work" | "same-path"
};

// The fixed path the workspace is mounted at inside the box, and the turn's workdir.
inline constexpr const char* kWorkspaceTarget = "/work";

// A fresh turn id: UTC time plus 48 random bits, e.g. "20261129t131500-3f2a9c01d4e5".
// Safe for box labels. [thread-safe]
std::string new_turn_id();

// The longest turn id, in bytes; with the prefix and a 32-byte instance id the label stays within
// the 128 bytes a box label may have.
inline constexpr std::size_t kMaxTurnIdBytes = 64;

// Throws RequestError unless `id` is 1..kMaxTurnIdBytes of [a-z0-9-], not starting with '-'.
void validate_turn_id(const std::string& id);

// The box label of a turn: "radial-turn-<instanceId>-<turnId>" (docs/design.md §8.2).
std::string turn_label(const config::HostConfig& cfg, const std::string& turn_id);

// The request as the journal keeps it (one JSON object): secret variables by name only, never
// their values. Callers redact it further with the turn's secret set. [thread-safe]
std::string request_journal_json(const TurnRequest& r);

// Builds the spec: label, image, argv, env (secrets marked), the workspace as the spec's first
// mount, at /work or its host path (workspaceMount) and the workdir there, read-only or not and
// the root filesystem read-only or not by the turn's mode (workspace_mode.h), further mounts, the
// workdir, the timeout, run.network and the box user. The user is run.user when set, else the
// workspace's owner when that is not root (so files the turn writes belong to whoever owns the
// workspace), else left to the runtime's non-root default. Throws RequestError for a mode or
// workspaceMount that is not one of theirs, a workspace that is not an existing directory, a mount
// whose source does not exist or whose paths are not absolute, a relative workdir, an empty argv or
// image, a bad turn id, or anything the request policy refuses (request_policy.h: workspace and
// mount sources, mount targets, the image, the record type, the exec limits). The workspace and
// mount sources in the spec are their resolved forms. Every entry point (turn, submit, the daemon's
// claim) builds its spec here, so all apply the same checks.
ContainerSpec build_container_spec(const TurnRequest& req, const config::HostConfig& cfg);

} // namespace radial::turn
