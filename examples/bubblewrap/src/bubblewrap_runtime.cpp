#include "bubblewrap_runtime.h"

#include <radial/support/run_ending.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <thread>

namespace radial::bubblewrap {
namespace {

using plugin::Error;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// How long a kill waits for a box to be gone (the ABI's promise to a blocked run is 10 s).
constexpr auto kKillBudget = 10s;
// How long a kill before its run starts is remembered (a run of that label then never starts).
constexpr auto kEarlyKillMemory = 60s;

bool is_root_user(const std::string& user) {
    auto colon = user.find(':');
    std::string u = user.substr(0, colon);
    std::string g = colon == std::string::npos ? std::string() : user.substr(colon + 1);
    return u == "0" || u == "root" || g == "0" || g == "root";
}

} // namespace

BubblewrapRuntime::BubblewrapRuntime(const plugin::Host& host, plugin::Config& config)
    : host_(host), registry_(std::string()) {
    if (auto v = config.string("binary")) {
        if (v->empty()) throw Error(RADIAL_E_INVALID, "binary", "binary must not be empty");
        settings_.binary = *v;
    }
    settings_.state_dir = config.string("stateDir").value_or(default_state_dir());
    if (settings_.state_dir.empty() || settings_.state_dir[0] != '/')
        throw Error(
            RADIAL_E_INVALID, "stateDir",
            "stateDir must be an absolute directory path, not '" + settings_.state_dir + "'");
    if (auto v = config.string("imageRoot")) {
        if (v->empty() || (*v)[0] != '/')
            throw Error(RADIAL_E_INVALID, "imageRoot",
                        "imageRoot must be an absolute directory path, not '" + *v + "'");
        settings_.image_root = *v;
    }
    if (auto v = config.string("user")) {
        if (v->empty() || is_root_user(*v))
            throw Error(RADIAL_E_INVALID, "user",
                        "user must name a non-root uid[:gid], not '" + *v + "'");
        settings_.user = *v;
    }
    if (auto v = config.size_bytes("tmpSize")) settings_.tmp_size_bytes = *v;
    registry_ = BoxRegistry(settings_.state_dir);
}

void BubblewrapRuntime::preflight() {
    std::string output;
    int rc = run_quietly({settings_.binary, "--version"}, 10s, output);
    if (rc != 0)
        throw Error(RADIAL_E_UNAVAILABLE, "binary",
                    "running '" + settings_.binary + " --version' failed (" + output +
                        "); install bubblewrap (Debian: apt install bubblewrap) or set "
                        "run.bubblewrap.binary");
    // The namespaces a box needs: unprivileged user namespaces must be allowed on this host.
    output.clear();
    rc = run_quietly({settings_.binary, "--unshare-all", "--unshare-user", "--die-with-parent",
                      "--ro-bind", "/", "/", "--", "true"},
                     10s, output);
    if (rc != 0)
        throw Error(RADIAL_E_UNAVAILABLE,
                    "bwrap cannot create a box's namespaces on this host (" + output +
                        "); allow unprivileged user namespaces (sysctl "
                        "kernel.unprivileged_userns_clone=1) or run radiald where they are");
    try {
        registry_.ensure();
    } catch (const std::exception& e) {
        throw Error(RADIAL_E_UNAVAILABLE, "stateDir", e.what());
    }
}

std::vector<std::string> BubblewrapRuntime::capabilities() {
    return {RADIAL_CAP_UNIX_SOCKET_MOUNTS};
}

std::vector<plugin::Disposition> BubblewrapRuntime::describe(const ContainerSpec& spec) {
    std::vector<plugin::Disposition> out;
    const std::string no_cgroups =
        "enforcing it needs cgroups, which bubblewrap does not manage; unset it under the "
        "bubblewrap runtime";
    for (std::uint32_t f : carried_fields(spec)) {
        switch (f) {
            case RADIAL_FIELD_IMAGE:
                out.push_back(
                    {f, RADIAL_DISP_BRIDGED,
                     "a root filesystem directory (an absolute path, or a name under "
                     "run.bubblewrap.imageRoot), bound read-only; not an image reference"});
                break;
            case RADIAL_FIELD_USER:
                if (is_root_user(spec.user))
                    out.push_back({f, RADIAL_DISP_REFUSED,
                                   "the bubblewrap runtime never runs a box as root or in root's "
                                   "group"});
                else
                    out.push_back({f, RADIAL_DISP_BRIDGED,
                                   "uid:gid inside a user namespace; on the host the box's files "
                                   "belong to the user running radiald"});
                break;
            case RADIAL_FIELD_READ_ONLY_ROOTFS:
                if (spec.read_only_rootfs == Tristate::no)
                    out.push_back({f, RADIAL_DISP_REFUSED,
                                   "bubblewrap 0.8 has no overlay, and a writable bind of the "
                                   "image would change it for every later box; use tmpfs or a "
                                   "mount for what the box writes"});
                else
                    out.push_back({f, RADIAL_DISP_HONOURED, {}});
                break;
            case RADIAL_FIELD_NETWORK:
                if (spec.network == "none")
                    out.push_back({f, RADIAL_DISP_HONOURED,
                                   "the box always has its own empty network namespace"});
                else
                    out.push_back({f, RADIAL_DISP_REFUSED,
                                   "the box has its own empty network namespace and cannot join "
                                   "network '" +
                                       spec.network + "'"});
                break;
            case RADIAL_FIELD_HOST_PORTS:
                out.push_back({f, RADIAL_DISP_REFUSED,
                               "the box has no network to reach host ports by; sharing the "
                               "host's network would end its isolation (use a unix socket mount)"});
                break;
            case RADIAL_FIELD_EXTRA_HOSTS:
                out.push_back(
                    {f, RADIAL_DISP_REFUSED, "the box has no network to resolve names in"});
                break;
            case RADIAL_FIELD_PIDS_LIMIT:
            case RADIAL_FIELD_MEMORY:
            case RADIAL_FIELD_CPUS: out.push_back({f, RADIAL_DISP_REFUSED, no_cgroups}); break;
            default: out.push_back({f, RADIAL_DISP_HONOURED, {}}); break;
        }
    }
    return out;
}

plugin::RunResult BubblewrapRuntime::run(const ContainerSpec& spec, plugin::Output& out) {
    if (spec.image.empty())
        throw Error(RADIAL_E_INVALID, "image",
                    "image is required: the path of a root filesystem directory");
    if (!spec.workdir.empty() && spec.workdir[0] != '/')
        throw Error(RADIAL_E_INVALID, "workdir", "workdir '" + spec.workdir + "' is not absolute");
    for (std::size_t i = 0; i < spec.mounts.size(); ++i) {
        struct stat st {};
        const auto& m = spec.mounts[i];
        if (m.source.empty() || m.source[0] != '/' || ::stat(m.source.c_str(), &st) != 0)
            throw Error(RADIAL_E_NOT_FOUND, "mounts[" + std::to_string(i) + "]",
                        "mount source '" + m.source + "' does not exist on the host");
        if (m.target.empty() || m.target[0] != '/')
            throw Error(RADIAL_E_INVALID, "mounts[" + std::to_string(i) + "]",
                        "mount target '" + m.target + "' is not absolute");
    }
    const std::string rootfs = rootfs_for(settings_, spec.image);
    const UidGid user = resolve_user(rootfs, spec.user.empty() ? settings_.user : spec.user);
    if (user.uid == 0 || user.gid == 0)
        throw Error(RADIAL_E_REFUSED, "user", "the bubblewrap runtime never runs a box as root");

    std::optional<plugin_support::RunRegistry::Registration> registration;
    {
        // One lock for the early-kill check and the entry, so a kill lands on one or the other.
        std::lock_guard lock(mutex_);
        auto now = Clock::now();
        std::erase_if(early_kills_,
                      [&](const auto& e) { return now - e.second > kEarlyKillMemory; });
        if (early_kills_.erase(spec.label) != 0)
            return plugin::RunResult{RADIAL_RUN_KILLED, 0, 0, 0};
        registration.emplace(runs_.enter(spec.label)); // RADIAL_E_INVALID when already running
    }
    // Whatever happens from here, the box's registry entry goes with the run.
    struct EntryCleanup {
        BoxRegistry& registry;
        const std::string& label;
        bool written = false;
        ~EntryCleanup() {
            if (written) registry.remove(label);
        }
    } cleanup{registry_, spec.label};

    if (auto existing = registry_.read(spec.label); existing && existing->live())
        throw Error(RADIAL_E_INVALID, "label", "a box '" + spec.label + "' already exists");
    BoxEntry entry;
    entry.owner = ProcessId::of(::getpid()).value_or(ProcessId{});
    try {
        registry_.write(spec.label, entry);
    } catch (const std::exception& e) {
        throw Error(RADIAL_E_UNAVAILABLE, "stateDir", e.what());
    }
    cleanup.written = true;

    BoxProcess box = BoxProcess::start(settings_.binary, [&](int info_fd) {
        return bwrap_command(settings_, spec, rootfs, user, info_fd);
    });
    entry.bwrap = ProcessId::of(box.pid()).value_or(ProcessId{box.pid(), 0});
    registry_.write(spec.label, entry);
    host_.debug("box '" + spec.label + "': bwrap " + std::to_string(box.pid()) + " over '" +
                rootfs + "' as " + std::to_string(user.uid) + ":" + std::to_string(user.gid));
    BoxOutcome outcome =
        box.run(out, spec.timeout_ms, registration->run(), [&](const ProcessId& init) {
            entry.init = init;
            registry_.write(spec.label, entry);
        });
    // Killed by another process: it SIGKILLed the box, which is no exit of the workload's.
    if (outcome.ending == plugin_support::Ending::none && registry_.killed(spec.label))
        outcome.ending = plugin_support::Ending::killed;
    plugin::RunResult result;
    plugin_support::set_run_outcome(result, outcome.ending, outcome.status, outcome.output_aborted,
                                    "box '" + spec.label + "'", "bwrap", "the box was killed");
    result.duration_ms = outcome.duration_ms;
    return result;
}

std::vector<std::string> BubblewrapRuntime::list_by_label(std::string_view prefix) {
    try {
        return registry_.list(prefix);
    } catch (const std::exception& e) {
        throw Error(RADIAL_E_UNAVAILABLE, "stateDir", e.what());
    }
}

void BubblewrapRuntime::kill(std::string_view label_view) {
    const std::string label(label_view);
    std::shared_ptr<plugin_support::ActiveRun> active;
    {
        std::lock_guard lock(mutex_);
        active = runs_.request_kill(label);
        // Not started yet (or unknown): a run of this label that starts later never does.
        if (!active && !registry_.read(label)) {
            early_kills_[label] = Clock::now();
            return;
        }
    }
    // From inside the run's own output sink: the pump ends the box once the sink returns.
    if (active && active->on_run_thread()) return;
    // Another process's box is marked, so its run reports KILLED and not an exit.
    if (!active) registry_.mark_killed(label);
    // The box is killed here, not only by its pump, which may be blocked in a slow sink; the
    // box gone is kill's promise, within one budget (its run may still be returning).
    const auto deadline = Clock::now() + kKillBudget;
    kill_recorded(label, deadline);
    if (active)
        (void)active->wait_finished(std::max(
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()), 0ms));
    // A dead owner cannot remove its entry.
    if (auto e = registry_.read(label); e && !e->owner.alive()) registry_.remove(label);
}

void BubblewrapRuntime::kill_recorded(const std::string& label, Clock::time_point deadline) {
    for (;;) {
        auto e = registry_.read(label);
        if (!e || !e->live()) return;
        // Before bwrap is recorded the owner is still starting it: wait for the pids.
        (void)e->init.signal(SIGKILL);
        (void)e->bwrap.signal(SIGKILL);
        if (Clock::now() > deadline)
            throw Error(RADIAL_E_TIMEOUT, "box '" + label + "' was still running 10 s after kill");
        std::this_thread::sleep_for(20ms);
    }
}

} // namespace radial::bubblewrap
