// tests/host/daemon/fake_daemon_setup.h — a daemon setup running the fake runtime (no engine),
// and the turn files its tests submit. Needs RADIAL_FAKE_PLUGIN_ROOT (tests/fakes).
#pragma once

#include <filesystem>
#include <string>

#include "daemon_harness.h"

namespace radial::test {

// A setup running the fake runtime; `run_keys` are added to [run].
struct FakeSetup : DaemonSetup {
    explicit FakeSetup(const std::string& run_keys = "", const std::string& tables = "")
        : DaemonSetup(plugin_keys() + run_keys, tables) {}
    // The fake plugin alone in a plugin directory, and run.pluginDir pointing at it.
    static std::string plugin_keys() {
        std::filesystem::copy_file(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_good/fake.so",
                                   plugin_dir() + "/fake.so",
                                   std::filesystem::copy_options::overwrite_existing);
        return "containerRuntime = \"fake\"\npluginDir = \"" + plugin_dir() + "\"\n";
    }
    // This test program's plugin directory.
    static std::string plugin_dir() {
        static TempDir plugins("radial-fake");
        return plugins.path();
    }
};

// A turn file of the fake image and `argv_toml` (a TOML array), with `extra` lines after.
inline std::string turn_file(const std::string& argv_toml, const std::string& extra = "") {
    return "image = \"img\"\nargv = " + argv_toml + "\n" + extra;
}

} // namespace radial::test
