// host/turn/box_root.h — which ids a box runs as, in the box and on the host: its own leased ids
// (docs/design.md §8.7), or root in a user namespace of its own on a runtime that offers one
// (radial/box_root.h; docs/design.md §8.8), whose files are an unprivileged host id's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace radial::turn {

// The spec user of a box that is root in a user namespace of its own.
inline constexpr const char* kNamespacedRootUser = "0:0";

// "uid[:gid]" with numbers only (gid = uid when absent); nullopt for a name or an empty string.
// Pure; thread-safe.
std::optional<std::pair<uid_t, gid_t>> numeric_user(const std::string& user);

// The host ids files and sockets must belong to for a box running as `spec_user`: its numeric ids
// themselves, or, with `box_root` (the host ids of a box's root), exactly those when the box runs
// as kNamespacedRootUser. Nullopt when `spec_user` is not numeric, or is any other user under a
// namespaced root (its host ids are not known here). Pure; thread-safe.
std::optional<std::pair<uid_t, gid_t>> box_host_ids(
    const std::string& spec_user,
    const std::optional<std::pair<std::uint32_t, std::uint32_t>>& box_root);

} // namespace radial::turn
