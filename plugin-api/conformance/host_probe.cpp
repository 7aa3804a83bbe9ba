#include "host_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <radial/internal/names.h>
#include <radial/internal/proc_file.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace radial::conformance {
namespace {

long status_kib(const char* field) {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind(field, 0) == 0)
            return std::strtol(line.c_str() + std::strlen(field), nullptr, 10);
    return -1;
}

// posix_spawn's attribute and file-action objects, destroyed on scope exit.
struct SpawnSetup {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    SpawnSetup() {
        ::posix_spawn_file_actions_init(&actions);
        ::posix_spawnattr_init(&attr);
    }
    ~SpawnSetup() {
        ::posix_spawn_file_actions_destroy(&actions);
        ::posix_spawnattr_destroy(&attr);
    }
    SpawnSetup(const SpawnSetup&) = delete;
    SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// A pipe whose ends are closed on scope exit.
struct Pipe {
    int fd[2] = {-1, -1};
    bool open() { return ::pipe2(fd, O_CLOEXEC) == 0; }
    void close_end(int i) {
        if (fd[i] >= 0) ::close(fd[i]);
        fd[i] = -1;
    }
    ~Pipe() {
        close_end(0);
        close_end(1);
    }
};

extern "C" char** environ;

} // namespace

CommandResult run_command(const std::string& script, const std::vector<std::string>& args,
                          std::chrono::milliseconds budget) {
    CommandResult r;
    Pipe out, err;
    if (!out.open() || !err.open()) {
        r.problem = std::string("pipe2: ") + std::strerror(errno);
        return r;
    }
    SpawnSetup setup;
    ::posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
    ::posix_spawn_file_actions_adddup2(&setup.actions, out.fd[1], 1);
    ::posix_spawn_file_actions_adddup2(&setup.actions, err.fd[1], 2);
    sigset_t none, all;
    ::sigemptyset(&none);
    ::sigfillset(&all);
    ::posix_spawnattr_setsigmask(&setup.attr, &none);
    ::posix_spawnattr_setsigdefault(&setup.attr, &all);
    ::posix_spawnattr_setpgroup(&setup.attr, 0);
    ::posix_spawnattr_setflags(
        &setup.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<std::string> words = {"/bin/sh", "-c", script, "radial-conformance"};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (int rc = ::posix_spawn(&pid, "/bin/sh", &setup.actions, &setup.attr, argv.data(), environ);
        rc != 0) {
        r.problem = std::string("starting /bin/sh: ") + std::strerror(rc);
        return r;
    }
    out.close_end(1);
    err.close_end(1);
    const auto deadline = std::chrono::steady_clock::now() + budget;
    bool open[2] = {true, true};
    char buf[4096];
    bool timed_out = false;
    while (open[0] || open[1]) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        pollfd fds[2] = {{open[0] ? out.fd[0] : -1, POLLIN, 0},
                         {open[1] ? err.fd[0] : -1, POLLIN, 0}};
        int n = ::poll(fds, 2, static_cast<int>(left.count()));
        if (n < 0 && errno == EINTR) continue;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].revents == 0) continue;
            ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
            if (got <= 0) {
                open[i] = false;
                continue;
            }
            std::string& into = i == 0 ? r.out : r.err;
            if (into.size() < (64u << 10)) into.append(buf, static_cast<std::size_t>(got));
        }
    }
    // The group is the command's own (setpgroup 0): this reaches it and whatever it started.
    if (timed_out) ::kill(-pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!timed_out && WIFEXITED(status)) {
        r.finished = true;
        r.status = WEXITSTATUS(status);
    } else if (!timed_out) {
        r.finished = true;
        r.status = 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    }
    return r;
}

long rss_kib() { return status_kib("VmRSS:"); }
long peak_rss_kib() { return status_kib("VmHWM:"); }

bool reset_peak_rss() {
    // "5" resets VmHWM to the current RSS (Documentation/filesystems/proc.rst, clear_refs).
    int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, "5", 1) == 1;
    ::close(fd);
    return ok;
}

std::vector<std::string> all_cmdlines() {
    std::vector<std::string> out;
    std::error_code ec;
    // hermetic-ok: a secret must be on no command line anywhere; a vanished process shows nothing
    for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string name = it->path().filename();
        if (!internal::is_decimal(name)) continue;
        out.push_back(internal::read_proc_file(it->path().string() + "/cmdline"));
    }
    return out;
}

std::vector<long> own_threads() {
    std::vector<long> out;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string name = it->path().filename();
        if (internal::is_decimal(name)) out.push_back(std::stol(name));
    }
    return out;
}

std::string thread_name(long tid) {
    std::string n = internal::read_proc_file("/proc/self/task/" + std::to_string(tid) + "/comm");
    while (!n.empty() && n.back() == '\n') n.pop_back();
    return n;
}

std::vector<MarkedProcess> marked_processes(const std::string& value_prefix) {
    const std::string needle = std::string(kMarkName) + "=" + value_prefix;
    std::vector<MarkedProcess> out;
    std::error_code ec;
    // hermetic-ok: finds only processes carrying this run's own mark, wherever the plugin put them
    for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string name = it->path().filename();
        if (!internal::is_decimal(name)) continue;
        // open/read, not an ifstream: the process may exit mid-read, and that is no error.
        int fd = ::open((it->path().string() + "/environ").c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        std::string env;
        char buf[16384];
        ssize_t n;
        while (env.size() < 256 * 1024 && (n = ::read(fd, buf, sizeof buf)) > 0)
            env.append(buf, static_cast<std::size_t>(n));
        ::close(fd);
        bool found = false;
        for (std::size_t at = 0; at < env.size() && !found;) {
            std::size_t nul = env.find('\0', at);
            if (nul == std::string::npos) nul = env.size();
            found = env.compare(at, needle.size(), needle) == 0 && nul - at >= needle.size();
            at = nul + 1;
        }
        if (!found) continue;
        std::string cmd = internal::read_proc_file(it->path().string() + "/cmdline");
        for (char& c : cmd)
            if (c == '\0') c = ' ';
        while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
        out.push_back({std::stol(name), cmd});
    }
    return out;
}

TempDir::TempDir(const std::string& prefix)
    : dir_("/tmp", prefix + "-"), path_(dir_.path().string()) {
    ::chmod(path_.c_str(), 0755);
}

std::string TempDir::subdir(const std::string& name, unsigned mode) const {
    std::string p = path_ + "/" + name;
    if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST)
        throw internal::TempDirError(errno, "creating '" + p + "'");
    ::chmod(p.c_str(), mode);
    return p;
}

void TempDir::write(const std::string& name, const std::string& content, unsigned mode) const {
    std::string p = path_ + "/" + name;
    {
        std::ofstream f(p, std::ios::binary | std::ios::trunc);
        f << content;
        f.close();
        if (!f) throw internal::TempDirError(errno != 0 ? errno : EIO, "writing '" + p + "'");
    }
    ::chmod(p.c_str(), mode);
}

bool TempDir::read(const std::string& name, std::string& content) const {
    std::ifstream in(path_ + "/" + name, std::ios::binary);
    if (!in) return false;
    content.assign(std::istreambuf_iterator<char>(in), {});
    return true;
}

} // namespace radial::conformance
