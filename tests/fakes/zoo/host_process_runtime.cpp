#include "host_process_runtime.h"

#include <fcntl.h>
#include <poll.h>
#include <radial/internal/unique_fd.h>
#include <radial/support/child_process.h>
#include <radial/support/run_pump.h>
#include <radial/support/run_registry.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace radial::zoo {
namespace {

using radial::plugin::Error;
using Clock = std::chrono::steady_clock;

struct Box {
    pid_t pgid = 0;
    bool killed = false;
    std::shared_ptr<plugin_support::ActiveRun> active; // wakes the run's pump; null once it ended
    std::thread::id run_thread{}; // the thread pumping the box (and calling the sink)
    bool exited = false;          // Defects::keep_exited: the workload ended, the box stays
};

// A session: its box's spec (workdir) and, for Defects::leak_session_env, the last exec's env.
struct SessionBox {
    std::string workdir;
    std::vector<EnvVar> last_env;
};

// Every box of every instance in this library (reconciliation sees boxes it did not create).
struct Registry {
    std::mutex mutex;
    std::condition_variable changed;
    std::map<std::string, Box, std::less<>> boxes;
    std::set<std::string, std::less<>> leaked; // Defects::leave_box_after_kill
    std::map<std::string, SessionBox, std::less<>> sessions;
};

Registry& registry() {
    static Registry r;
    return r;
}

// The tree's one fd owner (docs/design.md §14.6).
using Fd = internal::UniqueFd;

} // namespace

HostProcessRuntime::HostProcessRuntime(const radial::plugin::Host& host,
                                       radial::plugin::Config& config, Defects defects)
    : host_(host), defects_(defects), box_dir_(config.string("boxDir").value_or("")) {
    for (const auto& c : config.strings("hang").value_or(std::vector<std::string>{}))
        hang_.insert(c);
    release_file_ = config.string("releaseFile").value_or("");
    change_bytes_ = static_cast<std::uint64_t>(config.integer("changeBytes").value_or(0));
    if (box_dir_.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(box_dir_, ec);
    if (ec)
        throw Error(RADIAL_E_INVALID, "boxDir",
                    "creating the box directory '" + box_dir_ + "': " + ec.message());
}

void HostProcessRuntime::maybe_hang(std::string_view call) const {
    if (hang_.find(call) == hang_.end()) return;
    if (release_file_.empty())
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    std::error_code ec;
    while (!std::filesystem::exists(release_file_, ec))
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void HostProcessRuntime::preflight() { maybe_hang("preflight"); }

const void* HostProcessRuntime::extension(std::string_view id) {
    maybe_hang("get_extension");
    if (id == RADIAL_SESSION_EXTENSION_ID) return radial::plugin::session_extension();
    if (id == RADIAL_TEMPLATE_EXTENSION_ID && hang_.count("template load") != 0)
        return radial::plugin::template_extension();
    return nullptr;
}

// The snapshot calls: the helper's refusals, unless the config says to hang in them.
std::string HostProcessRuntime::resolve_image(std::string_view image) {
    maybe_hang("resolve_image");
    return Sessions::resolve_image(image);
}
void HostProcessRuntime::changes(std::string_view label, std::uint64_t since_ms,
                                 radial::plugin::ChangeSink& sink) {
    maybe_hang("session changes");
    if (change_bytes_ == 0) return Sessions::changes(label, since_ms, sink);
    // One changed file of change_bytes_ zero bytes, given in 64 KiB pieces.
    if (!sink.entry("/changed", RADIAL_CHANGE_FILE)) return;
    const std::string piece(64 * 1024, '\0');
    for (std::uint64_t left = change_bytes_; left > 0;) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, piece.size()));
        if (!sink.data(piece.data(), n)) return;
        left -= n;
    }
}
std::string HostProcessRuntime::snapshot(std::string_view label, std::string_view image) {
    maybe_hang("session snapshot");
    return Sessions::snapshot(label, image);
}
void HostProcessRuntime::remove_snapshot(std::string_view image) {
    maybe_hang("remove snapshot");
    Sessions::remove_snapshot(image);
}
void HostProcessRuntime::load_template(const std::string&, std::chrono::milliseconds) {
    maybe_hang("template load");
    throw Error(RADIAL_E_UNSUPPORTED, "this runtime keeps no templates");
}

