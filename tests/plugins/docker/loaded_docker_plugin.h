// tests/plugins/docker/loaded_docker_plugin.h — the real docker.so, loaded with dlopen and driven
// through its C descriptor exactly as radiald drives it (tests/plugins/support/loaded_plugin.h).
#pragma once

#include "../support/loaded_plugin.h"

namespace radial::test {

inline constexpr const char* kDockerPluginPath = RADIAL_BINARY_DIR "/lib/radial/runtimes/docker.so";

inline const radial_runtime_descriptor& docker_descriptor() {
    return plugin_descriptor(kDockerPluginPath);
}

// One instance of docker.so (create ... destroy), with the host's log captured.
class DockerInstance : public PluginInstance {
public:
    explicit DockerInstance(ConfigBuilder& config) : PluginInstance(kDockerPluginPath, config) {}
};

} // namespace radial::test
