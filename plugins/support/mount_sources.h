// plugins/support/mount_sources.h — the check every runtime that bind-mounts host paths makes
// before it creates a box: each mount's source exists on this host.
#pragma once

#include <radial/container_spec.hpp>

namespace radial::plugin_support {

// Throws Error(RADIAL_E_NOT_FOUND, key "mounts[<i>]") naming the box's label and the first source
// that does not exist, with what to do. A runtime calls it because what its engine does with a
// missing source is wrong or unknown (docker's Binds create it as a root-owned directory). Reads
// the filesystem only; thread-safe.
void check_mount_sources(const ContainerSpec& spec);

} // namespace radial::plugin_support
