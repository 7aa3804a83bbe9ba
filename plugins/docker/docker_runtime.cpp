#include "docker_runtime.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "box_user.h"
#include "deadline.h"
#include "docker_run.h"
#include "docker_session.h"
#include "docker_snapshot.h"
#include "oci_runtime_profile.h"
#include "support/box_init.h"
#include "support/mount_sources.h"

namespace radial::docker {

namespace {

DockerSettings settings_with_box_init(radial::plugin::Config& config,
                                      const radial::plugin::Host& host) {
    DockerSettings s = parse_docker_settings(config);
    s.init_path = plugin_support::box_init_or_default(
        s.init_path, host, "docker",
        "boxes run under docker's --init, a box outlives its timeout when no radiald is left to "
        "kill it, and a box with a secret variable (a turn socket's token is one) is refused");
    return s;
}

} // namespace

DockerRuntime::DockerRuntime(const radial::plugin::Host& host, radial::plugin::Config& config)
    : host_(host),
      engine_(settings_with_box_init(config, host)),
      inspector_(engine_.resolved().address, engine_.settings().command_timeout_ms) {
    // Which engine, and why (docs/design.md §13.10).
    const auto& r = engine_.resolved();
    host_.debug("docker engine " + r.address.text + " (" + r.source + ")" +
                (r.address.tls ? ", TLS with " + r.address.tls->origin : std::string()));
}

void DockerRuntime::preflight() {
    // Probed once for the instance's life, and again after anything failed for want of an
    // engine (docs/design.md §13.1): a healthy answer is not asked for before every turn.
    if (engine_healthy_) return;
    std::string version = engine_.server_version();
    host_.debug("docker engine " + engine_.engine_name() + " answers, Engine API " + version);
    // A runtime the engine does not know fails every turn's create ("Unknown runtime
    // specified"); say so once, at startup, with the fix (docs/design.md §13.9, §7.4).
    if (const auto& runtime = engine_.settings().oci_runtime; !runtime.empty()) {
        const auto listed = engine_.runtimes();
        std::vector<std::string> names, args;
        std::string path;
        for (const auto& r : listed) {
            names.push_back(r.name);
            if (r.name == runtime) {
                path = r.path;
                args = r.args;
            }
        }
        if (auto refusal = oci_runtime_refusal(engine_.settings(), names, engine_.engine_name()))
            throw radial::plugin::Error(RADIAL_E_INVALID, "ociRuntime", *refusal);
        // The dispositions come from the profile of the name (docs/design.md §13.9): a known
        // binary under another name would be described as runc, falsely.
        if (auto refusal =
                oci_runtime_alias_refusal(engine_.settings(), path, engine_.engine_name()))
            throw radial::plugin::Error(RADIAL_E_INVALID, "ociRuntime", *refusal);
        // A box that cannot reach its turn socket must not look healthy (docs/design.md §13.9).
        if (auto refusal =
                turn_socket_refusal(engine_.settings(), path, args, engine_.engine_name()))
            throw radial::plugin::Error(RADIAL_E_INVALID, "ociRuntime", *refusal);
        host_.debug("docker engine " + engine_.engine_name() + " lists runtime '" + runtime + "'");
    }
    // A writable-layer bound the engine cannot give would fail every turn's create; refuse it
    // once, at startup, naming the key (docs/design.md §13.1).
    if (engine_.settings().writable_layer_bytes != 0) {
        StorageDriver driver = engine_.storage_driver();
        if (auto refusal = writable_layer_refusal(engine_.settings(), driver.name,
                                                  driver.backing_filesystem, engine_.engine_name()))
            throw radial::plugin::Error(RADIAL_E_INVALID, "writableLayerSize", *refusal);
    }
    // Mounts of the engine's own data root are refused at run, the host refusing only the default
    // ones (docs/design.md §7.5); a run before any preflight asks for it itself.
    engine_.learn_data_root();
    engine_healthy_ = true;
}

radial::plugin::BoxRootIds DockerRuntime::root_ids() {
    try {
        if (auto root = engine_.userns_root()) return {root->uid, root->gid};
    } catch (const radial::plugin::Error& e) {
        note_failure(e);
        throw;
    }
    std::string why = "the docker engine (" + engine_.engine_name() +
                      ") does not remap user namespaces, so a box's uid 0 would be the host's "
                      "root; start a dockerd with --userns-remap (docs/design.md §8.8)";
    if (!engine_.settings().oci_runtime.empty())
        why += "; run.docker.ociRuntime '" + engine_.settings().oci_runtime +
               "' does not change that: files a box's root writes to its mounts would be the "
               "host root's";
    throw radial::plugin::Error(RADIAL_E_UNSUPPORTED, why);
}

void DockerRuntime::note_failure(const radial::plugin::Error& e) noexcept {
    if (e.code() == RADIAL_E_UNAVAILABLE) engine_healthy_ = false;
}

std::vector<std::string> DockerRuntime::capabilities() {
    std::vector<std::string> caps = {RADIAL_CAP_UNIX_SOCKET_MOUNTS, RADIAL_CAP_NAMED_NETWORKS,
                                     RADIAL_CAP_HOST_UID_MOUNTS};
    // radial-init serves the box's end of the egress broker (egress_forward.h).
    // radial-init passes a SIGTERM on to the command (a command that is PID 1 itself would not
    // get one it has no handler for) and applies the grace at its own deadline.
    if (!engine_.settings().init_path.empty()) {
        caps.push_back(RADIAL_CAP_EGRESS_ENDPOINT);
        caps.push_back(RADIAL_CAP_STOP_GRACE);
    }
    if (oci_runtime_profile(engine_.settings().oci_runtime).mount_propagation)
        caps.push_back(RADIAL_CAP_MOUNT_PROPAGATION);
    return caps;
}

std::vector<radial::plugin::Disposition> DockerRuntime::describe(const ContainerSpec& spec) {
    std::vector<radial::plugin::Disposition> out;
    for (std::uint32_t field : carried_fields(spec)) {
        std::optional<std::string> user_refusal;
        if (field == RADIAL_FIELD_USER)
            user_refusal = user_problem(spec.user, engine_.namespaced_root());
        if (user_refusal)
            out.push_back({field, RADIAL_DISP_REFUSED,
                           "the docker runtime never runs a box as root or in root's group: " +
                               *user_refusal});
        else if (field == RADIAL_FIELD_MEMORY || field == RADIAL_FIELD_PIDS_LIMIT) {
            // What the OCI runtime really enforces, from its profile (docs/design.md §13.9).
            const auto& profile = oci_runtime_profile(engine_.settings().oci_runtime);
            const FieldTruth& truth =
                field == RADIAL_FIELD_MEMORY ? profile.memory : profile.pids_limit;
            out.push_back({field, truth.disposition, truth.note});
        } else if (field == RADIAL_FIELD_ENV &&
                   std::any_of(spec.env.begin(), spec.env.end(),
                               [](const EnvVar& e) { return e.secret; })) {
            // Where a secret value lives (docs/design.md §6.3).
            if (engine_.settings().init_path.empty())
                out.push_back({field, RADIAL_DISP_REFUSED,
                               "without radial-init, secret variables would be in the "
                               "container's configuration, which the engine keeps on disk; set "
                               "run.docker.boxInit to radial-init's path"});
            else
                out.push_back({field, RADIAL_DISP_HONOURED,
                               "secret variables reach radial-init over the attach stream, never "
                               "the container's configuration"});
        } else if (field == RADIAL_FIELD_MOUNTS) {
            // What the run refuses, said before it (docs/design.md §7.5): a warm pool's turn
            // mounts its workspace from the host, past the run, and the host asks this first.
            std::string root;
            try {
                root = engine_.data_root();
            } catch (const radial::plugin::Error& e) {
                out.push_back({field, RADIAL_DISP_REFUSED,
                               std::string("the engine's data root, which no mount may be, could "
                                           "not be learned: ") +
                                   e.what()});
                continue;
            }
            try {
                plugin_support::refuse_engine_data_root(spec, root, engine_.engine_name());
                plugin_support::refuse_engine_control_paths(spec, engine_.control_paths());
                out.push_back({field, RADIAL_DISP_HONOURED, {}});
            } catch (const radial::plugin::Error& e) {
                out.push_back({field, RADIAL_DISP_REFUSED, e.what()});
            }
        } else if (field == RADIAL_FIELD_HOST_PORTS) {
            // A box with no network has only its own loopback: no host port is reachable, so a
            // tcp turn socket could never take a record (docs/design.md §9.3).
            if (spec.network.empty() || spec.network == "none")
                out.push_back({field, RADIAL_DISP_REFUSED,
                               "a box with no network (run.network unset or \"none\") reaches no "
                               "host port"});
            else
                out.push_back({field, RADIAL_DISP_HONOURED,
                               "nothing to open under docker: whether the box reaches host ports "
                               "follows its network"});
        } else
            out.push_back({field, RADIAL_DISP_HONOURED, {}});
    }
    return out;
}

radial::plugin::RunResult DockerRuntime::run(const ContainerSpec& spec,
                                             radial::plugin::Output& out) {
    std::optional<plugin_support::RunRegistry::Registration> registration;
    bool killed_early = false;
    {
        // With kill()'s check, one step: a kill lands either in the registry or in early_kills_.
        std::lock_guard lock(kill_mutex_);
        registration.emplace(runs_.enter(spec.label));
        killed_early = early_kills_.take(spec.label, plugin_support::EarlyKills::Clock::now());
    }
    if (killed_early) {
        host_.info("box '" + spec.label + "' was killed before its run began");
        registration->run().request_kill(); // run_box then returns KILLED, starting nothing
    }
    try {
        return run_box(engine_, host_, spec, out, registration->run());
    } catch (const radial::plugin::Error& e) {
        note_failure(e);
        throw;
    }
}

std::vector<std::string> DockerRuntime::list_by_label(std::string_view prefix) {
    std::set<std::string> labels;
    std::vector<ListedBox> boxes;
    try {
        boxes = engine_.list();
    } catch (const radial::plugin::Error& e) {
        note_failure(e);
        throw;
    }
    for (auto& box : boxes)
        if (std::string_view(box.label).starts_with(prefix)) labels.insert(std::move(box.label));
    return {labels.begin(), labels.end()};
}

void DockerRuntime::kill(std::string_view label) {
    std::shared_ptr<ActiveRun> active;
    bool again = false; // a kill of this run was asked before: its grace has been given
    {
        std::lock_guard lock(kill_mutex_);
        active = runs_.find(label);
        again = active != nullptr && active->kill_requested();
        active = runs_.request_kill(label);
        if (active == nullptr)
            early_kills_.remember(label, plugin_support::EarlyKills::Clock::now());
    }
    auto remove = [&] {
        std::vector<std::string> ids;
        try {
            ids = engine_.ids_with_label(label);
            engine_.remove(ids, label);
        } catch (const radial::plugin::Error& e) {
            note_failure(e);
            throw;
        }
        return ids;
    };
    if (active == nullptr) {
        // A kill that found a box but no run was cleaning up an orphan (reconciliation), not
        // overtaking a run to come: a run of that label, should one follow, may start.
        if (!remove().empty()) early_kills_.forget(label);
        return;
    }
    // The kill's budget as it always was (the host bounds each call, 120 s by default): a longer
    // run.stopGrace is cut at it.
    const auto& s = engine_.settings();
    const std::chrono::milliseconds budget =
        std::min(kLongestBudget, budget_ms(s.kill_grace_ms) + 2 * budget_ms(s.command_timeout_ms));
    // From inside the output sink the run cannot stop its box before this returns, and the box
    // must be gone when it does (runtime_plugin.h, kill): no grace then.
    if (active->on_run_thread()) {
        remove();
        return;
    }
    // A run killed before and not ended yet (a host's backstop): it had its grace.
    if (again) {
        remove();
        active->wait_finished(budget);
        return;
    }
    // Otherwise the run stops its own box: SIGTERM, run.stopGrace, then the removal
    // (docs/design.md §13.1). Removed from here at once, the box ended without the grace.
    if (!active->wait_finished(budget))
        host_.warn("killing box '" + std::string(label) + "': its run did not finish within " +
                   std::to_string(budget.count()) +
                   " ms (its stop grace, run.stopGrace, included); removing the box from here");
    // Whatever the run did: one that could not remove its box (an engine error) must not let
    // this return with the box there (runtime_plugin.h, kill). Gone already: one listing.
    remove();
}

void DockerRuntime::create_session(const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                                   std::uint64_t max_lifetime_ms) {
    try {
        create_docker_session(engine_, host_, spec, idle_timeout_ms, max_lifetime_ms);
    } catch (const radial::plugin::Error& e) {
        note_failure(e);
        throw;
    }
}

radial::plugin::RunResult DockerRuntime::exec(const ContainerSpec& exec,
                                              radial::plugin::Output& out) {
    try {
        return exec_in_docker_session(engine_, host_, exec, out);
    } catch (const radial::plugin::Error& e) {
        note_failure(e);
        throw;
    }
}

std::string DockerRuntime::resolve_image(std::string_view image) {
    return docker_image_digest(engine_, image);
}

void DockerRuntime::changes(std::string_view label, std::uint64_t since_ms,
                            radial::plugin::ChangeSink& sink) {
    docker_session_changes(engine_, label, since_ms, sink);
}

std::string DockerRuntime::snapshot(std::string_view label, std::string_view image) {
    return snapshot_docker_session(engine_, host_, label, image);
}

void DockerRuntime::remove_snapshot(std::string_view image) { engine_.remove_image(image); }

void DockerRuntime::check_snapshot_size(std::string_view label, std::uint64_t max_bytes) {
    check_docker_snapshot_size(engine_, label, max_bytes);
}

} // namespace radial::docker
