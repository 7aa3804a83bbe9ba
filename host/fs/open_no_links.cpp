#include "fs/open_no_links.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

namespace radial::fs_util {

namespace {

// The walk openat2 would do: from "/", one component at a time, each opened without following a
// link (O_PATH | O_NOFOLLOW opens a link as itself, which fstat then shows), the last one with
// `flags`. "." and ".." are refused (ELOOP), which openat2 would take: a checked path (resolved by
// realpath) has neither.
internal::UniqueFd walk_no_links(const std::string& path, int flags) {
    if (path.empty() || path.front() != '/') {
        errno = EINVAL;
        return {};
    }
    internal::UniqueFd dir(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return {};
    std::string_view rest(path);
    while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
    if (rest.empty()) return internal::UniqueFd(::openat(dir.get(), ".", flags | O_CLOEXEC));
    for (;;) {
        const auto slash = rest.find('/');
        const std::string name(rest.substr(0, slash));
        std::string_view after = slash == std::string_view::npos ? "" : rest.substr(slash);
        while (!after.empty() && after.front() == '/') after.remove_prefix(1);
        if (name == "." || name == "..") {
            errno = ELOOP;
            return {};
        }
        const bool last = after.empty();
        // A link is named as one, whatever the open would make of it (O_DIRECTORY says
        // ENOTDIR); O_NOFOLLOW below keeps one put there after this look unfollowed.
        struct stat here {};
        if (::fstatat(dir.get(), name.c_str(), &here, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(here.st_mode)) {
            errno = ELOOP;
            return {};
        }
        internal::UniqueFd next(
            ::openat(dir.get(), name.c_str(),
                     (last ? flags : O_PATH | O_DIRECTORY) | O_NOFOLLOW | O_CLOEXEC));
        if (!next) return {}; // ELOOP for a link at the end of a non-O_PATH open; ENOTDIR inside
        struct stat st {};
        if (::fstat(next.get(), &st) != 0) return {};
        if (S_ISLNK(st.st_mode)) {
            errno = ELOOP;
            return {};
        }
        if (last) return next;
        dir = std::move(next);
        rest = after;
    }
}

} // namespace

internal::UniqueFd open_no_links(const std::string& path, int flags, bool try_openat2) {
    if (try_openat2) {
        open_how how{};
        // No O_NOFOLLOW here: with O_PATH it would open a link at the end as itself, where
        // RESOLVE_NO_SYMLINKS refuses every link, the last one too (ELOOP).
        how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
        how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
        const long fd = ::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how);
        if (fd >= 0) return internal::UniqueFd(static_cast<int>(fd));
        // Missing, or refused by a seccomp filter (systemd's RestrictSUIDSGID= answers ENOSYS
        // or EPERM to every openat2): the same walk by hand.
        if (errno != ENOSYS && errno != EPERM && errno != EINVAL) return {};
    }
    return walk_no_links(path, flags);
}

} // namespace radial::fs_util
