// host/cli/standard_output.h — radiald's standard output, whose write errors are said when the
// command ends: a command whose output was lost (the id of a queued turn or a running session, a
// listing) must not exit 0 as if it had been read (docs/design.md §14.4).
#pragma once

namespace radial::cli {

// Makes stdout, and std::cout through it, write through a stream that keeps the errno of the
// first write to descriptor 1 that failed. Called first in main, before anything is printed.
// Not thread-safe.
void watch_standard_output();

// A write of radiald's own to descriptor 1, outside stdio, failed with `err` (`radiald logs`
// prints a log's bytes with write(2)). Only the first error is kept. [thread-safe]
void note_standard_output_error(int err) noexcept;

// Flushes stdout and returns `status`. When something written to it was lost, says
// "radiald: writing standard output: <strerror>" on stderr and returns 1 for a command that
// succeeded (a failed one keeps its status). A reader that left (EPIPE: `| head`) is no error:
// `status` is kept and nothing said. Every exit of radiald's commands ends here.
// Not thread-safe.
int finish_standard_output(int status) noexcept;

// finish_standard_output, then _Exit: for an exit that must not wait for threads or run
// destructors (a plugin call that never returned). Not thread-safe.
[[noreturn]] void exit_now(int status) noexcept;

} // namespace radial::cli
