#include "docker_settings.h"

#include <radial/internal/names.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

#include "box_user.h"
#include "docker_argv.h"
#include "oci_runtime_profile.h"
#include "support/box_init.h"
#include "support/settings_error.h"

namespace radial::docker {

namespace {

using plugin_support::refuse_setting;
using plugin_support::refuse_untrusted_program;
using radial::plugin::Error;

} // namespace

unsigned online_cpu_count() noexcept {
    long n = ::sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? static_cast<unsigned>(n) : 0u;
}

DockerSettings parse_docker_settings(radial::plugin::Config& config) {
    return parse_docker_settings(config, online_cpu_count());
}

DockerSettings parse_docker_settings(radial::plugin::Config& config, unsigned online_cpus) {
    DockerSettings s;
    s.host_cpus_milli = static_cast<std::uint64_t>(online_cpus) * 1000;
    if (s.host_cpus_milli != 0) s.cpus_milli = std::min(s.cpus_milli, s.host_cpus_milli);
    if (auto v = config.string("binary")) {
        if (v->empty() || v->find('\0') != std::string::npos)
            refuse_setting(config, "binary",
                           "the value is empty; give the docker CLI's name or path");
        refuse_untrusted_program(config, "binary", *v, "replace the docker CLI");
        s.binary = *v;
    }
    if (auto v = config.string("host")) {
        if (v->find("://") == std::string::npos || v->front() == '-' ||
            radial::internal::has_space_or_control(*v))
            refuse_setting(config, "host",
                           "'" + *v +
                               "' is not an engine address; give one such as "
                               "unix:///var/run/docker.sock or tcp://127.0.0.1:2375");
        s.host = *v;
    }
    if (auto v = config.size_bytes("memory")) {
        if (*v < (6ull << 20))
            refuse_setting(config, "memory",
                           std::to_string(*v) +
                               " bytes is below docker's minimum of 6 MiB; give e.g. "
                               "\"2g\"");
        s.memory_bytes = *v;
    }
    if (auto v = config.cpus_milli("cpus")) {
        if (*v < 10)
            refuse_setting(config, "cpus", "docker's smallest CPU cap is 0.01; give e.g. 2 or 0.5");
        if (s.host_cpus_milli != 0 && *v > s.host_cpus_milli)
            refuse_setting(config, "cpus",
                           format_cpus(*v) + " CPUs is more than this host's " +
                               std::to_string(online_cpus) +
                               " online CPUs, and docker refuses --cpus above that; give at most " +
                               std::to_string(online_cpus));
        s.cpus_milli = *v;
    }
    if (auto v = config.integer("pidsLimit")) {
        if (*v <= 0)
            refuse_setting(
                config, "pidsLimit",
                std::to_string(*v) + " is not a cap; give a positive number such as 256");
        s.pids_limit = *v;
    }
    if (auto v = config.string("user")) {
        if (auto problem = user_problem(*v)) refuse_setting(config, "user", *problem);
        s.user = *v;
    }
    if (auto v = config.size_bytes("tmpfsSize")) s.tmpfs_size_bytes = *v;
    if (auto v = config.string("pull")) {
        if (*v != "missing" && *v != "never" && *v != "always")
            refuse_setting(
                config, "pull",
                "'" + *v + "' is not a pull policy; give \"missing\", \"never\" or \"always\"");
        s.pull = *v;
    }
    if (auto v = config.duration_ms("killGrace")) s.kill_grace_ms = *v;
    if (auto v = config.duration_ms("preflightTimeout")) s.preflight_timeout_ms = *v;
    if (auto v = config.duration_ms("commandTimeout")) s.command_timeout_ms = *v;
    if (auto v = config.duration_ms("startTimeout")) {
        if (*v == 0)
            refuse_setting(config, "startTimeout",
                           "0 gives the engine no time to start a box; give e.g. \"60s\"");
        s.start_timeout_ms = *v;
    }
    if (auto v = config.size_bytes("writableLayerSize")) {
        if (*v < (1ull << 20))
            refuse_setting(
                config, "writableLayerSize",
                std::to_string(*v) + " bytes leaves a box no room to write; give e.g. \"10g\"");
        s.writable_layer_bytes = *v;
    }
    if (auto v = plugin_support::box_init_setting(config)) s.init_path = *v;
    if (auto v = config.string("ociRuntime")) {
        if (!radial::plugin::valid_label(*v))
            refuse_setting(
                config, "ociRuntime",
                "'" + *v +
                    "' is not a runtime name ([A-Za-z0-9][A-Za-z0-9_.-]{0,127}); give the "
                    "name the engine's daemon.json registers, such as \"runsc\"");
        s.oci_runtime = *v;
    }
    // Under some runtimes the box's own sandbox counts against the cap (docs/design.md §13.9):
    // a smaller cap would keep every box from starting.
    if (const auto& profile = oci_runtime_profile(s.oci_runtime);
        config.integer("pidsLimit") && s.pids_limit < profile.min_pids_limit)
        refuse_setting(
            config, "pidsLimit",
            std::to_string(s.pids_limit) + " is below " + std::to_string(profile.min_pids_limit) +
                ", the least a box starts with under run.docker.ociRuntime '" + s.oci_runtime +
                "' (its own host threads count against the cap); give at least " +
                std::to_string(profile.min_pids_limit));
    return s;
}

std::optional<std::string> oci_runtime_alias_refusal(const DockerSettings& settings,
                                                     std::string_view engine_path,
                                                     std::string_view engine) {
    if (settings.oci_runtime.empty()) return std::nullopt;
    const OciRuntimeProfile* known = oci_runtime_profile_by_binary(engine_path);
    if (known == nullptr || settings.oci_runtime == known->name) return std::nullopt;
    return "run.docker.ociRuntime = \"" + settings.oci_runtime + "\": the engine (" +
           std::string(engine) + ") runs it as '" + std::string(engine_path) + "', which is " +
           known->binary +
           ", whose resource bounds the docker runtime knows only under the name '" + known->name +
           "'; register it in the engine's /etc/docker/daemon.json as \"" + known->name +
           "\" (for gVisor: sudo scripts/setup.sh --with-gvisor) and set ociRuntime = \"" +
           known->name + "\"";
}

std::optional<std::string> turn_socket_refusal(const DockerSettings& settings,
                                               std::string_view engine_path,
                                               const std::vector<std::string>& engine_args,
                                               std::string_view engine) {
    if (settings.oci_runtime.empty()) return std::nullopt;
    const OciRuntimeProfile* known = oci_runtime_profile_by_binary(engine_path);
    if (known == nullptr || std::string_view(known->binary) != "runsc") return std::nullopt;
    for (const auto& a : engine_args) {
        std::string_view flag = a;
        if (flag.starts_with("--")) flag.remove_prefix(1);
        if (flag == "-host-uds=open" || flag == "-host-uds=all") return std::nullopt;
    }
    return "run.docker.ociRuntime = \"" + settings.oci_runtime + "\": the engine (" +
           std::string(engine) +
           ") starts runsc without --host-uds=open, so no box can connect "
           "to its turn socket (a unix socket on the host) and every turn would end without its "
           "records; add \"--host-uds=open\" to that runtime's runtimeArgs in "
           "/etc/docker/daemon.json and send dockerd SIGHUP (sudo scripts/setup.sh "
           "--with-gvisor does both)";
}

std::optional<std::string> writable_layer_refusal(const DockerSettings& settings,
                                                  std::string_view driver,
                                                  std::string_view backing_filesystem,
                                                  std::string_view engine) {
    if (settings.writable_layer_bytes == 0) return std::nullopt;
    // The engine's own rule for overlay2 (its create refuses "--storage-opt is supported only for
    // overlay over xfs with 'pquota' mount option"); other drivers are left to the create.
    if (driver != "overlay2" || backing_filesystem == "xfs") return std::nullopt;
    return "run.docker.writableLayerSize: the engine (" + std::string(engine) +
           ") cannot bound a box's writable layer: its storage driver is overlay2 on " +
           (backing_filesystem.empty() ? std::string("an unknown filesystem")
                                       : "'" + std::string(backing_filesystem) + "'") +
           ", and overlay2 bounds a layer only on xfs mounted with pquota; put the engine's "
           "data-root on such an xfs, or remove the key (the writable layer is then unbounded)";
}

std::optional<std::string> oci_runtime_refusal(const DockerSettings& settings,
                                               const std::vector<std::string>& engine_runtimes,
                                               std::string_view engine) {
    if (settings.oci_runtime.empty() || std::find(engine_runtimes.begin(), engine_runtimes.end(),
                                                  settings.oci_runtime) != engine_runtimes.end())
        return std::nullopt;
    std::string listed;
    for (const auto& name : engine_runtimes) listed += (listed.empty() ? "" : ", ") + name;
    return "run.docker.ociRuntime = \"" + settings.oci_runtime + "\": the engine (" +
           std::string(engine) + ") has no runtime of that name (it lists: " +
           (listed.empty() ? std::string("none") : listed) +
           "); register it in the engine's /etc/docker/daemon.json \"runtimes\" and send dockerd "
           "SIGHUP (for gVisor: sudo scripts/setup.sh --with-gvisor), or remove the key to use "
           "the engine's default runtime";
}

} // namespace radial::docker
