#include "cli/turn_command.h"

#include "cli/runtime_setup.h"
#include "config/instance_id.h"
#include "daemon/state_dir_lock.h"
#include "log/logger.h"
#include "journal/journal_sqlite.h"
#include "log/log_redaction.h"
#include "turn/turn_request.h"
#include "turn/turn_session.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <radial/units.hpp>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace radial::cli {
namespace {

bool valid_env_name(std::string_view n) {
    if (n.empty() || (n[0] >= '0' && n[0] <= '9')) return false;
    for (char c : n)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    return true;
}

void write_all(int fd, std::string_view s) {
    while (!s.empty()) {
        ssize_t n = ::write(fd, s.data(), s.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return; // the terminal went away; the turn goes on and its record still gets written
        }
        s.remove_prefix(static_cast<std::size_t>(n));
    }
}

// Writes the record to a fresh temporary file beside its destination (created exclusively, so a
// planted symlink is never followed), then renames it into place: a reader never sees half a
// record. Throws std::runtime_error naming the path.
void write_record(const std::string& path, const std::string& json) {
    namespace fs = std::filesystem;
    fs::path dest(path);
    fs::path dir = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
    std::string tmpl = (dir / ("." + dest.filename().string() + ".XXXXXX")).string();
    int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd < 0)
        throw std::runtime_error(fmt::format("writing record file '{}': {}", path, std::strerror(errno)));
    std::string text = json + "\n";
    bool ok = ::fchmod(fd, 0644) == 0;
    std::string_view rest(text);
    while (ok && !rest.empty()) {
        ssize_t n = ::write(fd, rest.data(), rest.size());
        if (n < 0 && errno == EINTR) continue;
        ok = n > 0;
        if (ok) rest.remove_prefix(static_cast<std::size_t>(n));
    }
    ok = ok && ::fsync(fd) == 0;
    int err = errno;
    ::close(fd);
    std::error_code ec;
    if (ok) fs::rename(tmpl, dest, ec);
    if (!ok || ec) {
        fs::remove(tmpl, ec);
        throw std::runtime_error(fmt::format("writing record file '{}': {}", path,
                                             ok ? ec.message() : std::strerror(err)));
    }
}

// Checked before any box starts: a record that cannot be written must not cost a turn.
void check_record_dir(const std::string& path) {
    namespace fs = std::filesystem;
    fs::path dest(path);
    fs::path dir = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
    std::error_code ec;
    if (!fs::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0)
        throw turn::RequestError(fmt::format(
            "--record-file '{}': its directory '{}' does not exist or is not writable", path, dir.string()));
    if (fs::is_directory(dest, ec))
        throw turn::RequestError(fmt::format("--record-file '{}' is a directory", path));
}

// A terminal record for a turn that failed before its box could run (bad config, no plugin, no
// engine): the operator who asked for a record gets one either way.
void write_early_record(const TurnOptions& o, const std::string& turn_id, const std::string& runtime,
                        const std::string& message) {
    if (!o.record_file) return;
    turn::TerminalRecord rec;
    rec.turn_id = turn_id;
    rec.runtime = runtime;
    rec.image = o.image;
    rec.status = turn::TurnStatus::error;
    rec.error = message;
    rec.started_at = rec.ended_at = std::chrono::system_clock::now();
    try {
        write_record(*o.record_file, rec.to_json());
    } catch (const std::exception& e) {
        log::error("turn", "{}", e.what());
    }
}

// SIGINT, SIGTERM, SIGHUP and SIGQUIT arrive on a pipe, read by a thread that interrupts the
// turn: the handler itself only writes one byte (async-signal-safe). A closed terminal (SIGHUP)
// must kill the box like Ctrl-C, not orphan it.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
int g_signal_pipe[2] = {-1, -1};
extern "C" void on_signal(int) {
    char b = 1;
    [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &b, 1);
}

} // namespace

CLI::App* add_turn_command(CLI::App& app, TurnOptions& o) {
    auto* cmd = app.add_subcommand("turn", "Run one turn in a box and report how it ended");
    cmd->add_option("--config", o.config_file, "Config file (TOML)")->check(CLI::ExistingFile);
    cmd->add_option("--runtime", o.runtime, "Runtime id, overriding run.containerRuntime");
    cmd->add_option("--image", o.image, "Image (or template) to run")->required();
    cmd->add_option("--workspace", o.workspace, "Host directory mounted read-write at /work (the workdir)");
    cmd->add_option("--env", o.env, "NAME=VALUE for the box (not secret; visible in radiald's argv)")
        ->allow_extra_args(false);
    cmd->add_option("--secret", o.secrets,
                    "NAME of a variable in radiald's environment passed to the box as a secret")
        ->allow_extra_args(false);
    cmd->add_option("--timeout", o.timeout, "Turn timeout, e.g. 90s, 5m, 1500ms (default: none)");
    cmd->add_option("--record-file", o.record_file, "Write the terminal record (JSON) here");
    cmd->add_option("--turn-id", o.turn_id, "Turn id (a-z, 0-9, '-'); default: generated");
    cmd->add_option("--record-type", o.record_type,
                    "The only record type the box may post to its turn socket")
        ->capture_default_str();
    cmd->add_option("argv", o.argv, "The command to run in the box, after '--'")->required();
    cmd->footer("Exit status: the turn's own exit code; 124 when it timed out; 125 when the host "
                "or runtime failed; 130 when interrupted.");
    return cmd;
}

