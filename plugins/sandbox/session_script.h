// plugins/sandbox/session_script.h — the scripts that make one sandbox a session's box
// (docs/design.md §13.12): a setup at create that starts a keeper in the sandbox, and each
// exec's script, which runs its command under its own deadline and ends what it left.
#pragma once

#include <cstdint>
#include <radial/container_spec.hpp>
#include <string>
#include <string_view>

namespace radial::sandbox {

// The exit code of an exec script that refused to run because the session's sandbox has ended
// (its keeper saw the idle timeout or the maximum lifetime pass) or lost its state.
inline constexpr int kSessionEndedExit = 125;

// The script `sbx exec -i NAME sh -s` runs once, right after `sbx create` of a session's sandbox:
// the mount bridging of sbx_exec_script; the session's state directory `$HOME/.radial-session`
// (its maximum-lifetime end in the VM's clock, its idle timeout, the time of its last exec); and
// the keeper, a shell loop started in the background that, once the sandbox has been idle (no
// exec running) for `idle_timeout_ms` or `max_lifetime_ms` after this setup (0: no limit, each
// rounded up to a whole second), marks the session ended and SIGKILLs every process an exec
// started. It runs with radiald dead; each exec script starts it again when it is not running
// (sbx stops an idle VM and starts it again with its files at the next exec). Throws
// radial::plugin::Error as sbx_exec_script for the mounts. Pure; thread-safe.
std::string sbx_session_setup_script(const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                                     std::uint64_t max_lifetime_ms);

// The script of one exec in a session's sandbox:
//   1. refuses (exit kSessionEndedExit, a line on stderr) when the session has ended;
//   2. marks an exec running (the keeper counts no idle time while it runs) and starts the keeper
//      when it is not running — before any of the exec's variables exist in the script;
//   3. exports `exec.env`, cds to `exec.workdir` (a failure ends the script with that code);
//   4. runs `exec.argv` in the background with RADIAL_SESSION_EXEC=<label> in its environment and
//   stdin
//      from /dev/null, and, when `exec.timeout_ms` is set, a watchdog that sends SIGTERM to every
//      process carrying that variable at the deadline, SIGKILL `kill_grace_ms` later, and makes
//      the exit code 124;
//   5. after the command, SIGKILLs every process still carrying RADIAL_SESSION_EXEC=<label> (what
//   the
//      exec left running: nothing of one exec sees the next exec's environment), clears the mark,
//      records the time and exits with the command's code (128+N for a signal).
// A process that clears its environment escapes step 5 (docs/design.md §13.12 says so). Holds
// the exec's secret values: it goes on stdin only. Throws radial::plugin::Error as
// sbx_exec_script for env, workdir and argv. `started_marker`, when not empty, is printed on
// stderr as a line of its own in the command's subshell just before its `exec`, as in
// sbx_exec_script. Pure; thread-safe.
std::string sbx_session_exec_script(const ContainerSpec& exec, std::uint64_t kill_grace_ms,
                                    std::string_view started_marker = {});

// A script that prints what became of the session in its sandbox, one line: "live", "ended: WHY"
// (the keeper's reason) or "gone" (no state directory). Pure; thread-safe.
std::string sbx_session_state_script();

} // namespace radial::sandbox
