#include "isolation/descendant_processes.h"

#include <radial/internal/unique_fd.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

namespace radial::isolation {
namespace fs = std::filesystem;
namespace {

struct StatLine {
    char state = 0;
    pid_t ppid = 0;
    std::uint64_t start_ticks = 0;
};

// /proc/<pid>/stat: "PID (COMM) STATE PPID ... STARTTIME ...": COMM may hold spaces and
// parentheses, so the fields are counted from the last ')'; STARTTIME is the 22nd field.
std::optional<StatLine> read_stat(const fs::path& proc_dir) {
    std::ifstream in(proc_dir / "stat");
    std::string text;
    if (!std::getline(in, text)) return std::nullopt;
    const auto close = text.rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::istringstream rest(text.substr(close + 1));
    StatLine s;
    std::string skip;
    if (!(rest >> s.state >> s.ppid)) return std::nullopt;
    for (int field = 5; field < 22; ++field)
        if (!(rest >> skip)) return std::nullopt;
    if (!(rest >> s.start_ticks)) return std::nullopt;
    return s;
}

} // namespace

std::optional<std::uint64_t> process_start_ticks(pid_t pid) noexcept {
    try {
        if (auto s = read_stat(fs::path("/proc") / std::to_string(pid))) return s->start_ticks;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

std::vector<ProcessIdentity> live_descendants() {
    std::map<pid_t, std::vector<ProcessIdentity>> children;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
        const std::string name = e.path().filename().string();
        if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
        if (auto s = read_stat(e.path()); s && s->state != 'Z')
            children[s->ppid].push_back({static_cast<pid_t>(std::stoi(name)), s->start_ticks});
    }
    std::vector<ProcessIdentity> out;
    std::vector<pid_t> todo{::getpid()};
    while (!todo.empty()) {
        const pid_t parent = todo.back();
        todo.pop_back();
        for (const auto& child : children[parent]) {
            out.push_back(child);
            todo.push_back(child.pid);
        }
    }
    return out;
}

bool kill_if_same(const ProcessIdentity& p) noexcept {
    // Held from before the check to the signal: the pidfd names one process, whatever its pid
    // becomes meanwhile.
    const internal::UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, p.pid, 0)));
    if (!pidfd || process_start_ticks(p.pid) != p.start_ticks) return false;
    // Never its group by number: a group's members are descendants too (the command is a child
    // subreaper), each signalled through its own pidfd, and a number may name a new group.
    return ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0) == 0;
}

void kill_descendants() noexcept {
    try {
        for (int round = 0; round < 20; ++round) {
            const std::vector<ProcessIdentity> left = live_descendants();
            if (left.empty()) return;
            for (const auto& p : left) kill_if_same(p);
            // Real time: lets the killed end before the next look (docs/design.md §12.7).
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    } catch (const std::exception&) {
    }
}

} // namespace radial::isolation
