// tests/support/host_processes.h — looking at host processes the way a hermetic test must: only at
// processes the test itself made (its children, or the processes of its own box), and tolerant of
// every other process on the machine appearing and vanishing at any moment.
//
// The rule these helpers serve (tests/README.md, "Hermetic tests"): a test never counts or matches
// processes host-wide by name. Where a test must scan every process (a secret must be on
// no command line anywhere), it reads /proc with plain POSIX reads and treats a process that
// vanished mid-read as having had nothing to show.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <radial/internal/proc_file.h>
#include <radial/internal/unique_fd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "load_factor.h"
#include "owned_instances.h"

namespace radial::test {

// Polls `pred` every 20 ms until it holds or `budget` (scaled by the suite's load factor,
// load_factor.h) passes; returns whether it held.
inline bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds budget) {
    auto deadline = std::chrono::steady_clock::now() + scaled(budget);
    for (;;) {
        if (pred()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// `stem` followed by 8 random [a-z0-9]: an instance id, turn id or marker that no other test (and
// no other run of this one) uses. Recorded (owned_instances.h), so that what boxes a test killed
// by ctest left under it are removed after the run.
inline std::string unique_instance_id(const std::string& stem) {
    std::random_device rd;
    const char* alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    std::string id = stem;
    for (int i = 0; i < 8; ++i) id.push_back(alphabet[rd() % 36]);
    record_instance_id(id);
    return id;
}

// The bytes of a /proc file, "" when its process is gone (radial/internal/proc_file.h).
using internal::read_proc_file;

// The pids of every process at the moment of the listing. Any of them may be gone by the time the
// caller looks at it.
inline std::vector<pid_t> process_ids() {
    std::vector<pid_t> pids;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string name = it->path().filename();
        if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
            pids.push_back(static_cast<pid_t>(std::stol(name)));
    }
    return pids;
}

// Fields of /proc/<pid>/stat after the parenthesised command name (which may hold spaces and
// parentheses itself): "S 1234 ..." — state first, then the parent pid. Empty when gone.
inline std::string stat_after_name(pid_t pid) {
    std::string stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) return {};
    return stat.substr(close + 2);
}

// The parent pid of `pid`, or -1 when it is gone.
inline pid_t parent_pid(pid_t pid) {
    std::string rest = stat_after_name(pid);
    if (rest.size() < 3) return -1;
    return static_cast<pid_t>(std::strtol(rest.c_str() + 2, nullptr, 10));
}

// The children of `parent` now (zombies included), by their parent pid: never by name.
inline std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    for (pid_t pid : process_ids())
        if (parent_pid(pid) == parent) out.push_back(pid);
    return out;
}

// Those children of `parent` that are zombies (ended and not reaped).
inline int zombie_children_of(pid_t parent) {
    int n = 0;
    for (pid_t pid : children_of(parent))
        if (auto rest = stat_after_name(pid); !rest.empty() && rest[0] == 'Z') ++n;
    return n;
}

// The NUL-separated command line of `pid` ("" when gone or a kernel thread).
inline std::string cmdline_of(pid_t pid) {
    return read_proc_file("/proc/" + std::to_string(pid) + "/cmdline");
}

// Every process's command line now (the boxes' processes included: they share the host's pid
// view). For checks that something is on NO command line anywhere; never for counting.
inline std::vector<std::string> all_cmdlines() {
    std::vector<std::string> out;
    for (pid_t pid : process_ids()) out.push_back(cmdline_of(pid));
    return out;
}

// The processes of one box: every process in the pid namespace whose init is `box_init_pid` (the
// host pid the engine reports as the container's State.Pid), found by the namespace's identity,
// not by any name another process could share.
inline std::vector<pid_t> processes_in_pid_namespace_of(pid_t box_init_pid) {
    std::error_code ec;
    auto ns =
        std::filesystem::read_symlink("/proc/" + std::to_string(box_init_pid) + "/ns/pid", ec);
    if (ec) return {};
    std::vector<pid_t> out;
    for (pid_t pid : process_ids()) {
        std::error_code e;
        auto other = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", e);
        if (!e && other == ns) out.push_back(pid);
    }
    return out;
}

// Pidfds held on a set of processes, so that "have they all ended?" is asked about exactly those
// processes, even after their pids are reused by someone else's.
class ProcessWatch {
public:
    ProcessWatch() = default;
    ProcessWatch(const ProcessWatch&) = delete;
    ProcessWatch& operator=(const ProcessWatch&) = delete;

    // Starts watching `pid`; false when it is already gone.
    bool add(pid_t pid) {
        internal::UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
        if (!fd) return false;
        fds_.push_back(std::move(fd));
        return true;
    }
    std::size_t size() const { return fds_.size(); }

    // How many of the watched processes are still alive (a pidfd is readable once its process
    // has exited).
    std::size_t alive() const {
        std::size_t n = 0;
        for (const auto& fd : fds_) {
            pollfd p{fd.get(), POLLIN, 0};
            if (::poll(&p, 1, 0) == 0) ++n;
        }
        return n;
    }

private:
    std::vector<internal::UniqueFd> fds_;
};

} // namespace radial::test
