#include "docker_engine.h"

#include <radial/support/cli_capture.h>
#include <stdlib.h>

#include <radial/plugin/runtime.hpp>

#include "deadline.h"
#include "docker_env.h"
#include "support/cli_text.h"

namespace radial::docker {

namespace {

using engine_api::EngineError;
using engine_api::url_encode;
using radial::plugin::Error;

std::string ids_text(const std::vector<std::string>& ids) {
    std::string out;
    for (const auto& id : ids) out += (out.empty() ? "'" : ", '") + id.substr(0, 12) + "'";
    return out;
}

// This process's values of the kClientPassthroughEnv variables, for the pull's docker CLI.
EnvMap parent_client_env() {
    EnvMap env;
    for (std::string_view name : kClientPassthroughEnv)
        if (const char* value = ::getenv(std::string(name).c_str())) env[std::string(name)] = value;
    return env;
}

} // namespace

engine_api::ResolvedEngine docker_engine_address(const DockerSettings& settings,
                                                 const engine_api::EngineEnvironment& env) {
    try {
        return engine_api::resolve_engine(settings.host, "run.docker.host", env);
    } catch (const std::invalid_argument& e) {
        throw Error(RADIAL_E_INVALID, "host", e.what());
    }
}

namespace {

// The client for `resolved`, its TLS material loaded; a file that does not load is the
// operator's to fix, so it is RADIAL_E_INVALID naming the key the address came from.
engine_api::EngineClient client_for(const engine_api::ResolvedEngine& resolved,
                                    std::chrono::milliseconds budget) {
    try {
        return engine_api::EngineClient(resolved.address, budget);
    } catch (const std::invalid_argument& e) {
        throw Error(RADIAL_E_INVALID, "host",
                    "the TLS material of engine '" + resolved.address.text + "' (from " +
                        resolved.source + "): " + e.what());
    }
}

} // namespace

DockerEngine::DockerEngine(DockerSettings settings)
    : settings_(std::move(settings)),
      environment_(engine_api::EngineEnvironment::of_process()),
      resolved_(docker_engine_address(settings_, environment_)),
      client_(client_for(resolved_, budget_ms(settings_.command_timeout_ms))) {}

std::vector<plugin_support::EngineControlPath> DockerEngine::control_paths() const {
    return plugin_support::engine_control_paths(
        engine_name(), resolved_.address.unix_socket ? resolved_.address.path : std::string(),
        environment_.config_directory(), environment_.docker_cert_path);
}

std::string DockerEngine::engine_name() const {
    if (!settings_.host.empty()) return "'" + settings_.host + "'";
    if (resolved_.source == "the default socket") return "default host";
    return "'" + resolved_.address.text + "' (" + resolved_.source + ")";
}

std::string DockerEngine::server_version() const {
    try {
        return client_.probe(budget_ms(settings_.preflight_timeout_ms)).text();
    } catch (const EngineError& e) {
        std::string budget;
        if (e.timed_out())
            budget = "; no answer within " + std::to_string(settings_.preflight_timeout_ms) +
                     " ms (run.docker.preflightTimeout)";
        throw Error(RADIAL_E_UNAVAILABLE, "docker engine unreachable via '" + settings_.binary +
                                              "' (" + engine_name() + "): " + e.what() + budget +
                                              "; start dockerd or fix run.docker.host");
    }
}

nlohmann::json DockerEngine::info_json(const std::string& what) const {
    engine_api::Response r;
    try {
        r = client_.request("GET", "/info", "", what, budget_ms(settings_.preflight_timeout_ms));
    } catch (const EngineError& e) {
        throw Error(RADIAL_E_UNAVAILABLE,
                    std::string(e.what()) + "; check that dockerd is running and responsive");
    }
    if (r.status != 200) return nullptr;
    auto info = nlohmann::json::parse(r.body, nullptr, false);
    return info.is_object() ? info : nlohmann::json(nullptr);
}

std::vector<DockerEngine::EngineRuntime> DockerEngine::runtimes() const {
    const std::string what = "asking the engine (" + engine_name() + ") for its runtimes";
    nlohmann::json info = info_json(what);
    std::optional<std::vector<std::string>> names;
    if (info.is_object() && info.contains("Runtimes"))
        names = parse_runtime_names(info["Runtimes"]);
    if (!names)
        throw Error(RADIAL_E_UNAVAILABLE,
                    what +
                        " (GET /info): no runtime list in its answer; check that dockerd is "
                        "running and responsive");
    std::vector<EngineRuntime> out;
    for (auto& name : *names) {
        const auto& entry = info["Runtimes"][name];
        EngineRuntime r{std::move(name), {}, {}};
        if (entry.is_object() && entry.contains("path") && entry["path"].is_string())
            r.path = entry["path"].get<std::string>();
        if (entry.is_object() && entry.contains("runtimeArgs") && entry["runtimeArgs"].is_array())
            for (const auto& a : entry["runtimeArgs"])
                if (a.is_string()) r.args.push_back(a.get<std::string>());
        out.push_back(std::move(r));
    }
    return out;
}

std::optional<UsernsRoot> DockerEngine::userns_root() const {
    const std::string what =
        "asking the engine (" + engine_name() + ") whether it remaps user namespaces";
    // An answer without the remapping's marks is an engine that does not remap: the box then
    // never runs as root, the safe side (docs/design.md §8.8).
    auto root = parse_userns_root(info_json(what));
    if (root) namespaced_root_ = true;
    return root;
}

void DockerEngine::learn_data_root() const {
    nlohmann::json info = info_json("asking the engine (" + engine_name() + ") for its data root");
    std::string root;
    if (info.is_object() && info.contains("DockerRootDir") && info["DockerRootDir"].is_string())
        root = info["DockerRootDir"].get<std::string>();
    std::lock_guard lock(data_root_mutex_);
    data_root_ = std::move(root);
}

std::string DockerEngine::data_root() const {
    {
        std::lock_guard lock(data_root_mutex_);
        if (data_root_) return *data_root_;
    }
    learn_data_root();
    std::lock_guard lock(data_root_mutex_);
    return data_root_.value_or("");
}

StorageDriver DockerEngine::storage_driver() const {
    const std::string what = "asking the engine (" + engine_name() + ") for its storage driver";
    nlohmann::json info = info_json(what);
    if (!info.is_object() || !info.contains("Driver") || !info["Driver"].is_string())
        throw Error(RADIAL_E_UNAVAILABLE,
                    what +
                        " (GET /info): no storage driver in its answer; check that dockerd is "
                        "running and responsive");
    StorageDriver out;
    out.name = info["Driver"].get<std::string>();
    // DriverStatus: [["Backing Filesystem","extfs"], ...]
    if (info.contains("DriverStatus") && info["DriverStatus"].is_array())
        for (const auto& pair : info["DriverStatus"])
            if (pair.is_array() && pair.size() == 2 && pair[0] == "Backing Filesystem" &&
                pair[1].is_string())
                out.backing_filesystem = pair[1].get<std::string>();
    return out;
}

std::vector<ListedBox> DockerEngine::list() const {
    static const std::string filters =
        url_encode("{\"label\":[\"" + std::string(kLabelKey) + "\"]}");
    const std::string what = "listing radial boxes";
    engine_api::Response r;
    try {
        r = client_.request("GET", "/containers/json?all=1&filters=" + filters, "", what);
    } catch (const EngineError& e) {
        throw Error(RADIAL_E_UNAVAILABLE,
                    std::string(e.what()) + "; check that dockerd is running and responsive");
    }
    std::optional<std::vector<ListedBox>> boxes;
    if (r.status == 200) boxes = parse_container_list(r.body);
    if (!boxes)
        throw Error(RADIAL_E_UNAVAILABLE, what + " (engine " + engine_name() + "): HTTP " +
                                              std::to_string(r.status) + ": " +
                                              engine_api::engine_message(r.body) +
                                              "; check that dockerd is running and responsive");
    return *boxes;
}

std::vector<std::string> DockerEngine::ids_with_label(std::string_view label) const {
    std::vector<std::string> ids;
    for (auto& box : list())
        if (box.label == label) ids.push_back(std::move(box.id));
    return ids;
}

ContainerState DockerEngine::state(const std::string& id, std::string_view label) const {
    const std::string what =
        "inspecting box '" + std::string(label) + "' (container '" + id.substr(0, 12) + "')";
    engine_api::Response r;
    try {
        r = client_.request("GET", "/containers/" + id + "/json", "", what);
    } catch (const EngineError& e) {
        throw Error(RADIAL_E_UNAVAILABLE,
                    std::string(e.what()) + "; check that dockerd is running");
    }
    if (r.status == 404)
        throw Error(RADIAL_E_NOT_FOUND, what + ": the engine has no such container");
    if (r.status == 200) {
        auto j = nlohmann::json::parse(r.body, nullptr, false);
        if (j.is_object() && j.contains("State"))
            if (auto s = parse_container_state(j["State"].dump())) return *s;
    }
    throw Error(RADIAL_E_UNAVAILABLE,
                what + " (engine " + engine_name() + "): HTTP " + std::to_string(r.status) +
                    ": no container state in its answer: " + engine_api::engine_message(r.body));
}

std::optional<std::vector<std::string>> DockerEngine::image_entrypoint(
    std::string_view image) const {
    const std::string what = "inspecting image '" + std::string(image) + "'";
    engine_api::Response r;
    try {
        r = client_.request("GET", "/images/" + url_encode(image) + "/json", "", what);
    } catch (const EngineError& e) {
        throw Error(RADIAL_E_UNAVAILABLE,
                    std::string(e.what()) + "; check that dockerd is running");
    }
    if (r.status == 404) return std::nullopt;
    if (r.status != 200)
        throw Error(RADIAL_E_UNAVAILABLE, what + " (engine " + engine_name() + "): HTTP " +
                                              std::to_string(r.status) + ": " +
                                              engine_api::engine_message(r.body));
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    std::optional<std::vector<std::string>> entrypoint;
    if (j.is_object() && j.contains("Config") && j["Config"].is_object())
        entrypoint = parse_entrypoint(j["Config"].value("Entrypoint", nlohmann::json()).dump());
    else if (j.is_object())
        entrypoint = std::vector<std::string>{};
    if (!entrypoint)
        throw Error(RADIAL_E_INTERNAL,
                    what + ": the engine's answer has no readable Config.Entrypoint");
    return entrypoint;
}

PullEnd DockerEngine::pull(std::string_view image, std::string_view label,
                           std::chrono::milliseconds budget, int cancel_fd) const {
    plugin_support::CaptureOptions options;
    options.cancel_fd = cancel_fd;
    options.missing_fix = "install the docker CLI or set run.docker.binary";
    std::vector<std::string> argv = docker_pull_argv(settings_, image);
    auto exe = plugin_support::find_executable(settings_.binary, "docker CLI", "binary",
                                               "run.docker.binary");
    plugin_support::CliOutput r = plugin_support::capture_cli(exe, {argv.begin() + 1, argv.end()},
                                                              parent_client_env(), budget, options);
    if (r.ok()) return PullEnd::done;
    if (r.cancelled) return PullEnd::cancelled;
    if (r.timed_out) return PullEnd::timed_out;
    const std::string what = "starting box '" + std::string(label) + "' from image '" +
                             std::string(image) + "': 'docker pull' (before the box's create)";
    std::string message = plugin_support::cli_message(r.err, 2048);
    throw Error(RADIAL_E_NOT_FOUND, what + " failed: " + message +
                                        "; build or load the image locally (docker build, docker "
                                        "load) or check its name");
}

std::string DockerEngine::create(const nlohmann::json& body, std::string_view label,
                                 std::string_view image) const {
    const std::string what = "starting box '" + std::string(label) + "' from image '" +
                             std::string(image) +
                             "': the engine's create failed, before the container existed";
    engine_api::Response r;
    try {
        r = client_.request("POST", "/containers/create?name=" + url_encode(label), body.dump(),
                            what);
    } catch (const EngineError& e) {
        throw Error(RADIAL_E_UNAVAILABLE,
                    std::string(e.what()) + "; start dockerd or fix run.docker.host");
    }
    if (r.status == 201 || r.status == 200) {
        auto j = nlohmann::json::parse(r.body, nullptr, false);
        if (j.is_object() && j.contains("Id") && j["Id"].is_string())
            return j["Id"].get<std::string>();
        throw Error(RADIAL_E_INTERNAL, what + ": the engine's answer names no container id");
    }
    std::string message = engine_api::engine_message(r.body);
    if (r.status == 404)
        throw Error(RADIAL_E_NOT_FOUND,
                    what + ": " + message + "; build or load image '" + std::string(image) +
                        "' locally (docker build, docker load) or check its name; with "
                        "run.docker.pull \"never\" or \"missing\" a local image is used without "
                        "contacting a registry");
    // A bound the preflight could not rule out (xfs without pquota, another driver) is refused
    // here by the engine: name the key that asked for it (docs/design.md §13.1).
    if (settings_.writable_layer_bytes != 0 && message.find("storage-opt") != std::string::npos)
        throw Error(RADIAL_E_INVALID, "writableLayerSize",
                    what + ": HTTP " + std::to_string(r.status) + ": " + message +
                        "; the engine cannot bound the writable layer as "
                        "run.docker.writableLayerSize asks: remove the key, or give the engine "
                        "storage that can (overlay2 on xfs mounted with pquota)");
    throw Error(RADIAL_E_INTERNAL, what + ": HTTP " + std::to_string(r.status) + ": " + message +
                                       "; check the message above and dockerd's log");
}

std::unique_ptr<engine_api::Stream> DockerEngine::attach(const std::string& id,
                                                         std::string_view label,
                                                         bool with_stdin) const {
    return client_.open_hijacked(
        "/containers/" + id + "/attach?stream=1&stdout=1&stderr=1" + (with_stdin ? "&stdin=1" : ""),
        "attaching to box '" + std::string(label) + "'");
}

std::optional<engine_api::Response> DockerEngine::start(const std::string& id,
                                                        std::string_view label) const {
    return start(id, label, budget_ms(settings_.command_timeout_ms));
}

std::optional<engine_api::Response> DockerEngine::start(const std::string& id,
                                                        std::string_view label,
                                                        std::chrono::milliseconds budget) const {
    engine_api::Response r = client_.request("POST", "/containers/" + id + "/start", "",
                                             "starting box '" + std::string(label) + "'", budget);
    if (r.status == 204 || r.status == 304) return std::nullopt;
    return r;
}

int DockerEngine::wait(const std::string& id, std::string_view label) const {
    const std::string what = "waiting for box '" + std::string(label) + "' to end";
    engine_api::Response r;
    try {
        r = client_.request("POST", "/containers/" + id + "/wait?condition=not-running", "", what);
    } catch (const EngineError& e) {
        throw Error(RADIAL_E_UNAVAILABLE,
                    std::string(e.what()) + "; check that dockerd is running");
    }
    if (r.status == 404)
        throw Error(RADIAL_E_NOT_FOUND, what + ": the engine has no such container");
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status == 200 && j.is_object() && j.contains("StatusCode") &&
        j["StatusCode"].is_number_integer())
        return j["StatusCode"].get<int>();
    throw Error(RADIAL_E_UNAVAILABLE, what + " (engine " + engine_name() + "): HTTP " +
                                          std::to_string(r.status) + ": " +
                                          engine_api::engine_message(r.body));
}

