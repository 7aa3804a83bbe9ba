#include "docker_run.h"

#include <radial/support/run_ending.h>
#include <radial/support/run_pump.h>
#include <string.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <optional>
#include <thread>

#include "deadline.h"
#include "engine_api/stream_frames.h"
#include "support/mount_sources.h"
#include "support/oom_reask.h"

namespace radial::docker {

namespace {

using engine_api::EngineError;
using plugin_support::Ending;
using plugin_support::ending_text;
using radial::plugin::Error;
using std::chrono::milliseconds;

constexpr auto kRemoveEvery = std::chrono::seconds(1);
constexpr auto kRemovalBudget = std::chrono::seconds(10);

class BoxRun {
public:
    BoxRun(const DockerEngine& engine, const radial::plugin::Host& host, const ContainerSpec& spec,
           radial::plugin::Output& out, ActiveRun& active)
        : engine_(engine), host_(host), spec_(spec), out_(out), active_(active) {}

    radial::plugin::RunResult execute();

private:
    enum class Prepared { ready, killed, timed_out };
    Prepared prepare_image(std::vector<std::string>& entrypoint);
    void pump();
    void deliver(std::uint32_t stream, const char* data, std::size_t size);
    void supervise() noexcept;
    bool stop(const plugin_support::StopRequest& request);
    void close_stream();
    void terminate();
    bool output_aborted() const { return pump_ && pump_->aborted(); }
    void remove_after_exit();
    void ensure_gone(int clean_looks_needed = 1);
    milliseconds start_budget() const;
    bool remove_within(milliseconds budget);
    radial::plugin::RunResult start_never_completed(const std::string& cause,
                                                    Clock::time_point started);
    radial::plugin::RunResult ended_early(Ending ending, Clock::time_point started);
    // The result of a run that `ending` (not none) ended, timed from `started`.
    radial::plugin::RunResult early_result(Ending ending, Clock::time_point started) const;
    std::string box() const { return "box '" + spec_.label + "'"; }

    const DockerEngine& engine_;
    const radial::plugin::Host& host_;
    const ContainerSpec& spec_;
    radial::plugin::Output& out_;
    ActiveRun& active_;

    Clock::time_point timeout_at_ = Clock::time_point::max();
    // Set before the supervisor starts, constant while it runs.
    std::string cid_;
    bool removed_in_grace_ = false; // ended in the stop grace by a removal, not by itself
    // The exit code of a box that ended in the stop grace by itself: the command's own, which the
    // record keeps beside the timeout or kill that asked it to stop.
    std::optional<int> grace_exit_code_;
    std::unique_ptr<engine_api::Stream> stream_;

