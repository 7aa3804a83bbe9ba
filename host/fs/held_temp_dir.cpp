#include "fs/held_temp_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <string>

namespace radial::fs_util {
namespace fs = std::filesystem;

std::size_t remove_abandoned_temp_dirs(const fs::path& root, std::string_view prefix,
                                       std::chrono::seconds quiet) {
    std::size_t removed = 0;
    std::error_code ec;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (!name.starts_with(prefix)) continue;
        // Opened without following a link, and judged by what was opened: $TMPDIR is often
        // writable by everyone, and only our own directories are ours to remove.
        const internal::UniqueFd fd(
            ::open(it->path().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        struct stat st {};
        if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != ::geteuid() || st.st_mtime > std::time(nullptr) - quiet.count())
            continue;
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue; // its maker still runs
        std::error_code rm;
        if (fs::remove_all(it->path(), rm) > 0 && !rm) ++removed;
    }
    return removed;
}

namespace {

internal::UniqueFd lock_dir(const fs::path& dir) {
    internal::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
        throw internal::TempDirError(errno,
                                     "locking the temporary directory '" + dir.string() + "'");
    return fd;
}

// The sweep first, so the directory made next is never taken for one a killed maker left.
internal::TempDir swept_then_made(const fs::path& root, std::string_view prefix,
                                  std::size_t* removed) {
    const std::size_t n = remove_abandoned_temp_dirs(root, prefix);
    if (removed != nullptr) *removed = n;
    return internal::TempDir(root, prefix);
}

} // namespace

HeldTempDir::HeldTempDir(const fs::path& root, std::string_view prefix, std::size_t* removed)
    : dir_(swept_then_made(root, prefix, removed)), lock_(lock_dir(dir_.path())) {}

} // namespace radial::fs_util
