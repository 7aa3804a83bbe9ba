#include "harness.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <thread>

#include "call_trace.h"
#include "host_probe.h"
#include "pending_call.h"
#include "plugin_calls.h"

namespace radial::conformance {
namespace {

// Async-signal-safe copies of what a crash report needs: written before the checks run (prefix)
// and at each check's start (check), read only by the signal handler.
char g_crash_prefix[256];
char g_crash_check[160];
// Where the crash report goes: stdout, or its saved copy while a check has diverted stdout.
volatile sig_atomic_t g_report_fd = STDOUT_FILENO;

void write_all(const char* s) {
    std::size_t n = std::strlen(s);
    while (n > 0) {
        ssize_t w = ::write(g_report_fd, s, n);
        if (w <= 0) return;
        s += w;
        n -= static_cast<std::size_t>(w);
    }
}

void crash_handler(int sig) {
    char num[16];
    int v = sig, i = 0;
    char rev[16];
    do {
        rev[i++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v > 0 && i < 15);
    for (int j = 0; j < i; ++j) num[j] = rev[i - 1 - j];
    num[i] = 0;
    write_all("\n");
    write_all(g_crash_prefix);
    write_all(" (failed: ");
    write_all(g_crash_check[0] != 0 ? g_crash_check : "loading");
    write_all("; the plugin crashed the process with signal ");
    write_all(num);
    write_call_trace(g_report_fd);
    write_all(")\n");
    // The handler was installed with SA_RESETHAND: re-raising ends the process with the signal.
    ::raise(sig);
}

} // namespace

Harness& Harness::get() {
    static Harness h;
    return h;
}

std::string kebab(std::string name) {
    for (char& c : name)
        if (c == '_') c = '-';
    return name;
}

std::string join(const std::vector<std::string>& items, std::size_t max) {
    std::string s;
    for (std::size_t i = 0; i < items.size() && i < max; ++i) s += (i ? ", " : "") + items[i];
    if (items.size() > max) s += ", ... (" + std::to_string(items.size()) + " in all)";
    return s;
}

std::string Harness::plugin_id() const {
    if (library.descriptor == nullptr) return "?";
    auto info = host::read_descriptor_info(*library.descriptor);
    return info.id.empty() ? "?" : info.id;
}

std::string Harness::plugin_version() const {
    if (library.descriptor == nullptr) return "?";
    auto info = host::read_descriptor_info(*library.descriptor);
    return info.version.empty() ? "?" : info.version;
}

host::RuntimeClient Harness::create_instance(const host::ConfigSection* section) const {
    return host::RuntimeClient::create(
        library.handle, library.descriptor, section != nullptr ? *section : config, library.path,
        "radial-conformance",
        [](std::uint32_t level, std::string_view m) { Harness::get().log(level, m); });
}

std::optional<std::string> Harness::gate_problem(Gate gate) {
    if (gate == Gate::none) return std::nullopt;
    {
        std::lock_guard lock(mutex_);
        auto it = gates_.find(gate);
        if (it != gates_.end()) return it->second;
    }
    std::optional<std::string> problem;
    switch (gate) {
        case Gate::none: break;
        case Gate::loaded:
            if (!library.problem.empty()) problem = library.problem;
            break;
        case Gate::usable:
            if (auto p = gate_problem(Gate::loaded)) {
                problem = p;
            } else if (std::string why = host::descriptor_problem(library.descriptor);
                       !why.empty()) {
                problem = "this host refuses the plugin: " + why;
            } else if (library.descriptor->struct_size < kDescriptorSize_1_0) {
                problem = "this host refuses the plugin: its descriptor is " +
                          std::to_string(library.descriptor->struct_size) +
                          " bytes, smaller than ABI 1.0's " + std::to_string(kDescriptorSize_1_0);
            }
            break;
        case Gate::created:
            if (auto p = gate_problem(Gate::usable)) {
                problem = p;
            } else if (auto why = try_create_and_destroy()) {
                problem = "create with the config section failed: " + *why;
            }
            break;
        case Gate::ready:
            if (auto p = gate_problem(Gate::created)) {
                problem = p;
            } else if (auto why = try_preflight()) {
                problem = "preflight failed: " + *why;
            }
            break;
    }
    std::lock_guard lock(mutex_);
    gates_[gate] = problem;
    return problem;
}

void Harness::note_label(const std::string& label) {
    std::lock_guard lock(mutex_);
    labels_.push_back(label);
}

ProbeResult Harness::probe(const std::string& prefix) const {
    using namespace std::chrono_literals;
    auto limit = std::min<std::chrono::milliseconds>(
        std::chrono::duration_cast<std::chrono::milliseconds>(options.budget), 30s);
    CommandResult c = run_command(options.verify_gone, {prefix}, limit);
    ProbeResult r;
    if (!c.problem.empty())
        r.problem = "the --verify-gone probe could not be started: " + c.problem;
    else if (!c.finished)
        r.problem = "the --verify-gone probe did not finish within " +
                    std::to_string(limit.count() / 1000) + " s";
    else if (c.status != 0)
        r.problem = "the --verify-gone probe exited with status " + std::to_string(c.status) +
                    (c.err.empty() ? "" : " (stderr: '" + c.err + "')");
    std::size_t at = 0;
    while (at < c.out.size()) {
        std::size_t nl = c.out.find('\n', at);
        std::string line = c.out.substr(at, nl == std::string::npos ? nl : nl - at);
        at = nl == std::string::npos ? c.out.size() : nl + 1;
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (!line.empty()) r.boxes.push_back(line);
    }
    return r;
}

std::vector<std::string> Harness::box_prefixes() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out{label_prefix};
    for (const auto& l : labels_)
        if (l.rfind(label_prefix, 0) != 0) out.push_back(l);
    return out;
}

ProbeResult Harness::probe_all() const {
    ProbeResult all;
    for (const auto& p : box_prefixes()) {
        ProbeResult r = probe(p);
        if (all.problem.empty()) all.problem = r.problem;
        for (auto& b : r.boxes)
            if (std::find(all.boxes.begin(), all.boxes.end(), b) == all.boxes.end())
                all.boxes.push_back(std::move(b));
    }
    return all;
}

std::vector<std::string> Harness::remove_leftovers() {
    using namespace std::chrono_literals;
    const auto limit = std::min<std::chrono::milliseconds>(
        std::chrono::duration_cast<std::chrono::milliseconds>(options.budget), 20s);
    std::vector<std::string> noted;
    {
        std::lock_guard lock(mutex_);
        noted = labels_;
    }
    if (noted.empty()) return {};
    const bool probing = !options.verify_gone.empty();
    std::vector<std::string> seen;
    if (probing) seen = probe_all().boxes;
    // The plugin's own view and kill, from a fresh instance (as a restarted host would), all on
    // one thread that is abandoned if the plugin hangs.
    const bool usable = library.descriptor != nullptr && library.problem.empty() &&
                        host::descriptor_problem(library.descriptor).empty();
    if (usable) {
        struct Outcome {
            bool listed = false;
        };
        auto call = PendingCall<Outcome>::start([prefixes = box_prefixes(), seen, noted] {
            Outcome o;
            auto client = std::make_shared<host::RuntimeClient>(Harness::get().create_instance());
            std::vector<std::string> targets = seen;
            o.listed = true;
            for (const auto& prefix : prefixes) {
                try {
                    for (auto& l : client->list_by_label(prefix)) targets.push_back(l);
                } catch (...) {
                    o.listed = false;
                    std::cerr << "radial-conformance: cleanup: list_by_label('" << prefix
                              << "') failed: " << describe_current_exception() << "\n";
                }
            }
            // Without the plugin's list or a probe, every label handed out is a candidate.
            if (!o.listed && seen.empty()) targets = noted;
            for (const auto& l : targets) {
                try {
                    client->kill(l);
                } catch (...) {
                    std::cerr << "radial-conformance: cleanup: kill('" << l
                              << "') failed: " << describe_current_exception() << "\n";
                }
            }
            return o;
        });
        (void)call.wait_for(limit);
    }
    if (!probing) return {};
    std::vector<std::string> left = probe_all().boxes;
    if (!options.cleanup.empty() && !left.empty()) {
        for (const auto& l : left) (void)run_command(options.cleanup, {l}, limit);
        left = probe_all().boxes;
    }
    return left;
}

std::vector<MarkedProcess> Harness::marked_leftovers(std::chrono::milliseconds grace) const {
    using namespace std::chrono_literals;
    if (!mark_boxes) return {};
    const auto deadline = std::chrono::steady_clock::now() + grace;
    for (;;) {
        auto found = marked_processes(label_prefix);
        if (found.empty() || std::chrono::steady_clock::now() >= deadline) return found;
        std::this_thread::sleep_for(50ms); // a bounded poll: the wait ends at the deadline
    }
}

std::size_t Harness::kill_marked() const {
    if (!mark_boxes) return 0;
    std::size_t n = 0;
    for (const auto& p : marked_processes(label_prefix))
        if (::kill(static_cast<pid_t>(p.pid), SIGKILL) == 0) ++n;
    if (n > 0) (void)marked_leftovers(std::chrono::seconds(10));
    return n;
}

void Harness::record(const std::string& check, CheckStatus status, const std::string& reason) {
    std::lock_guard lock(mutex_);
    results_.emplace_back(check, status);
    if (status == CheckStatus::skipped) skip_reasons_[check] = reason;
}

bool Harness::any_failed() const {
    std::lock_guard lock(mutex_);
    for (const auto& [name, status] : results_)
        if (status == CheckStatus::failed) return true;
    return false;
}

std::vector<std::string> Harness::absent_optional_calls() const {
    const radial_runtime_descriptor* d = library.descriptor;
    if (d == nullptr) return {};
    std::vector<std::string> absent;
    if (d->preflight == nullptr) absent.push_back("preflight");
    if (d->capabilities == nullptr) absent.push_back("capabilities");
    if (d->describe_spec == nullptr) absent.push_back("describe_spec");
    if (d->get_extension == nullptr) absent.push_back("get_extension");
    if (d->tcp_route == nullptr) absent.push_back("tcp_route");
    // inspect is ABI 1.1: a 1.0 descriptor has no such field.
    const bool has_inspect =
        d->abi_minor >= 1 &&
        d->struct_size >= offsetof(radial_runtime_descriptor, inspect) + sizeof(void*) &&
        d->inspect != nullptr;
    if (!has_inspect) absent.push_back("inspect");
    return absent;
}

std::string Harness::verdict_line(const std::string& hung_check) const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> failed, skipped;
    for (const auto& [name, status] : results_) {
        if (status == CheckStatus::failed) failed.push_back(name);
        if (status == CheckStatus::skipped) skipped.push_back(name);
    }
    if (!hung_check.empty()) failed.push_back(hung_check);
    std::string head = "radial-conformance: " + std::string(failed.empty() ? "PASS" : "FAIL") +
                       " " + plugin_id() + " " + plugin_version();
    if (!failed.empty()) {
        std::string tail = "failed: " + join(failed);
        if (!hung_check.empty())
            tail += "; hung in " + hung_check + ", the remaining checks did not run";
        return head + " (" + tail + ")";
    }
    std::size_t n = results_.size();
    std::string tail = std::to_string(n) + (n == 1 ? " check" : " checks");
    tail += ", " + std::to_string(skipped.size()) + " skipped";
    if (!skipped.empty()) tail += ": " + join(skipped);
    // A check of an optional call the plugin lacks passes without probing anything: "0 skipped"
    // must not read as "everything was probed".
    if (auto absent = absent_optional_calls(); !absent.empty())
        tail += "; absent optional calls: " + join(absent);
    return head + " (" + tail + ")";
}

