#include "docker_cli.h"

#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <boost/process/search_path.hpp>
#include <cerrno>
#include <cstring>
#include <radial/plugin/runtime.hpp>

#include "cli_text.h"

namespace radial::docker {

namespace {

using radial::plugin::Error;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxOut = 16u << 20;
constexpr std::size_t kMaxErr = 64u << 10;
constexpr auto kDrainAfterExit = std::chrono::seconds(1);

// Reads what is available on `fd` into `sink`; closes `fd` at EOF or on error.
void drain_into(UniqueFd& fd, std::string& sink, std::size_t cap, bool keep_tail) {
    char buf[16384];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n > 0) {
            if (keep_tail) {
                sink.append(buf, static_cast<std::size_t>(n));
                if (sink.size() > cap) sink.erase(0, sink.size() - cap);
            } else if (sink.size() < cap) {
                sink.append(buf, std::min(static_cast<std::size_t>(n), cap - sink.size()));
            }
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        fd.reset(); // EOF or a read error: nothing more will come
        return;
    }
}

bool only_gone_errors(std::string_view err) {
    bool any = false;
    while (!err.empty()) {
        std::size_t end = err.find('\n');
        std::string_view line = err.substr(0, end);
        err.remove_prefix(end == std::string_view::npos ? err.size() : end + 1);
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        any = true;
        if (line.find("No such container") == std::string_view::npos &&
            line.find("is already in progress") == std::string_view::npos)
            return false;
    }
    return any;
}

std::string ids_text(const std::vector<std::string>& ids) {
    std::string out;
    for (const auto& id : ids) out += (out.empty() ? "'" : ", '") + id.substr(0, 12) + "'";
    return out;
}

} // namespace

EnvMap parent_client_env() {
    EnvMap env;
    for (std::string_view name : kClientPassthroughEnv)
        if (const char* value = ::getenv(std::string(name).c_str())) env[std::string(name)] = value;
    return env;
}

std::filesystem::path DockerCli::executable() const {
    const std::string& binary = settings_.binary;
    std::filesystem::path path;
    if (binary.find('/') != std::string::npos)
        path = binary;
    else
        path = boost::process::search_path(binary).string();
    if (path.empty() || ::access(path.c_str(), X_OK) != 0)
        throw Error(RADIAL_E_UNAVAILABLE, "binary",
                    "starting the docker CLI '" + binary + "': " +
                        (path.empty() ? std::string("not found in PATH")
                                      : "'" + path.string() + "' is not an executable file") +
                        "; install the docker CLI or set run.docker.binary");
    return path;
}

CliOutput DockerCli::capture(const std::vector<std::string>& argv,
                             std::chrono::milliseconds budget) const {
    auto deadline = Clock::now() + budget;
    std::vector<std::string> args(argv.begin() + 1, argv.end());
    ChildProcess child = ChildProcess::start(executable(), args, parent_client_env());
    CliOutput result;
    auto drained_by = Clock::time_point::max();
    for (;;) {
        auto& out = child.stdout_pipe();
        auto& err = child.stderr_pipe();
        bool pipes_open = out.valid() || err.valid();
        if (auto status = child.try_reap()) {
            // Done once the pipes are drained; a grandchild holding them gets a moment, no more.
            if (!pipes_open || Clock::now() >= drained_by) {
                result.status = *status;
                return result;
            }
            if (drained_by == Clock::time_point::max()) drained_by = Clock::now() + kDrainAfterExit;
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::min(deadline, drained_by) - Clock::now());
        if (left.count() <= 0 && !child.reaped()) {
            result.timed_out = true;
            return result; // ~ChildProcess kills and reaps the client
        }
        pollfd fds[3];
        nfds_t n = 0;
        if (out.valid()) fds[n++] = {out.get(), POLLIN, 0};
        if (err.valid()) fds[n++] = {err.get(), POLLIN, 0};
        int wait_ms = static_cast<int>(std::clamp<long long>(left.count(), 0, 1000));
        if (!pipes_open && !child.reaped()) {
            if (child.exit_fd() >= 0)
                fds[n++] = {child.exit_fd(), POLLIN, 0};
            else
                wait_ms = std::min(wait_ms, 5);
        }
        if (::poll(fds, n, wait_ms) < 0 && errno != EINTR)
            throw Error(RADIAL_E_INTERNAL, std::string("waiting for the docker CLI: poll: ") +
                                               std::strerror(errno) + "; report this bug");
        if (out.valid()) drain_into(out, result.out, kMaxOut, false);
        if (err.valid()) drain_into(err, result.err, kMaxErr, true);
    }
}

std::string DockerCli::failure(const CliOutput& r, std::string_view what,
                               std::chrono::milliseconds budget) const {
    if (r.timed_out)
        return std::string(what) + ": no answer within " + std::to_string(budget.count()) +
               " ms from engine " + engine_name();
    std::string cause = cli_message(r.err, 512);
    if (cause.empty())
        cause = r.status.exited
                    ? "the CLI exited " + std::to_string(r.status.code) + " without a message"
                    : "the CLI was killed by signal " + std::to_string(r.status.signal);
    return std::string(what) + " (engine " + engine_name() + "): " + cause;
}

std::string DockerCli::engine_name() const {
    return settings_.host.empty() ? std::string("default host") : "'" + settings_.host + "'";
}

std::string DockerCli::server_version() const {
    auto unreachable = [&](const std::string& cause) {
        return Error(RADIAL_E_UNAVAILABLE, "docker engine unreachable via '" + settings_.binary +
                                               "' (" + engine_name() + "): " + cause +
                                               "; start dockerd or fix run.docker.host");
    };
    std::chrono::milliseconds budget(settings_.preflight_timeout_ms);
    CliOutput r = capture(docker_info_argv(settings_), budget);
    if (r.timed_out)
        throw unreachable("'docker info' did not answer within " + std::to_string(budget.count()) +
                          " ms");
    if (auto version = parse_server_version(r.out)) return *version;
    throw unreachable(first_cli_line(r.err, "'docker info' reported no server version"));
}

std::vector<ListedBox> DockerCli::list() const {
    std::chrono::milliseconds budget(settings_.command_timeout_ms);
    CliOutput r = capture(docker_list_argv(settings_), budget);
    if (r.timed_out || !r.status.exited || r.status.code != 0)
        throw Error(RADIAL_E_UNAVAILABLE,
                    failure(r, "listing radial boxes with 'docker ps'", budget) +
                        "; check that dockerd is running and responsive");
    return parse_docker_list(r.out);
}

std::vector<std::string> DockerCli::ids_with_label(std::string_view label) const {
    std::vector<std::string> ids;
    for (auto& box : list())
        if (box.label == label) ids.push_back(std::move(box.id));
    return ids;
}

void DockerCli::remove(const std::vector<std::string>& ids, std::string_view label) const {
    if (ids.empty()) return;
    std::chrono::milliseconds budget(settings_.command_timeout_ms);
    CliOutput r = capture(docker_rm_argv(settings_, ids), budget);
    if (!r.timed_out && r.status.exited && (r.status.code == 0 || only_gone_errors(r.err))) return;
    throw Error(RADIAL_E_UNAVAILABLE,
                failure(r,
                        "removing box '" + std::string(label) + "' (container " + ids_text(ids) +
                            ") with 'docker rm'",
                        budget) +
                    "; check that dockerd is running, then remove it with 'docker rm -f'");
}

} // namespace radial::docker
