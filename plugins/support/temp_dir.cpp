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

UniqueFd open_dir(const std::filesystem::path& path) {
    return UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

} // namespace

TempDir::TempDir(std::string_view prefix) {
    std::string tmpl = (temp_root() / (std::string(prefix) + "XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr)
        throw radial::plugin::Error(RADIAL_E_INTERNAL, "creating a private directory '" + tmpl +
                                                           "': " + std::strerror(errno) +
                                                           "; check TMPDIR and its free space");
    path_ = tmpl;
    lock_ = open_dir(path_);
    if (!lock_.valid() || ::flock(lock_.get(), LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        std::error_code ec;
        std::filesystem::remove(path_, ec);
        throw radial::plugin::Error(RADIAL_E_INTERNAL, "locking the private directory '" + tmpl +
                                                           "': " + std::strerror(err) +
                                                           "; check TMPDIR's file system");
    }
}

TempDir::TempDir(TempDir&& other) noexcept
    : path_(std::move(other.path_)), lock_(std::move(other.lock_)) {
    other.path_.clear();
}

TempDir::~TempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec); // the lock goes with lock_, after the tree
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
            UniqueFd dir = open_dir(path);
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
