// host/fs/lock_file.h — a file radiald locks with flock(2) to coordinate its processes: the state
// directory's lock, the instance claim and its guard, a box id's lease (docs/design.md §8.6, §17).
#pragma once

#include <radial/internal/unique_fd.h>

#include <string>

namespace radial::fs_util {

// Opens `path` read-write, creating it 0600 (no link followed), and makes one this process owns
// 0600 if an older radiald left it open to others. flock(2) takes a descriptor opened read-only:
// any local user who could open such a file could hold its lock and lock radiald out (a claim it
// waits on for ever, a lease it takes for busy). An invalid descriptor on failure, errno set.
// Thread-safe.
internal::UniqueFd open_lock_file(const std::string& path) noexcept;

// Whether `path` still names the file `fd` holds: a lock file its last holder removes (or
// replaces) while holding the lock may have been opened, and locked, after it left its name; that
// lock locks nothing and is taken again. Thread-safe.
bool still_named(int fd, const std::string& path) noexcept;

} // namespace radial::fs_util
