#include "docker_session.h"

#include <radial/internal/init_exit.h>
#include <radial/support/run_ending.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <thread>

#include "deadline.h"
#include "docker_argv.h"
#include "engine_api/stream_frames.h"
#include "support/box_init.h"
#include "support/mount_sources.h"
#include "support/oom_reask.h"

namespace radial::docker {
namespace {

using plugin_support::Ending;
using plugin_support::kInitReadyLine;
using radial::plugin::Error;
using std::chrono::milliseconds;

// How long past an exec's deadline and kill grace its stream may stay open before the session's
// box is removed: radial-init ends the exec at the deadline; this is for a box that cannot.
constexpr milliseconds kExecBackstop{10000};

// `bytes` for a message: what is not printable ASCII as '?'.
std::string printable_prefix(std::string_view bytes) {
    std::string out(bytes);
    for (char& c : out)
        if (c < 0x20 || c > 0x7e) c = '?';
    return out;
}

void remove_box(const DockerEngine& engine, const radial::plugin::Host& host,
                const std::string& label) {
    try {
        auto ids = engine.ids_with_label(label);
        if (!ids.empty()) engine.remove(ids, label);
    } catch (const Error& e) {
        host.warn("removing session box '" + label + "': " + e.what());
    }
}

// Stops the exec's stream at the backstop deadline, unless told the exec is over first.
class Backstop {
public:
    Backstop(engine_api::Stream& stream, Clock::time_point at) : stream_(stream) {
        if (at == Clock::time_point::max()) return;
        thread_ = std::thread([this, at] {
            std::unique_lock lock(mutex_);
            if (!cv_.wait_until(lock, at, [this] { return over_; })) {
                fired_ = true;
                stream_.stop();
            }
        });
    }
    ~Backstop() { finish(); }
    void finish() {
        {
            std::lock_guard lock(mutex_);
            over_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
    }
    bool fired() {
        std::lock_guard lock(mutex_);
        return fired_;
    }

private:
    engine_api::Stream& stream_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool over_ = false, fired_ = false;
    std::thread thread_;
};

// The exec's exit code once the engine recorded it: the stream ends as the exec's process does,
// and the engine records the code a moment later. Asked at once, then after 2, 4, 8 ... ms (at
// most 50 ms apart), for about 5 s in all; nullopt when it never came. Throws as exec_exit_code.
std::optional<int> exit_code_after_stream(const DockerEngine& engine, const std::string& exec_id,
                                          const std::string& label) {
    milliseconds pause{2};
    for (milliseconds waited{0}; waited < milliseconds(5000); waited += pause) {
        if (auto code = engine.exec_exit_code(exec_id, label)) return code;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, milliseconds(50));
    }
    return std::nullopt;
}

// Whether the session's box is at its end: stopped, gone, or past its maximum lifetime (its PID 1,
// `radial-init --session IDLE MAX GRACE`, ends every process then and exits a moment later).
bool box_is_ending(const DockerEngine& engine, const std::string& id, const std::string& label) {
    try {
        const auto box = engine.container_json(id, label);
        const auto state = box.value("State", nlohmann::json::object());
        if (!state.value("Running", false)) return true;
        const auto cmd =
            box.value("Config", nlohmann::json::object()).value("Cmd", nlohmann::json());
        if (!cmd.is_array() || cmd.size() != 4 || !cmd[2].is_string()) return false;
        const auto max_ms = std::stoull(cmd[2].get<std::string>());
        std::tm started{};
        const std::string at = state.value("StartedAt", "");
        if (max_ms == 0 || ::strptime(at.c_str(), "%Y-%m-%dT%H:%M:%S", &started) == nullptr)
            return false;
        const auto end = std::chrono::system_clock::from_time_t(::timegm(&started)) +
                         milliseconds(max_ms) - std::chrono::seconds(1);
        return std::chrono::system_clock::now() >= end;
    } catch (const Error& e) {
        // Removed under the exec (`docker rm -f`): at its end, as a stopped one is; any other
        // failure cannot tell, and the exec's code stands.
        return e.code() == RADIAL_E_NOT_FOUND;
    } catch (const std::exception&) {
        return false; // cannot tell: the exec's code stands
    }
}

// After each exec: `radial-init --sweep` kills what the exec left running (its command can kill
// its own radial-init, which is not PID 1 here, and leave children past the turn). False when the
// sweep could not be run or did not finish: the caller removes the box.
bool sweep_session(const DockerEngine& engine, const radial::plugin::Host& host,
                   const std::string& cid, const std::string& label) {
    try {
        const nlohmann::json body = {{"AttachStdout", true},
                                     {"AttachStderr", true},
                                     {"Tty", false},
                                     {"Cmd", {std::string(kBoxInitPath), "--sweep"}}};
        const std::string sweep = engine.exec_create(cid, label, body);
        auto stream = engine.exec_start(sweep, label);
        Backstop backstop(*stream, Clock::now() + kExecBackstop * 3);
        std::string chunk;
        while (stream->read(chunk)) {
        }
        backstop.finish();
        if (!backstop.fired())
            if (auto code = exit_code_after_stream(engine, sweep, label)) return *code == 0;
    } catch (const std::exception& e) {
        host.warn("sweeping session box '" + label + "' after an exec: " + e.what());
    }
    return false;
}

} // namespace

void create_docker_session(const DockerEngine& engine, const radial::plugin::Host& host,
                           const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                           std::uint64_t max_lifetime_ms) {
    const DockerSettings& settings = engine.settings();
    if (settings.init_path.empty())
        throw Error(RADIAL_E_REFUSED, "boxInit",
                    "a session's box needs radial-init to end it on its idle timeout and maximum "
                    "lifetime; set run.docker.boxInit");
    if (!engine.ids_with_label(spec.label).empty())
        throw Error(RADIAL_E_INVALID, "label",
                    "a box labelled '" + spec.label + "' exists already; pick another session id");
    plugin_support::check_mount_sources(spec);
    if (!spec.mounts.empty()) {
        plugin_support::refuse_engine_data_root(spec, engine.data_root(), engine.engine_name());
        plugin_support::refuse_engine_control_paths(spec, engine.control_paths());
    }
    if (!engine.image_entrypoint(spec.image))
        throw Error(RADIAL_E_NOT_FOUND, "image",
                    "image '" + spec.image +
                        "' is not present on the engine; a session does not pull: build or load "
                        "it first (docker build, docker load)");
    // The hardening of every box; the command is radial-init's session mode, not an argv.
    ContainerSpec box = spec;
    box.argv = {"--session"};
    nlohmann::json body = docker_create_body(box, settings, {}, engine.namespaced_root());
    body["Cmd"] = nlohmann::json::array({"--session", std::to_string(idle_timeout_ms),
                                         std::to_string(max_lifetime_ms),
                                         std::to_string(settings.kill_grace_ms)});
    const std::string cid = engine.create(body, spec.label, spec.image);
    try {
        if (auto refused = engine.start(cid, spec.label))
            throw Error(RADIAL_E_INTERNAL, "starting session box '" + spec.label +
                                               "': " + engine_api::engine_message(refused->body));
    } catch (...) {
        remove_box(engine, host, spec.label);
        throw;
    }
    host.info("started session box '" + spec.label + "' (idle timeout " +
              std::to_string(idle_timeout_ms) + " ms, maximum lifetime " +
              std::to_string(max_lifetime_ms) + " ms)");
}

radial::plugin::RunResult exec_in_docker_session(const DockerEngine& engine,
                                                 const radial::plugin::Host& host,
                                                 const ContainerSpec& exec,
                                                 radial::plugin::Output& out) {
    const auto started = Clock::now();
    const DockerSettings& settings = engine.settings();
    const auto ids = engine.ids_with_label(exec.label);
    if (ids.empty())
        throw Error(RADIAL_E_NOT_FOUND, "label",
                    "session box '" + exec.label +
                        "' is gone (its idle timeout or maximum lifetime passed, or it was "
                        "removed)");
    std::string secrets = secret_env_block(exec);
    struct Scrub { // the values leave this process's memory once sent
        std::string& s;
        ~Scrub() { ::explicit_bzero(s.data(), s.size()); }
    } scrub{secrets};
    nlohmann::json cmd = nlohmann::json::array({std::string(kBoxInitPath)});
    if (!secrets.empty()) {
        cmd.push_back("--env-from-stdin");
        cmd.push_back("--say-ready");
    }
    cmd.push_back(std::to_string(exec.timeout_ms));
    cmd.push_back(std::to_string(settings.kill_grace_ms));
    cmd.push_back("--");
    for (const auto& a : exec.argv) cmd.push_back(a);
    nlohmann::json env = nlohmann::json::array();
    for (const auto& e : exec.env)
        if (!e.secret) env.push_back(e.name + "=" + e.value);
    nlohmann::json body = {{"AttachStdin", !secrets.empty()},
                           {"AttachStdout", true},
                           {"AttachStderr", true},
                           {"Tty", false},
                           {"Cmd", cmd}};
    if (!env.empty()) body["Env"] = env;
    if (!exec.workdir.empty()) body["WorkingDir"] = exec.workdir;

    const std::string exec_id = engine.exec_create(ids.front(), exec.label, body);
    auto stream = engine.exec_start(exec_id, exec.label);
    const auto backstop_at = exec.timeout_ms == 0
                                 ? Clock::time_point::max()
                                 : deadline_after(started, exec.timeout_ms) +
                                       budget_ms(settings.kill_grace_ms) + kExecBackstop;
    Backstop backstop(*stream, backstop_at);
    bool aborted = false;
    // The secrets go to radial-init's stdin only once it said it is ready (radial_init.c,
    // --say-ready): then no other process is left in the box to have opened that stdin. Its
    // line is radial-init's, not the command's output. Anything else first: not sent at all.
    std::string ready;
    bool awaiting_ready = !secrets.empty(), not_ready = false;
    engine_api::FrameDemux demux([&](std::uint32_t stream_id, const char* data, std::size_t n) {
        if (aborted || not_ready) return false;
        if (awaiting_ready && stream_id != RADIAL_STREAM_STDERR) {
            const std::size_t take = std::min(n, kInitReadyLine.size() - ready.size());
            ready.append(data, take);
            data += take;
            n -= take;
            if (!kInitReadyLine.starts_with(ready)) {
                not_ready = true;
                return false;
            }
            if (ready.size() < kInitReadyLine.size()) return true;
            awaiting_ready = false;
            if (n == 0) return true;
        }
        if (!out.write(
                stream_id == RADIAL_STREAM_STDERR ? RADIAL_STREAM_STDERR : RADIAL_STREAM_STDOUT,
                data, n) &&
            out.aborted())
            aborted = true;
        return !aborted;
    });
    std::string chunk;
    try {
        bool open = true; // a stream read to its end is not read again: that would block
        while (awaiting_ready && !aborted && !not_ready && (open = stream->read(chunk)))
            demux.feed(chunk);
        if (not_ready)
            throw Error(RADIAL_E_INTERNAL,
                        "radial-init in session box '" + exec.label + "' wrote '" +
                            printable_prefix(ready) + "' where it says '" +
                            std::string(kInitReadyLine.substr(0, kInitReadyLine.size() - 1)) +
                            "'; the exec's secrets were not sent (is run.docker.boxInit this "
                            "plugin's radial-init?)");
        if (!awaiting_ready && !secrets.empty()) {
            // The line proves nothing by itself: a leftover that stopped radial-init before its
            // first instruction could write it to radial-init's stdout. The engine's own count,
            // which no process in the box can hide from, must be PID 1 and this exec at most.
            // (Under gVisor the engine lists the sandbox's init alone: 1, and this adds nothing.)
            const auto processes = engine.process_count(ids.front(), exec.label);
            if (!processes || *processes > 2)
                throw Error(RADIAL_E_INTERNAL,
                            "session box '" + exec.label + "' holds " +
                                (processes ? std::to_string(*processes)
                                           : std::string("an unknown number of")) +
                                " processes where radial-init said it had ended all but its PID "
                                "1 and itself; the exec's secrets were not sent");
            stream->write(secrets, budget_ms(settings.command_timeout_ms));
        }
        while (open && !aborted && stream->read(chunk)) demux.feed(chunk);
    } catch (const engine_api::EngineError& e) {
        if (!backstop.fired()) {
            backstop.finish();
            throw Error(RADIAL_E_UNAVAILABLE, "running an exec in session box '" + exec.label +
                                                  "': the engine stopped answering (" + e.what() +
                                                  ")");
        }
    }
    backstop.finish();
    radial::plugin::RunResult result;
    Ending ending = Ending::none;
    plugin_support::ExitStatus status;
    if (backstop.fired() || aborted) {
        // The exec cannot be ended on its own: its box goes, and with it the session.
        host.warn("ending session box '" + exec.label + "': " +
                  (aborted ? std::string("the output sink asked to stop")
                           : "its exec was still running past its deadline and kill grace") +
                  "; the session is over");
        remove_box(engine, host, exec.label);
        ending = aborted ? Ending::aborted : Ending::timed_out;
    } else {
        std::optional<int> code;
        try {
            code = exit_code_after_stream(engine, exec_id, exec.label);
        } catch (const Error& e) {
            if (e.code() != RADIAL_E_NOT_FOUND) throw;
            ending = Ending::killed; // the box was removed under it
        }
        if (ending == Ending::none && !code && engine.ids_with_label(exec.label).empty())
            ending = Ending::killed;
        // A code of 128 or more may be the box ending under the exec (PID 1 at the session's
        // maximum lifetime, or the engine stopping it): then the exec was killed, not by its
        // command's doing, and the session is over. The engine marks the box stopped a moment
        // after the exec's stream ends (a `docker stop` ends PID 1, and the exec with it), so
        // it is asked again, as for an OOM kill's flag (docs/design.md §13.1).
        const auto box_ending = [&] {
            for (int again = 0;; ++again) {
                if (box_is_ending(engine, ids.front(), exec.label)) return true;
                if (again == plugin_support::kOomReasks) return false;
                std::this_thread::sleep_for(plugin_support::kOomReaskEvery);
            }
        };
        if (ending == Ending::none && code && *code >= 128 && box_ending()) {
            host.warn("session box '" + exec.label +
                      "' ended during the exec (its maximum lifetime passed, or it was stopped); "
                      "the exec was killed with it and the session is over");
            ending = Ending::killed;
        }
        if (code) {
            status.exited = true;
            status.code = *code;
            // radial-init's 124 at the deadline: the exec timed out (a command's own 124 before
            // its deadline is its own exit code).
            if (radial::internal::init_timed_out(
                    *code, exec.timeout_ms != 0,
                    exec.timeout_ms != 0 &&
                        Clock::now() >= deadline_after(started, exec.timeout_ms)))
                ending = Ending::timed_out;
        }
    }
    // Nothing of this exec outlives it (a box that cannot be swept goes, with the session).
    const bool box_kept = !backstop.fired() && !aborted && ending != Ending::killed;
    // The exec's radial-init ends what its command left (kill(-1)) before it exits, and exits
    // with a code below 128 only that way: it is undumpable, so its command cannot make it exit
    // otherwise. A code of 128 or more may be its death by a signal, which its command (the same
    // uid) can send: then the engine is asked what the box still holds, and only when that is
    // more than PID 1 is the sweep, a second exec, run.
    const bool init_ended_the_rest = status.exited && status.code >= 0 && status.code < 128;
    const bool swept =
        init_ended_the_rest || (box_kept && engine.process_count(ids.front(), exec.label) ==
                                                std::optional<std::size_t>(1));
    if (box_kept && !swept && !sweep_session(engine, host, ids.front(), exec.label)) {
        host.warn("ending session box '" + exec.label +
                  "': what its exec left running could not be ended; the session is over");
        remove_box(engine, host, exec.label);
    }
    plugin_support::set_run_outcome(result, ending, status, aborted,
                                    "session box '" + exec.label + "'", "the engine",
                                    "the session's box is kept");
    result.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<milliseconds>(Clock::now() - started).count());
    return result;
}

} // namespace radial::docker
