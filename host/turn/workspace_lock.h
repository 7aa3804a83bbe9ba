// host/turn/workspace_lock.h — one turn per workspace tree at a time (docs/design.md §3.9): two
// turns on one workspace, or on one and a directory inside it, would each be handed it and hand
// it back, the first to end taking it from the other mid-turn. Unless the operator allows it
// (run.sharedWorkspaces), a turn holds an exclusive flock(2) for as long as it runs on a lock file
// of the workspace in radiald's claim registry (root's:
// /run/radial-claims/workspaces/<dev>-<inode>), which only radiald's user can open: a lock on the
// workspace directory itself could be taken by any local user who can read it, and kept, holding
// every turn on that workspace back. The kernel drops a lock when its holder dies, so a crash never
// leaves a stale lock; the file goes with the lock's release. The files a crash or a shared lock
// leaves are removed by sweep_workspace_locks.
//
// The same class holds radiald's own lock directories (a session's, under the state directory)
// with a flock(2) on the directory itself: no other user can open those.
#pragma once

#include <radial/internal/unique_fd.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace radial::turn {

class WorkspaceLock {
public:
    // Takes the lock of `workspace` without waiting; nullopt when another turn holds it. Throws
    // TurnSetupError naming the workspace when it cannot be opened. Thread-safe (each lock is an
    // open file description of its own, so two in one process exclude each other too).
    static std::optional<WorkspaceLock> try_acquire(const std::string& workspace);

    // Takes the lock of the workspace directory `workspace` in `registry` (the claim registry:
    // daemon::default_claim_registry()) without waiting, and a shared one of every directory
    // above it (its path resolved); nullopt when another turn holds it, a directory inside it or
    // one above it (a turn on /srv/p and one on /srv/p/sub would hand each other's files over).
    // Throws TurnSetupError naming the workspace or the lock file when either cannot be opened.
    // Thread-safe, as try_acquire.
    static std::optional<WorkspaceLock> try_acquire_workspace(const std::string& workspace,
                                                              const std::string& registry);

    WorkspaceLock(WorkspaceLock&& other) noexcept
        : fd_(std::move(other.fd_)),
          file_(std::exchange(other.file_, {})),
          above_(std::exchange(other.above_, {})) {}
    WorkspaceLock& operator=(WorkspaceLock&& other) noexcept;
    // Releases the lock; a workspace's lock file is removed first, while the lock is still held.
    ~WorkspaceLock();

private:
    WorkspaceLock(internal::UniqueFd fd, std::string file)
        : fd_(std::move(fd)), file_(std::move(file)) {}
    void release() noexcept;
    internal::UniqueFd fd_;
    std::string file_; // a workspace's lock file, removed at the release; empty for a directory
    // A workspace's: the shared locks of every directory above it (their files stay).
    std::vector<internal::UniqueFd> above_;
};

// Removes the lock files in `registry`'s workspaces directory that no turn holds: each is locked
// exclusively without waiting (one held, shared or exclusive, is left), checked to still be the
// file at its name (else left: it was removed or replaced meanwhile), and removed while locked.
// Lockers wait for a sweep, and a sweep skips its pass while a locker takes its locks, so a turn is
// never refused for a lock a sweep holds. Returns how many it removed; does nothing when the
// directory is not as try_acquire_workspace accepts it. Thread-safe; safe beside other processes.
std::size_t sweep_workspace_locks(const std::string& registry);

// The message for a turn refused because its workspace is in use.
std::string workspace_in_use(const std::string& workspace);

} // namespace radial::turn
