// plugins/support/mount_sources.h — the checks every runtime that bind-mounts host paths makes
// before it creates a box: each mount's source exists on this host, and none hands the box its
// engine's data root.
#pragma once

#include <radial/container_spec.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace radial::plugin_support {

// Throws Error(RADIAL_E_NOT_FOUND, key "mounts[<i>]") naming the box's label and the first source
// that does not exist, with what to do. A runtime calls it because what its engine does with a
// missing source is wrong or unknown (docker's Binds create it as a root-owned directory). Reads
// the filesystem only; thread-safe.
void check_mount_sources(const ContainerSpec& spec);

// Throws Error(RADIAL_E_REFUSED, key "mounts[<i>]") naming the box's label, the first source that
// is, lies below or holds `data_root` (the engine's DockerRootDir from GET /info) and `engine`:
// that tree holds every container's root filesystem and volumes, so a box given it has every other
// box. Both paths are compared with symlinks and ".." resolved as far as they exist. The host
// refuses the default roots itself; this covers an engine whose data root is elsewhere (a moved
// data-root, a rootless engine, docs/design.md §7.5). Empty `data_root`: nothing is checked.
// Reads the filesystem only; thread-safe.
void refuse_engine_data_root(const ContainerSpec& spec, std::string_view data_root,
                             std::string_view engine);

// A host path through which a box would control its engine, and how a message names it ("the
// socket of the engine 'x'", "the docker client's configuration directory", …).
struct EngineControlPath {
    std::string path;
    std::string what;
};

// Throws Error(RADIAL_E_REFUSED, key "mounts[<i>]") naming the box's label, the first mount
// source that is, lies below or holds one of `paths` (compared as refuse_engine_data_root
// compares), and what that path is: the engine's unix socket, or the client configuration and TLS
// keys that reach the engine, which hand the box every other box and the host (docs/design.md
// §7.5). The host refuses the client's configuration its own environment names, and what the
// runtime's table names, itself; this covers what only the runtime resolves (a docker context's
// engine). Entries with an empty or relative path are skipped. Reads the
// filesystem only; thread-safe.
void refuse_engine_control_paths(const ContainerSpec& spec,
                                 const std::vector<EngineControlPath>& paths);

// The control paths of the engine named `engine` in messages: its unix socket `socket_path`
// (empty for a tcp engine), the docker client's configuration directory `client_config`
// ($DOCKER_CONFIG, else ~/.docker: credentials, contexts and their TLS keys) and `cert_path`
// ($DOCKER_CERT_PATH); empty ones are left out. Pure.
std::vector<EngineControlPath> engine_control_paths(const std::string& engine,
                                                    const std::string& socket_path,
                                                    const std::string& client_config,
                                                    const std::string& cert_path);

} // namespace radial::plugin_support
