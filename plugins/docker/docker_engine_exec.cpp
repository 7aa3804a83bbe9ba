// The Engine API calls of a session's execs (docker_engine.h, docker_session.h).
#include "docker_engine.h"

namespace radial::docker {

using engine_api::EngineError;
using radial::plugin::Error;

std::string DockerEngine::exec_create(const std::string& id, std::string_view label,
                                      const nlohmann::json& body) const {
    const std::string what = "starting an exec in session box '" + std::string(label) + "'";
    // Nothing of an exec runs before exec_start: every failure here is RADIAL_E_REFUSED, or
    // RADIAL_E_NOT_FOUND for a box that is gone (removed, or ended: 409 "is not running"), both
    // of which tell the host the exec never ran (radial/session.h), so the session's snapshots
    // are not barred for a turn that left nothing in the box.
    engine_api::Response r;
    try {
        r = client_.request("POST", "/containers/" + id + "/exec", body.dump(), what);
    } catch (const EngineError& e) {
        throw Error(RADIAL_E_REFUSED, std::string(e.what()) +
                                          "; nothing of the exec ran; check that dockerd is "
                                          "running");
    }
    if (r.status == 201 || r.status == 200) {
        auto j = nlohmann::json::parse(r.body, nullptr, false);
        if (j.is_object() && j.contains("Id") && j["Id"].is_string())
            return j["Id"].get<std::string>();
        throw Error(RADIAL_E_INTERNAL, what + ": the engine's answer names no exec id");
    }
    const std::string message = engine_api::engine_message(r.body);
    // A paused box (`docker pause`, or a snapshot's commit under way) lives on: 409 names it.
    if (r.status == 409 && message.find("paused") != std::string::npos)
        throw Error(RADIAL_E_REFUSED,
                    what + ": " + message +
                        "; nothing of the exec ran: the session's box is paused (a snapshot being "
                        "taken pauses it); run the turn again once it is unpaused");
    if (r.status == 409)
        throw Error(RADIAL_E_NOT_FOUND,
                    what + ": " + message +
                        "; nothing of the exec ran: the session's box has ended (its idle timeout "
                        "or maximum lifetime passed, it was stopped or killed, or its engine "
                        "restarted)");
    if (r.status == 404)
        throw Error(RADIAL_E_NOT_FOUND,
                    what + ": " + message +
                        "; nothing of the exec ran: the session's box is gone (its idle timeout "
                        "or maximum lifetime passed, or it was removed)");
    throw Error(RADIAL_E_REFUSED, what + ": HTTP " + std::to_string(r.status) + ": " + message +
                                      "; nothing of the exec ran");
}

std::unique_ptr<engine_api::Stream> DockerEngine::exec_start(const std::string& exec_id,
                                                             std::string_view label) const {
    try {
        return client_.open_hijacked("/exec/" + exec_id + "/start",
                                     "running an exec in session box '" + std::string(label) + "'",
                                     R"({"Detach":false,"Tty":false})");
    } catch (const EngineError& e) {
        // An answer that refuses the start (the box paused since the exec was made: 409; the
        // process could not be started: 500) started nothing; no answer may have started it.
        if (e.status() >= 400)
            throw Error(RADIAL_E_REFUSED, std::string(e.what()) + "; nothing of the exec ran");
        throw Error(RADIAL_E_UNAVAILABLE, e.what());
    }
}

std::optional<int> DockerEngine::exec_exit_code(const std::string& exec_id,
                                                std::string_view label) const {
    const std::string what =
        "reading how an exec in session box '" + std::string(label) + "' ended";
    engine_api::Response r;
    try {
        r = client_.request("GET", "/exec/" + exec_id + "/json", "", what);
    } catch (const EngineError& e) {
        throw Error(RADIAL_E_UNAVAILABLE, e.what());
    }
    if (r.status == 404) throw Error(RADIAL_E_NOT_FOUND, what + ": the engine has no such exec");
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status != 200 || !j.is_object())
        throw Error(RADIAL_E_UNAVAILABLE, what + ": HTTP " + std::to_string(r.status) + ": " +
                                              engine_api::engine_message(r.body));
    if (j.value("Running", false)) return std::nullopt;
    if (j.contains("ExitCode") && j["ExitCode"].is_number_integer())
        return j["ExitCode"].get<int>();
    return std::nullopt;
}

std::optional<std::size_t> DockerEngine::process_count(const std::string& id,
                                                       std::string_view label) const {
    engine_api::Response r;
    try {
        r = client_.request("GET", "/containers/" + id + "/top", "",
                            "listing the processes of session box '" + std::string(label) + "'");
    } catch (const EngineError&) {
        return std::nullopt;
    }
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status != 200 || !j.is_object() || !j.contains("Processes") || !j["Processes"].is_array())
        return std::nullopt;
    return j["Processes"].size();
}

} // namespace radial::docker
