// The Engine API calls of session snapshots: image and container inspection, commit, image
// removal (docker_engine.h, docker_snapshot.h).
#include "docker_engine.h"

namespace radial::docker {

using engine_api::EngineError;
using engine_api::url_encode;
using radial::plugin::Error;

namespace {

Error unavailable(const EngineError& e) {
    return Error(RADIAL_E_UNAVAILABLE, std::string(e.what()) + "; check that dockerd is running");
}

Error http_error(const std::string& what, const engine_api::Response& r) {
    return Error(RADIAL_E_UNAVAILABLE, what + ": HTTP " + std::to_string(r.status) + ": " +
                                           engine_api::engine_message(r.body));
}

} // namespace

std::optional<nlohmann::json> DockerEngine::image_json(std::string_view image) const {
    const std::string what = "inspecting image '" + std::string(image) + "'";
    engine_api::Response r;
    try {
        r = client_.request("GET", "/images/" + url_encode(image) + "/json", "", what);
    } catch (const EngineError& e) {
        throw unavailable(e);
    }
    if (r.status == 404) return std::nullopt;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status != 200 || !j.is_object()) throw http_error(what, r);
    return j;
}

nlohmann::json DockerEngine::container_json(const std::string& id, std::string_view label) const {
    const std::string what = "inspecting session box '" + std::string(label) + "'";
    engine_api::Response r;
    try {
        r = client_.request("GET", "/containers/" + id + "/json", "", what);
    } catch (const EngineError& e) {
        throw unavailable(e);
    }
    if (r.status == 404)
        throw Error(RADIAL_E_NOT_FOUND, what + ": the engine has no such container any more");
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status != 200 || !j.is_object()) throw http_error(what, r);
    return j;
}

std::string DockerEngine::commit(const std::string& id, std::string_view label,
                                 const std::string& repo, const std::string& tag,
                                 const nlohmann::json& config,
                                 std::chrono::milliseconds budget) const {
    const std::string what =
        "committing session box '" + std::string(label) + "' to image '" + repo + ":" + tag + "'";
    engine_api::Response r;
    try {
        r = client_.request("POST",
                            "/commit?container=" + id + "&repo=" + url_encode(repo) +
                                "&tag=" + url_encode(tag) + "&pause=1",
                            config.dump(), what, budget);
    } catch (const EngineError& e) {
        throw unavailable(e);
    }
    if (r.status == 404)
        throw Error(RADIAL_E_NOT_FOUND, what + ": the session's box is gone (" +
                                            engine_api::engine_message(r.body) + ")");
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if ((r.status != 201 && r.status != 200) || !j.is_object() || !j.contains("Id") ||
        !j["Id"].is_string())
        throw http_error(what, r);
    return j["Id"].get<std::string>();
}

void DockerEngine::remove_image(std::string_view image) const {
    const std::string what = "removing image '" + std::string(image) + "'";
    engine_api::Response r;
    try {
        r = client_.request("DELETE", "/images/" + url_encode(image), "", what);
    } catch (const EngineError& e) {
        throw unavailable(e);
    }
    if (r.status == 200 || r.status == 404) return;
    if (r.status == 409)
        throw Error(RADIAL_E_INVALID, "image",
                    what + ": " + engine_api::engine_message(r.body) +
                        "; remove the sessions that run from it first (radiald session rm)");
    throw http_error(what, r);
}

} // namespace radial::docker
