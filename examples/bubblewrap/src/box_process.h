// examples/bubblewrap/src/box_process.h — bwrap running one box: started with its options on a
// memfd (--args 3) and its info on a pipe (--info-fd 4), its output pumped to the host, ended by
// exit, timeout, kill or the host's abort (docs/design.md §5.11).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <radial/plugin/runtime.hpp>
#include <string>
#include <utility>

#include "box_registry.h"
#include "bwrap_args.h"

namespace radial::bubblewrap {

// A file descriptor closed on scope exit.
class UniqueFd {
public:
    explicit UniqueFd(int fd = -1) noexcept : fd_(fd) {}
    UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& o) noexcept {
        reset(std::exchange(o.fd_, -1));
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }
    int get() const noexcept { return fd_; }
    void reset(int fd = -1) noexcept;

private:
    int fd_;
};

// How kill() stops a run from any thread — including the run's own, from inside the output
// sink: it marks the run killed, wakes its pump, and kills the box's processes itself, so that
// it never waits for the pump (which may be blocked in the sink that called kill). [thread-safe]
struct RunControl {
    RunControl();
    UniqueFd wake_read, wake_write;
    std::atomic<bool> killed{false};

    // The run records the box's processes as they appear, and `gone` once it has reaped them.
    void set_bwrap(const ProcessId& bwrap);
    void set_init(const ProcessId& init);
    void set_gone();

    // Marks the run killed, wakes its pump and SIGKILLs the box's processes until they are gone
    // (a zombie bwrap counts as gone) or the run has ended, at most `budget`. True when gone.
    bool kill_and_wait(std::chrono::milliseconds budget);

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    ProcessId bwrap_, init_;
    bool gone_ = false;
};

// bwrap, started and owned: its destructor kills (SIGKILL) and reaps it if it still runs.
class BoxProcess {
public:
    // Starts `binary` with `cmd`. Throws plugin::Error(RADIAL_E_UNAVAILABLE) when it cannot.
    static BoxProcess start(const std::string& binary, const BwrapCommand& cmd);
    BoxProcess(BoxProcess&& o) noexcept;
    BoxProcess& operator=(BoxProcess&&) = delete;
    ~BoxProcess();

    pid_t pid() const noexcept { return pid_; }

    // Pumps output to `out` until the box ends (its output streams close), enforcing
    // `timeout_ms` (0: none) and watching `control`. `on_init` is called once bwrap reports the
    // box's init process. Reaps bwrap. Throws plugin::Error when bwrap failed before the box
    // existed (its message is bwrap's stderr).
    plugin::RunResult pump(plugin::Output& out, std::uint64_t timeout_ms, RunControl& control,
                           const std::function<void(const ProcessId&)>& on_init);

    // Kills the box: its init (pid 1 of its pid namespace; the kernel then kills every process
    // in it) and bwrap. Safe to call more than once.
    void kill_box() noexcept;

private:
    BoxProcess() = default;
    pid_t pid_ = -1;
    bool reaped_ = false;
    ProcessId init_;
    UniqueFd out_, err_, info_;
};

// Runs `argv` (no shell) with stdout and stderr captured, at most `budget`. Returns the exit
// status (or -1 when it could not start or overran, with `output` saying why). For preflight.
int run_quietly(const std::vector<std::string>& argv, std::chrono::milliseconds budget,
                std::string& output);

} // namespace radial::bubblewrap
