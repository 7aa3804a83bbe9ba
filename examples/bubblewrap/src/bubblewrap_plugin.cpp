// examples/bubblewrap/src/bubblewrap_plugin.cpp — the plugin's one export (docs/design.md §5.11).
#include "bubblewrap_runtime.h"

RADIAL_EXPORT_RUNTIME(radial::bubblewrap::BubblewrapRuntime)
