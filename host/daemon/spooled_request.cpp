#include "daemon/spooled_request.h"

#include <fmt/format.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace radial::daemon {

std::string to_json(const SpooledRequest& r) {
    nlohmann::ordered_json j;
    j["turnId"] = r.turn_id;
    j["image"] = r.image;
    j["argv"] = r.argv;
    if (!r.workdir.empty()) j["workdir"] = r.workdir;
    if (!r.workspace.empty()) j["workspace"] = r.workspace;
    auto env = nlohmann::ordered_json::object();
    for (const auto& e : r.env) env[e.name] = e.value;
    j["env"] = env;
    j["secrets"] = r.secrets;
    auto mounts = nlohmann::ordered_json::array();
    for (const auto& m : r.mounts)
        mounts.push_back({{"source", m.source}, {"target", m.target}, {"readOnly", m.read_only}});
    j["mounts"] = mounts;
    if (r.timeout_ms) j["timeoutMs"] = r.timeout_ms;
    j["recordType"] = r.record_type;
    if (!r.mode.empty()) j["mode"] = r.mode;
    if (!r.workspace_mount.empty()) j["workspaceMount"] = r.workspace_mount;
    return j.dump(2) + "\n";
}

SpooledRequest spooled_request_from_json(std::string_view text) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object()) throw std::runtime_error("the file is not a JSON object");
    auto field = [&](const char* name) -> const nlohmann::json* {
        auto it = j.find(name);
        return it == j.end() ? nullptr : &*it;
    };
    auto string = [&](const char* name, bool required) {
        const auto* v = field(name);
        if (v == nullptr && !required) return std::string();
        if (v == nullptr || !v->is_string())
            throw std::runtime_error(fmt::format("field '{}' must be a string", name));
        return v->get<std::string>();
    };
    auto strings = [&](const char* name) {
        std::vector<std::string> out;
        const auto* v = field(name);
        if (v == nullptr) return out;
        if (!v->is_array())
            throw std::runtime_error(fmt::format("field '{}' must be an array of strings", name));
        for (const auto& item : *v) {
            if (!item.is_string())
                throw std::runtime_error(
                    fmt::format("field '{}' must be an array of strings", name));
            out.push_back(item.get<std::string>());
        }
        return out;
    };
    SpooledRequest r;
    r.turn_id = string("turnId", true);
    r.image = string("image", true);
    r.argv = strings("argv");
    r.workdir = string("workdir", false);
    r.workspace = string("workspace", false);
    r.secrets = strings("secrets");
    r.record_type = string("recordType", true);
    r.mode = string("mode", false);
    r.workspace_mount = string("workspaceMount", false);
    if (const auto* env = field("env")) {
        if (!env->is_object()) throw std::runtime_error("field 'env' must be an object of strings");
        for (const auto& [name, value] : env->items()) {
            if (!value.is_string())
                throw std::runtime_error("field 'env' must be an object of strings");
            r.env.push_back({name, value.get<std::string>(), false});
        }
    }
    if (const auto* mounts = field("mounts")) {
        if (!mounts->is_array()) throw std::runtime_error("field 'mounts' must be an array");
        for (const auto& m : *mounts) {
            if (!m.is_object() || !m.contains("source") || !m["source"].is_string() ||
                !m.contains("target") || !m["target"].is_string() ||
                (m.contains("readOnly") && !m["readOnly"].is_boolean()))
                throw std::runtime_error(
                    "field 'mounts' must hold {source, target, readOnly} objects");
            r.mounts.push_back({m["source"].get<std::string>(), m["target"].get<std::string>(),
                                m.value("readOnly", false)});
        }
    }
    if (const auto* t = field("timeoutMs")) {
        if (!t->is_number_unsigned())
            throw std::runtime_error("field 'timeoutMs' must be a number");
        r.timeout_ms = t->get<std::uint64_t>();
    }
    return r;
}

std::optional<std::string> process_env(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
}

namespace {

turn::TurnRequest base_request(const SpooledRequest& r) {
    turn::TurnRequest t;
    t.turn_id = r.turn_id;
    t.image = r.image;
    t.workspace = r.workspace;
    t.workdir = r.workdir;
    t.mounts = r.mounts;
    t.env = r.env;
    t.argv = r.argv;
    t.timeout_ms = r.timeout_ms;
    t.record_type = r.record_type;
    t.mode = r.mode;
    t.workspace_mount = r.workspace_mount;
    return t;
}

} // namespace

turn::TurnRequest to_turn_request(const SpooledRequest& r, const EnvLookup& lookup) {
    turn::TurnRequest t = base_request(r);
    for (const auto& name : r.secrets) {
        auto value = lookup(name);
        if (!value)
            throw turn::RequestError(fmt::format(
                "secret '{}' is not set in radiald's environment; set it where the daemon starts "
                "(e.g. Environment= or EnvironmentFile= in a systemd drop-in) and submit the turn "
                "again",
                name));
        t.env.push_back({name, *value, true});
    }
    return t;
}

journal::TurnEntry queued_entry(const SpooledRequest& r, const config::HostConfig& cfg) {
    turn::TurnRequest t = base_request(r);
    // Secret names only: the journal must never learn a value, and none is known here anyway.
    for (const auto& name : r.secrets) t.env.push_back({name, std::string(), true});
    return {r.turn_id,     turn::turn_label(cfg, r.turn_id), cfg.container_runtime, r.image,
            r.record_type, turn::request_journal_json(t)};
}

} // namespace radial::daemon
