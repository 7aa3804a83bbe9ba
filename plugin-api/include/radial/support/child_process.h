// radial/support/child_process.h — the owner of one child process (a runtime's CLI: docker, sbx,
// bwrap): its pid, its output pipes and its exit status. The only place in a plugin that signals
// or reaps a process. Installed for third-party plugins (RadialPluginApi::RunSupport).
#pragma once

#include <radial/internal/unique_fd.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace radial::plugin_support {

// How a child ended.
struct ExitStatus {
    bool exited = false; // true: `code` is valid (normal exit)
    int code = 0;        // exit code, with `exited`
    int signal = 0;      // terminating signal, without `exited`; 0 with neither: status lost
};

// Owns one child started with posix_spawn: only this child's own pid is ever waited for and no
// SIGCHLD handler is installed (ABI: plugins must not touch signal dispositions nor reap children
// they did not start). Every descriptor it holds is O_CLOEXEC, and none is ever inheritable in the
// parent, so a fork elsewhere in the process takes none of them. The child leads a process group
// of its own, and that group is the unit it is ended by: a kill (a budget that ran out, a cancel,
// the destructor) SIGKILLs the whole group, and when the child ends by itself whatever it left in
// its group is SIGKILLed before the child is reaped — nothing it started outlives it (a process
// that made itself a session or group of its own, as a daemon does, is not in the group). The
// destructor SIGKILLs a child that is still running and reaps it, waiting at most 5 s. Move-only;
// one thread at a time.
class ChildProcess {
public:
    using Env = std::map<std::string, std::string>;

    // How to start a child beyond its argv and environment.
    struct Options {
        // The child's stdin (the parent's copy is closed once the child has started), e.g. a
        // memfd holding a script (docs/design.md §6.3: the environment goes over stdin, never on
        // argv). Invalid: /dev/null.
        internal::UniqueFd stdin_source;
        // Descriptors the child keeps open beyond 0-2, each at the number it has here (3 or above;
        // read .get() before start to name it on the child's argv, e.g. bwrap's --args <fd>); its
        // close-on-exec flag is cleared in the child only. The parent's copies are closed once
        // the child has started. A descriptor of the parent without close-on-exec reaches the
        // child too, as with any exec: open yours O_CLOEXEC, as this library does.
        std::vector<internal::UniqueFd> inherit;
        // The child's working directory; empty: the parent's.
        std::filesystem::path workdir;
        // The fix named when `exe` cannot be started, e.g. "install the docker CLI or set
        // run.docker.binary".
        std::string missing_fix = "install it or fix the configured path";
    };

    // Starts `exe` (a path, made absolute against this process's directory; argv[0] is the path)
    // with `args` after it and exactly `env` as its environment: values are passed byte for byte
    // (no list splitting on ';' or ':'). stdin is options.stdin_source or /dev/null; stdout and
    // stderr are two pipes whose read ends are non-blocking. The child gets its own process group
    // (a terminal's Ctrl-C aimed at the host does not reach it), an empty signal mask and default
    // signal dispositions. [thread-safe]. Throws radial::plugin::Error(RADIAL_E_UNAVAILABLE) naming
    // `exe` and options.missing_fix when it cannot be started, RADIAL_E_INVALID when
    // options.workdir is not a directory, options.inherit holds a descriptor that is closed,
    // below 3 or named twice, an `env` name is empty or holds '=' or NUL, or `exe` is relative
    // while this process's working directory is gone; RADIAL_E_INTERNAL when pipes cannot be made.
    static ChildProcess start(const std::filesystem::path& exe,
                              const std::vector<std::string>& args, const Env& env,
                              Options options);
    static ChildProcess start(const std::filesystem::path& exe,
                              const std::vector<std::string>& args, const Env& env) {
        return start(exe, args, env, Options{});
    }

    // `program` made absolute when it holds a '/', else the first executable regular file of
    // that name in this process's PATH (a relative PATH entry resolved against this process's
    // directory, never a child's), absolute; empty when there is none. [thread-safe]
    static std::filesystem::path find_program(const std::string& program);

    ChildProcess(ChildProcess&&) noexcept;
    ChildProcess& operator=(ChildProcess&&) = delete;
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;
    ~ChildProcess();

    pid_t pid() const noexcept { return pid_; }
    // Read ends of the child's stdout and stderr; reset() one to close it (e.g. at EOF).
    internal::UniqueFd& stdout_pipe() noexcept { return out_; }
    internal::UniqueFd& stderr_pipe() noexcept { return err_; }
    // A pidfd that becomes readable when the child exits, or -1 when the kernel has none
    // (callers then poll try_reap on a short interval).
    int exit_fd() const noexcept { return exit_fd_.get(); }

    // Non-blocking: reaps the child if it has ended, after SIGKILLing what is left of its process
    // group. The status, once known, is kept.
    std::optional<ExitStatus> try_reap() noexcept;
    // Waits up to `budget` for the child to end (polling every few ms); nullopt if it has not.
    std::optional<ExitStatus> reap_within(std::chrono::milliseconds budget) noexcept;
    // Sends SIGKILL to the child's process group (the child and everything it started that is
    // still in the group) unless the child has been reaped. The child still has to be reaped.
    void kill() noexcept;
    bool reaped() const noexcept { return status_.has_value(); }

private:
    void kill_group() noexcept;
    ChildProcess(pid_t pid, internal::UniqueFd out, internal::UniqueFd err);

    pid_t pid_ = -1; // -1 once moved from
    internal::UniqueFd out_;
    internal::UniqueFd err_;
    internal::UniqueFd exit_fd_;
    std::optional<ExitStatus> status_;
};

} // namespace radial::plugin_support
