#include "fs/open_no_links.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace radial::fs_util {

internal::UniqueFd open_no_links(const std::string& path, int flags) {
    open_how how{};
    // No O_NOFOLLOW here: with O_PATH it would open a link at the end as itself, where
    // RESOLVE_NO_SYMLINKS refuses every link, the last one too (ELOOP).
    how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const long fd = ::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how);
    if (fd >= 0) return internal::UniqueFd(static_cast<int>(fd));
    if (errno != ENOSYS) return internal::UniqueFd();
    return internal::UniqueFd(::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC));
}

} // namespace radial::fs_util
