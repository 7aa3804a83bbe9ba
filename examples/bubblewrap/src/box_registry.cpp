#include "box_registry.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace radial::bubblewrap {
namespace {

// Field 3 (state) and field 22 (starttime) of /proc/<pid>/stat. The command name (field 2) may
// contain spaces and parentheses, so parsing starts after the last ')'.
bool read_stat(pid_t pid, char& state, unsigned long long& start) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) return false;
    auto close = stat.rfind(')');
    if (close == std::string::npos) return false;
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    rest >> state;
    // Fields 4..21 come before starttime.
    for (int i = 4; i <= 21 && rest >> field; ++i) {
    }
    return static_cast<bool>(rest >> start);
}

} // namespace

std::optional<ProcessId> ProcessId::of(pid_t pid) {
    char state = 0;
    unsigned long long start = 0;
    if (pid <= 0 || !read_stat(pid, state, start)) return std::nullopt;
    return ProcessId{pid, start};
}

bool ProcessId::alive() const {
    char state = 0;
    unsigned long long now = 0;
    if (pid <= 0 || !read_stat(pid, state, now)) return false;
    return now == start && state != 'Z' && state != 'X';
}

bool ProcessId::signal(int sig) const {
    if (pid <= 0) return false;
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (pidfd < 0) {
        if (errno != ENOSYS) return false; // ESRCH: gone already
        return alive() && ::kill(pid, sig) == 0;
    }
    // The pidfd names whichever process had `pid` when it was opened; if that is still the
    // recorded one now, it was then too, and a later reuse of the pid cannot redirect the signal.
    const bool sent = alive() && ::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0;
    ::close(pidfd);
    return sent;
}

bool BoxEntry::live() const {
    if (bwrap.pid == 0) return owner.alive();
    return bwrap.alive() || init.alive();
}

void BoxRegistry::ensure() const {
    std::string partial;
    for (std::size_t at = 0; at != std::string::npos;) {
        at = dir_.find('/', at + 1);
        partial = dir_.substr(0, at);
        if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
            throw std::runtime_error("creating the state directory '" + partial +
                                     "' failed: " + std::strerror(errno));
    }
    if (::access(dir_.c_str(), W_OK | X_OK) != 0)
        throw std::runtime_error("the state directory '" + dir_ +
                                 "' is not writable: " + std::strerror(errno));
}

void BoxRegistry::write(const std::string& label, const BoxEntry& e) const {
    ensure();
    std::string tmp = dir_ + "/." + label + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << e.owner.pid << ' ' << e.owner.start << ' ' << e.bwrap.pid << ' ' << e.bwrap.start
            << ' ' << e.init.pid << ' ' << e.init.start << '\n';
        if (!out) throw std::runtime_error("writing '" + tmp + "' failed");
    }
    if (::rename(tmp.c_str(), path(label).c_str()) != 0)
        throw std::runtime_error("renaming '" + tmp + "' failed: " + std::strerror(errno));
}

std::optional<BoxEntry> BoxRegistry::read(const std::string& label) const {
    std::ifstream in(path(label));
    BoxEntry e;
    if (!(in >> e.owner.pid >> e.owner.start >> e.bwrap.pid >> e.bwrap.start >> e.init.pid >>
          e.init.start))
        return std::nullopt;
    return e;
}

void BoxRegistry::remove(const std::string& label) const {
    ::unlink(path(label).c_str());
    ::unlink((dir_ + "/." + label + ".killed").c_str());
}

std::vector<std::string> BoxRegistry::list(std::string_view prefix) const {
    std::vector<std::string> out;
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir_.c_str()), &::closedir);
    if (!d && errno == ENOENT) return out;
    if (!d)
        throw std::runtime_error("reading the state directory '" + dir_ +
                                 "' failed: " + std::strerror(errno));
    while (const dirent* ent = ::readdir(d.get())) {
        std::string name = ent->d_name;
        // Labels start with a letter or digit: dot files are the registry's own.
        if (name.empty() || name[0] == '.' || name.compare(0, prefix.size(), prefix) != 0) continue;
        auto e = read(name);
        if (e && e->live()) {
            out.push_back(name);
        } else if (e) {
            remove(name); // stale: every process of the box is gone (e.g. radiald crashed)
        }
    }
    return out;
}

void BoxRegistry::mark_killed(const std::string& label) const {
    std::ofstream(dir_ + "/." + label + ".killed", std::ios::trunc) << "killed\n";
}

bool BoxRegistry::killed(const std::string& label) const {
    return ::access((dir_ + "/." + label + ".killed").c_str(), F_OK) == 0;
}

} // namespace radial::bubblewrap
