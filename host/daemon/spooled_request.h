// host/daemon/spooled_request.h — a turn request as the spool keeps it (docs/design.md §12.1):
// everything needed to run the turn later, with secrets by NAME only. Their values are read from
// the daemon's environment when the turn is claimed and are never written to the spool or the
// journal.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <radial/container_spec.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/host_config.h"
#include "journal/journal.h"
#include "turn/turn_request.h"

namespace radial::daemon {

struct SpooledRequest {
    std::string turn_id;
    std::string image;
    std::vector<std::string> argv;
    std::string workdir;              // empty: the workspace's /work, else the image's
    std::string workspace;            // absolute host directory mounted at /work; empty: none
    std::vector<EnvVar> env;          // plain variables only (secret == false)
    std::vector<std::string> secrets; // names of variables taken from radiald's environment
    std::vector<Mount> mounts;        // absolute sources and targets
    std::uint64_t timeout_ms = 0;     // 0: none
    std::string record_type = "result";
    std::string mode;            // empty: run.mode (turn/workspace_mode.h)
    std::string workspace_mount; // empty: run.workspaceMount

    friend bool operator==(const SpooledRequest&, const SpooledRequest&) = default;
};

// The request as one JSON object (the spool file's content). [thread-safe]
std::string to_json(const SpooledRequest& r);

// Parses a spool file's content. Throws std::runtime_error saying what is wrong ("field 'argv'
// must be an array of strings") for text radiald did not write. [thread-safe]
SpooledRequest spooled_request_from_json(std::string_view text);

// Reads a secret's value by name; nullopt when unset. Tests inject a map.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// radiald's own environment, for EnvLookup.
std::optional<std::string> process_env(const std::string& name);

// The TurnRequest to run: plain env, then each secret with its value from `lookup`, marked secret.
// Throws turn::RequestError naming the first secret that is not set (never a value).
turn::TurnRequest to_turn_request(const SpooledRequest& r, const EnvLookup& lookup);

// The journal entry of a queued turn: label radial-turn-<cfg.instance_id>-<id>, cfg's runtime, and
// the request JSON with secret names only. `cfg.instance_id` must be settled.
journal::TurnEntry queued_entry(const SpooledRequest& r, const config::HostConfig& cfg);

} // namespace radial::daemon
