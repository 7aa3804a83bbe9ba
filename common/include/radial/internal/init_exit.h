// radial/internal/init_exit.h — how an exit status 124 of a command run under radial-init (the
// box's PID 1, or an exec's) is read, the same wherever it is read: by the docker runtime when an
// exec ends, and by radiald's reconciliation when it finds a box that ended while no radiald ran
// (docs/design.md §3.7, §8.4).
#pragma once

namespace radial::internal {

// radial-init's own exit status when it ends what it runs at the deadline, as timeout(1)
// (plugins/box-init/radial_init.c).
inline constexpr int kInitTimeoutExit = 124;

// Whether exit status `code` is radial-init's end at the deadline: 124 with a deadline
// (`has_deadline`) that had passed when the command was seen to end (`deadline_passed`). A
// command's own 124 before its deadline is its own exit code. Pure; thread-safe.
constexpr bool init_timed_out(int code, bool has_deadline, bool deadline_passed) noexcept {
    return code == kInitTimeoutExit && has_deadline && deadline_passed;
}

} // namespace radial::internal
