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
