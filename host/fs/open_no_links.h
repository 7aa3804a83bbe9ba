// host/fs/open_no_links.h — opening a path that radiald resolved earlier (a workspace, a mount
// source: request_policy.h) without following a symbolic link anywhere in it now: a link there was
// put there since, by whoever may write a directory on the path, to point radiald (root) or
// dockerd at another tree.
#pragma once

#include <radial/internal/unique_fd.h>

#include <string>

namespace radial::fs_util {

// The absolute `path` opened with `flags` (O_CLOEXEC added), refusing a symbolic link anywhere in
// it, the last component too, with ELOOP: through openat2(2) with RESOLVE_NO_SYMLINKS, or, where
// openat2 is missing or a seccomp filter refuses it (ENOSYS, EPERM: systemd's
// RestrictSUIDSGID=) or `try_openat2` is false (tests of the walk), by walking the path one
// component at a time without following links. Null with errno set. [thread-safe]
internal::UniqueFd open_no_links(const std::string& path, int flags, bool try_openat2 = true);

} // namespace radial::fs_util
