// plugin-api/conformance/plugin_library.h — the plugin under test, loaded the way radiald loads it:
// dlopen(RTLD_NOW | RTLD_LOCAL), one symbol looked up, never unloaded (docs/design.md §5.11).
#pragma once

#include <radial/runtime_plugin.h>

#include <memory>
#include <string>

namespace radial::conformance {

// A loaded plugin library. Loading never throws: `problem` says what went wrong (empty when the
// library loaded, exported the entry and the entry returned a descriptor). The handle is never
// closed — radiald never unloads a plugin either (a plugin thread may still run its code).
struct PluginLibrary {
    std::string path;                               // absolute path, as passed to the plugin
    std::shared_ptr<void> handle;                   // the dlopen handle (never dlclose'd)
    radial_runtime_plugin_entry_fn entry = nullptr; // radial_runtime_plugin_entry
    const radial_runtime_descriptor* descriptor = nullptr;
    bool entry_stable = true; // the entry returned one pointer twice
    std::string problem;      // why the plugin cannot be used at all

    // Loads `path`. Blocking: dlopen runs the library's constructors, and the entry is called
    // twice; the caller runs this under a budget (pending_call.h).
    static PluginLibrary load(const std::string& path);
};

} // namespace radial::conformance