void Harness::log(std::uint32_t level, std::string_view message) {
    static constexpr const char* kLevels[] = {"debug", "info", "warn", "error"};
    std::lock_guard lock(mutex_);
    if (log_.size() >= 200) log_.erase(log_.begin()); // bounded: a chatty plugin is not a leak
    log_.push_back(std::string(level < 4 ? kLevels[level] : "log") + ": " + std::string(message));
}

std::vector<std::string> Harness::take_log() {
    std::lock_guard lock(mutex_);
    return std::exchange(log_, {});
}

void Harness::set_current_check(const std::string& check) {
    std::lock_guard lock(mutex_);
    current_check_ = check;
    std::snprintf(g_crash_check, sizeof g_crash_check, "%s", check.c_str());
}

void Harness::divert_stdio(int fd) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    std::lock_guard lock(stdio_mutex_);
    if (saved_stdout_ >= 0) return;
    saved_stdout_ = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    saved_stderr_ = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    g_report_fd = saved_stdout_;
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
}

void Harness::restore_stdio() {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    std::lock_guard lock(stdio_mutex_);
    if (saved_stdout_ < 0) return;
    g_report_fd = STDOUT_FILENO;
    ::dup2(saved_stdout_, STDOUT_FILENO);
    ::dup2(saved_stderr_, STDERR_FILENO);
    ::close(saved_stdout_);
    ::close(saved_stderr_);
    saved_stdout_ = saved_stderr_ = -1;
}

