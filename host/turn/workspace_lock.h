// host/turn/workspace_lock.h — one turn per workspace at a time (docs/design.md §3.9): two turns
// on one workspace would each be handed it and hand it back, the first to end taking it from the
// other mid-turn. Unless the operator allows it (run.sharedWorkspaces), a turn holds an exclusive
// flock(2) on the workspace directory itself for as long as it runs: the kernel keeps the lock
// host-wide, across radiald instances and users, and drops it when its holder dies, so a crash
// never leaves a stale lock and no file is ever made.
#pragma once

#include <radial/internal/unique_fd.h>

#include <optional>
#include <string>

namespace radial::turn {

class WorkspaceLock {
public:
    // Takes the lock of `workspace` without waiting; nullopt when another turn holds it. Throws
    // TurnSetupError naming the workspace when it cannot be opened. Thread-safe (each lock is an
    // open file description of its own, so two in one process exclude each other too).
    static std::optional<WorkspaceLock> try_acquire(const std::string& workspace);

    WorkspaceLock(WorkspaceLock&&) noexcept = default;
    WorkspaceLock& operator=(WorkspaceLock&&) noexcept = default;

private:
    explicit WorkspaceLock(internal::UniqueFd fd) : fd_(std::move(fd)) {}
    internal::UniqueFd fd_;
};

// The message for a turn refused because its workspace is in use.
std::string workspace_in_use(const std::string& workspace);

} // namespace radial::turn
