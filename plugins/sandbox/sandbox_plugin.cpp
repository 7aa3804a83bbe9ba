// plugins/sandbox/sandbox_plugin.cpp — the sandbox runtime's only export,
// radial_runtime_plugin_entry.
#include "sandbox_runtime.h"

RADIAL_EXPORT_RUNTIME(radial::sandbox::SandboxRuntime)
