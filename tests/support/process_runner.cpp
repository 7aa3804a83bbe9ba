#include "process_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>

#include "load_factor.h"
#include "temp_dir.h"

extern char** environ;

namespace radial::test {
namespace {

// The inherited environment with `set` applied and `unset` removed, as "NAME=VALUE" strings.
std::vector<std::string> child_environment(const std::map<std::string, std::string>& set,
                                           const std::vector<std::string>& unset) {
    std::map<std::string, std::string> vars;
    for (char** e = environ; *e != nullptr; ++e) {
        std::string entry(*e);
        auto eq = entry.find('=');
        if (eq == std::string::npos) continue;
        vars.emplace(entry.substr(0, eq), entry.substr(eq + 1));
    }
    for (const auto& [k, v] : set) vars[k] = v;
    for (const auto& k : unset) vars.erase(k);
    std::vector<std::string> out;
    for (const auto& [k, v] : vars) out.push_back(k + "=" + v);
    return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

// posix_spawn's file actions, destroyed on scope exit.
struct FileActions {
    posix_spawn_file_actions_t actions;
    FileActions() { ::posix_spawn_file_actions_init(&actions); }
    ~FileActions() { ::posix_spawn_file_actions_destroy(&actions); }
    FileActions(const FileActions&) = delete;
    FileActions& operator=(const FileActions&) = delete;
};

// Where the child's stdout goes: a file (created or truncated), or a descriptor of the caller's
// (the write end of a pipe, /dev/full).
struct Stdout {
    std::string path;
    int fd = -1;
};

// Starts argv (a bare argv[0] looked up in PATH, as a shell would) with stdin /dev/null and
// returns its pid and a pidfd for it. Throws std::system_error naming argv[0].
std::pair<pid_t, internal::UniqueFd> spawn(const std::vector<std::string>& argv,
                                           std::vector<std::string> env, const Stdout& out,
                                           const std::string& err_path) {
    std::vector<std::string> args = argv;
    std::vector<char*> arg_ptrs = pointers(args), env_ptrs = pointers(env);
    FileActions fa;
    ::posix_spawn_file_actions_addopen(&fa.actions, 0, "/dev/null", O_RDONLY, 0);
    if (out.fd >= 0)
        ::posix_spawn_file_actions_adddup2(&fa.actions, out.fd, 1);
    else
        ::posix_spawn_file_actions_addopen(&fa.actions, 1, out.path.c_str(),
                                           O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::posix_spawn_file_actions_addopen(&fa.actions, 2, err_path.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid = 0;
    if (int err = ::posix_spawnp(&pid, args.at(0).c_str(), &fa.actions, nullptr, arg_ptrs.data(),
                                 env_ptrs.data());
        err != 0)
        throw std::system_error(err, std::generic_category(), "starting '" + argv.at(0) + "'");
    // Through syscall(2): glibc 2.36's <sys/pidfd.h> declares pidfd_open without C linkage.
    internal::UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd.valid()) {
        int err = errno;
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        throw std::system_error(err, std::generic_category(),
                                "watching '" + argv.at(0) + "' (pidfd_open)");
    }
    return {pid, std::move(pidfd)};
}

// Awaits the end of `pid` on its pidfd for up to `budget` (scaled by the suite's load factor),
// SIGKILLs it past that, and reaps it.
// Returns its exit status, or the signal that ended it, or -1; sets `timed_out`.
int reap_within(pid_t pid, int pidfd, std::chrono::milliseconds budget, bool& timed_out) {
    const auto deadline = std::chrono::steady_clock::now() + scaled(budget);
    timed_out = false;
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{pidfd, POLLIN, 0};
        int n = ::poll(&p, 1, static_cast<int>(std::max<long long>(left.count(), 0)));
        if (n > 0) break;
        if (n == 0 || errno != EINTR) {
            timed_out = n == 0;
            ::kill(pid, SIGKILL);
            break;
        }
    }
    int status = 0;
    pid_t waited;
    while ((waited = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    if (waited == pid && WIFEXITED(status)) return WEXITSTATUS(status);
    if (waited == pid && WIFSIGNALED(status)) return WTERMSIG(status);
    return -1;
}

} // namespace

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env_set,
                          std::chrono::seconds budget, const std::vector<std::string>& env_unset) {
    TempDir io("radial-io");
    const std::string out_path = io / "out", err_path = io / "err";
    auto [pid, pidfd] =
        spawn(argv, child_environment(env_set, env_unset), Stdout{out_path, -1}, err_path);
    ProcessResult r;
    r.exit_code = reap_within(pid, pidfd.get(), budget, r.timed_out);
    r.out = read_file(out_path);
    r.err = read_file(err_path);
    return r;
}

ProcessResult run_process_with_stdout(const std::vector<std::string>& argv, int stdout_fd,
                                      std::chrono::seconds budget) {
    TempDir io("radial-io");
    const std::string err_path = io / "err";
    auto [pid, pidfd] = spawn(argv, child_environment({}, {}), Stdout{"", stdout_fd}, err_path);
    ProcessResult r;
    r.exit_code = reap_within(pid, pidfd.get(), budget, r.timed_out);
    r.err = read_file(err_path);
    return r;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv,
                                     const std::string& stderr_path, bool pipe_stdout) {
    internal::UniqueFd write_end;
    if (pipe_stdout) {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0)
            throw std::system_error(errno, std::generic_category(), "pipe2");
        out_.reset(fds[0]);
        write_end.reset(fds[1]);
    }
    auto [pid, pidfd] =
        spawn(argv, child_environment({}, {}), Stdout{"/dev/null", write_end.get()}, stderr_path);
    pid_ = pid;
    pidfd_ = std::move(pidfd);
}

BackgroundProcess::~BackgroundProcess() {
    if (!reaped_) wait(std::chrono::milliseconds(0));
}

bool BackgroundProcess::running() const {
    if (reaped_) return false;
    pollfd p{pidfd_.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
}

void BackgroundProcess::signal(int signal) const {
    if (!reaped_) ::kill(pid_, signal);
}

int BackgroundProcess::wait(std::chrono::milliseconds budget) {
    if (reaped_) return exit_code_;
    bool timed_out = false;
    exit_code_ = reap_within(pid_, pidfd_.get(), budget, timed_out);
    reaped_ = true;
    return exit_code_;
}

std::optional<std::string> BackgroundProcess::read_line(std::chrono::milliseconds budget) {
    const auto deadline = std::chrono::steady_clock::now() + scaled(budget);
    for (;;) {
        if (auto nl = buffered_.find('\n'); nl != std::string::npos) {
            std::string line = buffered_.substr(0, nl);
            buffered_.erase(0, nl + 1);
            return line;
        }
        if (out_.valid()) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            pollfd p{out_.get(), POLLIN, 0};
            const int ready = ::poll(&p, 1, static_cast<int>(std::max<long long>(left.count(), 0)));
            if (ready < 0 && errno == EINTR) continue;
            if (ready == 0)
                throw std::runtime_error("read_line: no line from pid " + std::to_string(pid_) +
                                         " within its budget; it had written '" + buffered_ + "'");
        }
        char buf[4096];
        ssize_t n = out_.valid() ? ::read(out_.get(), buf, sizeof buf) : 0;
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (buffered_.empty()) return std::nullopt;
            std::string line;
            line.swap(buffered_);
            return line;
        }
        buffered_.append(buf, static_cast<std::size_t>(n));
    }
}

} // namespace radial::test
