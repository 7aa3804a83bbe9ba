#include <fcntl.h>
#include <radial/support/child_process.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/env.hpp>
#include <boost/process/environment.hpp>
#include <boost/process/exe.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/io.hpp>
#include <boost/process/pipe.hpp>
#include <boost/process/search_path.hpp>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <radial/plugin/runtime.hpp>
#include <thread>

namespace radial::plugin_support {

namespace bp = boost::process;

namespace {

// Boost.Process stores this (a WIFSTOPPED pattern) as the status of a child not yet reaped.
constexpr int kNotReaped = 0x017f;

struct Pipe {
    internal::UniqueFd read;
    internal::UniqueFd write;
};

Pipe make_pipe(const char* what) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw radial::plugin::Error(
            RADIAL_E_INTERNAL, std::string("creating the ") + what + " pipe for a child process: " +
                                   std::strerror(errno) + "; raise the open-file limit");
    Pipe p{internal::UniqueFd(fds[0]), internal::UniqueFd(fds[1])};
    int flags = ::fcntl(p.read.get(), F_GETFL);
    ::fcntl(p.read.get(), F_SETFL, flags | O_NONBLOCK);
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

// Runs in the forked child before exec: async-signal-safe calls only. `inherit` (ends with -1)
// are the descriptors the child keeps, at their own numbers: no dup2 onto a chosen number, which
// could land on a descriptor Boost still needs (its exec-error pipe).
void prepare_child(const int* inherit) {
    for (; *inherit >= 0; ++inherit) ::fcntl(*inherit, F_SETFD, 0);
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGPIPE, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGCHLD})
        ::sigaction(sig, &dfl, nullptr);
}

// Why `exe` did not start, with the fix that fits the cause: only a missing or unusable program
// gets the caller's "install it" advice; arguments over the kernel's limits say so with sizes.
std::string start_failure(const std::filesystem::path& exe, const std::vector<std::string>& args,
                          const ChildProcess::Env& env, const std::error_code& ec,
                          const ChildProcess::Options& options) {
    std::string what = "starting '" + exe.string() + "': ";
    if (!ec) return what + "no process; " + options.missing_fix;
    what += ec.message();
    if (ec.value() == E2BIG) {
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
    if (ec.value() == ENOENT || ec.value() == EACCES || ec.value() == ENOEXEC ||
        ec.value() == ENOTDIR || ec.value() == ELOOP)
        return what + "; " + options.missing_fix;
    return what;
}

} // namespace

