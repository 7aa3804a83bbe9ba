#include "support/temp_dir.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <radial/plugin/runtime.hpp>
#include <string>
#include <system_error>

namespace radial::plugin_support {

namespace {

std::filesystem::path temp_root() {
    std::error_code ec;
    auto root = std::filesystem::temp_directory_path(ec);
    return ec ? std::filesystem::path("/tmp") : root;
}

internal::UniqueFd open_dir(const std::filesystem::path& path) {
    return internal::UniqueFd(
        ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// The directory, or plugin::Error naming the path and what to check.
internal::TempDir make_dir(std::string_view prefix) {
    try {
        return internal::TempDir(temp_root(), prefix);
    } catch (const internal::TempDirError& e) {
        throw radial::plugin::Error(RADIAL_E_INTERNAL,
                                    std::string(e.what()) + "; check TMPDIR and its free space");
    }
}

} // namespace

TempDir::TempDir(std::string_view prefix) : dir_(make_dir(prefix)) {
    lock_ = open_dir(dir_.path());
    if (!lock_.valid() || ::flock(lock_.get(), LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        // dir_ removes the directory as this constructor unwinds.
        throw radial::plugin::Error(
            RADIAL_E_INTERNAL, "locking the private directory '" + dir_.path().string() +
                                   "': " + std::strerror(err) + "; check TMPDIR's file system");
    }
}

std::size_t remove_abandoned_temp_dirs(std::string_view prefix) noexcept {
    std::size_t removed = 0;
    try {
        const auto now = std::filesystem::file_time_type::clock::now();
        std::error_code ec;
        for (std::filesystem::directory_iterator it(temp_root(), ec), end; !ec && it != end;
             it.increment(ec)) {
            const std::filesystem::path path = it->path();
            if (!path.filename().string().starts_with(prefix)) continue;
            struct stat st {};
            if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
                continue;
            std::error_code time_ec;
            auto modified = std::filesystem::last_write_time(path, time_ec);
            if (time_ec || now - modified < kAbandonedAfter) continue;
            internal::UniqueFd dir = open_dir(path);
            // Held by a live TempDir: EWOULDBLOCK. Ours now: nobody owns it any more.
            if (!dir.valid() || ::flock(dir.get(), LOCK_EX | LOCK_NB) != 0) continue;
            // The name must still be the directory examined above and now locked.
            struct stat locked {};
            if (::fstat(dir.get(), &locked) != 0 || locked.st_dev != st.st_dev ||
                locked.st_ino != st.st_ino)
                continue;
            std::error_code rm_ec;
            std::filesystem::remove_all(path, rm_ec);
            if (!rm_ec) ++removed;
        }
    } catch (...) {
        // Best effort: a sweep that cannot finish leaves the rest for the next one.
    }
    return removed;
}

} // namespace radial::plugin_support
