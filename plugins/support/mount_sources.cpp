#include "support/mount_sources.h"

#include <radial/internal/path_compare.h>

#include <filesystem>
#include <radial/plugin/runtime.hpp>
#include <string>

#include "support/spec_key.h"

namespace radial::plugin_support {

void check_mount_sources(const ContainerSpec& spec) {
    for (std::size_t i = 0; i < spec.mounts.size(); ++i) {
        std::error_code ec;
        if (!std::filesystem::exists(spec.mounts[i].source, ec))
            throw radial::plugin::Error(RADIAL_E_NOT_FOUND, spec_key("mounts", i),
                                        "preparing box '" + spec.label + "': mount source '" +
                                            spec.mounts[i].source +
                                            "' does not exist; create it before the run");
    }
}

void refuse_engine_control_paths(const ContainerSpec& spec,
                                 const std::vector<EngineControlPath>& paths) {
    for (const auto& p : paths) {
        if (p.path.empty() || p.path.front() != '/') continue;
        const std::string protected_path = internal::comparable_path(p.path);
        for (std::size_t i = 0; i < spec.mounts.size(); ++i) {
            const std::string source = internal::comparable_path(spec.mounts[i].source);
            const bool below = internal::at_or_under(source, protected_path);
            if (!below && !internal::at_or_under(protected_path, source)) continue;
            throw radial::plugin::Error(
                RADIAL_E_REFUSED, spec_key("mounts", i),
                "preparing box '" + spec.label + "': mount source '" + spec.mounts[i].source + "'" +
                    (source == spec.mounts[i].source ? ""
                                                     : " (which resolves to '" + source + "')") +
                    (source == protected_path ? " is"
                     : below                  ? " lies below"
                                              : " holds") +
                    " " + p.what + " '" + protected_path +
                    "', which would give the box the engine and with it every other box; mount "
                    "another directory");
        }
    }
}

std::vector<EngineControlPath> engine_control_paths(const std::string& engine,
                                                    const std::string& socket_path,
                                                    const std::string& client_config,
                                                    const std::string& cert_path) {
    std::vector<EngineControlPath> out;
    if (!socket_path.empty()) out.push_back({socket_path, "the socket of the engine " + engine});
    if (!client_config.empty())
        out.push_back({client_config,
                       "the docker client's configuration directory ($DOCKER_CONFIG, else "
                       "~/.docker: its credentials, contexts and TLS keys)"});
    if (!cert_path.empty()) out.push_back({cert_path, "the engine's TLS keys ($DOCKER_CERT_PATH)"});
    return out;
}

void refuse_engine_data_root(const ContainerSpec& spec, std::string_view data_root,
                             std::string_view engine) {
    if (data_root.empty() || data_root.front() != '/') return;
    const std::string root = internal::comparable_path(data_root);
    for (std::size_t i = 0; i < spec.mounts.size(); ++i) {
        const std::string source = internal::comparable_path(spec.mounts[i].source);
        if (!internal::at_or_under(source, root) && !internal::at_or_under(root, source)) continue;
        throw radial::plugin::Error(
            RADIAL_E_REFUSED, spec_key("mounts", i),
            "preparing box '" + spec.label + "': mount source '" + spec.mounts[i].source + "'" +
                (source == spec.mounts[i].source ? "" : " (which resolves to '" + source + "')") +
                (source == root                        ? " is"
                 : internal::at_or_under(source, root) ? " lies below"
                                                       : " holds") +
                " the data root '" + root + "' of the engine " + std::string(engine) +
                ", which holds every container's files; mount another directory");
    }
}

} // namespace radial::plugin_support
