#include <fcntl.h>
#include <radial/support/child_process.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <radial/plugin/runtime.hpp>
#include <set>
#include <thread>

namespace radial::plugin_support {

namespace {

using plugin::Error;

// `fd` at 3 or above (a copy, the original closed), close-on-exec: a descriptor at 0-2 would be
// overwritten by, or stand in for, the child's standard streams.
internal::UniqueFd above_stdio(internal::UniqueFd fd) {
    if (fd.get() > 2) return fd;
    internal::UniqueFd high(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3));
    if (!high.valid())
        throw Error(RADIAL_E_INTERNAL, std::string("moving a descriptor above 2: ") +
                                           std::strerror(errno) + "; raise the open-file limit");
    return high;
}

struct Pipe {
    internal::UniqueFd read;
    internal::UniqueFd write;
};

Pipe make_pipe(const char* what) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw Error(RADIAL_E_INTERNAL, std::string("creating the ") + what +
                                           " pipe for a child process: " + std::strerror(errno) +
                                           "; raise the open-file limit");
    Pipe p{above_stdio(internal::UniqueFd(fds[0])), above_stdio(internal::UniqueFd(fds[1]))};
    ::fcntl(p.read.get(), F_SETFL, ::fcntl(p.read.get(), F_GETFL) | O_NONBLOCK);
    return p;
}

ExitStatus decode(int raw) {
    ExitStatus s;
    if (WIFEXITED(raw)) {
        s.exited = true;
        s.code = WEXITSTATUS(raw);
    } else if (WIFSIGNALED(raw)) {
        s.signal = WTERMSIG(raw);
    }
    return s;
}

// Why `exe` did not start, with the fix that fits the cause: only a missing or unusable program
// gets the caller's "install it" advice; arguments over the kernel's limits say so with sizes.
std::string start_failure(const std::filesystem::path& exe, const std::vector<std::string>& args,
                          const ChildProcess::Env& env, int err,
                          const ChildProcess::Options& options) {
    std::string what = "starting '" + exe.string() + "': " + std::strerror(err);
    if (err == E2BIG) {
        std::size_t total = exe.string().size() + 1, longest = 0;
        for (const auto& a : args) {
            total += a.size() + 1;
            longest = std::max(longest, a.size());
        }
        for (const auto& [name, value] : env) {
            total += name.size() + value.size() + 2;
            longest = std::max(longest, name.size() + value.size() + 1);
        }
        return what + " (E2BIG): its arguments and environment take " + std::to_string(total) +
               " bytes, the longest string " + std::to_string(longest) +
               "; the kernel takes at most 131072 bytes in one argument or variable "
               "(MAX_ARG_STRLEN) and at most " +
               std::to_string(::sysconf(_SC_ARG_MAX)) + " in all (ARG_MAX); shorten them";
    }
    if (err == ENOENT || err == EACCES || err == ENOEXEC || err == ENOTDIR || err == ELOOP)
        return what + "; " + options.missing_fix;
    return what;
}

// The descriptors to hand over, checked before anything is started: each open, above 2 (0-2 are
// the child's standard streams), and named once.
void check_inherit(const std::vector<internal::UniqueFd>& inherit) {
    std::set<int> seen;
    for (const auto& fd : inherit) {
        if (!fd.valid() || ::fcntl(fd.get(), F_GETFD) < 0)
            throw Error(RADIAL_E_INVALID, "a descriptor in ChildProcess::Options::inherit (" +
                                              std::to_string(fd.get()) + ") is not open");
        if (fd.get() <= 2)
            throw Error(RADIAL_E_INVALID,
                        "descriptor " + std::to_string(fd.get()) +
                            " in ChildProcess::Options::inherit is one of the child's standard "
                            "streams; hand over a copy at 3 or above (fcntl F_DUPFD_CLOEXEC)");
        if (!seen.insert(fd.get()).second)
            throw Error(RADIAL_E_INVALID, "descriptor " + std::to_string(fd.get()) +
                                              " is named twice in ChildProcess::Options::inherit");
    }
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

} // namespace