void HostProcessRuntime::remove_box_file(std::string_view label) const {
    if (!box_dir_.empty()) ::unlink((box_dir_ + "/" + std::string(label)).c_str());
}

std::vector<radial::plugin::Disposition> HostProcessRuntime::describe(const ContainerSpec& spec) {
    maybe_hang("describe_spec");
    std::vector<radial::plugin::Disposition> out;
    for (auto f : carried_fields(spec)) {
        if (defects_.claim_confinement &&
            (f == RADIAL_FIELD_USER || f == RADIAL_FIELD_READ_ONLY_ROOTFS ||
             f == RADIAL_FIELD_TMPFS || f == RADIAL_FIELD_NETWORK || f == RADIAL_FIELD_PIDS_LIMIT ||
             f == RADIAL_FIELD_MEMORY || f == RADIAL_FIELD_CPUS || f == RADIAL_FIELD_EXTRA_HOSTS)) {
            out.push_back({f, RADIAL_DISP_HONOURED, {}});
            continue;
        }
        switch (f) {
            case RADIAL_FIELD_LABEL:
            case RADIAL_FIELD_ARGV:
            case RADIAL_FIELD_ENV:
            case RADIAL_FIELD_WORKDIR:
            case RADIAL_FIELD_TIMEOUT_MS:
            case RADIAL_FIELD_ON_OUTPUT: out.push_back({f, RADIAL_DISP_HONOURED, {}}); break;
            // Its processes are the host's: a host port (the tcp turn socket) is theirs to reach.
            case RADIAL_FIELD_HOST_PORTS:
                out.push_back({f, RADIAL_DISP_HONOURED, "a test runtime: runs on the host"});
                break;
            case RADIAL_FIELD_IMAGE:
            // radiald gives every box a user (its box ids); a test runtime that refused it could
            // not be driven by radiald at all, and its processes are the test's own anyway.
            case RADIAL_FIELD_USER:
            // Likewise radiald's bounds, which it puts in every spec (docs/design.md §6.4).
            case RADIAL_FIELD_MEMORY:
            case RADIAL_FIELD_CPUS:
            case RADIAL_FIELD_PIDS_LIMIT:
                out.push_back({f, RADIAL_DISP_SUPERSEDED, "a test runtime: runs on the host"});
                break;
            default:
                out.push_back({f, RADIAL_DISP_REFUSED, "a test runtime: no container to do it"});
        }
    }
    return out;
}

