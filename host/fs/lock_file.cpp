// host/fs/lock_file.cpp — see lock_file.h.
#include "fs/lock_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace radial::fs_util {

internal::UniqueFd open_lock_file(const std::string& path) noexcept {
    internal::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    struct stat st {};
    if (fd && ::fstat(fd.get(), &st) == 0 && st.st_uid == ::geteuid() && (st.st_mode & 077) != 0) {
        const int saved = errno;
        (void)::fchmod(fd.get(), 0600); // best effort: the lock works either way
        errno = saved;
    }
    return fd;
}

bool still_named(int fd, const std::string& path) noexcept {
    struct stat held {
    }, at{};
    return ::fstat(fd, &held) == 0 && ::lstat(path.c_str(), &at) == 0 && held.st_ino == at.st_ino &&
           held.st_dev == at.st_dev;
}

} // namespace radial::fs_util