void Harness::hang(const std::string& what) {
    // One report: a second caller (a watchdog racing the check's thread) waits for the exit.
    static std::atomic<bool> hanging{false};
    if (hanging.exchange(true))
        for (;;) ::pause();
    restore_stdio(); // a check may have diverted stdout: the report must be seen
    std::string check;
    {
        std::lock_guard lock(mutex_);
        check = current_check_.empty() ? "loading" : current_check_;
    }
    std::cout << "[  HUNG    ] " << check << ": " << what << "\n"
              << "[  HUNG    ] " << check
              << ": the call is still running on its own thread; ending the harness so that it "
                 "does not hang too\n"
              << std::flush;
    std::vector<std::string> left = remove_leftovers();
    if (!options.verify_gone.empty()) {
        if (left.empty()) {
            std::cout << "[  HUNG    ] no box labelled '" << label_prefix << "*'";
            auto prefixes = box_prefixes();
            for (std::size_t i = 1; i < prefixes.size(); ++i)
                std::cout << (i == 1 ? " (nor '" : ", '") << prefixes[i] << "*'"
                          << (i + 1 == prefixes.size() ? ")" : "");
            std::cout << " is left (the --verify-gone probe shows none)\n";
        }
        for (const auto& l : left)
            std::cout << "[  LEFT    ] the box '" << l
                      << "' is still there; remove it by hand (--cleanup COMMAND does it)\n";
    } else {
        std::cout << "[  HUNG    ] the harness asked the plugin to kill every box labelled '"
                  << label_prefix
                  << "*'; without --verify-gone it cannot tell whether any is left\n";
    }
    for (const auto& p : marked_leftovers(std::chrono::milliseconds(0)))
        std::cout << "[  LEFT    ] process " << p.pid << " ('" << p.cmdline
                  << "') carries this run's " << kMarkName << "; the harness kills it\n";
    (void)kill_marked();
    std::cout << verdict_line(check) << std::endl;
    std::fflush(stdout);
    ::_exit(3);
}

void Harness::install_crash_handlers() {
    std::snprintf(g_crash_prefix, sizeof g_crash_prefix, "radial-conformance: FAIL %s %s",
                  plugin_id().c_str(), plugin_version().c_str());
    struct sigaction sa {};
    sa.sa_handler = &crash_handler;
    sa.sa_flags = SA_RESETHAND;
    ::sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::sigaction(sig, &sa, nullptr);
}

} // namespace radial::conformance
