#include "docker_run.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "child_process.h"
#include "cli_text.h"
#include "temp_dir.h"

namespace radial::docker {

namespace {

using radial::plugin::Error;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kChunkBytes = 64u << 10; // one read, one callback
constexpr std::size_t kHeldMax = 64u << 10;    // CLI output held back before the container exists
constexpr std::size_t kErrTailBytes = 2048;    // docker's message when it fails before starting
constexpr auto kRemoveEvery = std::chrono::seconds(1);
constexpr auto kDrainAfterExit = std::chrono::seconds(2);
constexpr auto kRemovalBudget = std::chrono::seconds(10);

enum class Ending { none, killed, timed_out, aborted };

const char* ending_text(Ending e) {
    switch (e) {
        case Ending::killed: return "kill requested";
        case Ending::timed_out: return "timeout reached";
        case Ending::aborted: return "the output sink asked to stop";
        case Ending::none: break;
    }
    return "running";
}

// One log line for an argv: each element shell-quoted, control bytes escaped ($'...').
std::string join_argv(const std::vector<std::string>& argv) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (const auto& a : argv) {
        if (!out.empty()) out += ' ';
        bool control =
            std::any_of(a.begin(), a.end(), [](unsigned char c) { return c < ' ' || c == 0x7f; });
        bool plain = !a.empty() &&
                     a.find_first_of(" \t'\"\\$`;&|<>()*?[]#~{}") == std::string::npos && !control;
        if (plain) {
            out += a;
        } else if (!control) {
            out += '\'';
            for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
            out += '\'';
        } else {
            out += "$'";
            for (unsigned char c : a) {
                if (c == '\n')
                    out += "\\n";
                else if (c == '\t')
                    out += "\\t";
                else if (c == '\\' || c == '\'')
                    out += std::string("\\") + char(c);
                else if (c < ' ' || c == 0x7f)
                    out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
                else
                    out += char(c);
            }
            out += '\'';
        }
    }
    return out;
}

bool is_container_id(std::string_view s) {
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

class BoxRun {
public:
    BoxRun(const DockerCli& cli, const radial::plugin::Host& host, const ContainerSpec& spec,
           radial::plugin::Output& out, ActiveRun& active)
        : cli_(cli), host_(host), spec_(spec), out_(out), active_(active) {}

    radial::plugin::RunResult execute();

private:
    void check_mount_sources() const;
    void pump(ChildProcess& child);
    void read_chunk(UniqueFd& fd, std::uint32_t stream);
    void on_chunk(std::uint32_t stream, const char* data, std::size_t size);
    void deliver(std::uint32_t stream, const char* data, std::size_t size);
    void flush_held();
    bool refresh_cid();
    void begin_stop(Ending why, Clock::time_point now);
    void escalate(ChildProcess& child, Clock::time_point now);
    void ensure_gone();
    [[noreturn]] void fail_before_start(const ExitStatus& status);
    std::string box() const { return "box '" + spec_.label + "'"; }

    const DockerCli& cli_;
    const radial::plugin::Host& host_;
    const ContainerSpec& spec_;
    radial::plugin::Output& out_;
    ActiveRun& active_;

    std::string cidfile_;
    std::optional<std::string> cid_;
    Clock::time_point timeout_at_ = Clock::time_point::max();
    Ending ending_ = Ending::none;
    bool output_aborted_ = false;
    bool client_killed_ = false;
    bool stopped_before_container_ = false;
    Clock::time_point next_remove_{};
    Clock::time_point sigkill_at_{};
    bool streaming_ = false; // the container exists: chunks go straight to `out_`
    std::string held_out_, held_err_, err_tail_;
    std::vector<char> buffer_ = std::vector<char>(kChunkBytes);
};

radial::plugin::RunResult BoxRun::execute() {
    const auto started = Clock::now();
    radial::plugin::RunResult result;
    if (active_.kill_requested()) {
        host_.info(box() + " was killed before its docker client started; nothing was started");
        result.flags = RADIAL_RUN_KILLED;
        return result;
    }
    TempDir dir("radial-docker-");
    cidfile_ = (dir.path() / "cid").string();
    std::vector<std::string> argv = docker_run_argv(spec_, cli_.settings(), cidfile_);
    check_mount_sources();
    if (spec_.timeout_ms != 0 && spec_.timeout_ms < (1ull << 40))
        timeout_at_ = started + milliseconds(spec_.timeout_ms);

    host_.debug("starting " + box() + ": " + join_argv(argv)); // argv carries no env value
    ExitStatus status;
    {
        ChildProcess child = ChildProcess::start(cli_.executable(), {argv.begin() + 1, argv.end()},
                                                 docker_client_env(spec_, parent_client_env()));
        try {
            pump(child);
        } catch (const std::exception& e) {
            // Whatever broke, the box must not outlive the run (ADR §6): stop the client, then
            // remove the box by label, and report the original failure.
            child.kill();
            child.reap_within(std::chrono::seconds(5));
            try {
                ensure_gone();
            } catch (const std::exception& cleanup) {
                host_.warn(std::string("after a failed run: ") + cleanup.what());
            }
            throw;
        }
        status = *child.try_reap();
    }
    if (ending_ == Ending::none && !refresh_cid()) fail_before_start(status);
    if (!output_aborted_) flush_held();

    if (ending_ == Ending::none && status.exited) {
        // `docker run --rm` returns once the container is removed; the lookup only confirms it,
        // so an engine that stops answering now does not turn a finished run into a failure.
        try {
            ensure_gone();
        } catch (const Error& e) {
            host_.warn(std::string("confirming that ") + box() +
                       " is gone after it exited: " + e.what());
        }
    } else {
        ensure_gone();
        host_.info("ended " + box() + " (" + ending_text(ending_) + "): docker client " +
                   (status.exited ? "exited " + std::to_string(status.code)
                                  : "killed by signal " + std::to_string(status.signal)) +
                   " and reaped; no container with its label remains");
    }
    result.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<milliseconds>(Clock::now() - started).count());

    switch (ending_) {
        case Ending::killed: result.flags = RADIAL_RUN_KILLED; break;
        case Ending::timed_out: result.flags = RADIAL_RUN_TIMED_OUT; break;
        case Ending::aborted: result.flags = RADIAL_RUN_KILLED; break;
        case Ending::none:
            if (!status.exited)
                throw Error(RADIAL_E_INTERNAL,
                            "running " + box() + ": the docker client " +
                                (status.signal != 0
                                     ? "was killed by signal " + std::to_string(status.signal)
                                     : std::string("ended with its exit status lost (is SIGCHLD "
                                                   "ignored by the host?)")) +
                                " and the box was removed; find what signals processes on this "
                                "host");
            result.flags = RADIAL_RUN_EXITED;
            result.exit_code = status.code;
            break;
    }
    if (output_aborted_) result.flags |= RADIAL_RUN_OUTPUT_ABORTED;
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

void BoxRun::pump(ChildProcess& child) {
    UniqueFd& out = child.stdout_pipe();
    UniqueFd& err = child.stderr_pipe();
    std::optional<Clock::time_point> drain_until;
    for (;;) {
        auto now = Clock::now();
        if (!child.reaped()) {
            if (ending_ == Ending::none) {
                if (active_.kill_requested())
                    begin_stop(Ending::killed, now);
                else if (output_aborted_)
                    begin_stop(Ending::aborted, now);
                else if (now >= timeout_at_)
                    begin_stop(Ending::timed_out, now);
            }
            if (ending_ != Ending::none) escalate(child, now);
            child.try_reap();
            now = Clock::now();
        }
        if (child.reaped()) {
            if (!out.valid() && !err.valid()) return;
            // The client is gone; whatever still holds its pipes is not ours to wait for long.
            if (!drain_until) drain_until = now + kDrainAfterExit;
            if (now >= *drain_until) return;
        }

        std::array<pollfd, 4> fds{};
        nfds_t n = 0;
        auto watch = [&](int fd) {
            fds[n] = {fd, POLLIN, 0};
            return static_cast<int>(n++);
        };
        int out_at = out.valid() ? watch(out.get()) : -1;
        int err_at = err.valid() ? watch(err.get()) : -1;
        int wake_at = watch(active_.wake().fd());

        auto wait = Clock::duration::max();
        auto until = [&](Clock::time_point t) { wait = std::min(wait, t - now); };
        if (!child.reaped()) {
            if (child.exit_fd() >= 0)
                watch(child.exit_fd());
            else
                wait = std::min<Clock::duration>(
                    wait, (out.valid() || err.valid()) ? milliseconds(100) : milliseconds(5));
            if (ending_ == Ending::none && timeout_at_ != Clock::time_point::max())
                until(timeout_at_);
            if (ending_ != Ending::none && cid_) {
                until(next_remove_);
                if (!client_killed_) until(sigkill_at_);
            }
        } else {
            until(*drain_until);
        }
        int timeout_ms = -1;
        if (wait != Clock::duration::max())
            timeout_ms = static_cast<int>(
                std::clamp<long long>(std::chrono::ceil<milliseconds>(wait).count(), 0, 60'000));

        if (::poll(fds.data(), n, timeout_ms) < 0) {
            if (errno == EINTR) continue;
            throw Error(RADIAL_E_INTERNAL, "running " + box() + ": poll: " + std::strerror(errno) +
                                               "; report this bug");
        }
        if (fds[wake_at].revents != 0) active_.wake().drain();
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
    }
    if (!streaming_) {
        // The CLI writes the cidfile after creating the container and before starting it, so
        // output arriving once it exists may be the workload's; before, it is only docker's.
        if (refresh_cid() || held_out_.size() + held_err_.size() + size > kHeldMax) {
            streaming_ = true;
            flush_held();
        } else {
            (stream == RADIAL_STREAM_STDOUT ? held_out_ : held_err_).append(data, size);
            return;
        }
    }
    deliver(stream, data, size);
}

void BoxRun::deliver(std::uint32_t stream, const char* data, std::size_t size) {
    if (output_aborted_ || size == 0) return;
    // Output::write is false when the sink asked to stop, and also when there is no sink at all
    // (then the output is simply dropped): only aborted() ends the run.
    if (!out_.write(stream, data, size) && out_.aborted()) output_aborted_ = true;
}

void BoxRun::flush_held() {
    std::string held_out = std::move(held_out_), held_err = std::move(held_err_);
    held_out_.clear();
    held_err_.clear();
    deliver(RADIAL_STREAM_STDOUT, held_out.data(), held_out.size());
    deliver(RADIAL_STREAM_STDERR, held_err.data(), held_err.size());
}

bool BoxRun::refresh_cid() {
    if (cid_) return true;
    UniqueFd fd(::open(cidfile_.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return false; // not created yet, or removed after a failed create
    char id[65];
    ssize_t n = ::read(fd.get(), id, sizeof id);
    if (n != 64 || !is_container_id(std::string_view(id, 64))) return false; // not written yet
    cid_ = std::string(id, 64);
    return true;
}

void BoxRun::begin_stop(Ending why, Clock::time_point now) {
    ending_ = why;
    next_remove_ = now;
    sigkill_at_ = now + milliseconds(cli_.settings().kill_grace_ms);
    host_.info("ending " + box() + " (" + ending_text(why) + "): removing its container");
}

void BoxRun::escalate(ChildProcess& child, Clock::time_point now) {
    if (!refresh_cid()) {
        // No container yet (the client is pulling or creating): stopping the client stops it from
        // making one; ensure_gone() catches one whose creation was already under way.
        if (!client_killed_) {
            host_.debug("stopping the docker client of " + box() + " before its container exists");
            child.kill();
            client_killed_ = true;
            stopped_before_container_ = true;
        }
        return;
    }
    if (now >= next_remove_) {
        try {
            cli_.remove({*cid_}, spec_.label);
        } catch (const Error& e) {
            host_.warn(std::string("ending ") + box() + ": " + e.what());
        }
        next_remove_ = Clock::now() + kRemoveEvery;
    }
    if (!client_killed_ && Clock::now() >= sigkill_at_) {
        host_.warn("ending " + box() + ": its docker client was still running " +
                   std::to_string(cli_.settings().kill_grace_ms) +
                   " ms after 'docker rm -f'; killing the client");
        child.kill();
        client_killed_ = true;
    }
}

void BoxRun::ensure_gone() {
    const auto deadline =
        Clock::now() +
        std::max<Clock::duration>(kRemovalBudget, milliseconds(cli_.settings().kill_grace_ms));
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
    std::string message = cli_message(err_tail_, kErrTailBytes);
    if (message.empty())
        message =
            status.exited
                ? "the docker client exited " + std::to_string(status.code) + " without a message"
                : "the docker client was killed by signal " + std::to_string(status.signal);
    auto has = [&](std::string_view s) { return message.find(s) != std::string::npos; };
    std::int32_t code = RADIAL_E_INTERNAL;
    std::string fix = "check the message above and dockerd's log";
    if (has("No such image") || has("not found") || has("pull access denied") ||
        has("manifest unknown") || has("repository does not exist")) {
        code = RADIAL_E_NOT_FOUND;
        fix = "build or load image '" + spec_.image + "', or check its name and run.docker.pull";
    } else if (has("Cannot connect to the Docker daemon") || has("error during connect") ||
               has("Is the docker daemon running")) {
        code = RADIAL_E_UNAVAILABLE;
        fix = "start dockerd or fix run.docker.host";
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