ChildProcess ChildProcess::start(const std::filesystem::path& exe,
                                 const std::vector<std::string>& args, const Env& env,
                                 Options options) {
    if (!options.workdir.empty() && !std::filesystem::is_directory(options.workdir))
        throw radial::plugin::Error(RADIAL_E_INVALID, "starting '" + exe.string() +
                                                          "': its working directory '" +
                                                          options.workdir.string() +
                                                          "' is not a directory; create it first");
    Pipe out = make_pipe("stdout");
    Pipe err = make_pipe("stderr");
    internal::UniqueFd stdin_source = std::move(options.stdin_source);
    if (!stdin_source.valid()) {
        stdin_source.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        if (!stdin_source.valid())
            throw radial::plugin::Error(RADIAL_E_INTERNAL, std::string("opening '/dev/null': ") +
                                                               std::strerror(errno) +
                                                               "; check the host's /dev");
    }

    // Values go in through entry assignment of one whole string, which Boost stores verbatim; the
    // list forms (vector assignment, +=, bp::env["X"]+=) would join or split on ':'.
    bp::environment child_env;
    for (const auto& [name, value] : env) child_env[name] = value;

    // Boost's pipe handlers take the write ends (and the stdin source as a read end) and close
    // the parent's copies once the child has started; the read ends stay ours.
    bp::pipe in_pipe(stdin_source.release(), -1);
    bp::pipe out_pipe(-1, out.write.release());
    bp::pipe err_pipe(-1, err.write.release());
    // Built before the fork: the child may not allocate.
    std::vector<int> inherit;
    for (const auto& fd : options.inherit) inherit.push_back(fd.get());
    inherit.push_back(-1);
    const std::string workdir = options.workdir.string();

    // Boost 1.74 makes its exec-error pipe with pipe() and sets FD_CLOEXEC afterwards; a fork on
    // another thread in between would carry the write end into an unrelated child and block this
    // spawn until that child exits. Spawns inside the plugin are therefore serialised.
    static std::mutex spawn_mutex;
    std::unique_lock spawn_lock(spawn_mutex);
    std::error_code ec;
    pid_t failed_pid = -1;
    // The redirections below read as template brackets to clang-format.
    // clang-format off
    auto child = std::make_unique<bp::child>(
        bp::exe = exe.string(), bp::args = args, child_env,
        bp::std_in < in_pipe, bp::std_out > out_pipe, bp::std_err > err_pipe,
        bp::extend::on_exec_setup = [&](auto& exec) {
            prepare_child(inherit.data());
            if (!workdir.empty() && ::chdir(workdir.c_str()) != 0) {
                exec.set_error(std::error_code(errno, std::system_category()), "chdir");
                ::_exit(127);
            }
        },
        bp::extend::on_error = [&](auto& exec, const std::error_code&) { failed_pid = exec.pid; },
        ec);
    // clang-format on
    if (failed_pid > 0) {
        // Boost 1.74 returns an empty child when execve fails and never reaps the forked one,
        // which has already _exit()ed after reporting the error: reap it here.
        int raw = 0;
        while (::waitpid(failed_pid, &raw, 0) == -1 && errno == EINTR) {
        }
    }
    spawn_lock.unlock();
    options.inherit.clear(); // the child has its copies (or never started)
    if (ec || !child->valid())
        throw radial::plugin::Error(RADIAL_E_UNAVAILABLE,
                                    start_failure(exe, args, env, ec, options));
    return ChildProcess(std::move(child), std::move(out.read), std::move(err.read));
}

std::filesystem::path ChildProcess::find_program(const std::string& program) {
    if (program.find('/') != std::string::npos) return program;
    if (program.empty()) return {};
    return bp::search_path(program).string();
}

ChildProcess::ChildProcess(std::unique_ptr<bp::child> child, internal::UniqueFd out,
                           internal::UniqueFd err)
    : child_(std::move(child)), out_(std::move(out)), err_(std::move(err)) {
    // pidfd_open returns an O_CLOEXEC descriptor; ENOSYS on old kernels leaves exit_fd_ empty.
    exit_fd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, child_->id(), 0)));
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : child_(std::move(other.child_)),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)),
      exit_fd_(std::move(other.exit_fd_)),
      status_(other.status_) {}

ChildProcess::~ChildProcess() {
    if (child_ == nullptr) return;
    if (!reaped()) {
        kill();
        if (!reap_within(std::chrono::seconds(5))) child_->detach(); // unkillable: leave it be
    }
}

pid_t ChildProcess::pid() const noexcept { return child_ ? child_->id() : -1; }

std::optional<ExitStatus> ChildProcess::try_reap() noexcept {
    if (status_ || child_ == nullptr) return status_;
    // Ended but not yet reaped (WNOWAIT): the zombie keeps its pid, the group's id, from being
    // recycled while whatever it left in its group is killed. A wrapper's own children must not
    // outlive it, reparented to init.
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(child_->id()), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == child_->id())
        kill_group();
    std::error_code ec;
    if (child_->running(ec)) return std::nullopt; // waitpid(pid, WNOHANG): this child only
    int raw = child_->native_exit_code();
    // ECHILD (someone else reaped it, or SIGCHLD is ignored): the child is gone, its status lost.
    status_ = raw == kNotReaped ? ExitStatus{} : decode(raw);
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
    // Only while unreaped, so the pid cannot have been recycled. Not bp::child::terminate: its
    // trailing waitpid(WNOHANG) may reap the child and discard the status.
    if (child_ == nullptr || reaped()) return;
    kill_group();
    ::kill(child_->id(), SIGKILL);
}

void ChildProcess::kill_group() noexcept {
    // The child made itself a group leader before exec, so the group's id is its pid; while the
    // child is unreaped no other group can have that id.
    if (child_ != nullptr && !reaped()) ::kill(-child_->id(), SIGKILL);
}

} // namespace radial::plugin_support