    // Shared by the calling thread (which reads the stream and tells the pump when it ended, or
    // the run is finishing) and the supervisor thread (which runs the pump).
    std::optional<plugin_support::RunPump> pump_;
};

// The image's entrypoint (the box init replaces it, so it is passed on explicitly), pulling the
// image first where run.docker.pull says so. With pull "never" a missing image is left for create
// to refuse with the engine's own message.
BoxRun::Prepared BoxRun::prepare_image(std::vector<std::string>& entrypoint) {
    const DockerSettings& settings = engine_.settings();
    std::optional<std::vector<std::string>> found;
    // A content digest ("sha256:…", what radiald resolved the image to: docs/design.md §6.5)
    // names an image the engine already has; no registry serves it by that name.
    const bool by_digest = spec_.image.rfind("sha256:", 0) == 0;
    if (settings.pull != "always" || by_digest) found = engine_.image_entrypoint(spec_.image);
    if (!found && settings.pull != "never" && !by_digest) {
        host_.info("pulling image '" + spec_.image + "' for " + box() + " with the docker CLI");
        auto left = timeout_at_ == Clock::time_point::max()
                        ? kLongestBudget
                        : std::max(milliseconds(1),
                                   std::chrono::ceil<milliseconds>(timeout_at_ - Clock::now()));
        switch (engine_.pull(spec_.image, spec_.label, left, active_.wake().fd())) {
            case PullEnd::cancelled: return Prepared::killed;
            case PullEnd::timed_out:
                if (timeout_at_ != Clock::time_point::max()) return Prepared::timed_out;
                break;
            case PullEnd::done: break;
        }
        found = engine_.image_entrypoint(spec_.image);
    }
    if (found) entrypoint = std::move(*found);
    return Prepared::ready;
}

radial::plugin::RunResult BoxRun::execute() {
    const auto started = Clock::now();
    radial::plugin::RunResult result;
    if (active_.kill_requested()) {
        host_.info(box() + " was killed before it was created; nothing was started");
        result.flags = RADIAL_RUN_KILLED;
        return result;
    }
    const DockerSettings& settings = engine_.settings();
    // Refuses a bad spec before any engine contact.
    (void)docker_create_body(spec_, settings, {}, engine_.namespaced_root());
    // The engine's Binds would silently create a missing source as a root-owned directory.
    plugin_support::check_mount_sources(spec_);
    if (!spec_.mounts.empty()) {
        plugin_support::refuse_engine_data_root(spec_, engine_.data_root(), engine_.engine_name());
        plugin_support::refuse_engine_control_paths(spec_, engine_.control_paths());
    }
    if (spec_.timeout_ms != 0) timeout_at_ = deadline_after(started, spec_.timeout_ms);

    std::vector<std::string> entrypoint;
    switch (prepare_image(entrypoint)) {
        case Prepared::killed: return ended_early(Ending::killed, started);
        case Prepared::timed_out: return ended_early(Ending::timed_out, started);
        case Prepared::ready: break;
    }
    if (active_.kill_requested()) return ended_early(Ending::killed, started);
    const nlohmann::json body =
        docker_create_body(spec_, settings, entrypoint, engine_.namespaced_root());
    try {
        cid_ = engine_.create(body, spec_.label, spec_.image);
    } catch (const Error& e) {
        // A create that timed out may still land: the box must not outlive the run (§8.3).
        if (e.code() == RADIAL_E_UNAVAILABLE) {
            try {
                ensure_gone(2);
            } catch (const Error& cleanup) {
                host_.warn("after creating " + box() + " failed: " + cleanup.what());
            }
        }
        throw;
    }
    host_.debug("created " + box() + " as container '" + cid_.substr(0, 12) + "'");

    std::exception_ptr failure;
    std::optional<engine_api::Response> refused; // start's answer when the engine refused it
    std::optional<int> exit_code;
    std::optional<ContainerState> state;
    bool removed_by_another = false;
    std::optional<std::string> engine_lost;
    std::optional<std::string> start_expired; // the start's deadline passed: the client's words
    std::optional<Clock::time_point> command_started; // the engine answered the start
    {
        // The supervisor enforces the timeout, kills and aborts on its own thread, so that
        // neither a blocking output callback nor a slow removal delays the other.
        std::optional<std::thread> supervisor;
        plugin_support::PumpOptions options;
        options.deadline = timeout_at_;
        options.kill_grace = budget_ms(settings.kill_grace_ms);
        options.stop_grace = budget_ms(spec_.stop_grace_ms);
        options.stop_budget = budget_ms(settings.command_timeout_ms);
        options.stop_every = kRemoveEvery;
        options.settle_budget = kRemovalBudget;
        plugin_support::PumpBox callbacks;
        // The box's end is told by the calling thread (box_ended): its attach stream ended.
        callbacks.stop = [this](const plugin_support::StopRequest& r) { return stop(r); };
        callbacks.force_kill = [this] { close_stream(); };
        callbacks.terminate = [this] { terminate(); };
        pump_.emplace(active_, options, std::move(callbacks));
        try {
            // Attached before start, as `docker run` does, so no byte of output is missed. The
            // secret variables go to radial-init on its stdin (docs/design.md §13.8).
            std::string secrets =
                settings.init_path.empty() ? std::string() : secret_env_block(spec_);
            struct Scrub { // the values leave this process's memory once sent
                std::string& s;
                ~Scrub() { ::explicit_bzero(s.data(), s.size()); }
            } scrub{secrets};
            stream_ = engine_.attach(cid_, spec_.label, !secrets.empty());
            supervisor.emplace([this] { supervise(); });
            try {
                refused = engine_.start(cid_, spec_.label, start_budget());
                if (!refused) command_started = Clock::now();
            } catch (const EngineError& e) {
                // A start that never completes (a wedged engine, a runtime stuck in Created)
                // must not hold the turn (docs/design.md §13.1).
                if (!e.timed_out()) throw;
                start_expired = e.what();
            }
            if (!refused && !start_expired && !secrets.empty())
                stream_->write(secrets, budget_ms(settings.command_timeout_ms));
            if (!refused && !start_expired) pump();
            pump_->box_ended(); // the attach stream ended: the box's output is all in
            if (!refused && !start_expired && pump_->ending() == Ending::none) {
                try {
                    exit_code = engine_.wait(cid_, spec_.label);
                    // A workload that exited 0 ended by itself: no memory bound ended it and no
                    // stranger's removal killed it (both kill, so neither exits 0), and its
                    // state has nothing to add. Any other code is inspected for OOMKilled (a
                    // killed subprocess shows under any code) and a removal under way — one
                    // request less on the common path (docs/design.md §13.1).
                    if (*exit_code != 0) {
                        state = engine_.state(cid_, spec_.label);
                        // The engine learns of an OOM kill by an event of its own, which can come
                        // after the exit it reported: a SIGKILL's 137 without the flag is asked
                        // again, for up to two seconds (docs/design.md §13.1).
                        for (int again = 0;
                             again < plugin_support::kOomReasks && *exit_code == 137 &&
                             !state->oom_killed && !state->being_removed;
                             ++again) {
                            std::this_thread::sleep_for(plugin_support::kOomReaskEvery);
                            state = engine_.state(cid_, spec_.label);
                        }
                        removed_by_another = state->being_removed;
                    }
                } catch (const Error& e) {
                    if (e.code() == RADIAL_E_NOT_FOUND)
                        removed_by_another = true;
                    else
                        engine_lost = e.what();
                }
            }
        } catch (const EngineError& e) {
            // The attach stream or start broke: the engine stopped answering mid-run.
            engine_lost = e.what();
        } catch (...) {
            failure = std::current_exception();
        }
        pump_->box_ended(); // the run is over: the supervisor returns
        if (supervisor) supervisor->join();
    }
    if (start_expired) return start_never_completed(*start_expired, started);
    const Ending ending = pump_->ending();
    if (failure || (engine_lost && ending == Ending::none)) {
        // Whatever broke, the box must not outlive the run (docs/design.md §8.3): remove it by
        // label, and report the original failure.
        try {
            ensure_gone();
        } catch (const std::exception& cleanup) {
            host_.warn(std::string("after a failed run: ") + cleanup.what());
        }
        if (failure) std::rethrow_exception(failure);
        throw Error(RADIAL_E_UNAVAILABLE, "running " + box() + ": the engine stopped answering (" +
                                              *engine_lost +
                                              "); how the box ended is unknown; check that "
                                              "dockerd is running");
    }
    if (ending != Ending::none) return ended_early(ending, started);

    if (refused) {
        std::string reason = engine_api::engine_message(refused->body);
        if (refused->status == 404) removed_by_another = true;
        remove_after_exit();
        if (!removed_by_another)
            throw Error(RADIAL_E_INTERNAL,
                        "starting " + box() + " from image '" + spec_.image +
                            "': docker created the container but could not start it: " + reason +
                            "; check the spec's mounts, workdir and user against the image, and "
                            "dockerd's log");
    }
    // A kill() that arrived after the box's output ended removes the box itself, the run having
    // no supervisor left to record why: that is this runtime's kill, not a stranger's.
    if (removed_by_another && active_.kill_requested()) return ended_early(Ending::killed, started);
    // Gone, or going, before this run removed it, and not at its request: someone else removed
    // it (a `docker rm`, or another radiald given the same run.instanceId). The exit status is then
    // docker's kill, not the command's, so it must not be reported as one.
    if (removed_by_another)
        throw Error(RADIAL_E_INTERNAL,
                    box() + " was removed while it ran by something other than this " +
                        "radiald (a 'docker rm', or another radiald configured with the " +
                        "same run.instanceId); the command's own exit status is unknown");
    const auto command_ended = Clock::now();
    remove_after_exit();
    result.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<milliseconds>(Clock::now() - started).count());
    // The box's create (image, create, attach, start) and its removal, apart from its command.
    if (command_started) {
        auto ms = [](Clock::duration d) {
            return static_cast<std::uint64_t>(std::chrono::duration_cast<milliseconds>(d).count());
        };
        result.create_ms = ms(*command_started - started);
        result.remove_ms = ms(Clock::now() - command_ended);
    }
    // Only what the engine recorded: an exit code of 137 alone may be `exit 137`, so no
    // RADIAL_RUN_SIGNALED is derived from it.
    // The engine's OOMKilled says the bound killed some process of the box; a workload that then
    // exited 0 was not ended by it, and radiald takes OOM_KILLED with exit 0 for a contradiction.
    if (state && state->oom_killed && *exit_code != 0) result.flags = RADIAL_RUN_OOM_KILLED;
    plugin_support::ExitStatus status;
    status.exited = true;
    status.code = *exit_code;
    plugin_support::set_run_outcome(result, Ending::none, status, output_aborted(), box(),
                                    "the engine", "the box was removed");
    if (command_started) result.flags |= RADIAL_RUN_PHASE_TIMES;
    return result;
}

// A run ended by a kill, a timeout or an aborting sink: the box is made gone, and the result
// says why.
radial::plugin::RunResult BoxRun::ended_early(Ending ending, Clock::time_point started) {
    // Ended in the grace by itself, it is still there, exited; one a second kill removed
    // meanwhile (runtime.cpp, kill) did not end by itself, and the result must not say so.
    if (pump_ && pump_->ended_in_grace()) {
        try {
            const auto state = engine_.state(cid_, spec_.label);
            removed_in_grace_ = state.being_removed;
            if (!removed_in_grace_) grace_exit_code_ = state.exit_code;
        } catch (const Error&) {
            removed_in_grace_ = true; // gone: not its own end
        }
    }
    ensure_gone();
    host_.info("ended " + box() + " (" + ending_text(ending) +
               "): no container with its label remains");
    return early_result(ending, started);
}

radial::plugin::RunResult BoxRun::early_result(Ending ending, Clock::time_point started) const {
    radial::plugin::RunResult result;
    plugin_support::set_run_outcome(result, ending, {}, output_aborted(), box(), "the engine",
                                    "the box was removed");
    if (pump_ && pump_->ended_in_grace() && !removed_in_grace_) {
        result.flags |= RADIAL_RUN_STOPPED_IN_GRACE;
        if (grace_exit_code_) {
            result.flags |= RADIAL_RUN_EXITED;
            result.exit_code = *grace_exit_code_;
        }
    }
    result.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<milliseconds>(Clock::now() - started).count());
    return result;
}