radial::plugin::RunResult HostProcessRuntime::run(const ContainerSpec& spec,
                                                  radial::plugin::Output& out) {
    auto& reg = registry();
    auto active = std::make_shared<plugin_support::ActiveRun>();
    {
        std::lock_guard lock(reg.mutex);
        if (reg.boxes.count(spec.label) != 0)
            throw Error(RADIAL_E_INVALID, "label", "a box '" + spec.label + "' already runs");
        reg.boxes[spec.label] = Box{0, false, active, std::this_thread::get_id(), false};
    }
    {
        std::lock_guard lock(mine_mutex_);
        mine_.insert(spec.label);
    }
    struct Unregister {
        Registry& reg;
        std::string label;
        const HostProcessRuntime* rt;
        bool keep = false; // Defects::keep_exited, for a workload that exited by itself
        ~Unregister() {
            std::lock_guard lock(reg.mutex);
            if (keep) {
                reg.boxes[label].exited = true;
                reg.boxes[label].active.reset();
            } else {
                reg.boxes.erase(label);
                rt->remove_box_file(label);
            }
            reg.changed.notify_all();
        }
    } unregister{reg, spec.label, this};

    // The workload is a child of the installed run support's: its own process group, a clean
    // signal state, exactly the spec's environment, reaped by it alone.
    plugin_support::ChildProcess::Env env;
    for (const auto& e : spec.env) env.emplace(e.name, e.value);
    plugin_support::ChildProcess::Options options;
    options.workdir = spec.workdir;
    const std::filesystem::path exe =
        plugin_support::ChildProcess::find_program(spec.argv.empty() ? "" : spec.argv[0]);
    if (exe.empty())
        throw Error(RADIAL_E_INVALID, "argv",
                    "starting '" + (spec.argv.empty() ? std::string() : spec.argv[0]) +
                        "' failed: not found in PATH");
    auto started = Clock::now();
    std::optional<plugin_support::ChildProcess> child;
    try {
        child.emplace(plugin_support::ChildProcess::start(
            exe, {spec.argv.begin() + 1, spec.argv.end()}, env, std::move(options)));
    } catch (const Error& e) {
        throw Error(RADIAL_E_INVALID, "argv", e.what());
    }
    const pid_t pid = child->pid();
    {
        std::lock_guard lock(reg.mutex);
        reg.boxes[spec.label].pgid = pid;
    }
    if (!box_dir_.empty()) {
        std::string path = box_dir_ + "/" + spec.label, text = std::to_string(pid) + "\n";
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
            (void)::write(fd, text.data(), text.size());
            ::close(fd);
        }
    }

    plugin_support::PumpOptions pump_options;
    if (spec.timeout_ms != 0 && !defects_.ignore_timeout)
        pump_options.deadline = started + std::chrono::milliseconds(spec.timeout_ms);
    pump_options.kill_grace = std::chrono::milliseconds(0); // a stop is already a SIGKILL
    pump_options.box_fd = child->exit_fd();
    if (pump_options.box_fd < 0) pump_options.check_every = std::chrono::milliseconds(100);
    plugin_support::PumpBox box;
    // Ended, but not reaped: while the leader is an unreaped zombie its pid, and with it the
    // group id kill() signals, cannot be taken by another process (reaped below, after the
    // registry forgot the group).
    box.ended = [&] {
        siginfo_t info{};
        return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
               info.si_pid == pid;
    };
    box.stop = [&](const plugin_support::StopRequest&) {
        child->kill(); // its whole process group
        return true;
    };
    box.force_kill = [&] { child->kill(); };
    plugin_support::RunPump pump(*active, pump_options, std::move(box));
    std::vector<char> buf(65536);
    auto pipe_reader = [&](Fd& fd, std::uint32_t stream) {
        return [&, stream] {
            ssize_t got = ::read(fd.get(), buf.data(), buf.size());
            if (got < 0 && (errno == EAGAIN || errno == EINTR)) return true;
            if (got <= 0) {
                fd.reset();
                return false;
            }
            if (!out.write(stream, buf.data(), static_cast<std::size_t>(got)) && out.aborted())
                pump.output_aborted();
            return true;
        };
    };
    pump.watch(child->stdout_pipe().get(), pipe_reader(child->stdout_pipe(), RADIAL_STREAM_STDOUT));
    pump.watch(child->stderr_pipe().get(), pipe_reader(child->stderr_pipe(), RADIAL_STREAM_STDERR));
    const plugin_support::PumpResult ran = pump.run();
    {
        std::lock_guard lock(reg.mutex);
        reg.boxes[spec.label].pgid = 0; // kill() signals the group no more: it is reaped next
    }
    child->kill(); // background processes of the workload go with it
    const auto status = child->reap_within(std::chrono::seconds(10));
    std::uint32_t flags = 0;
    switch (ran.ending) {
        case plugin_support::Ending::killed: flags = RADIAL_RUN_KILLED; break;
        case plugin_support::Ending::timed_out: flags = RADIAL_RUN_TIMED_OUT; break;
        case plugin_support::Ending::aborted:
            flags = RADIAL_RUN_OUTPUT_ABORTED | RADIAL_RUN_KILLED;
            break;
        case plugin_support::Ending::none: break;
    }
    {
        // kill() may have ended the process before its wake-up was seen.
        std::lock_guard lock(reg.mutex);
        if (reg.boxes[spec.label].killed && flags == 0) flags |= RADIAL_RUN_KILLED;
    }

    if (defects_.hang_until_killed || defects_.deaf) {
        std::unique_lock lock(reg.mutex);
        reg.changed.wait(lock, [&] { return !defects_.deaf && reg.boxes[spec.label].killed; });
        flags |= RADIAL_RUN_KILLED;
    }
    radial::plugin::RunResult r;
    r.flags = flags;
    if (defects_.keep_exited && flags == 0) unregister.keep = true;
    if (status && status->exited) {
        r.flags |= RADIAL_RUN_EXITED;
        r.exit_code = status->code;
        if (defects_.squash_exit_codes && r.exit_code >= 4) r.exit_code = 1;
    } else if (status && status->signal != 0) {
        r.flags |= RADIAL_RUN_SIGNALED;
        r.term_signal = status->signal;
    }
    r.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
    return r;
}

