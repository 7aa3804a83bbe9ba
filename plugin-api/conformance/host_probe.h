// plugin-api/conformance/host_probe.h — what the harness observes on the host around a run: its
// own memory, every process's command line, and a temporary directory to mount (docs/design.md
// §5.11).
#pragma once

#include <radial/internal/temp_dir.h>

#include <chrono>
#include <string>
#include <vector>

namespace radial::conformance {

// Resident memory of this process in KiB (VmRSS), or -1 when /proc cannot tell.
long rss_kib();
// Resets this process's peak RSS (VmHWM) to its current RSS. False when the kernel does not
// allow it (then peak_rss_kib() measures since the process started).
bool reset_peak_rss();
// Peak resident memory of this process in KiB (VmHWM), or -1.
long peak_rss_kib();

// Every visible process's command line (NUL-separated arguments), read without throwing:
// processes come and go while this runs.
std::vector<std::string> all_cmdlines();

// The thread ids of this process (/proc/self/task), and one thread's name (its comm).
std::vector<long> own_threads();
std::string thread_name(long tid);

// The environment variable the harness puts in every box it starts, with a value that begins with
// this run's label prefix: a process that carries it is the harness's, wherever it runs (docs/
// design.md §5.11, "What the harness sees for itself").
inline constexpr const char* kMarkName = "RADIAL_CONFORMANCE_MARK";

// A process on the host whose environment carries the mark.
struct MarkedProcess {
    long pid = 0;
    std::string cmdline; // its arguments joined by spaces
};

// Every process whose environment holds kMarkName with a value that begins with `value_prefix`.
// Processes inside containers are the host's too, and root reads every /proc/<pid>/environ; a
// process this user cannot read is not seen. Reads at most 256 KiB of each environment.
std::vector<MarkedProcess> marked_processes(const std::string& value_prefix);

// How a shell command run by the harness ended.
struct CommandResult {
    bool finished = false; // it exited within its budget (else it was killed)
    int status = -1;       // its exit status when it exited, else -1
    std::string out, err;  // what it wrote: stdout's first and stderr's last 64 KiB
    std::string problem;   // why it could not be started
};

// Runs `script` with /bin/sh -c, `args` as $1..., stdin /dev/null, the harness's environment, in
// a process group of its own that is SIGKILLed when `budget` passes (the run support's
// capture_cli). Only the harness's own probes (--verify-gone,
// --cleanup) go through here: the command is the plugin author's, never the plugin's. Blocking;
// thread-safe.
CommandResult run_command(const std::string& script, const std::vector<std::string>& args,
                          std::chrono::milliseconds budget);

// A directory under /tmp removed, with everything in it, when the owner goes out of scope.
// Mode 0755; callers open up subdirectories for the box user as they need.
class TempDir {
public:
    // Creates "/tmp/<prefix>-XXXXXX", mode 0755. Throws internal::TempDirError naming the path;
    // so do subdir() and write().
    explicit TempDir(const std::string& prefix);
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const noexcept { return path_; }
    // Creates a subdirectory with `mode` (chmod'ed, so the umask does not narrow it).
    std::string subdir(const std::string& name, unsigned mode) const;
    // Writes `content` to `name` (relative to the directory) with `mode`.
    void write(const std::string& name, const std::string& content, unsigned mode) const;
    // The file's content, or nullopt-like empty + false when it does not exist.
    bool read(const std::string& name, std::string& content) const;

private:
    internal::TempDir dir_; // the one temp-dir owner (docs/design.md §14.6)
    std::string path_;
};

} // namespace radial::conformance
