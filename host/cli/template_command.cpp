#include "cli/template_command.h"

#include <fmt/format.h>
#include <poll.h>
#include <radial/internal/temp_dir.h>
#include <radial/support/cli_capture.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <radial/host/template_client.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "cli/config_file.h"
#include "cli/exit_status.h"
#include "cli/runtime_setup.h"
#include "cli/standard_output.h"
#include "config/bounded_units.h"
#include "config/host_config.h"
#include "daemon/stop_signals.h"
#include "fs/held_temp_dir.h"
#include "isolation/descendant_processes.h"
#include "log/logger.h"
#include "turn/request_policy.h"

namespace radial::cli {
namespace {

namespace fs = std::filesystem;
using Ms = std::chrono::milliseconds;

constexpr std::uint64_t kDefaultBudgetMs = 30 * 60 * 1000;     // an image of several GiB
constexpr std::uint64_t kMaxBudgetMs = 24ull * 60 * 60 * 1000; // a day
// How long past the budget the command waits for a runtime's load that should have ended by
// itself at the budget (the plugin keeps it), before it gives up on it.
constexpr auto kLoadGrace = std::chrono::seconds(10);

// Exporting the template failed (docker, the runtime, the archive): one line naming the step; the
// caller prefixes the image.
class ExportError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The export's one budget (--timeout), shared by its steps. Real time: the steps are external
// processes on real files, and this command runs in a process of its own (docs/design.md §12.7).
class Budget {
public:
    explicit Budget(std::uint64_t ms)
        : total_ms_(ms), deadline_(std::chrono::steady_clock::now() + Ms(ms)) {}
    // What is left, at least 1 ms (a step asked with nothing left fails at once on its own).
    Ms remaining() const {
        const auto left =
            std::chrono::duration_cast<Ms>(deadline_ - std::chrono::steady_clock::now());
        return std::max(left, Ms(1));
    }
    bool expired() const { return std::chrono::steady_clock::now() >= deadline_; }
    // The error for a step that ran past the budget; `step` says which.
    ExportError exceeded(const std::string& step) const {
        return ExportError(
            fmt::format("{} did not finish within the export's budget of {} and "
                        "was stopped; give it longer with --timeout",
                        step, config::duration_text(total_ms_)));
    }

private:
    std::uint64_t total_ms_;
    std::chrono::steady_clock::time_point deadline_;
};

// A private directory under $TMPDIR for the archive, removed with everything in it when the command
// ends — and by the next export when a killed one left it (fs/held_temp_dir.h). Throws ExportError
// naming the path.
fs_util::HeldTempDir archive_dir() {
    try {
        std::size_t removed = 0;
        fs_util::HeldTempDir dir(internal::TempDir::default_root(), "radial-template-", &removed);
        if (removed > 0)
            log::info("template", "removed {} archive director{} an export that was killed left",
                      removed, removed == 1 ? "y" : "ies");
        return dir;
    } catch (const internal::TempDirError& e) {
        throw ExportError(e.what());
    }
}

// `exe` looked up in PATH when it has no '/' (always absolute). Throws ExportError naming the flag.
std::string find_program(const std::string& exe, const char* flag) {
    const fs::path found = plugin_support::ChildProcess::find_program(exe);
    if (found.empty())
        throw ExportError(
            fmt::format("'{}' is not in PATH; install it or give its path with {}", exe, flag));
    return found.string();
}

// Waits up to `wait` for a stop signal (Ctrl-C, SIGTERM, a closed terminal); its number, or 0.
int wait_for_stop(daemon::StopSignals& signals, Ms wait) {
    pollfd p{signals.fd(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) > 0)
        for (const int signo : signals.take_each()) return signo;
    return 0;
}

ExportError interrupted(const std::string& step, int signo) {
    return ExportError(fmt::format("{} was stopped: interrupted by signal {} ({})", step, signo,
                                   ::strsignal(signo)));
}

// Runs `docker` with `args` to its end within what is left of the export's budget, with this
// command's environment (DOCKER_HOST, ...), calling `tick` about every 250 ms. Past the budget,
// or at a stop signal, the client's process group is killed and reaped and budget.exceeded(step)
// or interrupted() is thrown; so is ExportError when it cannot be started.
plugin_support::CliOutput run_step(const std::string& docker, const std::vector<std::string>& args,
                                   const Budget& budget, daemon::StopSignals& signals,
                                   const std::string& step, std::function<void()> tick = {}) {
    plugin_support::CaptureOptions options;
    options.cancel_fd = signals.fd();
    options.missing_fix = "install the docker CLI or give its path with --docker";
    options.tick = std::move(tick);
    plugin_support::CliOutput done;
    try {
        done = plugin_support::capture_cli(docker, args, plugin_support::own_environment(),
                                           budget.remaining(), options);
    } catch (const std::exception& e) {
        throw ExportError(fmt::format("{} could not run: {}", step, e.what()));
    }
    if (done.cancelled) {
        const std::vector<int> taken = signals.take_each();
        if (taken.empty()) throw ExportError(fmt::format("{} was stopped: interrupted", step));
        throw interrupted(step, taken.front());
    }
    if (done.timed_out) throw budget.exceeded(step);
    return done;
}

// How a client's end reads in a message: "exit 3" or "signal 9".
std::string ending_text(const plugin_support::ExitStatus& status) {
    return status.exited ? fmt::format("exit {}", status.code)
                         : fmt::format("signal {}", status.signal);
}

// Why `image` cannot name a template ("" when it can): a template is known by the name the
// archive carries, which `docker image save` writes only for a NAME[:TAG] — an image id or a
// digest gives an archive of no name, which no run could name. A word starting with '-' would be
// read by docker as an option.
std::string template_image_problem(const std::string& image) {
    const std::string fix = "name it as REPOSITORY:TAG, as 'docker image ls' shows it";
    if (image.empty() || image.front() == '-' || !turn::valid_image_reference(image))
        return fmt::format("IMAGE '{}' is not an image reference ([DOMAIN/]NAME[:TAG]); {}", image,
                           fix);
    if (image.find('@') != std::string::npos)
        return fmt::format(
            "IMAGE '{}' names a digest, and a template made from it would have no name; {}", image,
            fix);
    const bool hex = image.size() >= 12 && image.size() <= 64 &&
                     std::all_of(image.begin(), image.end(), [](char c) {
                         return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                     });
    if (hex)
        return fmt::format(
            "IMAGE '{}' looks like an image id, and a template made from it would have no name; "
            "{}",
            image, fix);
    return {};
}

// `docker image inspect` of `image`: its size in bytes. Throws ExportError when the image is not
// local.
std::uintmax_t image_size(const std::string& docker, const std::string& image, const Budget& budget,
                          daemon::StopSignals& signals) {
    const plugin_support::CliOutput done =
        run_step(docker, {"image", "inspect", "--format", "{{.Size}}", "--", image}, budget,
                 signals, fmt::format("'{} image inspect'", docker));
    if (!done.ok()) {
        std::string message, line;
        std::istringstream in(done.out + done.err);
        while (std::getline(in, line))
            if (!line.empty() && line != "[]") message += (message.empty() ? "" : "; ") + line;
        throw ExportError(fmt::format(
            "image '{}' is not in the local Docker Engine ({}); build it (or pull it) first", image,
            message.empty() ? ending_text(done.status) : message));
    }
    return std::strtoull(done.out.c_str(), nullptr, 10);
}

std::string mib(std::uintmax_t bytes) { return fmt::format("{:.1f} MiB", bytes / 1048576.0); }

// Refuses a save the archive's file system has no room for: the archive is about the image's
// size, and a save into a small TMPDIR ran until ENOSPC before it said so.
void check_room(const fs::path& dir, std::uintmax_t size) {
    struct statvfs fs {};
    if (size == 0 || ::statvfs(dir.c_str(), &fs) != 0) return; // not known: the save will say
    const std::uintmax_t free = std::uintmax_t{fs.f_bavail} * fs.f_frsize;
    if (free >= size) return;
    throw ExportError(fmt::format(
        "the archive of the image needs about {}, and '{}' has {} free; point TMPDIR at a file "
        "system with room for it",
        mib(size), dir.parent_path().string(), mib(free)));
}

// The bytes written under `dir` so far: `docker image save -o` writes a temporary file beside the
// archive and renames it at the end, so the archive's own size says nothing until then.
std::uintmax_t bytes_under(const fs::path& dir) {
    std::uintmax_t n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file(ec)) n += e.file_size(ec);
    return n;
}

// `docker image save`, showing how much of the image is written: a line that rewrites itself on a
// terminal, a line at each quarter otherwise (logs).
void save_image(const std::string& docker, const std::string& image, std::uintmax_t size,
                const fs::path& archive, const Budget& budget, daemon::StopSignals& signals) {
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    int quarters = 0;
    const std::string step = fmt::format("saving image '{}' with '{} image save'", image, docker);
    const plugin_support::CliOutput done = run_step(
        docker, {"image", "save", "-o", archive.string(), "--", image}, budget, signals, step, [&] {
            const auto written = bytes_under(archive.parent_path());
            if (size == 0) return;
            if (tty) {
                fmt::print(stderr, "\rsaving '{}': {} of about {}", image, mib(written), mib(size));
            } else if (quarters < 3 &&
                       written * 4 >= size * static_cast<std::uintmax_t>(quarters + 1)) {
                fmt::print(stderr, "saving '{}': {} of about {}\n", image, mib(written), mib(size));
                quarters = static_cast<int>(std::min<std::uintmax_t>(3, written * 4 / size));
            }
        });
    if (tty) fmt::print(stderr, "\n");
    if (!done.ok()) {
        std::string message, line;
        std::istringstream in(done.err);
        while (std::getline(in, line)) message += (message.empty() ? "" : " ") + line;
        throw ExportError(
            fmt::format("{} failed ({}): {}", step, ending_text(done.status), message));
    }
    std::error_code ec;
    const std::uintmax_t saved = fs::file_size(archive, ec);
    if (ec)
        throw ExportError(fmt::format("{} ended well but wrote no archive at '{}' ({})", step,
                                      archive.string(), ec.message()));
    fmt::print(stderr, "saved '{}': {}\n", image, mib(saved));
}

// The selected runtime's template store. Throws ExportError when the runtime keeps none.
host::TemplateClient template_store(const host::RuntimeClient& client) {
    if (auto store = host::TemplateClient::of(client)) return *store;
    throw ExportError(fmt::format(
        "runtime '{}' (run.containerRuntime) keeps no template store of its own: it does not "
        "offer the extension {}, and its runs name a local image as it is; template export is "
        "for a runtime that does, such as run.containerRuntime = \"sandbox\"",
        client.info().id, RADIAL_TEMPLATE_EXTENSION_ID));
}

// The runtime's load of the archive, on a thread of its own: a plugin call cannot be interrupted,
// and the command must still end at a stop signal or when a runtime overruns the budget it was
// given (it keeps the budget itself; kLoadGrace is for one that does not).
struct Load {
    std::mutex mutex;
    bool done = false;
    std::exception_ptr error;
};

// Loads `archive` into `store` within `budget`. Returns when the load ended (rethrowing its
// error, a RADIAL_E_TIMEOUT as budget.exceeded). At a stop signal, or kLoadGrace past the budget,
// the archive's directory `dir` is removed, every process the command started is killed (what the
// runtime started for the load among them), and the process ends here (exit status 1): a plugin
// call cannot be interrupted, and an export must not outlive Ctrl-C or its budget by more than
// the grace.
void load_or_give_up(const host::TemplateClient& store, const std::string& runtime_id,
                     const fs::path& archive, const fs::path& dir, const Budget& budget,
                     daemon::StopSignals& signals) {
    const std::string step = fmt::format("loading it into runtime '{}'", runtime_id);
    auto load = std::make_shared<Load>();
    std::thread([load, held = std::optional<host::TemplateClient>(store), path = archive.string(),
                 ms = budget.remaining()]() mutable {
        std::exception_ptr error;
        try {
            held->load(path, ms);
        } catch (...) {
            error = std::current_exception();
        }
        // Its hold on the runtime goes before it says it is done: ending the runtime is the
        // command's, on its own thread.
        held.reset();
        std::lock_guard lock(load->mutex);
        load->done = true;
        load->error = error;
    }).detach();
    // Real time, for a real plugin call (docs/design.md §12.7).
    const auto give_up = std::chrono::steady_clock::now() + budget.remaining() + kLoadGrace;
    std::string why;
    while (why.empty()) {
        {
            std::lock_guard lock(load->mutex);
            if (load->done) break;
        }
        if (const int signo = wait_for_stop(signals, Ms(100)))
            why = interrupted(step, signo).what();
        else if (std::chrono::steady_clock::now() >= give_up)
            why = fmt::format(
                "{}: the runtime did not return within the export's budget and "
                "{} s more; radiald gives up on it",
                step, std::chrono::duration_cast<std::chrono::seconds>(kLoadGrace).count());
    }
    if (!why.empty()) {
        std::error_code ec;
        fs::remove_all(dir, ec);
        isolation::kill_descendants();
        log::error("template",
                   "{}; the archive was removed, and what the runtime started for it "
                   "ended",
                   why);
        exit_now(kExitFailed);
    }
    if (!load->error) return;
    try {
        std::rethrow_exception(load->error);
    } catch (const host::RuntimeError& e) {
        if (e.code() == RADIAL_E_TIMEOUT) throw budget.exceeded(step);
        throw;
    }
}

} // namespace

