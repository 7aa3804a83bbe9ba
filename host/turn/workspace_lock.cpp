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
namespace {

// Takes `how` (LOCK_EX or LOCK_SH) on the lock file at `path` without waiting; nullopt when it
// is held otherwise. An exclusive holder removes the file while it still holds it: a lock taken on
// a file removed meanwhile is taken again on the file now at the path.
std::optional<internal::UniqueFd> lock_path(const std::string& path, int how,
                                            const std::string& workspace) {
    for (int attempt = 0; attempt < 16; ++attempt) {
        internal::UniqueFd fd = fs_util::open_lock_file(path);
        if (!fd)
            throw TurnSetupError(fmt::format("opening the lock of workspace '{}' ('{}'): {}",
                                             workspace, path, std::strerror(errno)));
        while (::flock(fd.get(), how | LOCK_NB) != 0) {
            if (errno == EINTR) continue;
            if (errno == EWOULDBLOCK) return std::nullopt;
            throw TurnSetupError(fmt::format("locking workspace '{}' ('{}'): {}", workspace, path,
                                             std::strerror(errno)));
        }
        if (fs_util::still_named(fd.get(), path)) return fd;
    }
    throw TurnSetupError(fmt::format(
        "locking workspace '{}': its lock file '{}' kept being replaced", workspace, path));
}

std::string lock_file_of(const std::string& dir, const struct stat& st) {
    return fmt::format("{}/{}-{}", dir, st.st_dev, st.st_ino);
}

// The lock files' guard, in their directory: lockers hold it shared while they take their locks,
// the sweep exclusively while it removes files. Without it, a sweep holding an unheld file for the
// moment before removing it would have a turn taking that file's lock just then refused, its
// workspace reported in use (docs/design.md §3.9).
constexpr const char* kSweepGuard = ".sweep";

// `how` (LOCK_SH waits; LOCK_EX | LOCK_NB does not) on the guard of `dir`; invalid when it could
// not be opened or, without waiting, taken (errno set).
internal::UniqueFd hold_guard(const std::string& dir, int how) {
    internal::UniqueFd fd = fs_util::open_lock_file(dir + "/" + kSweepGuard);
    if (!fd) return fd;
    while (::flock(fd.get(), how) != 0)
        if (errno != EINTR) return internal::UniqueFd();
    return fd;
}

} // namespace

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
    // Held until every lock below is taken: no sweep removes a file between its open and its lock.
    const internal::UniqueFd guard = hold_guard(dir, LOCK_SH);
    if (!guard)
        throw TurnSetupError(fmt::format("locking workspace '{}': the guard of '{}': {}", workspace,
                                         dir, std::strerror(errno)));
    const std::string path = lock_file_of(dir, st);
    auto own = lock_path(path, LOCK_EX, workspace);
    if (!own) return std::nullopt;
    WorkspaceLock lock(std::move(*own), path);
    // Every directory above it, shared: a turn on a workspace inside this one, or holding this
    // one, holds one of them exclusively, and the two would hand each other's files over.
    // The directories above it as they are, not as written: a relative path or a link in it
    // would lock others' parents.
    std::error_code resolve_error;
    const auto here = std::filesystem::canonical(workspace, resolve_error);
    if (resolve_error)
        throw TurnSetupError(fmt::format("workspace '{}': {}; create it or pass another workspace",
                                         workspace, resolve_error.message()));
    for (auto above = here.parent_path();; above = above.parent_path()) {
        struct stat a {};
        if (::stat(above.c_str(), &a) != 0)
            throw TurnSetupError(fmt::format("workspace '{}': its parent '{}': {}", workspace,
                                             above.string(), std::strerror(errno)));
        auto shared = lock_path(lock_file_of(dir, a), LOCK_SH, workspace);
        if (!shared) return std::nullopt; // `lock` releases what it took
        lock.above_.push_back(std::move(*shared));
        if (above == above.root_path() || above.parent_path() == above) break;
    }
    return lock;
}

WorkspaceLock& WorkspaceLock::operator=(WorkspaceLock&& other) noexcept {
    if (this != &other) {
        release();
        fd_ = std::move(other.fd_);
        file_ = std::exchange(other.file_, {});
        above_ = std::exchange(other.above_, {});
    }
    return *this;
}

WorkspaceLock::~WorkspaceLock() { release(); }

void WorkspaceLock::release() noexcept {
    if (fd_ && !file_.empty()) ::unlink(file_.c_str());
    fd_.reset();
    file_.clear();
    // A shared lock's file stays: removing it would take the lock exclusively for a moment, and
    // another turn's shared lock at that moment would find its workspace in use. There is one
    // per directory ever above a workspace; a turn on that directory removes it, and so does
    // sweep_workspace_locks once no turn holds it.
    above_.clear();
}

std::size_t sweep_workspace_locks(const std::string& registry) {
    const std::string dir = registry + "/workspaces";
    struct stat d {};
    // Only a directory as try_acquire_workspace accepts it: no other user can have put files here.
    if (::lstat(dir.c_str(), &d) != 0 || !S_ISDIR(d.st_mode) || d.st_uid != ::geteuid() ||
        (d.st_mode & 022) != 0)
        return 0;
    const internal::UniqueFd guard = hold_guard(dir, LOCK_EX | LOCK_NB);
    if (!guard) return 0; // a turn is taking its locks: the next sweep
    std::size_t removed = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string path = it->path().string();
        if (it->path().filename() == kSweepGuard) continue;
        internal::UniqueFd fd(::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
        struct stat st {};
        if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
            continue;
        // Held, shared or exclusive: a turn's. Not held: nobody's, and nobody can take it while
        // the guard is held but through a holder's own release, which removes it first.
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;
        // Removed (by its holder's release) or replaced since it was listed: not this file.
        if (!fs_util::still_named(fd.get(), path)) continue;
        if (::unlink(path.c_str()) == 0) ++removed;
    }
    return removed;
}

std::string workspace_in_use(const std::string& workspace) {
    return fmt::format(
        "workspace '{}' is in use by another turn, on it, inside it or on a directory holding it "
        "(one turn per workspace tree at a time: the first to end would hand the files back "
        "under the other); wait for it to end, or set "
        "run.sharedWorkspaces = true to allow turns side by side on one workspace",
        workspace);
}

} // namespace radial::turn
