#include "docker_run.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <optional>
#include <thread>

#include "box_client.h"
#include "deadline.h"
#include "support/child_process.h"
#include "support/cli_text.h"
#include "support/run_ending.h"
#include "support/temp_dir.h"
#include "support/wake_event.h"

namespace radial::docker {

namespace {

using plugin_support::ChildProcess;
using plugin_support::ExitStatus;
using plugin_support::TempDir;
using plugin_support::UniqueFd;
using plugin_support::WakeEvent;
using radial::plugin::Error;
using std::chrono::milliseconds;

constexpr std::size_t kChunkBytes = 64u << 10; // one read, one callback
constexpr std::size_t kHeldMax = 64u << 10;    // CLI output held back before the box starts
constexpr std::size_t kErrTailBytes = 2048;    // docker's message when it fails before starting
constexpr auto kStartWindow = std::chrono::seconds(1);
constexpr auto kRemoveEvery = std::chrono::seconds(1);
constexpr auto kDrainAfterExit = std::chrono::seconds(2);
constexpr auto kRemovalBudget = std::chrono::seconds(10);

using plugin_support::Ending;
using plugin_support::ending_text;

// The poll() timeout for waiting until `t`: 0 when it has passed, at most a minute (the caller
// loops), -1 (no timeout) for time_point::max().
int poll_timeout_until(Clock::time_point t) {
    if (t == Clock::time_point::max()) return -1;
    auto left = std::chrono::ceil<milliseconds>(t - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
}

class BoxRun {
public:
    BoxRun(const DockerCli& cli, const radial::plugin::Host& host, const ContainerSpec& spec,
           radial::plugin::Output& out, ActiveRun& active)
        : cli_(cli), host_(host), spec_(spec), out_(out), active_(active) {}

    radial::plugin::RunResult execute();

private:
    void check_mount_sources() const;
    std::vector<std::string> run_argv() const;
    void pump(SharedClient& client, ChildProcess& child);
    void read_chunk(UniqueFd& fd, std::uint32_t stream);
    void on_chunk(std::uint32_t stream, const char* data, std::size_t size);
    void start_streaming();
    void deliver(std::uint32_t stream, const char* data, std::size_t size);
    void flush_held();
    void supervise(SharedClient& client) noexcept;
    Ending wait_for_reason_to_stop(SharedClient& client);
    void stop(Ending why, SharedClient& client);
    void wait_news(SharedClient& client, int timeout_ms);
    std::optional<std::string> start_failure(const ExitStatus& status,
                                             const std::string& cid) const;
    void remove_after_exit(const std::string& cid);
    void ensure_gone();
    [[noreturn]] void fail_before_start(const ExitStatus& status);
    std::string box() const { return "box '" + spec_.label + "'"; }

    const DockerCli& cli_;
    const radial::plugin::Host& host_;
    const ContainerSpec& spec_;
    radial::plugin::Output& out_;
    ActiveRun& active_;

    CidFile cid_;
    Clock::time_point timeout_at_ = Clock::time_point::max();

    // Shared by the pump (the calling thread) and the supervisor thread.
    WakeEvent news_; // the pump tells the supervisor: aborted, reaped, done
    std::atomic<bool> output_aborted_{false};
    std::atomic<bool> finishing_{false}; // the run is over: the supervisor returns
    std::atomic<Ending> ending_{Ending::none};
    std::atomic<bool> stopped_before_container_{false};

    // Pump only.
    bool streaming_ = false; // output goes straight to `out_`
    bool stdout_seen_ = false;
    std::optional<Clock::time_point> hold_err_until_;
    std::string held_out_, held_err_, err_tail_;
    std::vector<char> buffer_ = std::vector<char>(kChunkBytes);
};

// The `docker run` argv; under the box init when one is configured and the image's entrypoint is
// known (the init replaces it, so it is passed on explicitly).
std::vector<std::string> BoxRun::run_argv() const {
    const DockerSettings& settings = cli_.settings();
    if (settings.init_path.empty()) return docker_run_argv(spec_, settings, cid_.path());
    if (auto entrypoint = cli_.image_entrypoint(spec_.image))
        return docker_run_argv(spec_, settings, cid_.path(), *entrypoint);
    host_.warn("image '" + spec_.image + "' of " + box() +
               " is not on the engine yet, so its entrypoint is unknown: this box runs under "
               "docker's --init, without the box-side deadline (the host still enforces it)");
    DockerSettings plain = settings;
    plain.init_path.clear();
    return docker_run_argv(spec_, plain, cid_.path());
}

radial::plugin::RunResult BoxRun::execute() {
    const auto started = Clock::now();
    radial::plugin::RunResult result;
    if (active_.kill_requested()) {
        host_.info(box() + " was killed before its docker client started; nothing was started");
        result.flags = RADIAL_RUN_KILLED;
        return result;
    }
    TempDir dir(kRunDirPrefix);
    cid_.set_path((dir.path() / "cid").string());
    std::vector<std::string> argv = run_argv();
    check_mount_sources();
    if (spec_.timeout_ms != 0) timeout_at_ = deadline_after(started, spec_.timeout_ms);

    ChildProcess::Options options;
    options.missing_fix = "install the docker CLI or set run.docker.binary";
    if (std::string env_file = docker_env_file(spec_); !env_file.empty())
        options.stdin_source = env_file_memfd(env_file, box());
    // The argv carries no env value (docker_run_argv), so it may be logged.
    host_.debug("starting " + box() + ": " + plugin_support::argv_for_log(argv));
    ExitStatus status;
    {
        ChildProcess child =
            ChildProcess::start(cli_.executable(), {argv.begin() + 1, argv.end()},
                                docker_client_env(spec_, parent_client_env()), std::move(options));
        SharedClient client(child);
        std::exception_ptr failure;
        {
            // The supervisor enforces the timeout, kills and aborts on its own thread, so that
            // neither a blocking output callback nor a slow `docker rm` delays the other.
            std::optional<std::thread> supervisor;
            try {
                supervisor.emplace([&] { supervise(client); });
                pump(client, child);
            } catch (...) {
                failure = std::current_exception();
            }
            finishing_ = true;
            news_.notify();
            if (supervisor) supervisor->join();
        }
        if (failure) {
            // Whatever broke, the box must not outlive the run (docs/design.md §8.3): stop the
            // client, then remove the box by label, and report the original failure.
            child.kill();
            child.reap_within(std::chrono::seconds(5));
            try {
                ensure_gone();
            } catch (const std::exception& cleanup) {
                host_.warn(std::string("after a failed run: ") + cleanup.what());
            }
            std::rethrow_exception(failure);
        }
        status = *child.try_reap(); // the pump returns only once the client is reaped
    }

    const Ending ending = ending_;
    std::optional<std::string> cid = cid_.id();
    if (ending == Ending::none && !cid) {
        // A client killed from outside between create and writing the cidfile may leave one.
        if (!status.exited) {
            try {
                ensure_gone();
            } catch (const Error& e) {
                host_.warn("after docker run failed for " + box() + ": " + e.what());
            }
        }
        fail_before_start(status);
    }

    std::optional<std::string> never_started;
    std::optional<ContainerState> state;
    std::optional<std::string> engine_lost; // inspecting the ended box failed: why
    if (ending == Ending::none) {
        bool removed_by_another = false;
        try {
            state = cli_.state(*cid, spec_.label);
            removed_by_another = state->being_removed;
            if (!state->started)
                never_started = state->error.empty()
                                    ? plugin_support::cli_message(err_tail_, kErrTailBytes)
                                    : state->error;
        } catch (const Error& e) {
            removed_by_another = e.code() == RADIAL_E_NOT_FOUND;
            if (!removed_by_another) {
                host_.warn("reading how " + box() + " ended: " + e.what() +
                           "; judging from the docker client alone");
                never_started = start_failure(status, *cid);
                engine_lost = e.what();
            }
        }
        // Gone, or going, before this run removed it, and not at its request: someone else
        // removed it (a `docker rm`, or another radiald given the same run.instanceId). The exit
        // status is then docker's kill, not the command's, so it must not be reported as one.
        if (removed_by_another)
            throw Error(
                RADIAL_E_INTERNAL,
                box() + " was removed while it ran by something other than this " +
                    "radiald (a 'docker rm', or another radiald configured with the " +
                    "same run.instanceId); the command's own exit status is unknown " +
                    "(the docker client " +
                    (status.exited ? "exited " + std::to_string(status.code)
                                   : "was killed by signal " + std::to_string(status.signal)) +
                    ")");
        if (!never_started && !output_aborted_) flush_held();
        remove_after_exit(*cid);
        // The client's own complaint that its wait for the container broke, with docker's failure
        // code, while the engine does not answer: the client lost its engine mid-run, so how the
        // workload ended is unknown. That is the runtime's failure, not the workload's exit 125.
        if (engine_lost && !never_started && status.exited && status.code == 125 &&
            err_tail_.find("error waiting for container") != std::string::npos)
            throw Error(RADIAL_E_UNAVAILABLE,
                        "running " + box() +
                            ": the engine stopped answering (the docker client "
                            "exited 125: " +
                            plugin_support::cli_message(err_tail_, kErrTailBytes) + "; " +
                            *engine_lost +
                            "); how the box ended is unknown; check that dockerd is running");
    } else {
        if (!output_aborted_) flush_held();
        ensure_gone();
        host_.info("ended " + box() + " (" + ending_text(ending) + "): docker client " +
                   (status.exited ? "exited " + std::to_string(status.code)
                                  : "killed by signal " + std::to_string(status.signal)) +
                   " and reaped; no container with its label remains");
    }
    if (never_started)
        throw Error(
            RADIAL_E_INTERNAL,
            "starting " + box() + " from image '" + spec_.image +
                "': docker created the container but could not start it: " +
                (never_started->empty() ? std::string("docker gave no reason") : *never_started) +
                "; check the spec's mounts, workdir and user against the image, and "
                "dockerd's log");
    result.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<milliseconds>(Clock::now() - started).count());

    // Only what the engine recorded: an exit code of 137 alone may be `exit 137`, so no
    // RADIAL_RUN_SIGNALED is derived from it.
    if (ending == Ending::none && state && state->oom_killed) result.flags = RADIAL_RUN_OOM_KILLED;
    plugin_support::set_run_outcome(result, ending, status, output_aborted_, box(),
                                    "the docker client", "the box was removed");
    return result;
}

void BoxRun::check_mount_sources() const {
    // docker's -v would silently create a missing source as a root-owned directory.
    for (std::size_t i = 0; i < spec_.mounts.size(); ++i) {
        std::error_code ec;
        if (!std::filesystem::exists(spec_.mounts[i].source, ec))
            throw Error(RADIAL_E_NOT_FOUND, "mounts[" + std::to_string(i) + "]",
                        "preparing " + box() + ": mount source '" + spec_.mounts[i].source +
                            "' does not exist; create it before the run");
    }
}

// Moves the client's output to `out_` until the client has exited and its pipes are drained (or
// kDrainAfterExit has passed). Never stops the box itself: that is the supervisor's job, so the
// pipes keep being drained while `docker rm -f` runs (the client cannot finish while blocked on a
// full pipe, and dockerd then cannot finish the removal).
void BoxRun::pump(SharedClient& client, ChildProcess& child) {
    UniqueFd& out = child.stdout_pipe();
    UniqueFd& err = child.stderr_pipe();
    std::optional<Clock::time_point> drain_until;
    // waitpid only when the pidfd says the client has exited (or, without one, on every turn).
    bool may_have_exited = true;
    for (;;) {
        auto now = Clock::now();
        if (may_have_exited && !client.reaped() && client.try_reap()) news_.notify();
        if (client.reaped()) {
            if (!out.valid() && !err.valid()) return;
            // The client is gone; whatever still holds its pipes is not ours to wait for long.
            if (!drain_until) drain_until = now + kDrainAfterExit;
            if (now >= *drain_until) return;
        }
        if (!streaming_ && hold_err_until_ && now >= *hold_err_until_) start_streaming();

        std::array<pollfd, 3> fds{};
        nfds_t n = 0;
        auto watch = [&](int fd) {
            fds[n] = {fd, POLLIN, 0};
            return static_cast<int>(n++);
        };
        int out_at = out.valid() ? watch(out.get()) : -1;
        int err_at = err.valid() ? watch(err.get()) : -1;
        auto wake_at = Clock::time_point::max();
        int exit_at = -1;
        if (drain_until) {
            wake_at = *drain_until;
        } else if (child.exit_fd() >= 0) {
            exit_at = watch(child.exit_fd());
        } else {
            wake_at = now + ((out.valid() || err.valid()) ? milliseconds(100) : milliseconds(5));
        }
        if (!streaming_ && hold_err_until_) wake_at = std::min(wake_at, *hold_err_until_);

        if (::poll(fds.data(), n, poll_timeout_until(wake_at)) < 0) {
            if (errno == EINTR) continue;
            throw Error(RADIAL_E_INTERNAL, "running " + box() + ": poll: " + std::strerror(errno) +
                                               "; report this bug");
        }
        may_have_exited = exit_at < 0 || fds[exit_at].revents != 0;
        if (out_at >= 0 && fds[out_at].revents != 0) read_chunk(out, RADIAL_STREAM_STDOUT);
        if (err_at >= 0 && fds[err_at].revents != 0) read_chunk(err, RADIAL_STREAM_STDERR);
    }
}

void BoxRun::read_chunk(UniqueFd& fd, std::uint32_t stream) {
    ssize_t n = ::read(fd.get(), buffer_.data(), buffer_.size());
    if (n > 0) {
        on_chunk(stream, buffer_.data(), static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        fd.reset(); // EOF (or a broken pipe): nothing more will come
    }
}

void BoxRun::on_chunk(std::uint32_t stream, const char* data, std::size_t size) {
    if (stream == RADIAL_STREAM_STDERR) {
        err_tail_.append(data, size);
        if (err_tail_.size() > 2 * kErrTailBytes)
            err_tail_.erase(0, err_tail_.size() - kErrTailBytes);
    } else {
        stdout_seen_ = true;
    }
    if (!streaming_) {
        // Before the container exists, the client's output is only docker's own (pull progress,
        // errors). Once it exists (the CLI writes the cidfile after create, before start), stdout
        // can only be the workload's; stderr may still be docker's "could not start" message, so
        // it is held until stdout shows the workload runs, or for kStartWindow at most.
        bool created = cid_.id().has_value();
        if ((created && stream == RADIAL_STREAM_STDOUT) ||
            held_out_.size() + held_err_.size() + size > kHeldMax) {
            start_streaming();
        } else {
            if (created && !hold_err_until_) hold_err_until_ = Clock::now() + kStartWindow;
            (stream == RADIAL_STREAM_STDOUT ? held_out_ : held_err_).append(data, size);
            return;
        }
    }
    deliver(stream, data, size);
}

void BoxRun::start_streaming() {
    streaming_ = true;
    flush_held();
}

void BoxRun::deliver(std::uint32_t stream, const char* data, std::size_t size) {
    if (output_aborted_ || size == 0) return;
    // Output::write is false when the sink asked to stop, and also when there is no sink at all
    // (then the output is simply dropped): only aborted() ends the run.
    if (!out_.write(stream, data, size) && out_.aborted()) {
        output_aborted_ = true;
        news_.notify();
    }
}

void BoxRun::flush_held() {
    std::string held_out = std::move(held_out_), held_err = std::move(held_err_);
    held_out_.clear();
    held_err_.clear();
    deliver(RADIAL_STREAM_STDOUT, held_out.data(), held_out.size());
    deliver(RADIAL_STREAM_STDERR, held_err.data(), held_err.size());
}

// The supervisor thread: waits for a kill request, an aborting sink or the deadline, then stops
// the box. Returns when the client has exited or the run is finishing. Never throws: a failure
// here is logged and the client killed, so the pump still ends.
void BoxRun::supervise(SharedClient& client) noexcept {
    try {
        Ending why = wait_for_reason_to_stop(client);
        if (why != Ending::none) stop(why, client);
    } catch (const std::exception& e) {
        host_.warn("supervising " + box() + ": " + e.what() + "; killing its docker client");
        client.kill();
    }
}

Ending BoxRun::wait_for_reason_to_stop(SharedClient& client) {
    for (;;) {
        // A client that has exited (reaped or not: the pump may be inside the output callback)
        // means the box has ended on its own; a deadline passing now does not make it a timeout.
        if (finishing_ || client.exited()) return Ending::none;
        if (active_.kill_requested()) return Ending::killed;
        if (output_aborted_) return Ending::aborted;
        if (Clock::now() >= timeout_at_) return Ending::timed_out;
        std::array<pollfd, 3> fds{{{active_.wake().fd(), POLLIN, 0},
                                   {news_.fd(), POLLIN, 0},
                                   {client.exit_fd(), POLLIN, 0}}};
        nfds_t n = client.exit_fd() >= 0 ? 3 : 2;
        if (::poll(fds.data(), n, poll_timeout_until(timeout_at_)) < 0 && errno != EINTR)
            throw Error(RADIAL_E_INTERNAL, std::string("poll: ") + std::strerror(errno));
        if (fds[0].revents != 0) active_.wake().drain();
        if (fds[1].revents != 0) news_.drain();
    }
}

// Ends the box: `docker rm -f` of its container once a second until the client exits, and
// SIGKILL for the client after killGrace. A rm is cut short at that point, because a client that
// no one drains (the output callback blocks) keeps dockerd from finishing the removal.
void BoxRun::stop(Ending why, SharedClient& client) {
    ending_ = why;
    host_.info("ending " + box() + " (" + ending_text(why) + "): removing its container");
    const auto& settings = cli_.settings();
    const auto sigkill_at = deadline_after(Clock::now(), settings.kill_grace_ms);
    auto next_remove = Clock::now();
    bool client_killed = false;
    auto kill_client = [&] {
        client.kill();
        client_killed = true;
    };
    while (!client.exited() && !finishing_) {
        std::optional<std::string> cid = cid_.id();
        auto wake_at = Clock::time_point::max();
        if (!cid) {
            // No container yet (the client is pulling or creating): stopping the client stops it
            // from making one; ensure_gone() catches one whose creation was already under way.
            if (!client_killed) {
                host_.debug("stopping the docker client of " + box() +
                            " before its container exists");
                stopped_before_container_ = true;
                kill_client();
            }
        } else {
            if (Clock::now() >= next_remove) {
                auto budget = budget_ms(settings.command_timeout_ms);
                if (!client_killed)
                    budget = std::min(budget,
                                      std::max(milliseconds(200), std::chrono::ceil<milliseconds>(
                                                                      sigkill_at - Clock::now())));
                try {
                    cli_.remove({*cid}, spec_.label, budget);
                } catch (const Error& e) {
                    if (client_killed)
                        host_.warn(std::string("ending ") + box() + ": " + e.what());
                    else
                        host_.debug(std::string("ending ") + box() + ": " + e.what());
                }
                next_remove = Clock::now() + kRemoveEvery;
            }
            if (!client_killed && Clock::now() >= sigkill_at && !client.exited()) {
                host_.warn("ending " + box() + ": its docker client was still running " +
                           std::to_string(settings.kill_grace_ms) +
                           " ms after 'docker rm -f'; killing the client");
                kill_client();
            }
            wake_at = next_remove;
            if (!client_killed) wake_at = std::min(wake_at, sigkill_at);
        }
        wait_news(client, poll_timeout_until(wake_at));
    }
}

void BoxRun::wait_news(SharedClient& client, int timeout_ms) {
    std::array<pollfd, 2> fds{{{news_.fd(), POLLIN, 0}, {client.exit_fd(), POLLIN, 0}}};
    if (::poll(fds.data(), client.exit_fd() >= 0 ? 2 : 1, timeout_ms) > 0 && fds[0].revents != 0)
        news_.drain();
}

// Without `docker inspect` (the engine did not answer): whether the client's exit says docker
// failed to start the container. Rationale: the workload's stderr arrives through the same
// client stderr, so text alone could be forged; this is only the fallback, and it requires all
// of: exit 125 (docker's own failure code), no stdout at all from the box, and docker's prefix on
// the last line of stderr. A workload that printed nothing to stdout, then "docker: ..." to
// stderr, then exited 125 is reported as a failed start: a wrong error, never a wrong success.
std::optional<std::string> BoxRun::start_failure(const ExitStatus& status,
                                                 const std::string& cid) const {
    if (!status.exited || status.code != 125 || stdout_seen_) return std::nullopt;
    // The last line that says something: docker 20.10 ends with "See 'docker run --help'.",
    // docker 28 with "Run 'docker run --help' for more information", both after a blank line.
    std::string_view tail(err_tail_), last;
    while (!tail.empty()) {
        std::size_t start = tail.find_last_of('\n', tail.size() - 1);
        last = start == std::string_view::npos ? tail : tail.substr(start + 1);
        tail.remove_suffix(std::min(tail.size(), last.size() + 1));
        while (!last.empty() && last.back() == '\r') last.remove_suffix(1);
        if (!last.empty() && !last.starts_with("See 'docker") && !last.starts_with("Run 'docker"))
            break;
        last = {};
    }
    if (!last.starts_with("docker: ")) return std::nullopt;
    host_.debug(box() + " (container '" + cid.substr(0, 12) +
                "') looks like it never started: docker exited 125 with its own message");
    return plugin_support::cli_message(err_tail_, kErrTailBytes);
}

// Removes the ended container (there is no --rm: its state was read first). An engine that stops
// answering now does not turn a finished run into a failure; the box, stopped already, is then
// left to reconciliation by label, and the operator is told.
void BoxRun::remove_after_exit(const std::string& cid) {
    try {
        cli_.remove({cid}, spec_.label);
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

void BoxRun::ensure_gone() {
    const auto deadline =
        Clock::now() +
        std::max<Clock::duration>(kRemovalBudget, budget_ms(cli_.settings().kill_grace_ms));
    // A create request already on its way to the engine when the client was stopped can still
    // land: look twice, a moment apart.
    int clean_looks_needed = stopped_before_container_ ? 2 : 1;
    for (;;) {
        std::vector<std::string> ids = cli_.ids_with_label(spec_.label);
        if (ids.empty()) {
            if (--clean_looks_needed == 0) return;
            std::this_thread::sleep_for(milliseconds(300));
            continue;
        }
        if (Clock::now() >= deadline)
            throw Error(RADIAL_E_UNAVAILABLE,
                        "removing " + box() + ": its container '" + ids.front().substr(0, 12) +
                            "' still exists after repeated 'docker rm -f'; check dockerd's log "
                            "and remove it by hand");
        host_.info(box() + " still has " + std::to_string(ids.size()) +
                   " container(s) after its client ended; removing them");
        cli_.remove(ids, spec_.label);
        std::this_thread::sleep_for(milliseconds(100));
    }
}

void BoxRun::fail_before_start(const ExitStatus& status) {
    std::string message = plugin_support::cli_message(err_tail_, kErrTailBytes);
    if (message.empty())
        message =
            status.exited
                ? "the docker client exited " + std::to_string(status.code) + " without a message"
                : "the docker client was killed by signal " + std::to_string(status.signal);
    auto has = [&](std::string_view s) { return message.find(s) != std::string::npos; };
    std::int32_t code = RADIAL_E_INTERNAL;
    std::string fix = "check the message above and dockerd's log";
    // The engine check comes first: "no such host" also names an unresolvable engine address.
    if (has("Cannot connect to the Docker daemon") || has("error during connect") ||
        has("Is the docker daemon running")) {
        code = RADIAL_E_UNAVAILABLE;
        fix = "start dockerd or fix run.docker.host";
    } else if (has("No such image") || has("Unable to find image") || has("not found") ||
               has("pull access denied") || has("manifest unknown") ||
               has("repository does not exist") || has("no such host")) {
        code = RADIAL_E_NOT_FOUND;
        fix = "build or load image '" + spec_.image +
              "' locally (docker build, docker load) or check its name; with run.docker.pull "
              "\"never\" or \"missing\" a local image is used without contacting a registry";
    }
    throw Error(code, "starting " + box() + " from image '" + spec_.image +
                          "': docker run failed before the container started: " + message + "; " +
                          fix);
}

} // namespace

radial::plugin::RunResult run_box(const DockerCli& cli, const radial::plugin::Host& host,
                                  const ContainerSpec& spec, radial::plugin::Output& out,
                                  ActiveRun& active) {
    return BoxRun(cli, host, spec, out, active).execute();
}

} // namespace radial::docker
