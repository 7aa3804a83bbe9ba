// radial/support/cli_capture.h — one short CLI call (docker ps, sbx ls, a preflight's
// `--version`, a cleanup script) run to completion within a time budget, its output captured; and
// finding the CLI's executable. Part of the run support (RadialPluginApi::RunSupport).
#pragma once

#include <radial/support/child_process.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace radial::plugin_support {

// What one short CLI call left behind.
struct CliOutput {
    bool timed_out = false; // the budget ran out; the client was killed and reaped
    bool cancelled =
        false;         // the cancel descriptor became readable; the client was killed and reaped
    ExitStatus status; // without timed_out or cancelled
    std::string out;   // stdout (at most 16 MiB; a longer answer is cut there)
    std::string err;   // the last 64 KiB of stderr
    // True when the call ran to its end and exited 0.
    bool ok() const noexcept {
        return !timed_out && !cancelled && status.exited && status.code == 0;
    }
};

// Where a short call may be interrupted and what to say when its executable is missing.
struct CaptureOptions {
    // A descriptor that becomes readable to interrupt the call (e.g. a WakeEvent's fd when a kill
    // is requested); -1: none. It is only polled, never read.
    int cancel_fd = -1;
    // The fix named when the executable cannot be started (ChildProcess::Options::missing_fix).
    std::string missing_fix = "install it or fix the configured path";
    // Called on the calling thread about every `tick_every` while the call runs (e.g. to show
    // the progress of a long call); empty: none. An exception it throws ends the call (the
    // client is killed and reaped) and propagates.
    std::function<void()> tick;
    std::chrono::milliseconds tick_every{250}; // at least 1 ms is used
};

// Runs `exe` with `args` and exactly `env`, stdin on /dev/null, and waits for it to end and its
// pipes to close within `budget` (ms; a budget past a century counts as none); a process the client
// left holding its pipes gets one more second from the client's end (and no more than the budget),
// then the call returns the client's status with the output that arrived. Past the budget, or when
// options.cancel_fd becomes readable (or hung up), a client still running is SIGKILLed with its
// process group and reaped and the result says timed_out / cancelled; a client that had already
// ended is reported as it ended. Throws radial::plugin::Error: RADIAL_E_UNAVAILABLE when the
// client cannot be started, RADIAL_E_INVALID when cancel_fd is not an open descriptor or an
// environment name is empty or holds '=', RADIAL_E_INTERNAL when poll fails. [thread-safe] (each
// call owns its child).
// Rationale: every external call has a budget (docs/design.md §5.3).
CliOutput capture_cli(const std::filesystem::path& exe, const std::vector<std::string>& args,
                      const ChildProcess::Env& env, std::chrono::milliseconds budget,
                      const CaptureOptions& options = {});

// This process's own environment as a ChildProcess::Env, for a call that must see what its caller
// sees (DOCKER_HOST, PATH, ...). A runtime's client calls usually want a fixed environment
// instead (docs/design.md §5.11). [thread-safe] as long as nobody calls setenv meanwhile.
ChildProcess::Env own_environment();

// The executable for `binary`: itself when it contains '/', else the first executable match in
// PATH (ChildProcess::find_program, always absolute). Resolved on every call (cheap; picks up an
// install made after startup). Throws
// radial::plugin::Error(RADIAL_E_UNAVAILABLE, `key`) "starting the <tool> '<binary>': <cause>;
// install the <tool> or set <setting>" when it is absent or not executable, e.g. tool "docker
// CLI", key "binary", setting "run.docker.binary". [thread-safe]
std::filesystem::path find_executable(const std::string& binary, std::string_view tool,
                                      std::string_view key, std::string_view setting);

} // namespace radial::plugin_support
