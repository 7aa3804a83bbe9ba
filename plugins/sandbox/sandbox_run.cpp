#include "sandbox_run.h"

#include <radial/support/run_ending.h>
#include <radial/support/run_pump.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <thread>

#include "exec_script.h"
#include "sbx_names.h"
#include "session_script.h"
#include "support/cli_text.h"
#include "support/mount_sources.h"

namespace radial::sandbox {

namespace {

using plugin_support::ExitStatus;
using radial::plugin::Error;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kChunkBytes = 64u << 10; // one read, one callback
constexpr auto kDrainAfterExit = std::chrono::seconds(2);
constexpr auto kEarlyEndRemoveEvery = std::chrono::seconds(1); // while ending a run early
constexpr auto kSecondLookAfter = milliseconds(300);
// How long past a session exec's deadline and kill grace its client may run before the session's
// sandbox is removed: the exec script's watchdog ends it at the deadline; this is for one that
// cannot.
constexpr auto kExecBackstop = milliseconds(10000);
constexpr std::size_t kStderrTail = 4096; // of a session setup, for its failure message
// What is kept of the stderr that comes before the exec script's marker, which can only be sbx's
// or the set-up's (docs/design.md §13.3).
constexpr std::size_t kBeforeStartKept = 16u << 10;

using plugin_support::Ending;
using plugin_support::ending_text;

// The exec script in an anonymous memory file: the exec's stdin, on no disk and no argv.
internal::UniqueFd script_memfd(const std::string& script) {
    internal::UniqueFd fd(::memfd_create("radial-exec-script", MFD_CLOEXEC));
    if (!fd.valid())
        throw Error(RADIAL_E_INTERNAL, std::string("preparing the exec script: memfd_create: ") +
                                           std::strerror(errno) + "; raise the open-file limit");
    for (std::size_t done = 0; done < script.size();) {
        ssize_t n = ::write(fd.get(), script.data() + done, script.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            throw Error(RADIAL_E_INTERNAL, std::string("preparing the exec script: write: ") +
                                               std::strerror(errno) + "; check the host's memory");
        done += static_cast<std::size_t>(n);
    }
    if (::lseek(fd.get(), 0, SEEK_SET) != 0)
        throw Error(RADIAL_E_INTERNAL, std::string("preparing the exec script: lseek: ") +
                                           std::strerror(errno) + "; report this bug");
    return fd;
}

// What one SandboxRun does: a one-shot box from create to removal; a session's sandbox made and
// set up (kept unless that fails); or one exec in a session's sandbox (kept unless it cannot be
// ended on its own).
enum class Mode { one_shot, session_create, session_exec };

class SandboxRun {
public:
    SandboxRun(SbxCli& cli, const radial::plugin::Host& host, const ContainerSpec& spec,
               radial::plugin::Output& out, ActiveRun& active, Mode mode = Mode::one_shot)
        : cli_(cli),
          host_(host),
          spec_(spec),
          out_(out),
          active_(active),
          name_(sandbox_name(spec.label)),
          mode_(mode) {}

    radial::plugin::RunResult execute();
    // Session create: the idle timeout and maximum lifetime the setup script gives the keeper.
    void set_session_limits(std::uint64_t idle_ms, std::uint64_t max_ms) {
        idle_ms_ = idle_ms;
        max_ms_ = max_ms;
    }

private:
    milliseconds budget(std::uint64_t step_budget_ms) const;
    bool step(const std::vector<std::string>& args, std::uint64_t step_budget_ms,
              const std::string& what, std::string_view fix);
    ExitStatus exec(const std::vector<std::string>& args, internal::UniqueFd script);
    void pump(ChildProcess& child);
    bool read_chunk(internal::UniqueFd& fd, std::uint32_t stream);
    void tear_down(bool keep);
    void look_for_start(const char* data, std::size_t size);
    void check_started(const ExitStatus& status);
    std::string script() const;
    void settle_session(radial::plugin::RunResult& result, const ExitStatus& status);
    std::string session_state();
    std::string box() const {
        return (mode_ == Mode::one_shot ? "box '" : "session box '") + spec_.label + "'";
    }
    std::string sandbox() const { return "sandbox '" + name_ + "'"; }

    SbxCli& cli_;
    const radial::plugin::Host& host_;
    const ContainerSpec& spec_;
    radial::plugin::Output& out_;
    ActiveRun& active_;
    const std::string name_;
    const Mode mode_;
    std::uint64_t idle_ms_ = 0, max_ms_ = 0;
    Clock::time_point exec_deadline_ = Clock::time_point::max(); // a session exec's own
    std::string stderr_tail_;                                    // of a session setup
    // The exec script's last line before the command, on stderr (docs/design.md §13.3); empty for
    // a session's setup, which is judged by its exit status.
    const std::string marker_ = mode_ == Mode::session_create ? "" : exec_started_marker();
    bool started_ = false;     // the marker came: the exit status is the command's
    std::string before_start_; // stderr before it: sbx's and the set-up's, never the command's

    Clock::time_point timeout_at_ = Clock::time_point::max();
    Ending ending_ = Ending::none;
    bool output_aborted_ = false;
    bool create_interrupted_ = false;
    bool removed_ = false;                    // rm --force succeeded while ending the run
    plugin_support::RunPump* pump_ = nullptr; // while the exec runs
    // The rules asked for (an interrupted allow may still have landed): "localhost:PORT" of a host
    // port, or an egress destination.
    std::vector<std::string> granted_;
    std::vector<char> buffer_ = std::vector<char>(kChunkBytes);
};

radial::plugin::RunResult SandboxRun::execute() {
    const auto started = Clock::now();
    radial::plugin::RunResult result;
    if (active_.kill_requested()) {
        host_.info(box() + " was killed before its sandbox was created; nothing was started");
        result.flags = RADIAL_RUN_KILLED;
        return result;
    }
    const SandboxSettings& settings = cli_.settings();
    const bool session_exec = mode_ == Mode::session_exec;
    // Everything that can be refused is refused before a sandbox exists (or is used).
    const SbxFeatures features = cli_.features();
    std::vector<std::string> create;
    if (!session_exec) create = sbx_create_args(spec_, settings, features);
    // One scoped rule per host port, then per egress destination (docs/design.md §9.7).
    std::vector<std::vector<std::string>> policies;
    std::vector<std::string> resources, reaches;
    for (std::uint32_t port : spec_.host_ports) {
        policies.push_back(sbx_policy_args(name_, port, features));
        resources.push_back("localhost:" + std::to_string(port));
        reaches.push_back("host port " + std::to_string(port));
    }
    for (const std::string& d : spec_.egress) {
        policies.push_back(sbx_policy_resource_args(name_, d, features));
        resources.push_back(d);
        reaches.push_back("egress destination " + d);
    }
    const std::vector<std::string> exec_args = sbx_exec_args(name_, features);
    internal::UniqueFd script = script_memfd(this->script());
    // A passthrough workspace must exist on the host; sbx's behaviour otherwise is undocumented.
    if (!session_exec) plugin_support::check_mount_sources(spec_);
    // The timeout is the command's: it starts with the exec, while create, the port rules and
    // the removal have budgets of their own (a slow create never eats a short turn).
    const bool timed = spec_.timeout_ms != 0 && spec_.timeout_ms < (1ull << 40);
    if (session_exec) {
        const auto listed = cli_.list(cli_.command_budget());
        if (std::none_of(listed.begin(), listed.end(),
                         [&](const ListedSandbox& s) { return s.name == name_; }))
            throw Error(RADIAL_E_NOT_FOUND, "label",
                        box() + " is gone (" + sandbox() +
                            " was removed, or its idle timeout or maximum lifetime passed); "
                            "create a new session");
    }

    std::exception_ptr failure;
    ExitStatus status;
    std::optional<Clock::time_point> exec_started; // create and the port rules are done
    // A session's sandbox stays after this call, whatever failed, unless ending the exec took it
    // (removed_) or the session is over.
    bool keep = session_exec;
    try {
        bool going = true;
        if (!session_exec) {
            // Until create has answered, a sandbox may be on its way whatever the client
            // reported.
            create_interrupted_ = true;
            going =
                step(create, settings.create_timeout_ms, "creating " + sandbox() + " for " + box(),
                     "check the message and 'sbx diagnose'");
            if (going) create_interrupted_ = false;
        }
        for (std::size_t i = 0; going && i < policies.size(); ++i) {
            // Before the call: an allow interrupted mid-way may still have landed.
            granted_.push_back(resources[i]);
            going = step(policies[i], settings.command_timeout_ms,
                         "allowing " + box() + " to reach " + reaches[i] + " from " + sandbox(),
                         "check that this sbx supports per-sandbox rules ('sbx policy allow "
                         "network --help' names --sandbox)");
        }
        if (going && timed) {
            const auto now = Clock::now();
            if (session_exec) {
                // The exec script ends it at its deadline; the runner's is a backstop past it.
                exec_deadline_ = now + milliseconds(spec_.timeout_ms);
                timeout_at_ = exec_deadline_ + milliseconds(settings.kill_grace_ms) + kExecBackstop;
            } else {
                timeout_at_ = now + milliseconds(spec_.timeout_ms);
            }
        }
        if (going) {
            if (!session_exec)
                host_.info(
                    box() + ": " + sandbox() + " created and ready in " +
                    std::to_string(
                        std::chrono::duration_cast<milliseconds>(Clock::now() - started).count()) +
                    " ms; its timeout starts now");
            exec_started = Clock::now();
            status = exec(exec_args, std::move(script));
            check_started(status);
        }
        if (session_exec) {
            settle_session(result, status);
        } else if (mode_ == Mode::session_create) {
            if (ending_ == Ending::none && !(status.exited && status.code == 0))
                throw Error(RADIAL_E_INTERNAL,
                            "setting up " + box() + " in " + sandbox() + ": its setup script " +
                                (status.exited ? "exited " + std::to_string(status.code)
                                               : std::string("ended by a signal")) +
                                (stderr_tail_.empty() ? std::string() : ": " + stderr_tail_) +
                                "; check that the template has sh, date, grep and /proc");
            keep = ending_ == Ending::none;
        }
    } catch (...) {
        failure = std::current_exception();
    }

    // docs/design.md §8.3: the sandbox holds this turn's credentials until it is removed, whatever
    // happened; a session's sandbox holds none between its execs (docs/design.md §13.12).
    if (removed_) keep = false;
    const auto exec_ended = Clock::now();
    try {
        tear_down(keep);
    } catch (const std::exception& e) {
        if (failure) {
            host_.warn(std::string("after a failed run: ") + e.what());
        } else {
            std::string outcome = ending_ == Ending::killed      ? "was killed"
                                  : ending_ == Ending::timed_out ? "timed out"
                                  : ending_ == Ending::aborted   ? "was stopped by its output sink"
                                  : status.exited ? "exited " + std::to_string(status.code)
                                                  : "ended";
            throw Error(RADIAL_E_UNAVAILABLE, box() + " " + outcome + ", but " + e.what());
        }
    }
    if (failure) std::rethrow_exception(failure);
    if (ending_ != Ending::none && removed_)
        host_.info("ended " + box() + " (" + ending_text(ending_) + "): " + sandbox() + " removed");
    result.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<milliseconds>(Clock::now() - started).count());

    plugin_support::set_run_outcome(result, ending_, status, output_aborted_, box(),
                                    "the sbx exec client",
                                    keep ? sandbox() + " is kept" : sandbox() + " was removed");
    // A one-shot box's create and removal, each outside the command's timeout (docs/design.md
    // §13.2), reported apart from it.
    if (mode_ == Mode::one_shot && exec_started) {
        auto ms = [](Clock::duration d) {
            return static_cast<std::uint64_t>(std::chrono::duration_cast<milliseconds>(d).count());
        };
        result.create_ms = ms(*exec_started - started);
        result.remove_ms = ms(Clock::now() - exec_ended);
        result.flags |= RADIAL_RUN_PHASE_TIMES;
    }
    return result;
}

std::string SandboxRun::script() const {
    switch (mode_) {
        case Mode::session_create: return sbx_session_setup_script(spec_, idle_ms_, max_ms_);
        case Mode::session_exec:
            return sbx_session_exec_script(spec_, cli_.settings().kill_grace_ms, marker_);
        case Mode::one_shot: break;
    }
    return sbx_exec_script(spec_, marker_);
}

// Without the marker the command never started: sbx exec itself, or the script's set-up, failed,
// and its exit status is theirs, not the command's (docs/design.md §13.3). An ending the runtime
// brought about (kill, timeout, an aborting sink) stands as it is; so does a session's refusal,
// which settle_session judges.
void SandboxRun::check_started(const ExitStatus& status) {
    if (started_ || ending_ != Ending::none || marker_.empty()) return;
    if (mode_ == Mode::session_exec && status.exited && status.code == kSessionEndedExit) return;
    CliOutput r;
    r.status = status;
    r.err = before_start_;
    throw cli_.failure(r,
                       "running " + box() + " in " + sandbox() +
                           ": the command never started, since 'sbx exec' or the exec script's "
                           "set-up (bridging the mount targets, the environment, the workdir) "
                           "failed first",
                       cli_.command_budget(), RADIAL_E_UNAVAILABLE,
                       "check the message and 'sbx diagnose'");
}

// Stderr until the marker line is sbx's and the set-up's: kept for check_started and logged, never
// the box's output; what follows the line is the command's.
void SandboxRun::look_for_start(const char* data, std::size_t size) {
    before_start_.append(data, size);
    const std::string line = marker_ + "\n";
    const auto at = before_start_.find(line);
    if (at == std::string::npos) {
        if (before_start_.size() > kBeforeStartKept)
            before_start_.erase(0, before_start_.size() - kBeforeStartKept);
        return;
    }
    started_ = true;
    std::string rest = before_start_.substr(at + line.size());
    before_start_.resize(at);
    if (!before_start_.empty())
        host_.info(box() + ": before its command started, sbx or the set-up said: " +
                   plugin_support::cli_message(before_start_, 1024));
    if (!rest.empty() && !output_aborted_ &&
        !out_.write(RADIAL_STREAM_STDERR, rest.data(), rest.size()) && out_.aborted()) {
        output_aborted_ = true;
        pump_->output_aborted();
    }
}

// After a session exec ran to its end: the exec script's 124 past the deadline is a timeout; its
// refusal, or a death by a signal while the session's keeper ended the session, says the session
// is over, and then its sandbox goes.
void SandboxRun::settle_session(radial::plugin::RunResult& result, const ExitStatus& status) {
    (void)result;
    if (ending_ != Ending::none || !status.exited) return;
    if (status.code == 124 && Clock::now() >= exec_deadline_) {
        ending_ = Ending::timed_out;
        return;
    }
    if (status.code != kSessionEndedExit && status.code < 128) return;
    const std::string state = session_state();
    // Only a session known to be over goes: one that cannot be asked keeps its sandbox and the
    // command's code stands (a code of 128 or more is common on its own).
    if (!state.starts_with("ended") && state != "gone") {
        if (state != "live") host_.warn(box() + ": " + state + "; the session is kept");
        return;
    }
    host_.warn(box() + " has ended in " + sandbox() + " (" + state + "); removing it");
    try {
        cli_.remove(name_, spec_.label);
        removed_ = true;
    } catch (const Error& e) {
        host_.warn("removing " + sandbox() + ": " + e.what());
    }
    if (status.code == kSessionEndedExit)
        throw Error(RADIAL_E_NOT_FOUND, "label",
                    box() + " has ended (" + state + "); create a new session");
    ending_ = Ending::killed; // the session ended under the exec
}

// What the session's keeper says of it: "live", "ended: WHY" or "gone"; "unknown: ..." when sbx
// could not ask.
std::string SandboxRun::session_state() {
    std::vector<std::string> args = sbx_exec_args(name_, cli_.features());
    args.resize(args.size() - 1); // "sh -s" -> "sh -c SCRIPT"
    args.erase(std::find(args.begin(), args.end(), "-i"));
    args.push_back("-c");
    args.push_back(sbx_session_state_script());
    CliOutput r = cli_.call(args, cli_.command_budget());
    if (!r.ok())
        return "unknown: sbx exec failed: " + plugin_support::first_cli_line(r.err, "no message");
    std::string line = r.out.substr(0, r.out.find('\n'));
    return line.empty() ? std::string("gone") : line;
}

milliseconds SandboxRun::budget(std::uint64_t step_budget_ms) const {
    milliseconds b(step_budget_ms);
    if (timeout_at_ != Clock::time_point::max())
        b = std::min(b, std::max(milliseconds(1),
                                 std::chrono::ceil<milliseconds>(timeout_at_ - Clock::now())));
    return b;
}

// One short step of the run (create, a policy rule). True when it succeeded; false when a kill or
// the run's timeout interrupted it (ending_ says which); throws when sbx refused it.
bool SandboxRun::step(const std::vector<std::string>& args, std::uint64_t step_budget_ms,
                      const std::string& what, std::string_view fix) {
    if (active_.kill_requested()) {
        ending_ = Ending::killed;
        return false;
    }
    if (Clock::now() >= timeout_at_) {
        ending_ = Ending::timed_out;
        return false;
    }
    const milliseconds b = budget(step_budget_ms);
    host_.debug(what + ": sbx " + plugin_support::argv_for_log(args));
    CliOutput r = cli_.call(args, b, active_.wake().fd());
    if (r.ok()) return true;
    if (r.cancelled) {
        ending_ = Ending::killed;
        return false;
    }
    if (r.timed_out && Clock::now() >= timeout_at_) {
        ending_ = Ending::timed_out;
        return false;
    }
    throw cli_.failure(r, what, b, RADIAL_E_INTERNAL, fix);
}

ExitStatus SandboxRun::exec(const std::vector<std::string>& args, internal::UniqueFd script) {
    host_.debug("running " + box() + " in " + sandbox() + ": sbx " +
                plugin_support::argv_for_log(args) + " (the exec script goes on stdin)");
    ChildProcess child = cli_.executor().start(args, std::move(script));
    try {
        pump(child);
    } catch (...) {
        child.kill();
        child.reap_within(std::chrono::seconds(5));
        throw;
    }
    if (auto status = child.try_reap()) return *status;
    // The client outlived its SIGKILL by the pump's settle budget: it is reaped here or reported.
    child.kill();
    if (auto status = child.reap_within(std::chrono::seconds(5))) return *status;
    throw Error(RADIAL_E_INTERNAL, "ending " + box() +
                                       ": its sbx exec client could not be reaped after SIGKILL; "
                                       "report this bug");
}

// The run's wait, stop and drain are the shared pump's (docs/design.md §5.12); what is the
// sandbox's own is how it stops (rm --force), how it is forced (SIGKILL to the exec client) and
// where its output comes from (the client's pipes).
void SandboxRun::pump(ChildProcess& child) {
    plugin_support::PumpOptions options;
    options.deadline = timeout_at_;
    options.kill_grace = milliseconds(cli_.settings().kill_grace_ms);
    options.stop_every = kEarlyEndRemoveEvery;
    options.drain_budget = kDrainAfterExit;
    options.box_fd = child.exit_fd();
    // Without a pidfd the client's end is only seen by polling.
    if (options.box_fd < 0) options.check_every = milliseconds(100);

    plugin_support::PumpBox callbacks;
    callbacks.ended = [&child] { return child.reaped() || child.try_reap().has_value(); };
    callbacks.stop = [this](const plugin_support::StopRequest& request) {
        if (request.first)
            host_.info("ending " + box() + " (" + ending_text(request.why) + "): removing " +
                       sandbox());
        // Removing the sandbox is what ends the workload: killing the exec client alone may
        // leave the command running in the VM (docs/design.md §5.12). SbxCli::remove retries
        // within the removal budget of its own.
        try {
            cli_.remove(name_, spec_.label);
            removed_ = true;
            return true;
        } catch (const Error& e) {
            host_.warn(std::string("ending ") + box() + ": " + e.what());
            return false;
        }
    };
    callbacks.force_kill = [this, &child] {
        host_.warn("ending " + box() + ": its sbx exec client was still running " +
                   std::to_string(cli_.settings().kill_grace_ms) + " ms after 'sbx rm --force " +
                   name_ + "'; killing the client");
        child.kill();
    };
    plugin_support::RunPump pump(active_, options, std::move(callbacks));
    pump_ = &pump;
    internal::UniqueFd& out = child.stdout_pipe();
    internal::UniqueFd& err = child.stderr_pipe();
    if (out.valid())
        pump.watch(out.get(), [this, &out] { return read_chunk(out, RADIAL_STREAM_STDOUT); });
    if (err.valid())
        pump.watch(err.get(), [this, &err] { return read_chunk(err, RADIAL_STREAM_STDERR); });
    plugin_support::PumpResult r;
    try {
        r = pump.run();
    } catch (...) {
        pump_ = nullptr;
        throw;
    }
    pump_ = nullptr;
    ending_ = r.ending;
}

// Reads one chunk of `fd` into `out_`; false once the pipe ended (then `fd` is closed).
bool SandboxRun::read_chunk(internal::UniqueFd& fd, std::uint32_t stream) {
    ssize_t n = ::read(fd.get(), buffer_.data(), buffer_.size());
    if (n > 0) {
        if (mode_ == Mode::session_create && stream == RADIAL_STREAM_STDERR) {
            stderr_tail_.append(buffer_.data(), static_cast<std::size_t>(n));
            if (stderr_tail_.size() > kStderrTail)
                stderr_tail_.erase(0, stderr_tail_.size() - kStderrTail);
        }
        if (stream == RADIAL_STREAM_STDERR && !started_ && !marker_.empty()) {
            look_for_start(buffer_.data(), static_cast<std::size_t>(n));
            return true;
        }
        // Output::write is false when the sink asked to stop, and also when there is no sink at
        // all (then the output is simply dropped): only aborted() ends the run.
        if (!output_aborted_ && !out_.write(stream, buffer_.data(), static_cast<std::size_t>(n)) &&
            out_.aborted()) {
            output_aborted_ = true;
            pump_->output_aborted();
        }
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        fd.reset(); // EOF (or a broken pipe): nothing more will come
        return false;
    }
    return true;
}

void SandboxRun::tear_down(bool keep) {
    const auto deadline = Clock::now() + milliseconds(cli_.settings().removal_timeout_ms);
    // The grant is revoked explicitly rather than trusted to die with the sandbox: what a real
    // sbx does with a removed sandbox's scoped rules is not documented. A rule already gone (the
    // sandbox was removed to end the run) is fine; a revoke that fails is logged, never fatal.
    for (const std::string& resource : granted_) {
        try {
            cli_.revoke(name_, resource, spec_.label);
        } catch (const Error& e) {
            host_.warn("ending " + box() + ": " + e.what());
        }
    }
    granted_.clear();
    if (keep) return;
    if (!removed_) {
        cli_.remove(name_, spec_.label); // retries within the removal budget
        removed_ = true;
    }
    if (!create_interrupted_) return;
    // A create already on its way to sandboxd when its client was stopped can still land: look
    // twice, a moment apart, and remove what appeared.
    for (int clean_looks = 0; clean_looks < 2;) {
        std::vector<ListedSandbox> listed = cli_.list(cli_.command_budget());
        bool present = std::any_of(listed.begin(), listed.end(),
                                   [&](const ListedSandbox& s) { return s.name == name_; });
        if (!present) {
            if (++clean_looks < 2) std::this_thread::sleep_for(kSecondLookAfter);
            continue;
        }
        if (Clock::now() >= deadline)
            throw Error(RADIAL_E_UNAVAILABLE,
                        "removing " + sandbox() + " of " + box() +
                            ": it is still listed after repeated 'sbx rm --force'; remove it by "
                            "hand and see 'sbx diagnose'");
        host_.info(sandbox() + " appeared after its create was interrupted; removing it");
        cli_.remove(name_, spec_.label);
        clean_looks = 0;
    }
}

} // namespace

radial::plugin::RunResult run_sandbox(SbxCli& cli, const radial::plugin::Host& host,
                                      const ContainerSpec& spec, radial::plugin::Output& out,
                                      ActiveRun& active) {
    return SandboxRun(cli, host, spec, out, active).execute();
}

void create_sandbox_session(SbxCli& cli, const radial::plugin::Host& host,
                            const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                            std::uint64_t max_lifetime_ms, ActiveRun& active) {
    radial::plugin::Output none(nullptr);
    SandboxRun run(cli, host, spec, none, active, Mode::session_create);
    run.set_session_limits(idle_timeout_ms, max_lifetime_ms);
    const auto result = run.execute();
    if (result.flags & RADIAL_RUN_KILLED)
        throw Error(RADIAL_E_CANCELLED,
                    "creating session box '" + spec.label +
                        "': it was killed while being created; nothing is kept");
    if (result.flags & RADIAL_RUN_TIMED_OUT)
        throw Error(RADIAL_E_UNAVAILABLE, "creating session box '" + spec.label +
                                              "': sbx did not create and set it up in time; see "
                                              "'sbx diagnose'");
    host.info("started session box '" + spec.label + "' in sandbox '" + sandbox_name(spec.label) +
              "' (idle timeout " + std::to_string(idle_timeout_ms) + " ms, maximum lifetime " +
              std::to_string(max_lifetime_ms) + " ms, kept by a keeper in the sandbox)");
}

radial::plugin::RunResult exec_in_sandbox_session(SbxCli& cli, const radial::plugin::Host& host,
                                                  const ContainerSpec& exec,
                                                  radial::plugin::Output& out, ActiveRun& active) {
    return SandboxRun(cli, host, exec, out, active, Mode::session_exec).execute();
}

} // namespace radial::sandbox
