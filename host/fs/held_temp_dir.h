// host/fs/held_temp_dir.h — a temporary directory whose maker holds a lock on it, so that the
// next maker can tell one a killed process left (docs/design.md §14.6).
//
// A directory under $TMPDIR is removed by its owner's destructor; a process killed (SIGKILL, the
// OOM killer) leaves it, with whatever it held: an image's archive of gigabytes, for
// `radiald template export`. Each maker therefore holds an exclusive flock(2) on its directory
// for as long as it lives, and removes, before it makes its own, the directories of its prefix
// that nobody holds, that belong to it (its euid) and that have not changed for a minute.
#pragma once

#include <radial/internal/temp_dir.h>
#include <radial/internal/unique_fd.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string_view>

namespace radial::fs_util {

class HeldTempDir {
public:
    // Removes the abandoned directories "<root>/<prefix>*" (above), then makes
    // "<root>/<prefix>XXXXXX" (mode 0700) and locks it. Throws internal::TempDirError naming the
    // path when it cannot be made or locked. `removed`, when given, is how many were removed.
    HeldTempDir(const std::filesystem::path& root, std::string_view prefix,
                std::size_t* removed = nullptr);

    const std::filesystem::path& path() const noexcept { return dir_.path(); }

private:
    internal::TempDir dir_;
    internal::UniqueFd lock_; // released before dir_ is removed: members go in reverse order
};

// The sweep alone: removes "<root>/<prefix>*" directories that belong to this euid, that nobody
// holds locked and whose modification time is at least `quiet` before now. Returns how many.
// Never throws but bad_alloc.
std::size_t remove_abandoned_temp_dirs(const std::filesystem::path& root, std::string_view prefix,
                                       std::chrono::seconds quiet = std::chrono::seconds(60));

} // namespace radial::fs_util
