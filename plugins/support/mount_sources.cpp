#include "support/mount_sources.h"

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

} // namespace radial::plugin_support
