// host/fs/socket_file_access.cpp — see socket_file_access.h.
#include "fs/socket_file_access.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <radial/internal/unique_fd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace radial::fs_util {

std::string set_socket_file_access(const std::string& path, mode_t mode,
                                   const std::optional<std::pair<uid_t, gid_t>>& owner) {
    const internal::UniqueFd fd(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0)
        return fmt::format("cannot open the socket file just bound: {}", std::strerror(errno));
    if (!S_ISSOCK(st.st_mode) || st.st_uid != ::geteuid())
        return "what its name holds is no longer the socket just bound (a link or a file put "
               "there meanwhile); nothing was changed";
    // An O_PATH descriptor takes no fchmod(2); its /proc name reaches the same inode, no link.
    const std::string by_fd = fmt::format("/proc/self/fd/{}", fd.get());
    if (::chmod(by_fd.c_str(), mode) != 0) return fmt::format("chmod: {}", std::strerror(errno));
    if (owner && ::fchownat(fd.get(), "", owner->first, owner->second, AT_EMPTY_PATH) != 0)
        return fmt::format("chown: {}", std::strerror(errno));
    return {};
}

} // namespace radial::fs_util
