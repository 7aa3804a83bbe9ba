// tests/host/cli/stop_in_window.h — a signal that reaches a radiald command between two of its
// steps, as one from an operator or a process manager may (docs/design.md §13.12): the command
// waits for the engine's answer to a request, which a UnixSocketProxy holds (the engine did the
// work); it is stopped (SIGSTOP), sent the signal, the answer is let through, and it is continued
// (SIGCONT). So the signal lands in that window and in no other, with no sleep.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <string>

#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/unix_socket_proxy.h"

namespace radial::test {

// The state letter of /proc/<pid>/stat ('R', 'S', 'T', 'Z', ...), 0 when the process is gone.
inline char process_state(pid_t pid) {
    const std::string stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
    const auto paren = stat.rfind(')');
    return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

// Once `proxy` holds an answer `p` waits for, sends `p` `signo` while it is stopped, lets the
// answer through and continues `p`. Whether it got there (false: no answer was held within
// `budget`, or `p` ended first).
inline bool signal_while_held(const BackgroundProcess& p, UnixSocketProxy& proxy, int signo,
                              std::chrono::milliseconds budget = std::chrono::seconds(120)) {
    if (!wait_until([&] { return proxy.held() > 0 || !p.running(); }, budget) || !p.running())
        return false;
    p.signal(SIGSTOP);
    char state = 0;
    wait_until(
        [&] {
            state = process_state(p.pid());
            return state == 'T' || state == 'Z' || state == 0;
        },
        std::chrono::seconds(10));
    if (state == 'T') p.signal(signo);
    proxy.release_held();
    p.signal(SIGCONT);
    return state == 'T';
}

} // namespace radial::test