std::vector<std::string> HostProcessRuntime::list_by_label(std::string_view prefix) {
    while (defects_.hang_list) std::this_thread::sleep_for(std::chrono::hours(1));
    maybe_hang("list_by_label");
    auto& reg = registry();
    std::lock_guard lock(reg.mutex);
    std::set<std::string> names(reg.leaked.begin(), reg.leaked.end());
    for (const auto& [label, box] : reg.boxes)
        if (!(defects_.keep_exited && box.exited)) names.insert(label);
    for (const auto& [label, session] : reg.sessions) names.insert(label);
    std::vector<std::string> out;
    for (const auto& n : names)
        if (defects_.list_everything || n.compare(0, prefix.size(), prefix) == 0) out.push_back(n);
    return out;
}

void HostProcessRuntime::kill(std::string_view label) {
    maybe_hang("kill");
    if (defects_.kill_noop) return;
    if (defects_.kill_own_only) {
        std::lock_guard lock(mine_mutex_);
        if (mine_.find(label) == mine_.end()) return;
    }
    auto& reg = registry();
    std::unique_lock lock(reg.mutex);
    if (auto s = reg.sessions.find(label); s != reg.sessions.end()) {
        // A session: its exec, if one runs, goes with it.
        reg.sessions.erase(s);
        const std::string exec_box = std::string(label) + ".exec";
        lock.unlock();
        kill(exec_box);
        return;
    }
    auto it = reg.boxes.find(label);
    if (it == reg.boxes.end()) return; // unknown: nothing to do (RADIAL_OK)
    if (it->second.exited) {
        reg.boxes.erase(it);
        remove_box_file(label);
        reg.changed.notify_all();
        return;
    }
    it->second.killed = true;
    if (it->second.pgid > 0) ::kill(-it->second.pgid, SIGKILL);
    if (it->second.active) it->second.active->request_kill();
    reg.changed.notify_all();
    if (defects_.leave_box_after_kill) reg.leaked.insert(std::string(label));
    // Called from inside the sink, on the run's own thread: the run cannot erase the box until
    // this returns, and its processes are already SIGKILLed.
    if (it->second.run_thread == std::this_thread::get_id()) return;
    // Postcondition: the box is gone. The run erases it once its process group is reaped.
    reg.changed.wait_for(lock, std::chrono::seconds(defects_.deaf ? 1 : 10),
                         [&] { return reg.boxes.find(label) == reg.boxes.end(); });
    host_.debug("killed box '" + std::string(label) + "'");
}

void HostProcessRuntime::create_session(const ContainerSpec& spec, std::uint64_t, std::uint64_t) {
    maybe_hang("session create");
    auto& reg = registry();
    std::lock_guard lock(reg.mutex);
    if (reg.sessions.count(spec.label) != 0 || reg.boxes.count(spec.label) != 0)
        throw Error(RADIAL_E_INVALID, "label", "a box '" + spec.label + "' exists already");
    reg.sessions[spec.label] = SessionBox{spec.workdir, {}};
}

radial::plugin::RunResult HostProcessRuntime::exec(const ContainerSpec& exec,
                                                   radial::plugin::Output& out) {
    ContainerSpec run_spec = exec;
    {
        auto& reg = registry();
        std::lock_guard lock(reg.mutex);
        auto it = reg.sessions.find(exec.label);
        if (it == reg.sessions.end())
            throw Error(RADIAL_E_NOT_FOUND, "label",
                        "no session box '" + exec.label + "'; create a new session");
        if (run_spec.workdir.empty()) run_spec.workdir = it->second.workdir;
        if (defects_.leak_session_env)
            run_spec.env.insert(run_spec.env.end(), it->second.last_env.begin(),
                                it->second.last_env.end());
        it->second.last_env = exec.env;
    }
    run_spec.label = exec.label + ".exec";
    return run(run_spec, out);
}

void HostProcessRuntime::destroy_session(std::string_view label) {
    maybe_hang("session destroy");
    if (defects_.keep_session) return;
    kill(label);
}

} // namespace radial::zoo
