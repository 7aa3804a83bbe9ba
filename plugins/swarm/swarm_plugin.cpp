// plugins/swarm/swarm_plugin.cpp — the swarm runtime's only export, radial_runtime_plugin_entry.
#include "swarm_runtime.h"

RADIAL_EXPORT_RUNTIME(radial::swarm::SwarmRuntime)