std::filesystem::path ChildProcess::find_program(const std::string& program) {
    std::error_code ec;
    if (program.find('/') != std::string::npos) {
        auto p = std::filesystem::absolute(program, ec);
        return ec ? std::filesystem::path() : p;
    }
    if (program.empty()) return {};
    const char* path = std::getenv("PATH");
    std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
    for (std::size_t at = 0; at <= dirs.size();) {
        std::size_t end = dirs.find(':', at);
        if (end == std::string::npos) end = dirs.size();
        std::string dir = dirs.substr(at, end - at);
        at = end + 1;
        // A relative entry (an empty one is "."): resolved against this process's directory now,
        // never against a child's working directory later.
        const auto candidate =
            std::filesystem::absolute(std::filesystem::path(dir.empty() ? "." : dir) / program, ec);
        struct stat st {};
        if (!ec && ::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
            ::access(candidate.c_str(), X_OK) == 0)
            return candidate.lexically_normal();
    }
    return {};
}

ChildProcess ChildProcess::start(const std::filesystem::path& exe_in,
                                 const std::vector<std::string>& args, const Env& env,
                                 Options options) {
    check_inherit(options.inherit);
    // "NAME=VALUE" is split at the first '=': a name holding one would reach the child as
    // another variable with another value.
    for (const auto& entry : env)
        if (entry.first.empty() || entry.first.find('=') != std::string::npos ||
            entry.first.find('\0') != std::string::npos)
            throw Error(RADIAL_E_INVALID,
                        "starting '" + exe_in.string() + "': environment variable name '" +
                            entry.first +
                            "' is empty or holds '=' or NUL; no program could read it");
    if (!options.workdir.empty()) {
        std::error_code ec;
        if (!std::filesystem::is_directory(options.workdir, ec))
            throw Error(RADIAL_E_INVALID,
                        "starting '" + exe_in.string() + "': its working directory '" +
                            options.workdir.string() + "' is " +
                            (ec ? "not reachable (" + ec.message() + ")" : "not a directory") +
                            "; create it first");
    }
    // A relative program is this process's, not one in the child's working directory.
    std::error_code abs_ec;
    const std::filesystem::path exe =
        exe_in.is_relative() ? std::filesystem::absolute(exe_in, abs_ec) : exe_in;
    if (abs_ec || exe.empty())
        throw Error(RADIAL_E_INVALID,
                    "starting '" + exe_in.string() +
                        "': a relative program is looked up from this process's working "
                        "directory, which is not reachable (" +
                        (abs_ec ? abs_ec.message() : std::string("empty path")) +
                        "); give its absolute path");

    Pipe out = make_pipe("stdout");
    Pipe err = make_pipe("stderr");
    internal::UniqueFd stdin_source = std::move(options.stdin_source);
    if (!stdin_source.valid()) {
        stdin_source.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        if (!stdin_source.valid())
            throw Error(RADIAL_E_INTERNAL, std::string("opening '/dev/null': ") +
                                               std::strerror(errno) + "; check the host's /dev");
    }
    stdin_source = above_stdio(std::move(stdin_source));

    // posix_spawn (docs/design.md §5.11: it reports an exec failure through memory it shares
    // with the parent) has no window in which a descriptor of ours is inheritable: every
    // one stays close-on-exec in the parent, and a fork elsewhere in the process (radiald's,
    // another plugin's, another thread's) takes none of them. Boost.Process 1.74 had such a window
    // (its exec-error pipe), which blocked a start for the life of an unrelated child.
    SpawnSetup setup;
    ::posix_spawn_file_actions_adddup2(&setup.actions, stdin_source.get(), 0);
    ::posix_spawn_file_actions_adddup2(&setup.actions, out.write.get(), 1);
    ::posix_spawn_file_actions_adddup2(&setup.actions, err.write.get(), 2);
    // dup2 of a descriptor onto itself clears its close-on-exec flag in the child only
    // (docs/design.md §5.11): the handed-over descriptors keep their numbers.
    for (const auto& fd : options.inherit)
        ::posix_spawn_file_actions_adddup2(&setup.actions, fd.get(), fd.get());
    if (!options.workdir.empty())
        ::posix_spawn_file_actions_addchdir_np(&setup.actions, options.workdir.c_str());
    sigset_t none, all;
    ::sigemptyset(&none);
    ::sigfillset(&all);
    // Its own process group (a terminal's Ctrl-C aimed at the host does not reach it, and a kill
    // reaches all it started), an empty signal mask and default dispositions.
    ::posix_spawnattr_setsigmask(&setup.attr, &none);
    ::posix_spawnattr_setsigdefault(&setup.attr, &all);
    ::posix_spawnattr_setpgroup(&setup.attr, 0);
    ::posix_spawnattr_setflags(
        &setup.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    // Values byte for byte: "NAME=value" strings, no splitting of any kind.
    std::vector<std::string> env_strings;
    env_strings.reserve(env.size());
    for (const auto& [name, value] : env) env_strings.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string exe_string = exe.string();
    std::vector<std::string> words = args;
    std::vector<char*> argv = {exe_string.data()};
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);

    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, exe_string.c_str(), &setup.actions, &setup.attr, argv.data(),
                                 envp.data());
    // Whatever happened, the parent's copies of what the child was given close here.
    stdin_source.reset();
    out.write.reset();
    err.write.reset();
    options.inherit.clear();
    if (rc != 0) throw Error(RADIAL_E_UNAVAILABLE, start_failure(exe, args, env, rc, options));
    return ChildProcess(pid, std::move(out.read), std::move(err.read));
}

