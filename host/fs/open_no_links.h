// host/fs/open_no_links.h — opening a path that radiald resolved earlier (a workspace, a mount
// source: request_policy.h) without following a symbolic link anywhere in it now: a link there was
// put there since, by whoever may write a directory on the path, to point radiald (root) or
// dockerd at another tree.
#pragma once

#include <radial/internal/unique_fd.h>

#include <string>

namespace radial::fs_util {

// `path` opened with `flags` (O_CLOEXEC added) through openat2(2) with RESOLVE_NO_SYMLINKS and
// RESOLVE_NO_MAGICLINKS, so a link anywhere on it, the last component too, fails with ELOOP; where
// openat2 is missing (ENOSYS), only the last component is checked (O_NOFOLLOW). Null with errno
// set. [thread-safe]
internal::UniqueFd open_no_links(const std::string& path, int flags);

} // namespace radial::fs_util
