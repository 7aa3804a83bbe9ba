#include "turn/workspace_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "fs/lock_file.h"
#include "turn/turn_setup_error.h"

namespace radial::turn {

std::optional<WorkspaceLock> WorkspaceLock::try_acquire(const std::string& workspace) {
    internal::UniqueFd fd(::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd)
        throw TurnSetupError(fmt::format("workspace '{}': {}; create it or pass another workspace",
                                         workspace, std::strerror(errno)));
    while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR) continue;
        if (errno == EWOULDBLOCK) return std::nullopt;
        throw TurnSetupError(
            fmt::format("locking workspace '{}': {}", workspace, std::strerror(errno)));
    }
    return WorkspaceLock(std::move(fd), {});
}

std::optional<WorkspaceLock> WorkspaceLock::try_acquire_workspace(const std::string& workspace,
                                                                  const std::string& registry) {
    struct stat st {};
    if (::stat(workspace.c_str(), &st) != 0)
        throw TurnSetupError(fmt::format("workspace '{}': {}; create it or pass another workspace",
                                         workspace, std::strerror(errno)));
    if (!S_ISDIR(st.st_mode))
        throw TurnSetupError(fmt::format(
            "workspace '{}' is not a directory; create it or pass another workspace", workspace));
    const std::string dir = registry + "/workspaces";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    struct stat d {};
    if (::lstat(dir.c_str(), &d) != 0 || !S_ISDIR(d.st_mode) || d.st_uid != ::geteuid() ||
        (d.st_mode & 022) != 0)
        throw TurnSetupError(fmt::format(
            "the workspace locks' directory '{}' is missing, not a directory, not uid {}'s or "
            "writable by others: another user could take or free a workspace's lock; remove it",
            dir, ::geteuid()));
    const std::string path = fmt::format("{}/{}-{}", dir, st.st_dev, st.st_ino);
    // A holder removes the file while it still holds the lock: a lock taken on a file removed
    // meanwhile is taken again on the file now at the path.
    for (int attempt = 0; attempt < 16; ++attempt) {
        internal::UniqueFd fd = fs_util::open_lock_file(path);
        if (!fd)
            throw TurnSetupError(fmt::format("opening the lock of workspace '{}' ('{}'): {}",
                                             workspace, path, std::strerror(errno)));
        while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
            if (errno == EINTR) continue;
            if (errno == EWOULDBLOCK) return std::nullopt;
            throw TurnSetupError(fmt::format("locking workspace '{}' ('{}'): {}", workspace, path,
                                             std::strerror(errno)));
        }
        if (fs_util::still_named(fd.get(), path)) return WorkspaceLock(std::move(fd), path);
    }
    throw TurnSetupError(fmt::format(
        "locking workspace '{}': its lock file '{}' kept being replaced", workspace, path));
}

WorkspaceLock& WorkspaceLock::operator=(WorkspaceLock&& other) noexcept {
    if (this != &other) {
        release();
        fd_ = std::move(other.fd_);
        file_ = std::exchange(other.file_, {});
    }
    return *this;
}

WorkspaceLock::~WorkspaceLock() { release(); }

void WorkspaceLock::release() noexcept {
    if (fd_ && !file_.empty()) ::unlink(file_.c_str());
    fd_.reset();
    file_.clear();
}

std::string workspace_in_use(const std::string& workspace) {
    return fmt::format(
        "workspace '{}' is in use by another turn (one turn per workspace at a time: the first "
        "to end would hand the workspace back under the other); wait for it to end, or set "
        "run.sharedWorkspaces = true to allow turns side by side on one workspace",
        workspace);
}

} // namespace radial::turn