void DockerEngine::remove(const std::vector<std::string>& ids, std::string_view label) const {
    remove(ids, label, budget_ms(settings_.command_timeout_ms));
}

void DockerEngine::remove(const std::vector<std::string>& ids, std::string_view label,
                          std::chrono::milliseconds budget) const {
    const auto deadline = Clock::now() + budget;
    for (const auto& id : ids) {
        const std::string what =
            "removing box '" + std::string(label) + "' (container " + ids_text({id}) + ")";
        const std::string fix =
            "; check that dockerd is running, then remove it with 'docker rm -f'";
        auto left = std::max(std::chrono::milliseconds(1),
                             std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()));
        engine_api::Response r;
        try {
            r = client_.request("DELETE", "/containers/" + id + "?force=1&v=1", "", what, left);
        } catch (const EngineError& e) {
            throw Error(RADIAL_E_UNAVAILABLE, std::string(e.what()) + fix);
        }
        // 404: already gone; 409 "removal of container ... is already in progress".
        if (r.status == 204 || r.status == 200 || r.status == 404) continue;
        std::string message = engine_api::engine_message(r.body);
        if (r.status == 409 && message.find("already in progress") != std::string::npos) continue;
        throw Error(RADIAL_E_UNAVAILABLE, what + " (engine " + engine_name() + "): HTTP " +
                                              std::to_string(r.status) + ": " + message + fix);
    }
}

void DockerEngine::signal(const std::string& id, std::string_view label, std::string_view signal,
                          std::chrono::milliseconds budget) const {
    const std::string what = "sending " + std::string(signal) + " to box '" + std::string(label) +
                             "' (container " + ids_text({id}) + ")";
    engine_api::Response r;
    try {
        r = client_.request("POST", "/containers/" + id + "/kill?signal=" + std::string(signal), "",
                            what, budget);
    } catch (const EngineError& e) {
        throw Error(RADIAL_E_UNAVAILABLE, e.what());
    }
    // 404: gone; 409: not running (it ended meanwhile). Both: nothing left to signal.
    if (r.status == 204 || r.status == 200 || r.status == 404 || r.status == 409) return;
    throw Error(RADIAL_E_UNAVAILABLE, what + " (engine " + engine_name() + "): HTTP " +
                                          std::to_string(r.status) + ": " +
                                          engine_api::engine_message(r.body));
}

} // namespace radial::docker
