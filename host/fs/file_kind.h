// host/fs/file_kind.h — what a directory entry is, and where a link leads, in the words a message
// uses ("'x' is a fifo", "a link to 'y'").
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <string>

namespace radial::fs_util {

// The kind of file `mode` (st_mode, from lstat or stat) says, with its article.
inline const char* file_kind(mode_t mode) noexcept {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a fifo";
    return "of an unknown file type";
}

// What the link at `path` holds, as written, or "?" when it cannot be read (for a message).
inline std::string link_target(const std::filesystem::path& path) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(path, ec);
    return ec ? std::string("?") : target.string();
}

} // namespace radial::fs_util
