// host/config/instance_id.h — this radiald's instance identity (docs/design.md §8.6): the
// run.instanceId the operator set, else an id generated once and kept in the state directory, so
// that every command on one state directory (`radiald run`, `turn`, `submit`, `reconcile`) labels
// and reclaims the same boxes — "radial-turn-<instanceId>-<turnId>" — and two state directories
// never share an id by accident.
#pragma once

#include <optional>
#include <string>

#include "config/host_config.h"

namespace radial::config {

// The file under the state directory that holds a generated instance id ("<id>\n").
inline constexpr const char* kInstanceIdFile = "instance-id";

// The id persisted in `state_dir`, generated (12 random characters of [a-z0-9]) and written the
// first time. Creates the state directory (0700) if missing. Safe when several processes call it
// at once for one directory: the file is published with link(2), so exactly one id wins and every
// caller returns it. Throws ConfigError when the directory or file cannot be created or read, or
// the file holds something that is not an instance id (the message names the file and the fix).
// [thread-safe]
std::string persisted_instance_id(const std::string& state_dir);

// The id persisted in `state_dir`, or nullopt when none was generated yet; creates nothing
// (`radiald status`). Throws ConfigError for a file that holds no instance id.
std::optional<std::string> read_persisted_instance_id(const std::string& state_dir);

// Fills cfg.instance_id from persisted_instance_id(cfg.state_dir) when the config set none; leaves
// an id the operator configured alone (and writes nothing then). Throws ConfigError as above.
void settle_instance_id(HostConfig& cfg);

} // namespace radial::config
