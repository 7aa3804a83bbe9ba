// plugins/support/temp_dir.h — a private per-run temporary directory, removed on scope exit, and
// the sweep that removes those a killed process left behind.
#pragma once

#include <radial/internal/temp_dir.h>
#include <radial/internal/unique_fd.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string_view>

namespace radial::plugin_support {

// A directory created with mode 0700 (mkdtemp) under $TMPDIR (or /tmp), removed with everything
// in it when the owner goes out of scope (it is a radial::internal::TempDir, the one temp-dir
// owner, docs/design.md §14.6, plus a lock). While it exists its owner holds an exclusive flock(2)
// on it, which the kernel drops when the process dies however it dies (SIGKILL included): that
// is how remove_abandoned_temp_dirs tells a live run's directory from a dead one's, across pid
// namespaces too (not across machines: a $TMPDIR shared over NFS is not supported). Move-only.
// Not thread-safe.
class TempDir {
public:
    // Creates and locks "<tmp>/<prefix>XXXXXX". Throws radial::plugin::Error(RADIAL_E_INTERNAL)
    // naming the path when the directory cannot be created or locked.
    explicit TempDir(std::string_view prefix);
    TempDir(TempDir&& other) noexcept = default;
    TempDir& operator=(TempDir&&) = delete;
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    // Removes the directory tree, then drops the lock; errors are ignored (nothing useful can be
    // done with them).
    ~TempDir() = default;

    const std::filesystem::path& path() const noexcept { return dir_.path(); }

private:
    // Declared first, destroyed last: the lock is held until the tree is gone.
    internal::UniqueFd lock_; // the directory itself, flock(LOCK_EX)ed
    internal::TempDir dir_;
};

// How old (by mtime) a directory must be before remove_abandoned_temp_dirs considers it: longer
// than a TempDir takes between mkdtemp and taking its lock.
inline constexpr std::chrono::seconds kAbandonedAfter{5};

// Removes every directory "<tmp>/<prefix>*" that this user owns, that is older than
// kAbandonedAfter and that no process holds locked: TempDirs whose process was killed before it
// could remove them (a SIGKILLed host). Symlinks and other users' entries are left alone. Returns
// how many were removed. Never throws; best effort. Thread-safe.
std::size_t remove_abandoned_temp_dirs(std::string_view prefix) noexcept;

} // namespace radial::plugin_support
