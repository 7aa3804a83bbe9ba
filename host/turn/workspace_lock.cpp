#include "turn/workspace_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>

#include <cerrno>
#include <cstring>

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
    return WorkspaceLock(std::move(fd));
}

std::string workspace_in_use(const std::string& workspace) {
    return fmt::format(
        "workspace '{}' is in use by another turn (one turn per workspace at a time: the first "
        "to end would hand the workspace back under the other); wait for it to end, or set "
        "run.sharedWorkspaces = true to allow turns side by side on one workspace",
        workspace);
}

} // namespace radial::turn
