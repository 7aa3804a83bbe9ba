// host/fs/pinned_directory.h — a directory opened once, before a box runs, and written into
// later only through that descriptor, for every file radiald writes after a box has run where the
// box could have changed the path (a --record-file inside the workspace).
//
// Rationale: a box that may write its workspace may also replace any directory in it by a symlink
// while it runs. A write by path after the turn would then follow that symlink with radiald's
// rights (root, for the daemon) and create or replace a file anywhere. Writing relative to a
// descriptor opened before the box started, with O_NOFOLLOW and a fresh exclusively-created
// temporary name, reaches the directory the operator named or nothing; and since a directory
// replaced under its name would take the written file with it, the write first checks that the
// name still leads to the same directory and refuses otherwise.
#pragma once

#include <radial/internal/unique_fd.h>

#include <string>
#include <string_view>

#include "fs/fs_error.h"

namespace radial::fs_util {

class PinnedDirectory {
public:
    // Resolves `dir` (its symlinks are the operator's choice, taken as they are now), opens the
    // result (O_DIRECTORY) and checks it is writable. Throws FsError naming the
    // directory and errno. Thread-compatible.
    static PinnedDirectory open(const std::string& dir);

    // Publishes `content` as `name` (one path component) in the pinned directory: a fresh
    // temporary file created exclusively and without following links, fsynced, renamed over `name`
    // (a symlink planted there is replaced, never followed), then the directory fsynced. Refuses,
    // writing nothing, when the directory's path no longer leads to the pinned directory (it was
    // removed, renamed or replaced by a symlink since open()), or when `name` is neither absent, a
    // regular file nor a symlink (a device, a fifo, a socket, a directory: another program's, not
    // a file to replace). Throws FsError naming the path and the cause. Thread-compatible.
    void publish(std::string_view name, std::string_view content, unsigned mode = 0644) const;

    // The resolved path of the directory.
    const std::string& path() const noexcept { return path_; }

private:
    PinnedDirectory(std::string path, internal::UniqueFd fd)
        : path_(std::move(path)), fd_(std::move(fd)) {}
    std::string path_;
    internal::UniqueFd fd_;
};

} // namespace radial::fs_util
