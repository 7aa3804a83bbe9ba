#include "swarm_runtime.h"

#include "swarm_run.h"

namespace radial::swarm {

SwarmRuntime::SwarmRuntime(const radial::plugin::Host& host, radial::plugin::Config& config)
    : host_(host),
      settings_([&] {
          SwarmSettings s = parse_swarm_settings(config);
          s.init_path = plugin_support::box_init_or_default(
              s.init_path, host, "swarm",
              "tasks run under docker's init, their output is read back line by line (slow for "
              "chatty commands), and a task outlives its timeout when no radiald is left to "
              "remove it");
          return s;
      }()),
      engine_([&] {
          // The same choice as the docker runtime's (docs/design.md §13.10).
          const std::string key = config.section() + ".host";
          engine_api::ResolvedEngine r;
          try {
              r = engine_api::resolve_engine(settings_.host, key,
                                             engine_api::EngineEnvironment::of_process());
          } catch (const std::invalid_argument& e) {
              throw Error(RADIAL_E_INVALID, "host", e.what());
          }
          host.debug("swarm engine " + r.address.text + " (" + r.source + ")" +
                     (r.address.tls ? ", TLS with " + r.address.tls->origin : std::string()));
          try {
              return engine_api::EngineClient(
                  r.address,
                  milliseconds(std::min<std::uint64_t>(settings_.command_timeout_ms, 3'600'000)));
          } catch (const std::invalid_argument& e) {
              throw Error(RADIAL_E_INVALID, "host",
                          "the TLS material of engine '" + r.address.text + "' (from " + r.source +
                              "): " + e.what());
          }
      }()) {}

void SwarmRuntime::preflight() {
    try {
        engine_api::ApiVersion v = engine_.version();
        json info = engine_.call("GET", "/info", nullptr, "checking the engine is a swarm manager");
        json sw = info.value("Swarm", json::object());
        std::string state = sw.value("LocalNodeState", "");
        bool manager = sw.value("ControlAvailable", false);
        if (state != "active")
            throw Error(RADIAL_E_UNAVAILABLE,
                        "the engine at " + engine_.address().text +
                            " is not in a swarm (LocalNodeState '" + state +
                            "'); the swarm runtime runs turns as swarm services. Make it a "
                            "manager: `docker swarm init --advertise-addr <this host's address>` "
                            "(on one machine: --advertise-addr 127.0.0.1 --listen-addr "
                            "127.0.0.1:2377), or point run.swarm.host at a manager's engine");
        if (!manager)
            throw Error(RADIAL_E_UNAVAILABLE,
                        "the engine at " + engine_.address().text +
                            " is a swarm worker; services can only be created on a manager: "
                            "point run.swarm.host at a manager's engine, or promote this node "
                            "(`docker node promote <node>` on a manager)");
        host_.debug("swarm manager answers at " + engine_.address().text + ", Engine API " +
                    v.text());
        if (settings_.no_default_bridge &&
            engine_.request("GET", "/networks/bridge", "", "looking for a default bridge").status ==
                200)
            throw Error(RADIAL_E_UNAVAILABLE,
                        "run.swarm.noDefaultBridge = true says no node's dockerd has a default "
                        "bridge, but the manager's engine at " +
                            engine_.address().text +
                            " has the network 'bridge': a task without a network would reach "
                            "whatever the node reaches. Start its dockerd with --bridge=none, or "
                            "remove the key");
        std::lock_guard lock(data_root_mutex_);
        data_root_ = info.contains("DockerRootDir") && info["DockerRootDir"].is_string()
                         ? info["DockerRootDir"].get<std::string>()
                         : std::string();
        host_.warn("swarm services at Engine API " + v.text() +
                   " cannot set no-new-privileges: tasks run with every capability dropped and a "
                   "non-root user, but a setuid binary in the image can still change uid");
    } catch (const EngineError& e) {
        throw Error(RADIAL_E_UNAVAILABLE, e.what());
    }
}

std::string SwarmRuntime::data_root() {
    {
        std::lock_guard lock(data_root_mutex_);
        if (data_root_) return *data_root_;
    }
    json info = engine_.call("GET", "/info", nullptr, "asking the manager for its data root");
    std::lock_guard lock(data_root_mutex_);
    data_root_ = info.contains("DockerRootDir") && info["DockerRootDir"].is_string()
                     ? info["DockerRootDir"].get<std::string>()
                     : std::string();
    return *data_root_;
}

bool SwarmRuntime::default_bridge_absent() {
    if (settings_.no_default_bridge) return true;
    // Asked for every such run, never kept: a node may join, an engine come back with a bridge.
    const std::string why = "asking whether tasks without a network get a default bridge";
    const json nodes = engine_.call("GET", "/nodes", nullptr, why);
    const auto bridge = engine_.request("GET", "/networks/bridge", "", why);
    if (bridge.status != 200 && bridge.status != 404)
        throw EngineError(why + ": GET /networks/bridge answered HTTP " +
                              std::to_string(bridge.status) + ": " +
                              engine_api::engine_message(bridge.body),
                          bridge.status, false);
    return nodes.is_array() && nodes.size() == 1 && bridge.status == 404;
}

std::vector<radial::plugin::Disposition> SwarmRuntime::describe(const ContainerSpec& spec) {
    return describe_for_swarm(spec, settings_);
}

radial::plugin::RunResult SwarmRuntime::run(const ContainerSpec& spec,
                                            radial::plugin::Output& out) {
    std::optional<plugin_support::RunRegistry::Registration> registration;
    {
        std::lock_guard lock(kill_mutex_);
        registration.emplace(runs_.enter(spec.label));
        auto it = early_kills_.find(spec.label);
        if (it != early_kills_.end()) {
            bool recent = Clock::now() - it->second < kEarlyKillMemory;
            early_kills_.erase(it);
            if (recent) {
                host_.info("box '" + spec.label + "' was killed before its run began");
                registration->run().request_kill(); // the run then starts nothing
            }
        }
    }
    SwarmRun run(*this, spec, out, registration->run());
    return run.execute();
}

namespace {

// Whether `labels` (an object's Labels) name exactly `label`: the engine's filter is not trusted
// alone (docs/design.md §8.2), since one that ignored it (a proxy, an old engine) would have every
// object on the engine removed at a turn's end.
bool labelled(const json& labels, const std::string& label) {
    if (!labels.is_object()) return false;
    const auto it = labels.find(kLabelKey);
    return it != labels.end() && it->is_string() && it->get<std::string>() == label;
}

json spec_labels(const json& object) {
    const json& spec = object.is_object() ? object.value("Spec", json::object()) : json::object();
    return spec.is_object() ? spec.value("Labels", json::object()) : json::object();
}

} // namespace

std::vector<std::string> SwarmRuntime::list_by_label(std::string_view prefix) {
    std::set<std::string> labels;
    auto add = [&](const json& l) {
        if (!l.is_object() || !l.contains(kLabelKey) || !l[kLabelKey].is_string()) return;
        std::string label = l[kLabelKey].get<std::string>();
        if (std::string_view(label).starts_with(prefix)) labels.insert(std::move(label));
    };
    try {
        const std::string filter = url_encode(json({{"label", {{kLabelKey, true}}}}).dump());
        for (const auto& s :
             engine_.call("GET", "/services?filters=" + filter, nullptr, "listing boxes"))
            add(spec_labels(s));
        // What a run left without its service (a create that failed after its secrets, a plugin
        // host killed between the two, a removal cut short): a secret's value stays in the raft
        // store, a task's container on this node, until something removes them by their label.
        for (const auto& s :
             engine_.call("GET", "/secrets?filters=" + filter, nullptr, "listing boxes' secrets"))
            add(spec_labels(s));
        for (const auto& c : engine_.call("GET", "/containers/json?all=1&filters=" + filter,
                                          nullptr, "listing boxes' containers"))
            if (c.is_object()) add(c.value("Labels", json::object()));
    } catch (const EngineError& e) {
        rethrow_engine(e);
    }
    return {labels.begin(), labels.end()};
}

bool SwarmRuntime::service_listed(const std::string& label, const std::string& why) {
    json services = engine_.call("GET", "/services?filters=" + label_filter(label), nullptr, why);
    for (const auto& s : services)
        if (labelled(spec_labels(s), label)) return true;
    // Running ones only (no all=1): a finished task's container is removed later, not waited for.
    json running =
        engine_.call("GET", "/containers/json?filters=" + label_filter(label), nullptr, why);
    for (const auto& c : running)
        if (c.is_object() && labelled(c.value("Labels", json::object()), label)) return true;
    return false;
}

std::size_t SwarmRuntime::remove_by_label(const std::string& label, const std::string& why) {
    const std::string filter = label_filter(label);
    json services = engine_.call("GET", "/services?filters=" + filter, nullptr, why);
    std::size_t removed = 0;
    for (const auto& s : services) {
        if (!labelled(spec_labels(s), label)) continue;
        std::string id = s.value("ID", "");
        if (id.empty()) continue;
        auto r = engine_.request("DELETE", "/services/" + id, "", why);
        if (r.status == 200) ++removed;
        if (r.status != 200 && r.status != 404)
            throw EngineError(why + ": DELETE /services/" + id + " answered HTTP " +
                                  std::to_string(r.status) + ": " +
                                  engine_api::engine_message(r.body),
                              r.status, false);
    }
    remove_local_containers(label, why);
    // A secret stays "in use" until its service is gone from the store; retry briefly.
    const auto deadline = Clock::now() + kRemovalBudget;
    for (;;) {
        json secrets = engine_.call("GET", "/secrets?filters=" + filter, nullptr, why);
        std::string last_error;
        for (const auto& s : secrets) {
            if (!labelled(spec_labels(s), label)) continue;
            std::string id = s.value("ID", "");
            if (id.empty()) continue;
            auto r = engine_.request("DELETE", "/secrets/" + id, "", why);
            if (r.status != 204 && r.status != 200 && r.status != 404)
                last_error = "DELETE /secrets/" + id + " answered HTTP " +
                             std::to_string(r.status) + ": " + engine_api::engine_message(r.body);
        }
        if (last_error.empty()) return removed;
        if (Clock::now() >= deadline) throw EngineError(why + ": " + last_error, 409, false);
        std::this_thread::sleep_for(milliseconds(100));
    }
}

void SwarmRuntime::remove_local_containers(const std::string& label, const std::string& why) {
    // The node keeps the container of a finished task after its service is deleted (docs/design.md
    // §13.7): left there, every run would leave an exited container behind.
    json containers =
        engine_.call("GET", "/containers/json?all=1&filters=" + label_filter(label), nullptr, why);
    for (const auto& c : containers) {
        if (!c.is_object() || !labelled(c.value("Labels", json::object()), label)) continue;
        const std::string id = c.value("Id", "");
        if (id.empty()) continue;
        auto r =
            engine_.request("DELETE", "/containers/" + url_encode(id) + "?force=1&v=1", "", why);
        // 404: gone meanwhile; 409: the node's own removal of it is under way.
        if (r.status != 204 && r.status != 200 && r.status != 404 && r.status != 409)
            throw EngineError(why + ": DELETE /containers/" + id.substr(0, 12) + " answered HTTP " +
                                  std::to_string(r.status) + ": " +
                                  engine_api::engine_message(r.body),
                              r.status, false);
    }
}

void SwarmRuntime::kill(std::string_view label) {
    std::shared_ptr<plugin_support::ActiveRun> active;
    {
        std::lock_guard lock(kill_mutex_);
        active = runs_.request_kill(label);
        if (active == nullptr) {
            auto now = Clock::now();
            std::erase_if(early_kills_,
                          [&](const auto& e) { return now - e.second >= kEarlyKillMemory; });
            early_kills_[std::string(label)] = now;
        }
    }
    std::size_t removed = 0;
    try {
        removed = remove_by_label(std::string(label), "killing box '" + std::string(label) + "'");
    } catch (const EngineError& e) {
        rethrow_engine(e);
    }
    // A kill that found a service but no run was cleaning up an orphan (reconciliation), not
    // overtaking a run to come.
    if (active == nullptr && removed > 0) {
        std::lock_guard lock(kill_mutex_);
        early_kills_.erase(std::string(label));
    }
    if (active != nullptr && !active->on_run_thread() && !tls_in_output_sink &&
        !active->wait_finished(kRemovalBudget))
        host_.warn("killing box '" + std::string(label) +
                   "': its run did not finish within 10 s; it goes on removing the service");
}

} // namespace radial::swarm
