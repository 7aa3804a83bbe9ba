// plugins/docker/docker_plugin.cpp — the docker runtime's only export, radial_runtime_plugin_entry.
#include "docker_runtime.h"

RADIAL_EXPORT_RUNTIME(radial::docker::DockerRuntime)