// The start's budget: run.docker.startTimeout, cut to what is left of the turn's timeout (at
// least 1 ms), so that neither outlasts the other.
milliseconds BoxRun::start_budget() const {
    milliseconds budget = budget_ms(engine_.settings().start_timeout_ms);
    if (timeout_at_ != Clock::time_point::max())
        budget = std::min(
            budget,
            std::max(milliseconds(1), std::chrono::ceil<milliseconds>(timeout_at_ - Clock::now())));
    return budget;
}

// Forced removals of the box's container, retried until one is accepted or `budget` has passed;
// false when none was accepted in time. Never throws but std::bad_alloc.
bool BoxRun::remove_within(milliseconds budget) {
    const auto deadline = Clock::now() + budget;
    for (;;) {
        const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
        if (left <= milliseconds(0)) return false;
        try {
            engine_.remove({cid_}, spec_.label, left);
            return true;
        } catch (const Error& e) {
            host_.debug(std::string("removing ") + box() + " after its start: " + e.what());
        }
        if (Clock::now() + milliseconds(200) >= deadline) return false;
        std::this_thread::sleep_for(milliseconds(200));
    }
}

// The engine did not answer the start within its budget: the box is force-removed within a
// budget of its own (killGrace, at least 1 s), and the run fails naming the box, the OCI runtime
// and what to do — unless the turn's timeout or a kill ended it meanwhile, which is then its
// ending. A removal that did not complete is said, and left to reconciliation by label
// (docs/design.md §13.1, §8.3).
radial::plugin::RunResult BoxRun::start_never_completed(const std::string& cause,
                                                        Clock::time_point started) {
    Ending ending = pump_->ending();
    if (ending == Ending::none && Clock::now() >= timeout_at_) ending = Ending::timed_out;
    const milliseconds removal_budget =
        std::max(milliseconds(1000), budget_ms(engine_.settings().kill_grace_ms));
    const bool removed = remove_within(removal_budget);
    const std::string removal =
        removed ? std::string("the box was force-removed")
                : "its forced removal did not complete within " +
                      std::to_string(removal_budget.count()) +
                      " ms either, so it is left to reconciliation by its label '" + spec_.label +
                      "' (radiald reconcile)";
    if (ending != Ending::none) {
        // Logged as ended_early logs every stopped box's end: a timeout that came during a slow
        // start (a loaded machine) is the same ending as one that came after it.
        if (removed)
            host_.info("ended " + box() + " (" + ending_text(ending) +
                       "): its container was force-removed during its start");
        else
            host_.warn("ending " + box() + " during its start: " + removal);
        return early_result(ending, started);
    }
    const auto& runtime = engine_.settings().oci_runtime;
    throw Error(RADIAL_E_UNAVAILABLE,
                "starting " + box() + " under " +
                    (runtime.empty() ? std::string("the engine's default OCI runtime")
                                     : "OCI runtime '" + runtime + "' (run.docker.ociRuntime)") +
                    ": the engine did not start its container within " +
                    std::to_string(engine_.settings().start_timeout_ms) +
                    " ms (run.docker.startTimeout) (" + cause + "); " + removal +
                    "; check dockerd's log and that runtime (a box left in 'Created' by "
                    "'docker ps -a'), or raise run.docker.startTimeout if starts are only slow "
                    "here");
}

