// plugins/support/mount_sources.h — the checks every runtime that bind-mounts host paths makes
// before it creates a box: each mount's source exists on this host, and none hands the box its
// engine's data root.
#pragma once

#include <radial/container_spec.hpp>
#include <string_view>

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

} // namespace radial::plugin_support
