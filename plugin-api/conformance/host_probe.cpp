#include "host_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <radial/internal/names.h>
#include <radial/internal/proc_file.h>
#include <radial/support/child_process.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
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

extern "C" char** environ;

} // namespace

CommandResult run_command(const std::string& script, const std::vector<std::string>& args,
                          std::chrono::milliseconds budget) {
    using Clock = std::chrono::steady_clock;
    CommandResult r;
    // The harness's own environment (the author's probe may need DOCKER_HOST, PATH, ...).
    plugin_support::ChildProcess::Env env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string var(*e);
        const auto eq = var.find('=');
        if (eq != std::string::npos) env.emplace(var.substr(0, eq), var.substr(eq + 1));
    }
    std::vector<std::string> words = {"-c", script, "radial-conformance"};
    words.insert(words.end(), args.begin(), args.end());
    std::optional<plugin_support::ChildProcess> child;
    try {
        child.emplace(plugin_support::ChildProcess::start("/bin/sh", words, env));
    } catch (const std::exception& e) {
        r.problem = e.what();
        return r;
    }
    const auto deadline = Clock::now() + budget;
    internal::UniqueFd* pipes[2] = {&child->stdout_pipe(), &child->stderr_pipe()};
    std::string* sinks[2] = {&r.out, &r.err};
    char buf[4096];
    bool timed_out = false;
    while (pipes[0]->valid() || pipes[1]->valid()) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        pollfd fds[2] = {{pipes[0]->get(), POLLIN, 0}, {pipes[1]->get(), POLLIN, 0}};
        if (::poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].revents == 0) continue;
            const ssize_t got = ::read(pipes[i]->get(), buf, sizeof buf);
            if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (got <= 0) {
                pipes[i]->reset();
                continue;
            }
            if (sinks[i]->size() < (64u << 10))
                sinks[i]->append(buf, static_cast<std::size_t>(got));
        }
    }
    // The rest of the budget for the command to end once it closed its output.
    std::optional<plugin_support::ExitStatus> status;
    if (!timed_out)
        status = child->reap_within(
            std::max(std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()),
                     std::chrono::milliseconds(0)));
    if (!status) {
        // Its own process group: this reaches it and whatever it started.
        child->kill();
        (void)child->reap_within(std::chrono::seconds(5));
        return r;
    }
    r.finished = true;
    r.status = status->exited ? status->code : 128 + status->signal;
    return r;
}

long rss_kib() { return status_kib("VmRSS:"); }
long peak_rss_kib() { return status_kib("VmHWM:"); }

bool reset_peak_rss() {
    // "5" resets VmHWM to the current RSS (Documentation/filesystems/proc.rst, clear_refs).
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
