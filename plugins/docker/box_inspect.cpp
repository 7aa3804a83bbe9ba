#include "box_inspect.h"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "engine_api/engine_client.h"

namespace radial::docker {

namespace {

using nlohmann::json;
using radial::plugin::BoxState;
using radial::plugin::Error;

BoxState from_state(const json& st) {
    BoxState b;
    if (!st.is_object()) return b;
    const std::string status = st.value("Status", std::string());
    if (status == "created" || status == "running" || status == "paused" ||
        status == "restarting") {
        b.state = RADIAL_BOX_RUNNING;
    } else if (status == "exited" || status == "dead") {
        b.state = RADIAL_BOX_ENDED;
        b.flags = RADIAL_RUN_EXITED;
        const json& code = st.contains("ExitCode") ? st["ExitCode"] : json();
        b.exit_code = code.is_number_integer() ? code.get<std::int32_t>() : 0;
        // As a run's (docker_run.cpp): a workload that exited 0 was not ended by the bound.
        if (st.value("OOMKilled", false) && b.exit_code != 0) b.flags |= RADIAL_RUN_OOM_KILLED;
    }
    return b;
}

std::int32_t status_of(const engine_api::EngineError& e) {
    if (e.timed_out()) return RADIAL_E_TIMEOUT;
    if (e.unreachable()) return RADIAL_E_UNAVAILABLE;
    return RADIAL_E_INTERNAL;
}

} // namespace

BoxState box_state_from_json(std::string_view state_json) {
    json st = json::parse(state_json, nullptr, false);
    return from_state(st);
}

BoxInspector::BoxInspector(const engine_api::EngineAddress& address, std::uint64_t budget_ms) {
    try {
        engine_ = std::make_unique<engine_api::EngineClient>(address,
                                                             std::chrono::milliseconds(budget_ms));
    } catch (const std::invalid_argument& e) {
        unsupported_ =
            "the docker runtime reads how a box ended through the Engine API, which "
            "cannot reach engine '" +
            address.text + "': " + e.what();
    }
}

BoxInspector::~BoxInspector() = default;

BoxState BoxInspector::inspect(std::string_view label) const {
    if (!engine_) throw Error(RADIAL_E_UNSUPPORTED, unsupported_);
    const std::string box = "box '" + std::string(label) + "'";
    try {
        json filters = {{"label", {"radial.label=" + std::string(label)}}};
        json listed = engine_->call(
            "GET", "/containers/json?all=1&filters=" + engine_api::url_encode(filters.dump()),
            nullptr, "listing the containers of " + box);
        std::vector<std::string> ids;
        if (listed.is_array())
            for (const auto& c : listed)
                if (c.is_object() && c.contains("Id") && c["Id"].is_string())
                    ids.push_back(c["Id"].get<std::string>());
        std::sort(ids.begin(), ids.end());
        std::optional<BoxState> ended;
        bool unknown = false;
        for (const auto& id : ids) {
            engine_api::Response r = engine_->request("GET", "/containers/" + id + "/json", "",
                                                      "inspecting the container of " + box);
            if (r.status == 404) continue; // removed since it was listed
            if (r.status / 100 != 2)
                throw Error(RADIAL_E_INTERNAL, "inspecting the container of " + box +
                                                   ": the engine answered " +
                                                   std::to_string(r.status) + ": " +
                                                   engine_api::engine_message(r.body));
            json c = json::parse(r.body, nullptr, false);
            BoxState b = from_state(c.is_object() && c.contains("State") ? c["State"] : json());
            if (b.state == RADIAL_BOX_RUNNING) return b;
            if (b.state == RADIAL_BOX_ENDED && !ended) ended = b;
            if (b.state == RADIAL_BOX_UNKNOWN) unknown = true;
        }
        if (ended) return *ended;
        BoxState none;
        none.state = unknown ? RADIAL_BOX_UNKNOWN : RADIAL_BOX_GONE;
        return none;
    } catch (const engine_api::EngineError& e) {
        throw Error(status_of(e), e.what());
    }
}

} // namespace radial::docker