// Moves the box's output from the attach stream to `out_` until the engine ends the stream (the
// box's process ended and its output is all sent, or the box was removed) or the supervisor
// closes it. Never stops the box itself: that is the supervisor's (the pump's) job, so the stream
// keeps being drained while the removal runs. Each frame's payload goes to its own stream in order;
// a piece is at most 64 KiB (the stream's read size).
void BoxRun::pump() {
    engine_api::FrameDemux demux([this](std::uint32_t stream, const char* data, std::size_t n) {
        deliver(stream == RADIAL_STREAM_STDERR ? RADIAL_STREAM_STDERR : RADIAL_STREAM_STDOUT, data,
                n);
        return true;
    });
    std::string chunk;
    while (stream_->read(chunk)) demux.feed(chunk);
}

void BoxRun::deliver(std::uint32_t stream, const char* data, std::size_t size) {
    if (pump_->aborted() || size == 0) return;
    // Output::write is false when the sink asked to stop, and also when there is no sink at all
    // (then the output is simply dropped): only aborted() ends the run.
    if (!out_.write(stream, data, size) && out_.aborted()) pump_->output_aborted();
}

// The supervisor thread runs the shared pump (docs/design.md §5.12): it waits for a kill request,
// an aborting sink or the deadline, then stops the box. Returns when the box's stream has ended or
// the run is finishing. Never throws: a failure here is logged and the stream closed, so the
// calling thread's read still ends.
void BoxRun::supervise() noexcept {
    try {
        pump_->run();
    } catch (const std::exception& e) {
        host_.warn("supervising " + box() + ": " + e.what() + "; closing its attach stream");
        stream_->stop();
    }
}