int run_turn_command(const TurnOptions& o) {
    turn::TurnRequest req;
    config::HostConfig cfg;
    try {
        cfg = config::load(o.config_file, o.runtime, executable_dir());
        config::settle_instance_id(cfg);
        req.turn_id = o.turn_id.value_or(turn::new_turn_id());
        turn::validate_turn_id(req.turn_id);
        req.image = o.image;
        req.argv = o.argv;
        req.workspace = o.workspace.value_or("");
        req.record_type = o.record_type;
        if (o.timeout) {
            auto ms = units::parse_duration_ms(*o.timeout);
            if (!ms || *ms == 0)
                throw turn::RequestError(fmt::format(
                    "--timeout '{}' is not a duration; write e.g. 90s, 5m or 1500ms", *o.timeout));
            req.timeout_ms = *ms;
        }
        for (const auto& e : o.env) {
            auto eq = e.find('=');
            std::string name = e.substr(0, eq);
            if (eq == std::string::npos || !valid_env_name(name))
                throw turn::RequestError(fmt::format(
                    "--env '{}' must be NAME=VALUE with NAME matching [A-Za-z_][A-Za-z0-9_]*", name));
            req.env.push_back({name, e.substr(eq + 1), false});
        }
        for (const auto& name : o.secrets) {
            if (!valid_env_name(name))
                throw turn::RequestError(fmt::format(
                    "--secret '{}' must be a variable NAME matching [A-Za-z_][A-Za-z0-9_]*", name));
            const char* value = std::getenv(name.c_str());
            if (value == nullptr)
                throw turn::RequestError(fmt::format(
                    "--secret {}: '{}' is not set in radiald's environment; export it first", name, name));
            req.env.push_back({name, value, true});
        }
        if (o.record_file) check_record_dir(*o.record_file);
    } catch (const config::ConfigError& e) {
        log::error("config", "{}", e.what());
        write_early_record(o, req.turn_id, cfg.container_runtime, e.what());
        return 125;
    } catch (const turn::RequestError& e) {
        log::error("turn", "{}", e.what());
        if (o.record_file && std::string_view(e.what()).find("--record-file") == std::string_view::npos)
            write_early_record(o, req.turn_id, cfg.container_runtime, e.what());
        return 125;
    }

    // Shared: turns side by side are fine, but not beside a daemon or reconcile on this state
    // directory, whose startup pass would take this turn's box for an orphan (issue 5 §3).
    std::optional<daemon::StateDirLock> lock;
    try {
        lock.emplace(daemon::StateDirLock::acquire(
            cfg.state_dir, daemon::StateDirLock::Mode::shared, "radiald turn"));
    } catch (const daemon::LockError& e) {
        log::error("turn", "{}", e.what());
        write_early_record(o, req.turn_id, cfg.container_runtime, e.what());
        return 125;
    }

    log::install_log_redaction();
    std::optional<host::RuntimeClient> client;
    std::optional<turn::TurnEnvironment> env;
    std::unique_ptr<journal::Journal> journal;
    std::optional<turn::TurnSession> session;
    try {
        auto checked = open_checked_runtime(cfg);
        client.emplace(std::move(checked.client));
        auto transport = checked.transport;
        journal = journal::open_sqlite_journal(journal_path(cfg));
        env.emplace(turn::TurnEnvironment{cfg, *client, *journal, transport});
        session.emplace(*env, req);
    } catch (const StartupError& e) {
        log::error("loader", "{}", e.what());
        write_early_record(o, req.turn_id, cfg.container_runtime, e.what());
        return 125;
    } catch (const journal::JournalError& e) {
        log::error("journal", "{}", e.what());
        write_early_record(o, req.turn_id, cfg.container_runtime, e.what());
        return 125;
    } catch (const turn::RequestError& e) {
        log::error("turn", "{}", e.what());
        write_early_record(o, req.turn_id, cfg.container_runtime, e.what());
        return 125;
    }

    // Ctrl-C or SIGTERM kills the box rather than leaving it running.
    if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) {
        log::error("turn", "creating the signal pipe failed: {}", std::strerror(errno));
        return 125;
    }
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig : kStopSignals) ::sigaction(sig, &sa, nullptr);
    std::atomic<bool> interrupted{false};
    std::thread signal_thread([&] {
        char b = 0;
        while (::read(g_signal_pipe[0], &b, 1) == 1) {
            if (b == 0) return; // the turn is over
            if (!interrupted.exchange(true)) {
                log::warn("turn", "turn {}: interrupted; killing its box", session->turn_id());
                session->interrupt();
            }
        }
    });
    auto stop_signal_thread = [&] {
        char stop = 0;
        [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &stop, 1);
        signal_thread.join();
        for (int sig : kStopSignals) ::signal(sig, SIG_DFL);
    };

    turn::TerminalRecord rec;
    try {
        rec = session->run([](std::uint32_t stream, std::string_view bytes) {
            write_all(stream == RADIAL_STREAM_STDERR ? STDERR_FILENO : STDOUT_FILENO, bytes);
        });
    } catch (const std::exception& e) {
        stop_signal_thread();
        log::error("journal", "turn {}: {}", session->turn_id(), e.what());
        return 125;
    }
    stop_signal_thread();

    if (o.record_file) {
        try {
            write_record(*o.record_file, rec.to_json());
        } catch (const std::exception& e) {
            log::error("turn", "turn {}: {}", req.turn_id, e.what());
            return 125;
        }
    }
    if (interrupted) return 130;
    return rec.cli_exit_status();
}

} // namespace radial::cli
