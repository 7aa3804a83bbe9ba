// host/isolation/descendant_processes.h — every process this one started, directly or not, and
// the way to end them all (docs/design.md §14.6).
//
// A command that gives up on a plugin call it cannot interrupt (`radiald template export`'s load)
// must still end what the runtime started for it, which would otherwise outlive the command,
// reparented, with no deadline left. With the command a child subreaper (PR_SET_CHILD_SUBREAPER),
// what a descendant's parent left behind is reparented to it and found too.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace radial::isolation {

// A process as seen at one moment: its pid and its start time (clock ticks after boot, from
// /proc/<pid>/stat), which together name it even after the pid is free and given again.
struct ProcessIdentity {
    pid_t pid = 0;
    std::uint64_t start_ticks = 0;
};

// The live (not zombie) descendants of this process. Never throws but bad_alloc.
std::vector<ProcessIdentity> live_descendants();

// The start time of `pid`, or nullopt when there is no such process. Never throws.
std::optional<std::uint64_t> process_start_ticks(pid_t pid) noexcept;

// SIGKILLs `p` when it is still that process (a pidfd opened, then its start time compared, and
// the signal sent through the pidfd: a pid freed and given to another process since the look is
// never signalled). Returns whether it signalled. Never throws.
bool kill_if_same(const ProcessIdentity& p) noexcept;

// SIGKILLs every descendant (kill_if_same), again while any is left (a thread may start another
// meanwhile), up to 20 rounds. Never throws.
void kill_descendants() noexcept;

} // namespace radial::isolation
