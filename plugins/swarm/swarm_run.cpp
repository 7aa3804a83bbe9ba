#include "swarm_run.h"

#include "engine_api/engine_endpoint.h"
#include "support/mount_sources.h"
#include "support/oom_reask.h"

namespace radial::swarm {

// The image reference the task runs, and the image's entrypoint when this engine has the image
// (nullopt when only the nodes may pull it).
std::pair<std::string, std::optional<std::vector<std::string>>> SwarmRun::resolve_image() {
    auto& engine = rt_.engine_;
    engine_api::Response r = engine.request("GET", "/images/" + url_encode(spec_.image) + "/json",
                                            "", "looking up image '" + spec_.image + "'");
    if (r.status == 404) {
        if (rt_.settings_.pull == "always") return {spec_.image, std::nullopt};
        throw Error(RADIAL_E_NOT_FOUND, "image",
                    "starting " + box() + ": image '" + spec_.image +
                        "' is not on the manager's engine " + engine.address().text +
                        "; load it there (and on every node that may run tasks: docker load), "
                        "or set run.swarm.pull = \"always\" to let nodes pull it");
    }
    if (r.status != 200)
        throw Error(RADIAL_E_INTERNAL, "looking up image '" + spec_.image + "': HTTP " +
                                           std::to_string(r.status) + ": " +
                                           engine_api::engine_message(r.body));
    json j = json::parse(r.body);
    std::vector<std::string> entrypoint;
    if (j.contains("Config") && j["Config"].is_object() && j["Config"].contains("Entrypoint") &&
        j["Config"]["Entrypoint"].is_array())
        for (const auto& e : j["Config"]["Entrypoint"]) entrypoint.push_back(e.get<std::string>());
    // An image id makes the node skip its registry lookup (it pulls only names, never ids): with
    // pull = "never" nothing contacts a registry.
    if (rt_.settings_.pull == "never") return {j.at("Id").get<std::string>(), entrypoint};
    return {spec_.image, entrypoint};
}

void SwarmRun::create_secrets() {
    const std::string run_tag = random_hex(8);
    std::size_t index = 0;
    for (const auto& e : spec_.env) {
        if (!e.secret) continue;
        SecretRef ref;
        ref.env_name = e.name;
        ref.name = "radial-" + run_tag + "-" + std::to_string(index);
        ref.file = secret_file_name(index);
        ++index;
        json body = {{"Name", ref.name},
                     {"Labels", {{kLabelKey, spec_.label}}},
                     {"Data", engine_api::base64_encode(e.value)}};
        // The value is only in the request body, never in a message or log line.
        json answer = rt_.engine_.call("POST", "/secrets/create", &body,
                                       "creating the swarm secret for " + e.name + " of " + box());
        ref.id = answer.at("ID").get<std::string>();
        secrets_.push_back(std::move(ref));
    }
}

// Returns true when the stream ended on its own at a frame boundary with everything delivered.
bool SwarmRun::pump(engine_api::Stream& stream, std::uint64_t skip_out, std::uint64_t skip_err,
                    bool stamped) {
    // The broker sends a frame per line; consecutive frames of one stream within one read are
    // delivered as one chunk, so a chatty box costs the sink one call per read, not per line.
    std::uint32_t pending_stream = 0;
    std::string pending;
    std::uint64_t skip[3] = {0, skip_out, skip_err};
    auto deliver = [&] {
        if (pending.empty() || output_aborted_) return !output_aborted_;
        tls_in_output_sink = true;
        bool ok = out_.write(pending_stream, pending.data(), pending.size());
        tls_in_output_sink = false;
        pending.clear();
        if (!ok && out_.aborted()) {
            output_aborted_ = true;
            if (run_pump_) run_pump_->output_aborted();
        }
        return !output_aborted_.load();
    };
    auto take = [&](std::uint32_t s, const char* data, std::size_t n, std::int64_t ms) {
        // Bytes an earlier stream of this run already delivered are skipped, not repeated.
        std::size_t drop = static_cast<std::size_t>(std::min<std::uint64_t>(skip[s], n));
        skip[s] -= drop;
        data += drop;
        n -= drop;
        if (n == 0) return true;
        delivered_[s] += n;
        if (stamped) {
            if (ms < 0) stamps_ok_ = false;
            stamped_bytes_[ms][s] += n;
            if (ms > newest_ms_) newest_ms_ = ms;
            while (!stamped_bytes_.empty() &&
                   stamped_bytes_.begin()->first < newest_ms_ - 2 * kSinceMarginMs)
                stamped_bytes_.erase(stamped_bytes_.begin());
        }
        if (s != pending_stream && !deliver()) return false;
        pending_stream = s;
        if (escaped_)
            decoders_[s].feed({data, n}, pending);
        else
            pending.append(data, n);
        return true;
    };
    std::string chunk;
    if (stamped) {
        StampedDemux demux(take);
        while (stream.read(chunk))
            if (!demux.feed(chunk) || !deliver()) return false;
        return demux.at_frame_boundary() && !output_aborted_;
    }
    engine_api::FrameDemux demux(
        [&](std::uint32_t s, const char* data, std::size_t n) { return take(s, data, n, -1); });
    while (stream.read(chunk))
        if (!demux.feed(chunk) || !deliver()) return false;
    return demux.at_frame_boundary() && !output_aborted_;
}

void SwarmRun::cleanup() noexcept {
    if (cleaned_) return;
    cleaned_ = true;
    try {
        stop_logs();
    } catch (...) {
    }
    // By label, not only by the ids this run knows: a create whose answer was lost still left a
    // service or secret carrying the label.
    try {
        rt_.remove_by_label(spec_.label, "ending " + box());
    } catch (const std::exception& e) {
        rt_.host_.warn("removing " + box() + ": " + e.what() +
                       "; reconciliation will find it by its label");
    }
}

bool SwarmRun::still_listed() noexcept {
    try {
        return rt_.service_listed(spec_.label, "ending " + box());
    } catch (const std::exception&) {
        return true; // the engine cannot say: it may run
    }
}

radial::plugin::RunResult SwarmRun::execute() {
    const auto started = Clock::now();
    radial::plugin::RunResult result;
    if (active_.kill_requested()) {
        result.flags = RADIAL_RUN_KILLED;
        return result;
    }
    auto timeout_at = Clock::time_point::max();
    if (spec_.timeout_ms != 0 && spec_.timeout_ms < 100ull * 365 * 24 * 3600 * 1000)
        timeout_at = started + milliseconds(spec_.timeout_ms);
    // A bind mount comes from the node's filesystem; the manager's data root is the one this
    // runtime can know (docs/design.md §7.5).
    if (!spec_.mounts.empty()) {
        std::string root;
        try {
            root = rt_.data_root();
        } catch (const EngineError& e) {
            throw Error(RADIAL_E_UNAVAILABLE, e.what());
        }
        const auto& engine = rt_.engine_.address();
        plugin_support::refuse_engine_data_root(spec_, root, "at " + engine.text);
        const auto env = engine_api::EngineEnvironment::of_process();
        plugin_support::refuse_engine_control_paths(
            spec_, plugin_support::engine_control_paths(
                       "at " + engine.text, engine.unix_socket ? engine.path : std::string(),
                       env.config_directory(), env.docker_cert_path));
    }
    // No network attachment: loopback only where the node's engine has no default bridge, and
    // that bridge's outbound access otherwise, which no "no network" may become (docs/cluster.md).
    const bool attached = (!spec_.network.empty() && spec_.network != "none") ||
                          (!spec_.host_ports.empty() && rt_.settings_.host_network);
    bool isolated = attached;
    if (!attached) {
        try {
            isolated = rt_.default_bridge_absent();
        } catch (const EngineError& e) {
            throw Error(RADIAL_E_UNAVAILABLE, e.what());
        }
    }
    if (!isolated)
        throw Error(RADIAL_E_REFUSED, "network",
                    box() +
                        " asks for no network, but swarm has no network 'none': a task "
                        "without one joins its node's default bridge, which reaches "
                        "whatever the node reaches. Run every node's dockerd with "
                        "--bridge=none and set run.swarm.noDefaultBridge = true, or set "
                        "run.network to an internal overlay network (docker network create "
                        "-d overlay --internal NAME; docs/cluster.md)");

    std::string task_state, task_err, said_pending;
    std::optional<int> exit_code;
    std::string container_id; // of the ended task, for its OOM verdict
    plugin_support::Ending ending = plugin_support::Ending::none;
    bool box_ended = true;
    try {
        auto [image_ref, entrypoint] = resolve_image();
        // A secret variable is set by the entry step, which becomes the task's command and so
        // replaces the image's entrypoint; unknown, it would be dropped, and the command run
        // without it (docs/design.md §13.7).
        if (!entrypoint &&
            std::any_of(spec_.env.begin(), spec_.env.end(), [](const auto& e) { return e.secret; }))
            throw Error(RADIAL_E_NOT_FOUND, "image",
                        "starting " + box() + ": image '" + spec_.image +
                            "' is not on the manager's engine, so its entrypoint is unknown, and "
                            "the turn's secret variables need an entry step that replaces it (the "
                            "command would run without the image's entrypoint); load the image on "
                            "the manager (docker load), or run the turn without secret variables");
        // Under radial-init only when the image's entrypoint is known: the init replaces it.
        escaped_ = !rt_.settings_.init_path.empty() && entrypoint.has_value();
        if (!rt_.settings_.init_path.empty() && !escaped_)
            rt_.host_.info(box() + ": image '" + spec_.image +
                           "' is not on the manager's engine, so its entrypoint is unknown: the "
                           "task runs under docker's init, its output read line by line (slow "
                           "for chatty commands) and its deadline kept by this runtime alone");
        create_secrets();
        json body =
            service_spec(spec_, rt_.settings_, image_ref,
                         entrypoint.value_or(std::vector<std::string>{}), secrets_, escaped_);
        json answer =
            rt_.engine_.call("POST", "/services/create", &body, "creating the service of " + box());
        service_id_ = answer.at("ID").get<std::string>();
        rt_.host_.debug("started " + box() + " as swarm service " + service_id_);
        if (answer.contains("Warnings") && answer["Warnings"].is_array())
            for (const auto& w : answer["Warnings"])
                if (w.is_string())
                    rt_.host_.info(box() + ": the engine warns: " + w.get<std::string>());

        // The run's wait, stop and drain are the shared pump's (docs/design.md §5.12). The box
        // ends when its task reaches a terminal state (polled), or once its service's removal
        // was asked for (the stop: a removal that fails is retried by cleanup, on every path).
        plugin_support::PumpOptions options;
        options.deadline = timeout_at;
        options.check_every = kPollEvery;
        options.settle_budget = kRemovalBudget;
        bool stopped = false;
        const std::string tasks_target =
            "/tasks?filters=" + url_encode(json({{"service", {{service_id_, true}}}}).dump());
        plugin_support::PumpBox callbacks;
        // Once a stop was asked, the box has ended only when its service is gone: a removal
        // that failed (an engine restarting) leaves its task running on its node.
        callbacks.ended = [&] {
            if (stopped) return !rt_.service_listed(spec_.label, "ending " + box());
            json tasks =
                rt_.engine_.call("GET", tasks_target, nullptr, "reading the task of " + box());
            if (!tasks.is_array() || tasks.empty()) return false;
            const json& st = tasks.front().value("Status", json::object());
            task_state = st.value("State", "");
            task_err = st.value("Err", "");
            if (st.contains("ContainerStatus") && st["ContainerStatus"].is_object() &&
                st["ContainerStatus"].contains("ContainerID") &&
                st["ContainerStatus"]["ContainerID"].is_string())
                saw_container(st["ContainerStatus"]["ContainerID"].get<std::string>());
            // A task the scheduler cannot place waits in "pending" (until the timeout, if any):
            // say why once, so the operator sees it while the turn waits.
            if (!terminal(task_state) && !task_err.empty() && task_err != said_pending) {
                said_pending = task_err;
                rt_.host_.warn(box() + " is " + task_state + ": " + task_err +
                               "; check run.swarm.constraints and reservations against the "
                               "nodes (docker node ls)");
            }
            if (!terminal(task_state)) return false;
            if (st.contains("ContainerStatus") && st["ContainerStatus"].contains("ExitCode") &&
                (task_state == "complete" || task_err.starts_with("task: non-zero exit")))
                exit_code = st["ContainerStatus"]["ExitCode"].get<int>();
            if (st.contains("ContainerStatus") && st["ContainerStatus"].contains("ContainerID") &&
                st["ContainerStatus"]["ContainerID"].is_string())
                container_id = st["ContainerStatus"]["ContainerID"].get<std::string>();
            return true;
        };
        callbacks.stop = [&](const plugin_support::StopRequest&) {
            stopped = true;
            try {
                rt_.remove_by_label(spec_.label, "ending " + box());
                return true;
            } catch (const std::exception& e) {
                rt_.host_.debug("ending " + box() + ": " + e.what() + "; removing it again");
                return false; // asked again while its service is listed
            }
        };
        callbacks.force_kill = [this] { stop_logs(); };
        callbacks.drain = [&](plugin_support::Ending why) {
            if (why != plugin_support::Ending::none || !exit_code) return;
            // A local container's followed stream ends on its own once the container stopped.
            // The broker's trails the task and never ends while the service exists: stop it, then
            // read the ended task's logs once to their end, on the same path, delivering only
            // what the followed stream had not (docs/design.md §13.11).
            // Docker 20.10 ends a container's followed stream early now and then (seen: 7.5 M of
            // 8.4 M lines), so an end on its own is not trusted: the rest is always read.
            bool local = false;
            {
                std::lock_guard lock(stream_mutex_);
                local = !local_container_.empty();
            }
            if (local) await_local_logs();
            stop_logs();
            if (log_failure_) std::rethrow_exception(log_failure_);
            if (!path_chosen_) { // the log thread never chose: choose now, nothing was delivered
                if (on_this_engine(container_id)) local_container_ = container_id;
            }
            if (output_aborted_) return;
            // The rest can be long (the whole log again on the broker path): read it on the log
            // thread while this one watches for a kill, which the pump cannot see during the
            // drain, so that a kill ends the run within its grace.
            std::uint64_t skip_out = 0, skip_err = 0;
            const std::string target = rest_target(skip_out, skip_err);
            const bool stamped = !local_container_.empty();
            {
                std::lock_guard lock(stream_mutex_);
                logs_stopping_ = false;
                follow_done_ = false;
            }
            log_thread_.emplace([this, target, skip_out, skip_err, stamped] {
                read_rest(target, skip_out, skip_err, stamped);
            });
            {
                std::unique_lock lock(stream_mutex_);
                while (!follow_done_) {
                    if (active_.kill_requested()) {
                        drain_killed_ = true;
                        break;
                    }
                    log_cv_.wait_for(lock, milliseconds(200));
                }
            }
            stop_logs();
            if (log_failure_ && !drain_killed_) std::rethrow_exception(log_failure_);
            // An escape cut at the very end (never radial-init's own) is delivered as it was.
            for (std::uint32_t s : {RADIAL_STREAM_STDOUT, RADIAL_STREAM_STDERR}) {
                std::string held;
                decoders_[s].finish(held);
                if (!held.empty() && !drain_killed_ && !output_aborted_)
                    out_.write(s, held.data(), held.size());
            }
        };
        run_pump_.emplace(active_, options, std::move(callbacks));
        log_thread_.emplace([this] { follow_logs(); });
        const plugin_support::PumpResult pumped = run_pump_->run();
        ending = pumped.ending;
        box_ended = pumped.box_ended;
    } catch (const EngineError& e) {
        cleanup();
        rethrow_engine(e);
    } catch (...) {
        cleanup();
        throw;
    }
    stop_logs();
    // Asked before cleanup() removes the task's container, which holds the verdict (docs/design.md
    // §13.7).
    const bool oom = ending == plugin_support::Ending::none && !drain_killed_ && exit_code &&
                     *exit_code != 0 && oom_killed(container_id, *exit_code);
    cleanup();
    // Killed or timed out, but its service could not be removed: its task may still run (and
    // write to its mounts), which no "killed" may claim (docs/design.md §13.7).
    if (!box_ended && still_listed())
        throw Error(RADIAL_E_UNAVAILABLE,
                    box() +
                        " was to end, but its service could not be removed, or its task's "
                        "container still runs on this node: its task may still run; "
                        "reconciliation removes it by its label once the engine answers");
    if (log_failure_ && ending == plugin_support::Ending::none && !drain_killed_) {
        try {
            std::rethrow_exception(log_failure_);
        } catch (const EngineError& e) {
            rethrow_engine(e);
        } catch (const std::exception& e) {
            throw Error(RADIAL_E_INTERNAL, "following the output of " + box() + ": " + e.what());
        }
    }
    result.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<milliseconds>(Clock::now() - started).count());
    switch (ending) {
        case plugin_support::Ending::killed: result.flags = RADIAL_RUN_KILLED; break;
        case plugin_support::Ending::aborted:
            result.flags = RADIAL_RUN_KILLED | RADIAL_RUN_OUTPUT_ABORTED;
            break;
        case plugin_support::Ending::timed_out: result.flags = RADIAL_RUN_TIMED_OUT; break;
        case plugin_support::Ending::none:
            if (drain_killed_) { // the task ended, but its output was cut short by the kill
                result.flags = RADIAL_RUN_KILLED;
                break;
            }
            if (!exit_code)
                throw Error(
                    RADIAL_E_INTERNAL,
                    "starting " + box() + " from image '" + spec_.image + "': the swarm task " +
                        "ended '" + task_state + "' without running: " +
                        (task_err.empty() ? std::string("the engine gave no reason") : task_err) +
                        "; check the mounts, workdir, user and constraints against the nodes, "
                        "and the engine's log");
            result.flags = RADIAL_RUN_EXITED;
            result.exit_code = *exit_code;
            if (output_aborted_) result.flags |= RADIAL_RUN_OUTPUT_ABORTED;
            // As the docker runtime: a workload that exited 0 was not ended by the bound.
            if (oom && *exit_code != 0) result.flags |= RADIAL_RUN_OOM_KILLED;
            break;
    }
    return result;
}

// Whether the memory bound ended the task: its container's State.OOMKilled. A task's status does
// not say (a task killed by the bound only "exits 137"), and the container can be asked only on
// the node whose engine this is; a task on another node is reported as not OOM-killed
// (docs/design.md §13.7).
bool SwarmRun::oom_killed(const std::string& container_id, int exit_code) {
    if (container_id.empty()) return false;
    // The engine learns of an OOM kill by an event of its own, which can come after the exit: a
    // SIGKILL's 137 without the flag is asked again, for up to two seconds (oom_reask.h).
    for (int again = 0;; ++again) {
        try {
            auto r = rt_.engine_.request("GET", "/containers/" + container_id + "/json", "",
                                         "inspecting the container of " + box());
            if (r.status != 200) return false;
            json j = json::parse(r.body, nullptr, false);
            if (!j.is_discarded() && j.contains("State") && j["State"].is_object() &&
                j["State"].value("OOMKilled", false))
                return true;
        } catch (const std::exception&) {
            return false;
        }
        if (exit_code != 137 || again >= plugin_support::kOomReasks) return false;
        std::this_thread::sleep_for(plugin_support::kOomReaskEvery);
    }
}

} // namespace radial::swarm
