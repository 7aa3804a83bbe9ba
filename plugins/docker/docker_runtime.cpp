#include "docker_runtime.h"

#include <set>

#include "box_user.h"
#include "docker_run.h"

namespace radial::docker {

DockerRuntime::DockerRuntime(const radial::plugin::Host& host, radial::plugin::Config& config)
    : host_(host), cli_(parse_docker_settings(config)) {}

void DockerRuntime::preflight() {
    std::string version = cli_.server_version();
    host_.debug("docker engine " + cli_.engine_name() + " answers, version " + version);
}

std::vector<std::string> DockerRuntime::capabilities() {
    return {RADIAL_CAP_UNIX_SOCKET_MOUNTS, RADIAL_CAP_NAMED_NETWORKS, RADIAL_CAP_HOST_UID_MOUNTS};
}

std::vector<radial::plugin::Disposition> DockerRuntime::describe(const ContainerSpec& spec) {
    std::vector<radial::plugin::Disposition> out;
    for (std::uint32_t field : carried_fields(spec)) {
        if (field == RADIAL_FIELD_USER && is_root_user(spec.user))
            out.push_back({field, RADIAL_DISP_REFUSED,
                           "'" + spec.user +
                               "' is root, and the docker runtime never runs a box as root; give "
                               "a non-root uid[:gid]"});
        else if (field == RADIAL_FIELD_HOST_PORTS)
            out.push_back({field, RADIAL_DISP_HONOURED,
                           "nothing to open under docker: whether the box reaches host ports "
                           "follows its network"});
        else
            out.push_back({field, RADIAL_DISP_HONOURED, {}});
    }
    return out;
}

radial::plugin::RunResult DockerRuntime::run(const ContainerSpec& spec,
                                             radial::plugin::Output& out) {
    RunRegistry::Registration registration = runs_.enter(spec.label);
    return run_box(cli_, host_, spec, out, registration.run());
}

std::vector<std::string> DockerRuntime::list_by_label(std::string_view prefix) {
    std::set<std::string> labels;
    for (auto& box : cli_.list())
        if (std::string_view(box.label).starts_with(prefix)) labels.insert(std::move(box.label));
    return {labels.begin(), labels.end()};
}

void DockerRuntime::kill(std::string_view label) {
    std::shared_ptr<ActiveRun> active = runs_.request_kill(label);
    cli_.remove(cli_.ids_with_label(label), label);
    if (active != nullptr && !active->on_run_thread()) {
        const auto& s = cli_.settings();
        std::chrono::milliseconds budget(s.kill_grace_ms + 2 * s.command_timeout_ms);
        if (!active->wait_finished(budget))
            host_.warn("killing box '" + std::string(label) + "': its run did not finish within " +
                       std::to_string(budget.count()) + " ms; it goes on removing the box");
    }
}

} // namespace radial::docker
