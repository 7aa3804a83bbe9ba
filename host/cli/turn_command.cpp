#include "cli/turn_command.h"

#include "cli/runtime_setup.h"
#include "log/logger.h"
#include "turn/turn_request.h"
#include "turn/turn_runner.h"

#include <fcntl.h>
#include <radial/units.hpp>
#include <unistd.h>

#include <csignal>
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

// Writes the record next to its destination, then renames it into place, so a reader never sees
// half a record.
void write_record(const std::string& path, const std::string& json) {
    std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << json << '\n';
        out.flush();
        if (!out) throw std::runtime_error(fmt::format("writing record file '{}' failed", tmp));
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw std::runtime_error(fmt::format("renaming '{}' to '{}': {}", tmp, path, ec.message()));
}

// SIGINT/SIGTERM arrive on a pipe, read by a thread that interrupts the turn: the handler itself
// only writes one byte (async-signal-safe).
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
        req.turn_id = o.turn_id.value_or(turn::new_turn_id());
        req.image = o.image;
        req.argv = o.argv;
        req.workspace = o.workspace.value_or("");
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
    } catch (const config::ConfigError& e) {
        log::error("config", "{}", e.what());
        return 125;
    } catch (const turn::RequestError& e) {
        log::error("turn", "{}", e.what());
        return 125;
    }

    ContainerSpec spec;
    try {
        spec = turn::build_container_spec(req, cfg);
    } catch (const turn::RequestError& e) {
        log::error("turn", "{}", e.what());
        return 125;
    }

    std::optional<host::RuntimeClient> client;
    try {
        client.emplace(open_runtime(cfg));
    } catch (const StartupError& e) {
        log::error("loader", "{}", e.what());
        return 125;
    }

    turn::TurnRunner runner(*client, spec, req.turn_id);

    // Ctrl-C or SIGTERM kills the box rather than leaving it running.
    if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) {
        log::error("turn", "creating the signal pipe failed: {}", std::strerror(errno));
        return 125;
    }
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    std::atomic<bool> interrupted{false};
    std::thread signal_thread([&] {
        char b = 0;
        while (::read(g_signal_pipe[0], &b, 1) == 1) {
            if (b == 0) return; // the turn is over
            if (!interrupted.exchange(true)) {
                log::warn("turn", "turn {}: interrupted; killing its box", req.turn_id);
                runner.interrupt();
            }
        }
    });

    turn::TerminalRecord rec = runner.run([](std::uint32_t stream, std::string_view bytes) {
        write_all(stream == RADIAL_STREAM_STDERR ? STDERR_FILENO : STDOUT_FILENO, bytes);
        return true;
    });

    char stop = 0;
    [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &stop, 1);
    signal_thread.join();
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);

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
