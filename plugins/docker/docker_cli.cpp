#include "docker_cli.h"

#include <stdlib.h>

#include <radial/plugin/runtime.hpp>

#include "deadline.h"
#include "support/cli_text.h"

namespace radial::docker {

namespace {

using plugin_support::cli_message;
using plugin_support::first_cli_line;
using radial::plugin::Error;

constexpr std::string_view kMissingFix = "install the docker CLI or set run.docker.binary";

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
    return plugin_support::find_executable(settings_.binary, "docker CLI", "binary",
                                           "run.docker.binary");
}

CliOutput DockerCli::capture(const std::vector<std::string>& argv,
                             std::chrono::milliseconds budget) const {
    plugin_support::CaptureOptions options;
    options.missing_fix = std::string(kMissingFix);
    return plugin_support::capture_cli(executable(), {argv.begin() + 1, argv.end()},
                                       parent_client_env(), budget, options);
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
    std::chrono::milliseconds budget = budget_ms(settings_.preflight_timeout_ms);
    CliOutput r = capture(docker_info_argv(settings_), budget);
    if (r.timed_out)
        throw unreachable("'docker info' did not answer within " + std::to_string(budget.count()) +
                          " ms");
    if (auto version = parse_server_version(r.out)) return *version;
    throw unreachable(first_cli_line(r.err, "'docker info' reported no server version"));
}

std::vector<std::string> DockerCli::runtime_names() const {
    std::chrono::milliseconds budget = budget_ms(settings_.preflight_timeout_ms);
    CliOutput r = capture(docker_runtimes_argv(settings_), budget);
    if (r.ok())
        if (auto names = parse_runtime_names(r.out)) return *names;
    throw Error(RADIAL_E_UNAVAILABLE,
                r.ok()
                    ? "asking the engine (" + engine_name() +
                          ") for its runtimes with 'docker info': no runtime list in its answer"
                    : failure(r, "asking the engine for its runtimes with 'docker info'", budget) +
                          "; check that dockerd is running and responsive");
}

std::vector<ListedBox> DockerCli::list() const {
    std::chrono::milliseconds budget = budget_ms(settings_.command_timeout_ms);
    CliOutput r = capture(docker_list_argv(settings_), budget);
    if (r.timed_out || !r.status.exited || r.status.code != 0)
        throw Error(RADIAL_E_UNAVAILABLE,
                    failure(r, "listing radial boxes with 'docker ps'", budget) +
                        "; check that dockerd is running and responsive");
    return parse_docker_list(r.out);
}

std::optional<std::vector<std::string>> DockerCli::image_entrypoint(std::string_view image) const {
    CliOutput r = capture(docker_image_entrypoint_argv(settings_, image),
                          budget_ms(settings_.command_timeout_ms));
    if (!r.ok()) return std::nullopt;
    return parse_entrypoint(r.out);
}

std::vector<std::string> DockerCli::ids_with_label(std::string_view label) const {
    std::vector<std::string> ids;
    for (auto& box : list())
        if (box.label == label) ids.push_back(std::move(box.id));
    return ids;
}

ContainerState DockerCli::state(const std::string& id, std::string_view label) const {
    std::chrono::milliseconds budget = budget_ms(settings_.command_timeout_ms);
    CliOutput r = capture(docker_inspect_argv(settings_, id), budget);
    std::optional<ContainerState> state;
    if (r.ok()) state = parse_container_state(r.out);
    if (state) return *state;
    std::string what = "inspecting box '" + std::string(label) + "' (container '" +
                       id.substr(0, 12) + "') with 'docker inspect'";
    if (!r.timed_out && r.status.exited && r.status.code != 0 && only_gone_errors(r.err))
        throw Error(RADIAL_E_NOT_FOUND, what + ": the engine has no such container");
    throw Error(RADIAL_E_UNAVAILABLE,
                r.ok() ? what + " (engine " + engine_name() + "): no container state in its answer"
                       : failure(r, what, budget) + "; check that dockerd is running");
}

void DockerCli::remove(const std::vector<std::string>& ids, std::string_view label) const {
    remove(ids, label, budget_ms(settings_.command_timeout_ms));
}

void DockerCli::remove(const std::vector<std::string>& ids, std::string_view label,
                       std::chrono::milliseconds budget) const {
    if (ids.empty()) return;
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