CLI::App* add_template_export_command(CLI::App& app, TemplateOptions& o) {
    auto* tmpl = app.add_subcommand("template", "Templates of runtimes that keep their own images");
    tmpl->require_subcommand(1);
    auto* cmd = tmpl->add_subcommand(
        "export",
        "Make a local Docker image a template of the selected runtime (docker image save, then "
        "the runtime's own load: sbx template load for the sandbox runtime)");
    cmd->add_option("--config", o.config_file,
                    "Config file (TOML): run.containerRuntime and its section")
        ->check(CLI::ExistingFile);
    cmd->add_option("--docker", o.docker_binary, "The docker CLI (default: docker in PATH)");
    cmd->add_option("--timeout", o.timeout,
                    "Budget for the whole export, e.g. 10m, 90s (default: 30m)");
    cmd->add_option("IMAGE", o.image, "The image, as the local Docker Engine names it")->required();
    return cmd;
}

int run_template_export_command(const TemplateOptions& o) {
    std::uint64_t budget_ms = kDefaultBudgetMs;
    if (o.timeout) {
        if (auto problem =
                config::duration_problem(*o.timeout, budget_ms, 1000, kMaxBudgetMs, "10m or 90s");
            !problem.empty()) {
            log::error("template", "--timeout {}", problem);
            return kExitUsage;
        }
    }
    if (const std::string problem = template_image_problem(o.image); !problem.empty()) {
        log::error("template", "{}", problem);
        return kExitUsage;
    }
    config::HostConfig cfg;
    try {
        cfg = load_config(o.config_file);
    } catch (const config::ConfigError& e) {
        return report_error(e, CommandKind::other, "template");
    }
    // What the runtime's children leave behind is reparented here, where kill_descendants finds it.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    try {
        // No preflight yet: a runtime without a store is refused before the engine is asked.
        host::RuntimeClient client = open_runtime(cfg, /*preflight=*/false);
        const host::TemplateClient store = template_store(client);
        const std::string docker = find_program(o.docker_binary.value_or("docker"), "--docker");
        // Ctrl-C, SIGTERM or a closed terminal stop the step under way; the archive goes with it.
        daemon::StopSignals signals({SIGINT, SIGTERM, SIGHUP, SIGQUIT});
        const Budget budget(budget_ms);
        const fs_util::HeldTempDir dir = archive_dir();
        const std::uintmax_t size = image_size(docker, o.image, budget, signals);
        client.preflight(); // under the runtime's own call deadline, then checked against ours
        if (budget.expired()) throw budget.exceeded("the runtime's preflight");
        const fs::path archive = dir.path() / "template.tar";
        check_room(dir.path(), size);
        save_image(docker, o.image, size, archive, budget, signals);
        load_or_give_up(store, client.info().id, archive, dir.path(), budget, signals);
        fmt::print("template '{}' loaded into runtime '{}'; a run names it as its image\n", o.image,
                   client.info().id);
        return kExitOk;
    } catch (const std::exception& e) {
        log::error("template", "exporting '{}': {}", o.image, e.what());
        return exit_status_for(e, CommandKind::other);
    }
}

} // namespace radial::cli
