#include "sandbox_runtime.h"

#include <algorithm>
#include <set>

#include "sandbox_run.h"
#include "sbx_names.h"

namespace radial::sandbox {

namespace {

constexpr const char* kSupersededWhy =
    "superseded by the microVM's hypervisor boundary: it exists to narrow a shared-kernel "
    "container";

std::string superseded_note(std::uint32_t field) {
    switch (field) {
        case RADIAL_FIELD_PIDS_LIMIT:
            return std::string("pidsLimit is ") + kSupersededWhy +
                   "; the sandbox has its own kernel";
        case RADIAL_FIELD_READ_ONLY_ROOTFS:
            return std::string("readOnlyRootfs is ") + kSupersededWhy +
                   "; the sandbox's disk is its own and is deleted with it";
        case RADIAL_FIELD_USER:
            return std::string("user is ") + kSupersededWhy +
                   "; the workload runs as the template's user inside its own VM";
        case RADIAL_FIELD_TMPFS:
            return std::string("tmpfs is ") + kSupersededWhy +
                   "; the sandbox's filesystem is private to it";
        case RADIAL_FIELD_EXTRA_HOSTS:
            return "extraHosts is superseded by the sandbox's own network path: its egress goes "
                   "through the host-side policy proxy, which resolves names itself";
    }
    return kSupersededWhy;
}

} // namespace

SandboxRuntime::SandboxRuntime(const radial::plugin::Host& host, radial::plugin::Config& config)
    : SandboxRuntime(host, parse_sandbox_settings(config), nullptr) {}

SandboxRuntime::SandboxRuntime(const radial::plugin::Host& host, SandboxSettings settings,
                               std::shared_ptr<SbxExecutor> executor)
    : host_(host),
      cli_(settings,
           executor ? std::move(executor) : std::make_shared<ProcessSbxExecutor>(settings.binary),
           host) {}

void SandboxRuntime::preflight() {
    std::string version = cli_.version();
    SbxFeatures f = cli_.features();
    std::vector<ListedSandbox> listed = cli_.list(cli_.probe_budget());
    host_.info("sbx '" + cli_.settings().binary + "' answers (" + version + "); " +
               std::to_string(listed.size()) + " sandbox(es) listed; --no-input " +
               (f.no_input ? "passed" : "not supported") + "; ls --json " +
               (f.ls_json ? "used" : "not supported, text listing parsed"));
}

// Egress destinations become sbx policy rules scoped to the sandbox (docs/design.md §9.7).
std::vector<std::string> SandboxRuntime::capabilities() { return {RADIAL_CAP_EGRESS_POLICY}; }

std::vector<radial::plugin::Disposition> SandboxRuntime::describe(const ContainerSpec& spec) {
    std::vector<radial::plugin::Disposition> out;
    for (std::uint32_t field : carried_fields(spec)) {
        switch (field) {
            case RADIAL_FIELD_LABEL: {
                std::string name = sandbox_name(spec.label);
                out.push_back({field, RADIAL_DISP_HONOURED,
                               name == spec.label ? std::string()
                                                  : "the sandbox is named '" + name +
                                                        "' (sbx names allow no '_'; '.' escapes)"});
                break;
            }
            case RADIAL_FIELD_IMAGE:
                out.push_back({field, RADIAL_DISP_HONOURED,
                               cli_.settings().template_image.empty() ||
                                       cli_.settings().template_image == spec.image
                                   ? std::string("the sandbox's --template")
                                   : "run.sandbox.template '" + cli_.settings().template_image +
                                         "' replaces it as the --template"});
                break;
            case RADIAL_FIELD_MOUNTS:
                out.push_back({field, RADIAL_DISP_BRIDGED,
                               "each source passes through at its own path as a workspace (':ro' "
                               "when read-only); the exec script symlinks each differing target "
                               "at it"});
                break;
            case RADIAL_FIELD_HOST_PORTS:
                out.push_back({field, RADIAL_DISP_HONOURED,
                               "one rule per port, scoped to the sandbox: 'sbx policy allow "
                               "network --sandbox NAME localhost:PORT'"});
                break;
            case RADIAL_FIELD_PIDS_LIMIT:
            case RADIAL_FIELD_READ_ONLY_ROOTFS:
            case RADIAL_FIELD_USER:
            case RADIAL_FIELD_TMPFS:
            case RADIAL_FIELD_EXTRA_HOSTS:
                out.push_back({field, RADIAL_DISP_SUPERSEDED, superseded_note(field)});
                break;
            case RADIAL_FIELD_ENV:
                if (std::any_of(spec.env.begin(), spec.env.end(),
                                [](const EnvVar& e) { return e.secret; }))
                    out.push_back({field, RADIAL_DISP_BRIDGED,
                                   "secret variables go to the exec over its stdin, never on "
                                   "sbx's command line; whether sbx keeps an exec's environment "
                                   "is sbx's (docs/design.md §6.3)"});
                else
                    out.push_back({field, RADIAL_DISP_HONOURED, {}});
                break;
            case RADIAL_FIELD_NETWORK:
                out.push_back({field, RADIAL_DISP_REFUSED,
                               "a sandbox has no docker network to join; unset run.network under "
                               "the sandbox runtime"});
                break;
            case RADIAL_FIELD_MEMORY:
                // The bound holds, but sbx cannot say that it ended a workload (docs/design.md
                // §13.2): honoured would promise OOM_KILLED.
                out.push_back({field, RADIAL_DISP_BRIDGED,
                               "--memory, the VM's memory size: the guest kernel ends a workload "
                               "that exceeds it, which sbx reports as its exit (137), not as "
                               "OOM_KILLED"});
                break;
            case RADIAL_FIELD_CPUS:
                // A fraction rounded up is a bound, not the one asked for: bridged, and the
                // conformance probe (confine-cpus) holds it to exactly that.
                if (spec.cpus_milli % 1000 == 0)
                    out.push_back({field, RADIAL_DISP_HONOURED, "--cpus"});
                else
                    out.push_back({field, RADIAL_DISP_BRIDGED,
                                   "--cpus " + std::to_string((spec.cpus_milli + 999) / 1000) +
                                       ": sbx takes whole CPUs, so it is rounded up"});
                break;
            default: out.push_back({field, RADIAL_DISP_HONOURED, {}}); break;
        }
    }
    return out;
}

plugin_support::RunRegistry::Registration SandboxRuntime::enter(std::string_view label) {
    std::lock_guard lock(kill_mutex_);
    plugin_support::RunRegistry::Registration registration = runs_.enter(std::string(label));
    if (early_kills_.take(label, plugin_support::EarlyKills::Clock::now())) {
        host_.info("box '" + std::string(label) + "' was killed before its run began");
        registration.run().request_kill(); // the run then starts nothing
    }
    return registration;
}

radial::plugin::RunResult SandboxRuntime::run(const ContainerSpec& spec,
                                              radial::plugin::Output& out) {
    plugin_support::RunRegistry::Registration registration = enter(spec.label);
    return run_sandbox(cli_, host_, spec, out, registration.run());
}

void SandboxRuntime::create_session(const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                                    std::uint64_t max_lifetime_ms) {
    plugin_support::RunRegistry::Registration registration = enter(spec.label);
    create_sandbox_session(cli_, host_, spec, idle_timeout_ms, max_lifetime_ms, registration.run());
}

radial::plugin::RunResult SandboxRuntime::exec(const ContainerSpec& exec,
                                               radial::plugin::Output& out) {
    plugin_support::RunRegistry::Registration registration = enter(exec.label);
    return exec_in_sandbox_session(cli_, host_, exec, out, registration.run());
}

std::vector<std::string> SandboxRuntime::list_by_label(std::string_view prefix) {
    std::set<std::string> labels;
    for (const auto& s : cli_.list(cli_.command_budget()))
        if (auto label = label_of_sandbox(s.name); label && label->starts_with(prefix))
            labels.insert(std::move(*label));
    return {labels.begin(), labels.end()};
}

void SandboxRuntime::kill(std::string_view label) {
    std::shared_ptr<plugin_support::ActiveRun> active;
    {
        // With enter()'s check, one step: a kill lands either in the registry or in early_kills_
        // (the ABI: a run that has not created its box yet never does).
        std::lock_guard lock(kill_mutex_);
        active = runs_.request_kill(label);
        if (active == nullptr)
            early_kills_.remember(label, plugin_support::EarlyKills::Clock::now());
    }
    // A kill that finds a sandbox but no run cleans up (reconciliation, `session rm`), not
    // overtaking a run to come: a run of that label, should one follow, may start.
    if (active == nullptr) {
        try {
            const std::string name = sandbox_name(label);
            const auto listed = cli_.list(cli_.command_budget());
            if (std::any_of(listed.begin(), listed.end(),
                            [&](const ListedSandbox& s) { return s.name == name; }))
                early_kills_.forget(label);
        } catch (const radial::plugin::Error&) {
            // not known: the kill stays remembered, as for a run to come
        }
    }
    cli_.remove(sandbox_name(label), label);
    if (active != nullptr && !active->on_run_thread()) {
        const auto& s = cli_.settings();
        std::chrono::milliseconds budget(s.kill_grace_ms + s.removal_timeout_ms +
                                         2 * s.command_timeout_ms);
        if (!active->wait_finished(budget))
            host_.warn("killing box '" + std::string(label) + "': its run did not finish within " +
                       std::to_string(budget.count()) + " ms; it goes on removing the sandbox");
    }
}

void SandboxRuntime::load_template(const std::string& archive, std::chrono::milliseconds budget) {
    if (budget.count() == 0) budget = std::chrono::minutes(30);
    const std::string what = "loading template archive '" + archive + "' with 'sbx template load'";
    const CliOutput r = cli_.call({"template", "load", archive}, budget);
    if (r.timed_out)
        throw radial::plugin::Error(
            RADIAL_E_TIMEOUT, what + ": sbx '" + cli_.settings().binary +
                                  "' did not finish within " + std::to_string(budget.count()) +
                                  " ms and was stopped; give the export a longer budget "
                                  "(radiald template export --timeout)");
    if (!r.ok())
        throw cli_.failure(r, what, budget, RADIAL_E_UNAVAILABLE,
                           "check that the archive is a 'docker image save' tar and that sbx "
                           "can load templates ('sbx template load --help')");
}

radial::plugin::TcpRoute SandboxRuntime::tcp_route() {
    return {"127.0.0.1", "host.docker.internal"};
}

} // namespace radial::sandbox
