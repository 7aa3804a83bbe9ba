// examples/bubblewrap/src/bubblewrap_plugin.cpp — the plugin's one export (issue 7).
#include "bubblewrap_runtime.h"

RADIAL_EXPORT_RUNTIME(radial::bubblewrap::BubblewrapRuntime)
