// examples/bubblewrap/src/box_registry.h — which boxes exist, kept on disk so that every plugin
// instance (and a radiald restarted after a crash) can list and kill them: one file per box,
// named after its label, in the state directory (docs/design.md §5.11).
//
// A box's file names the processes that make it up, each with its start time (so a recycled pid
// is never mistaken for the box): the process that owns the run, bwrap, and bwrap's child (the
// init of the box's pid namespace). A file whose processes are all gone is stale: list_by_label
// removes it. Thread-safe: every operation is a whole-file read, an atomic rename or an unlink.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace radial::bubblewrap {

// A process, identified by pid and start time (field 22 of /proc/<pid>/stat, in clock ticks).
struct ProcessId {
    pid_t pid = 0;
    unsigned long long start = 0;

    // The running process `pid` (nullopt when there is none).
    static std::optional<ProcessId> of(pid_t pid);
    // True while this very process exists and is not a zombie.
    bool alive() const;
    // Sends `sig` to this very process and no other: the pid is pinned with a pidfd first and
    // only then checked against the start time, so a pid reused meanwhile is never signalled.
    // Returns false when the process is gone (nothing was sent). Kernels without pidfds (before
    // 5.3) fall back to kill(2) after the check. Thread-safe.
    bool signal(int sig) const;
};

// One box's entry.
struct BoxEntry {
    ProcessId owner; // the process whose `run` started the box
    ProcessId bwrap; // 0 until bwrap is started
    ProcessId init;  // bwrap's child, pid 1 of the box; 0 until bwrap reports it

    // True while any of the box's processes exists (the owner counts only before bwrap starts).
    bool live() const;
};

class BoxRegistry {
public:
    // Uses `dir`; nothing is touched until the first write.
    explicit BoxRegistry(std::string dir) : dir_(std::move(dir)) {}

    const std::string& dir() const noexcept { return dir_; }
    // Creates the directory (0700, parents too) when missing; throws std::runtime_error when it
    // cannot or cannot write to it.
    void ensure() const;

    // Writes (atomically replaces) the entry of `label`.
    void write(const std::string& label, const BoxEntry& entry) const;
    // The entry of `label`, or nullopt when there is none or it cannot be read.
    std::optional<BoxEntry> read(const std::string& label) const;
    // Removes the entry of `label` (and its kill mark); no error when absent.
    void remove(const std::string& label) const;

    // Labels of live boxes starting with exactly `prefix`; stale entries are removed on the way.
    // A missing directory holds no boxes.
    std::vector<std::string> list(std::string_view prefix) const;

    // The kill mark: set by a kill() in any process, read by the owner's run to report KILLED.
    void mark_killed(const std::string& label) const;
    bool killed(const std::string& label) const;

private:
    std::string path(const std::string& label) const { return dir_ + "/" + label; }
    std::string dir_;
};

} // namespace radial::bubblewrap
