#include "host_probe.h"

#include <fcntl.h>
#include <radial/internal/names.h>
#include <radial/internal/proc_file.h>
#include <radial/support/cli_capture.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace radial::conformance {
namespace {

long status_kib(const char* field) {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind(field, 0) == 0)
            return std::strtol(line.c_str() + std::strlen(field), nullptr, 10);
    return -1;
}

// What a probe's report keeps of each stream (host_probe.h: "each cut at 64 KiB").
constexpr std::size_t kKeptOutput = 64u << 10;

} // namespace

CommandResult run_command(const std::string& script, const std::vector<std::string>& args,
                          std::chrono::milliseconds budget) {
    CommandResult r;
    std::vector<std::string> words = {"-c", script, "radial-conformance"};
    words.insert(words.end(), args.begin(), args.end());
    plugin_support::CliOutput done;
    try {
        // The harness's own environment: the author's probe may need DOCKER_HOST, PATH, ...
        done = plugin_support::capture_cli("/bin/sh", words, plugin_support::own_environment(),
                                           budget);
    } catch (const std::exception& e) {
        r.problem = e.what();
        return r;
    }
    r.out = done.out.substr(0, kKeptOutput);
    r.err =
        done.err.size() > kKeptOutput ? done.err.substr(done.err.size() - kKeptOutput) : done.err;
    if (done.timed_out) return r; // its process group was SIGKILLed and the shell reaped
    r.finished = true;
    r.status = done.status.exited ? done.status.code : 128 + done.status.signal;
    return r;
}

long rss_kib() { return status_kib("VmRSS:"); }
long peak_rss_kib() { return status_kib("VmHWM:"); }

bool reset_peak_rss() {
    // Writing "5" to clear_refs resets VmHWM (the peak) to the current RSS.
    int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, "5", 1) == 1;
    ::close(fd);
    return ok;
}

std::vector<std::string> all_cmdlines() {
    std::vector<std::string> out;
    std::error_code ec;
    // hermetic-ok: a secret must be on no command line anywhere; a vanished process shows nothing
    for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string name = it->path().filename();
        if (!internal::is_decimal(name)) continue;
        out.push_back(internal::read_proc_file(it->path().string() + "/cmdline"));
    }
    return out;
}

std::vector<long> own_threads() {
    std::vector<long> out;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string name = it->path().filename();
        if (internal::is_decimal(name)) out.push_back(std::stol(name));
    }
    return out;
}

std::string thread_name(long tid) {
    std::string n = internal::read_proc_file("/proc/self/task/" + std::to_string(tid) + "/comm");
    while (!n.empty() && n.back() == '\n') n.pop_back();
    return n;
}

std::vector<MarkedProcess> marked_processes(const std::string& value_prefix) {
    const std::string needle = std::string(kMarkName) + "=" + value_prefix;
    std::vector<MarkedProcess> out;
    std::error_code ec;
    // hermetic-ok: finds only processes carrying this run's own mark, wherever the plugin put them
    for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string name = it->path().filename();
        if (!internal::is_decimal(name)) continue;
        // open/read, not an ifstream: the process may exit mid-read, and that is no error.
        int fd = ::open((it->path().string() + "/environ").c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        std::string env;
        char buf[16384];
        ssize_t n;
        while (env.size() < 256 * 1024 && (n = ::read(fd, buf, sizeof buf)) > 0)
            env.append(buf, static_cast<std::size_t>(n));
        ::close(fd);
        bool found = false;
        for (std::size_t at = 0; at < env.size() && !found;) {
            std::size_t nul = env.find('\0', at);
            if (nul == std::string::npos) nul = env.size();
            found = env.compare(at, needle.size(), needle) == 0 && nul - at >= needle.size();
            at = nul + 1;
        }
        if (!found) continue;
        std::string cmd = internal::read_proc_file(it->path().string() + "/cmdline");
        for (char& c : cmd)
            if (c == '\0') c = ' ';
        while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
        out.push_back({std::stol(name), cmd});
    }
    return out;
}

TempDir::TempDir(const std::string& prefix)
    : dir_("/tmp", prefix + "-"), path_(dir_.path().string()) {
    ::chmod(path_.c_str(), 0755);
}

std::string TempDir::subdir(const std::string& name, unsigned mode) const {
    std::string p = path_ + "/" + name;
    if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST)
        throw internal::TempDirError(errno, "creating '" + p + "'");
    ::chmod(p.c_str(), mode);
    return p;
}

void TempDir::write(const std::string& name, const std::string& content, unsigned mode) const {
    std::string p = path_ + "/" + name;
    {
        std::ofstream f(p, std::ios::binary | std::ios::trunc);
        f << content;
        f.close();
        if (!f) throw internal::TempDirError(errno != 0 ? errno : EIO, "writing '" + p + "'");
    }
    ::chmod(p.c_str(), mode);
}

bool TempDir::read(const std::string& name, std::string& content) const {
    std::ifstream in(path_ + "/" + name, std::ios::binary);
    if (!in) return false;
    content.assign(std::istreambuf_iterator<char>(in), {});
    return true;
}

} // namespace radial::conformance