// One stop of the box: a forced removal of its container, asked again once a second until its
// attach stream ends (false: ask again). Before the stream is closed (force_kill, after killGrace)
// each removal's budget is cut to what is left of the grace, so that a stalled stream (or an output
// callback that blocks, keeping the engine's side of the stream full) cannot outlive the turn.
bool BoxRun::stop(const plugin_support::StopRequest& r) {
    if (r.first)
        host_.info("ending " + box() + " (" + ending_text(r.why) + "): removing its container");
    try {
        engine_.remove({cid_}, spec_.label, r.budget);
    } catch (const Error& e) {
        if (r.forced)
            host_.warn(std::string("ending ") + box() + ": " + e.what());
        else
            host_.debug(std::string("ending ") + box() + ": " + e.what());
    }
    return false;
}

// The stop grace's start (run.stopGrace): SIGTERM to the box's PID 1, which radial-init passes to
// the command (at its own deadline it sends it to every process itself). A failure is logged; the
// removal after the grace ends the box anyway.
void BoxRun::terminate() {
    const auto& s = engine_.settings();
    host_.info("ending " + box() + ": SIGTERM to its command, then " +
               std::to_string(spec_.stop_grace_ms) + " ms (run.stopGrace) to end by itself");
    try {
        engine_.signal(cid_, spec_.label, "SIGTERM", budget_ms(s.command_timeout_ms));
    } catch (const Error& e) {
        host_.warn(std::string("ending ") + box() + ": " + e.what());
    }
}

