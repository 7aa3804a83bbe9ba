// tests/support/process_runner.h — runs a real program (radiald, docker, socat) to completion
// and captures its exit status, stdout and stderr, with a time budget after which it is killed;
// or in the background, owned until it is reaped.
// Compiled once (process_runner.cpp, library radial_test_support): no process library's headers
// reach the many test files that include this one.
#pragma once

#include <radial/internal/unique_fd.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace radial::test {

struct ProcessResult {
    // The exit status; for a program a signal ended, the signal's number; -1 when it could not
    // be told.
    int exit_code = -1;
    bool timed_out = false; // the budget passed and the program was SIGKILLed
    std::string out;
    std::string err;
};

// Runs argv[0] (a path, or a name looked up in PATH) with argv[1..], stdin /dev/null, stdout and
// stderr each captured whole through a private file. `env_set` adds or replaces variables in the
// inherited environment; `env_unset` removes them. The program's end is awaited on a pidfd,
// never by polling; past `budget` it is SIGKILLed and reaped. Throws std::system_error when it
// cannot be started (naming argv[0]). Thread-safe: it reaps only its own child.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env_set = {},
                          std::chrono::seconds budget = std::chrono::seconds(120),
                          const std::vector<std::string>& env_unset = {});

// As run_process, but the program's stdout is `stdout_fd` (put at its descriptor 1; the caller
// keeps it): /dev/full opened for writing, or the write end of a pipe whose reader is gone.
// ProcessResult::out stays empty.
ProcessResult run_process_with_stdout(const std::vector<std::string>& argv, int stdout_fd,
                                      std::chrono::seconds budget = std::chrono::seconds(120));

// A program started in the background and owned: SIGKILLed and reaped when the owner goes out of
// scope while it still runs. stdin is /dev/null; stdout goes to a pipe read with read_line() (when
// `pipe_stdout`) or to /dev/null; stderr to `stderr_path`. Throws std::system_error when it cannot
// be started. Not thread-safe: one owner.
class BackgroundProcess {
public:
    explicit BackgroundProcess(const std::vector<std::string>& argv,
                               const std::string& stderr_path = "/dev/null",
                               bool pipe_stdout = false);
    ~BackgroundProcess();
    BackgroundProcess(const BackgroundProcess&) = delete;
    BackgroundProcess& operator=(const BackgroundProcess&) = delete;

    pid_t pid() const noexcept { return pid_; }
    // Whether it has not ended yet (reaped or not). Does not block.
    bool running() const;
    // Sends `signal` unless it was reaped already.
    void signal(int signal) const;
    // Waits up to `budget` for it to end, then SIGKILLs it; reaps it. Returns what
    // ProcessResult::exit_code would hold. Idempotent.
    int wait(std::chrono::milliseconds budget = std::chrono::seconds(120));
    // The next line it wrote to stdout (without its newline), or nullopt at the end of its
    // output. Blocks up to `budget` (scaled by the suite's load factor), then throws
    // std::runtime_error: a test waiting on a line that never comes fails instead of hanging
    // until CTest's timeout. Only with pipe_stdout.
    std::optional<std::string> read_line(
        std::chrono::milliseconds budget = std::chrono::seconds(120));

private:
    pid_t pid_ = -1;
    bool reaped_ = false;
    int exit_code_ = -1;
    internal::UniqueFd pidfd_;
    internal::UniqueFd out_; // the read end of its stdout, with pipe_stdout
    std::string buffered_;   // bytes read past the last line returned
};

} // namespace radial::test
