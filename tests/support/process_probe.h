// tests/support/process_probe.h — whether a process a test started (known by its pid, written by
// the test's own script) still runs: never by name, so other tests' processes are never counted.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "host_processes.h"

namespace radial::test {

// True while `pid` runs a program called `comm` and is not a zombie. A recycled pid running
// something else counts as gone.
inline bool process_runs(pid_t pid, const std::string& comm) {
    // Not an ifstream: libstdc++ throws from underflow() when the process exits mid-read.
    const std::string stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
    auto open = stat.find('(');
    auto close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 2 >= stat.size())
        return false;
    return stat.substr(open + 1, close - open - 1) == comm && stat[close + 2] != 'Z';
}

// Waits up to `budget` for `pid` to stop running `comm`; true when it has.
inline bool process_gone_within(pid_t pid, const std::string& comm,
                                std::chrono::milliseconds budget) {
    auto deadline = std::chrono::steady_clock::now() + budget;
    while (process_runs(pid, comm)) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

// The pid a test's script wrote into `file` (0 when none was).
inline pid_t pid_in(const std::string& file) {
    std::ifstream in(file);
    long pid = 0;
    in >> pid;
    return static_cast<pid_t>(pid);
}

} // namespace radial::test
