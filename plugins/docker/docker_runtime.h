// plugins/docker/docker_runtime.h — the docker runtime: the runner seam (docs/design.md §5.1
// ContainerRunner: run / listByLabel / kill, plus preflight) implemented with the Engine API.
#pragma once

#include <radial/support/run_registry.h>

#include <atomic>
#include <mutex>
#include <radial/plugin/box_root.hpp>
#include <radial/plugin/runtime.hpp>
#include <radial/plugin/session.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "box_inspect.h"
#include "docker_engine.h"
#include "docker_settings.h"
#include "support/early_kills.h"

#ifndef RADIAL_DOCKER_PLUGIN_VERSION
#define RADIAL_DOCKER_PLUGIN_VERSION "0.0.0"
#endif

namespace radial::docker {

// One instance per radiald runtime; holds no process, thread or descriptor between calls.
// Threading as in radial/runtime_plugin.h: every method but the constructor may be called from
// several threads at once.
class DockerRuntime final : public radial::plugin::Runtime,
                            public radial::plugin::Sessions,
                            public radial::plugin::BoxRoot {
public:
    static constexpr radial::plugin::Info info{"docker", "Docker (hardened docker run)",
                                               RADIAL_DOCKER_PLUGIN_VERSION};

    // Reads [run.docker] (parse_docker_settings). No process, no engine contact. Throws
    // radial::plugin::Error(RADIAL_E_INVALID, <key>) for a bad value. [control]
    DockerRuntime(const radial::plugin::Host& host, radial::plugin::Config& config);

    // Probes the engine (GET /_ping, or GET /version, within preflightTimeout, Engine API 1.41 or
    // newer) unless an earlier probe passed and no call since failed for want of an engine: a
    // healthy engine is probed once per instance, an unhealthy one on every call. Throws
    // Error(RADIAL_E_UNAVAILABLE, "docker engine unreachable via ...") on failure; a failure is
    // never cached. With run.docker.ociRuntime set, also refuses (RADIAL_E_INVALID, "ociRuntime")
    // a runtime the engine does not list, and one the engine runs as a binary the profile table
    // knows under another name (oci_runtime_alias_refusal); with run.docker.writableLayerSize set,
    // refuses (RADIAL_E_INVALID, "writableLayerSize") a storage driver that cannot bound the layer
    // (writable_layer_refusal). [thread-safe] Source: docs/design.md §7.4, §13.1, §13.9.
    void preflight() override;

    // radial.cap.unix-socket-mounts, radial.cap.named-networks, radial.cap.host-uid-mounts: a bind
    // mount passes a host socket through, --network joins an engine network, and files keep their
    // host uid under a plain (non-userns) engine. [thread-safe]
    std::vector<std::string> capabilities() override;

    // Every carried field HONOURED, except a `user` that is not numeric uid:gid with neither id
    // 0 (box_user.h: a name or "+0" may be root inside the image; "0:0" is accepted once
    // root_ids() found the engine remapping user namespaces), which is REFUSED with the
    // reason, and memory and pidsLimit, which are what run.docker.ociRuntime's profile says
    // (oci_runtime_profile.h: under runsc memory BRIDGED, pidsLimit SUPERSEDED, each with its
    // note). hostPorts is HONOURED with a note: docker opens nothing for it; reachability
    // follows `network`. Pure; [thread-safe]. Source: docs/design.md §5.6 table, §13.9.
    std::vector<radial::plugin::Disposition> describe(const ContainerSpec& spec) override;

    // run_box() under this instance's kill registry. A run whose label was killed in the last
    // 60 s while no run of it was in flight (and no box of it existed) returns RADIAL_RUN_KILLED
    // without starting anything. Throws Error(RADIAL_E_INVALID, "label") when a run of the same
    // label is already in flight. [thread-safe] for distinct labels.
    radial::plugin::RunResult run(const ContainerSpec& spec, radial::plugin::Output& out) override;

    // The labels (each once, sorted) of every box carrying radial.label whose value starts with
    // exactly the bytes of `prefix`, in any state, whoever created it. Throws
    // Error(RADIAL_E_UNAVAILABLE) with the engine's answer. [thread-safe] Source: docs/design.md
    // §8.3, C-04.
    std::vector<std::string> list_by_label(std::string_view prefix) override;

    // Postcondition: no box whose radial.label is exactly `label` exists. Signals a run of that
    // label in flight (it returns RADIAL_RUN_KILLED; one that has not created its box yet never
    // does), removes the matching containers (DELETE ?force=1), then waits (bounded) for that
    // run to finish its teardown, unless called from inside that run's output callback. With no
    // run in flight and no box found, the kill is remembered for 60 s (EarlyKills), so a run of
    // that label arriving just after it starts nothing. An unknown label is success. Throws
    // Error(RADIAL_E_UNAVAILABLE) with the engine's answer.
    // [thread-safe; also from inside the output callback] Source: docs/design.md §8.3, C-04, C-06.
    void kill(std::string_view label) override;

    // BoxInspector::inspect over the Engine API, each call within commandTimeout (box_inspect.h).
    // [thread-safe] Source: docs/design.md §8.4.
    radial::plugin::BoxState inspect(std::string_view label) override {
        return inspector_.inspect(label);
    }

    // radial.session/1 (radial/session.h): the session extension, below; radial.box-root/1
    // (radial/box_root.h): root_ids(). [thread-safe]
    const void* extension(std::string_view id) override {
        if (id == RADIAL_SESSION_EXTENSION_ID) return radial::plugin::session_extension();
        if (id == RADIAL_BOX_ROOT_EXTENSION_ID) return radial::plugin::box_root_extension();
        return nullptr;
    }
    // The remapped root's host ids when the engine runs with --userns-remap
    // (DockerEngine::userns_root); from then on a box may run as "0:0" (describe, run). Throws
    // Error(RADIAL_E_UNSUPPORTED) saying so and naming the fix when it does not remap, and
    // Error(RADIAL_E_UNAVAILABLE) when the engine does not answer. [thread-safe] Source:
    // docs/design.md §8.8.
    radial::plugin::BoxRootIds root_ids() override;
    // create_docker_session (docker_session.h). [thread-safe] for distinct labels.
    void create_session(const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                        std::uint64_t max_lifetime_ms) override;
    // exec_in_docker_session (docker_session.h). [thread-safe]; one exec per session at a time.
    radial::plugin::RunResult exec(const ContainerSpec& exec, radial::plugin::Output& out) override;
    // kill(label): the session's box is removed, an exec in it ends. [thread-safe]
    void destroy_session(std::string_view label) override { kill(label); }
    // Snapshots (docker_snapshot.h). [thread-safe]; changes and snapshot not during an exec of
    // that session.
    std::string resolve_image(std::string_view image) override;
    void changes(std::string_view label, std::uint64_t since_ms,
                 radial::plugin::ChangeSink& sink) override;
    std::string snapshot(std::string_view label, std::string_view image) override;
    void remove_snapshot(std::string_view image) override;
    void check_snapshot_size(std::string_view label, std::uint64_t max_bytes) override;

private:
    // A call failed with RADIAL_E_UNAVAILABLE: the next preflight probes the engine again.
    void note_failure(const radial::plugin::Error& e) noexcept;

    radial::plugin::Host host_;
    DockerEngine engine_;
    std::atomic<bool> engine_healthy_{false};
    BoxInspector inspector_;
    std::mutex kill_mutex_; // makes "is a run in flight?" and "remember the kill" one step
    plugin_support::RunRegistry runs_;
    plugin_support::EarlyKills early_kills_;
};

} // namespace radial::docker