ChildProcess::ChildProcess(pid_t pid, internal::UniqueFd out, internal::UniqueFd err)
    : pid_(pid), out_(std::move(out)), err_(std::move(err)) {
    // pidfd_open returns an O_CLOEXEC descriptor; ENOSYS on old kernels leaves exit_fd_ empty.
    exit_fd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)));
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)),
      exit_fd_(std::move(other.exit_fd_)),
      status_(other.status_) {}

ChildProcess::~ChildProcess() {
    if (pid_ <= 0 || reaped()) return;
    kill();
    (void)reap_within(std::chrono::seconds(5)); // unkillable (D state): left as it is
}

std::optional<ExitStatus> ChildProcess::try_reap() noexcept {
    if (status_ || pid_ <= 0) return status_;
    // Ended but not yet reaped (WNOWAIT): the zombie keeps its pid, the group's id, from being
    // recycled while whatever it left in its group is killed. A wrapper's own children must not
    // outlive it, reparented to init.
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid_)
        kill_group();
    int raw = 0;
    pid_t r;
    while ((r = ::waitpid(pid_, &raw, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (r == 0) return std::nullopt; // still running
    // ECHILD (someone else reaped it, or SIGCHLD is ignored): the child is gone, its status lost —
    // an ExitStatus with neither exited nor signal, never a made-up exit 0.
    status_ = r == pid_ ? decode(raw) : ExitStatus{};
    return status_;
}

std::optional<ExitStatus> ChildProcess::reap_within(std::chrono::milliseconds budget) noexcept {
    auto deadline = std::chrono::steady_clock::now() + budget;
    auto step = std::chrono::milliseconds(1);
    while (!try_reap()) {
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(step);
        step = std::min(step * 2, std::chrono::milliseconds(20));
    }
    return status_;
}

void ChildProcess::kill() noexcept {
    // Only while unreaped, so the pid cannot have been recycled.
    if (pid_ <= 0 || reaped()) return;
    kill_group();
    ::kill(pid_, SIGKILL);
}

void ChildProcess::kill_group() noexcept {
    // The child was made a group leader by posix_spawn, so the group's id is its pid; while the
    // child is unreaped no other group can have that id.
    if (pid_ > 0 && !reaped()) ::kill(-pid_, SIGKILL);
}

} // namespace radial::plugin_support
