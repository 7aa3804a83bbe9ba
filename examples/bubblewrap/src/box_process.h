// examples/bubblewrap/src/box_process.h — bwrap running one box: started with its options on a
// memfd (--args) and its info on a pipe (--info-fd), its output pumped to the host, ended by exit,
// timeout, kill or the host's abort (docs/design.md §5.11). The process, its descriptors and the
// pump are the installed run support's (radial/support/): this file says only what is bwrap's.
#pragma once

#include <radial/support/child_process.h>
#include <radial/support/run_pump.h>
#include <radial/support/run_registry.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <radial/plugin/runtime.hpp>
#include <string>
#include <vector>

#include "box_registry.h"
#include "bwrap_args.h"

namespace radial::bubblewrap {

// How a box's run ended, before the runtime turns it into a run result.
struct BoxOutcome {
    plugin_support::Ending ending = plugin_support::Ending::none;
    plugin_support::ExitStatus status; // bwrap's: it exits with the workload's code
    bool output_aborted = false;
    std::uint64_t duration_ms = 0;
};

// bwrap, started and owned: its destructor kills (SIGKILL) the box and reaps bwrap. Move-only; one
// thread at a time.
class BoxProcess {
public:
    // Starts `binary` (a path, or a name looked up in PATH) with the command `command` makes for
    // the info descriptor it is given. Throws plugin::Error(RADIAL_E_UNAVAILABLE) naming
    // run.bubblewrap.binary when bwrap cannot be started.
    static BoxProcess start(const std::string& binary,
                            const std::function<BwrapCommand(int info_fd)>& command);
    BoxProcess(BoxProcess&&) noexcept = default;
    BoxProcess& operator=(BoxProcess&&) = delete;
    ~BoxProcess();

    pid_t pid() const noexcept { return child_.pid(); }

    // Pumps output to `out` until the box ended (and its output is drained), enforcing
    // `timeout_ms` (0: none) and ending the run when `active` is asked to (kill) or the sink
    // aborts. `on_init` is called once bwrap reports the box's init process. Reaps bwrap. Throws
    // plugin::Error(RADIAL_E_UNAVAILABLE) with bwrap's stderr when bwrap failed before the box
    // existed.
    BoxOutcome run(plugin::Output& out, std::uint64_t timeout_ms, plugin_support::ActiveRun& active,
                   const std::function<void(const ProcessId&)>& on_init);

    // Kills the box: its init (pid 1 of its pid namespace; the kernel then kills every process in
    // it) and bwrap's process group. Safe to call more than once.
    void kill_box() noexcept;

private:
    explicit BoxProcess(plugin_support::ChildProcess child, internal::UniqueFd info)
        : child_(std::move(child)), info_(std::move(info)) {}
    bool read_info(const std::function<void(const ProcessId&)>& on_init);
    bool read_output(internal::UniqueFd& fd, std::uint32_t stream);
    // Writes to the sink; a sink that aborted ends the run through the pump.
    void deliver(std::uint32_t stream, const char* data, std::size_t size);
    // Delivers what bwrap's stderr held back (once the box exists, or past the hold's bound).
    void release_held_err();

    plugin_support::ChildProcess child_;
    internal::UniqueFd info_;
    ProcessId init_;
    // While run() runs: where output goes and the pump to tell when the sink aborts.
    plugin::Output* out_ = nullptr;
    plugin_support::RunPump* pump_ = nullptr;
    bool init_known_ = false;
    std::string info_text_, held_err_;
    std::vector<char> buffer_ = std::vector<char>(64 * 1024);
};

// Runs `argv` (no shell; argv[0] looked up in PATH) with stdout and stderr captured (the run
// support's capture_cli: the whole process group killed past `budget`). Returns the exit code (or
// -1 when it could not start, overran or was killed by a signal, with `output` saying why). For
// preflight.
int run_quietly(const std::vector<std::string>& argv, std::chrono::milliseconds budget,
                std::string& output);

} // namespace radial::bubblewrap
