// host/fs/socket_file_access.h — the mode and owner of a socket file radiald just bound in a
// directory a box user may already own (a session's socket directory, docs/design.md §9.7).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>

namespace radial::fs_util {

// Sets the mode (and, if given, the owner: uid, gid) of the socket file at `path` without
// following what may have replaced it since the bind: a process of the box could swap the name
// for a link to any host file between a bind(2) and a chmod(2) by name, and radiald runs as root.
// The name is opened once (O_PATH, no link followed) and only a socket file owned by this
// process's effective uid, which no box can make, is changed. Returns "" on success, else what
// was wrong (nothing changed then, or only the mode when the chown failed). Thread-safe.
std::string set_socket_file_access(const std::string& path, mode_t mode,
                                   const std::optional<std::pair<uid_t, gid_t>>& owner);

} // namespace radial::fs_util
