// plugins/swarm/swarm_runtime.h — the swarm runtime: each turn a one-task replicated job on the
// Docker Swarm cluster the engine belongs to, driven through the Engine API (docs/design.md §5.1).
#pragma once

#include <radial/support/run_registry.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <radial/plugin/runtime.hpp>
#include <radial/plugin/session.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine_api/engine_client.h"
#include "service_spec.h"

#ifndef RADIAL_SWARM_PLUGIN_VERSION
#define RADIAL_SWARM_PLUGIN_VERSION "0.0.0"
#endif

namespace radial::swarm {

// One instance per radiald runtime; holds no connection or thread between calls. Threading as in
// radial/runtime_plugin.h.
class SwarmRuntime final : public radial::plugin::Runtime, public radial::plugin::Sessions {
public:
    static constexpr radial::plugin::Info info{"swarm", "Docker Swarm (one job per turn)",
                                               RADIAL_SWARM_PLUGIN_VERSION};

    // Reads [run.swarm] (parse_swarm_settings). No engine contact. [control]
    SwarmRuntime(const radial::plugin::Host& host, radial::plugin::Config& config);

    // GET /_ping (or /version) and GET /info: the engine speaks API 1.41+ and is an active swarm
    // manager. Throws Error(RADIAL_E_UNAVAILABLE) saying how to `docker swarm init` otherwise. Logs
    // (warn) that services cannot set no-new-privileges at this API version. [thread-safe]
    void preflight() override;

    // None: a task may land on another node, so neither a host unix socket nor host uids carry
    // over; the host then picks a tcp turn socket (docs/design.md §9.1). [thread-safe]
    std::vector<std::string> capabilities() override { return {}; }

    // describe_for_swarm. [thread-safe]
    std::vector<radial::plugin::Disposition> describe(const ContainerSpec& spec) override;

    // Creates the secrets and the service, streams the service's logs (GET …/logs?follow=1,
    // demultiplexed) to `out`, polls the task until it ends, and removes the service and its
    // secrets on every path. Endings: the task's exit → RADIAL_RUN_EXITED with
    // Status.ContainerStatus.ExitCode; timeout → RADIAL_RUN_TIMED_OUT; kill → RADIAL_RUN_KILLED;
    // an aborting sink → KILLED | OUTPUT_ABORTED. Throws Error: RADIAL_E_NOT_FOUND for an image
    // the manager does not have (pull = "never"), RADIAL_E_UNAVAILABLE when the engine does not
    // answer, RADIAL_E_INTERNAL naming the engine's reason when the task is rejected or cannot
    // start. [thread-safe] for distinct labels.
    radial::plugin::RunResult run(const ContainerSpec& spec, radial::plugin::Output& out) override;

    // Labels (sorted, once each) starting with `prefix` of every service, secret and (on this
    // engine's node) container carrying radial.label: a secret or container a run left without
    // its service is found too, so reconciliation removes it.
    std::vector<std::string> list_by_label(std::string_view prefix) override;

    // Removes every service and secret labelled exactly `label`, ends a run of it in flight
    // (RADIAL_RUN_KILLED) and waits (bounded) for that run's cleanup. With no run in flight and no
    // service found, the kill is remembered for 60 s so that a run of that label arriving just
    // after starts nothing. [thread-safe; also from the output callback]
    void kill(std::string_view label) override;

    // Where the host binds the tcp turn socket: left to run.turnSocketHost / 127.0.0.1.
    radial::plugin::TcpRoute tcp_route() override { return {}; }

    // radial.session/1 is answered so that a session is refused with its reason, not as an
    // unknown extension (docs/design.md §13.12): a swarm task is a service's replica, which the
    // orchestrator may restart or move to another node at any time, so what one turn installs is
    // not there for the next; and an exec reaches only the engine of the node running the task,
    // which the manager's API does not proxy. [thread-safe]
    const void* extension(std::string_view id) override {
        return id == RADIAL_SESSION_EXTENSION_ID ? radial::plugin::session_extension() : nullptr;
    }
    void create_session(const ContainerSpec&, std::uint64_t, std::uint64_t) override {
        throw radial::plugin::Error(RADIAL_E_UNSUPPORTED, kNoSessions);
    }
    radial::plugin::RunResult exec(const ContainerSpec&, radial::plugin::Output&) override {
        throw radial::plugin::Error(RADIAL_E_UNSUPPORTED, kNoSessions);
    }
    void destroy_session(std::string_view label) override { kill(label); }

private:
    static constexpr const char* kNoSessions =
        "the swarm runtime keeps no sessions: a swarm task may be restarted or moved to another "
        "node at any time, so what one turn installs would not be there for the next, and an "
        "exec reaches only the engine of the task's node; run one-shot turns, or pick the "
        "docker runtime for sessions (run.containerRuntime)";
    friend class SwarmRun;
    // Removes the services, the task containers on this node, then the secrets, labelled exactly
    // `label`; returns how many services it removed. Throws engine_api::EngineError.
    std::size_t remove_by_label(const std::string& label, const std::string& why);
    // Whether the engine still lists a service labelled exactly `label`, or a running container
    // so labelled on this engine's node (a task whose service is gone but whose removal failed):
    // the box may still run. Throws engine_api::EngineError.
    bool service_listed(const std::string& label, const std::string& why);
    // Force-removes the containers on this engine's node labelled exactly `label`: the tasks'
    // containers the node keeps after their service is deleted. A task's container on another
    // node is that node's to remove. Throws engine_api::EngineError.
    void remove_local_containers(const std::string& label, const std::string& why);

    // The manager engine's DockerRootDir from the last preflight, asked for now when none ran in
    // this instance (one created again after its plugin host process crashed): mounts of it are
    // refused (plugin_support::refuse_engine_data_root). Throws engine_api::EngineError.
    std::string data_root();
    // Whether a task without a network attachment has loopback only: swarm has no network
    // "none", and such a task joins its node's default bridge (outbound access) where the node's
    // dockerd has one. True on the operator's word (run.swarm.noDefaultBridge), or when the swarm
    // is this one node and its engine has no network "bridge"; asked each time. Throws
    // engine_api::EngineError.
    bool default_bridge_absent();

    radial::plugin::Host host_;
    SwarmSettings settings_;
    engine_api::EngineClient engine_;
    plugin_support::RunRegistry runs_;
    // Kills of labels with no run in flight, for 60 s: a run of that label arriving just after
    // starts nothing (runtime_plugin.h `kill`). Guarded by kill_mutex_, which also makes "is a run
    // in flight?" and "remember the kill" one step.
    std::mutex kill_mutex_;
    std::map<std::string, std::chrono::steady_clock::time_point, std::less<>> early_kills_;
    mutable std::mutex data_root_mutex_;
    std::optional<std::string> data_root_; // guarded by data_root_mutex_; nullopt: unasked
};

} // namespace radial::swarm