// The forced end: the attach stream closed from this side, so the calling thread's read ends.
void BoxRun::close_stream() {
    host_.warn("ending " + box() + ": its attach stream was still open " +
               std::to_string(engine_.settings().kill_grace_ms) +
               " ms after its removal was asked for; closing it");
    stream_->stop();
}

// Removes the ended container (there is no AutoRemove: its state was read first). An engine that
// stops answering now does not turn a finished run into a failure; the box, stopped already, is
// then left to reconciliation by label, and the operator is told.
void BoxRun::remove_after_exit() {
    try {
        engine_.remove({cid_}, spec_.label);
        return;
    } catch (const Error& e) {
        host_.warn("removing " + box() + " after it exited: " + e.what() + "; retrying by label");
    }
    try {
        ensure_gone();
    } catch (const Error& e) {
        host_.warn("removing " + box() + " after it exited: " + e.what() +
                   "; the stopped container stays until the next reconciliation");
    }
}

void BoxRun::ensure_gone(int clean_looks_needed) {
    const auto deadline =
        Clock::now() +
        std::max<Clock::duration>(kRemovalBudget, budget_ms(engine_.settings().kill_grace_ms));
    for (;;) {
        std::vector<std::string> ids = engine_.ids_with_label(spec_.label);
        if (ids.empty()) {
            // A create request that timed out may still land: look again, a moment later.
            if (--clean_looks_needed <= 0) return;
            std::this_thread::sleep_for(milliseconds(300));
            continue;
        }
        if (Clock::now() >= deadline)
            throw Error(RADIAL_E_UNAVAILABLE,
                        "removing " + box() + ": its container '" + ids.front().substr(0, 12) +
                            "' still exists after repeated removals; check dockerd's log "
                            "and remove it by hand");
        engine_.remove(ids, spec_.label);
        std::this_thread::sleep_for(milliseconds(100));
    }
}

} // namespace

radial::plugin::RunResult run_box(const DockerEngine& engine, const radial::plugin::Host& host,
                                  const ContainerSpec& spec, radial::plugin::Output& out,
                                  ActiveRun& active) {
    return BoxRun(engine, host, spec, out, active).execute();
}

} // namespace radial::docker
