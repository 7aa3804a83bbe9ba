// tests/support/fake_runtime_setup.h — where a test of the real radiald binary that needs no
// engine starts: a private directory holding the fake runtime plugin (fake_good) and a config that
// selects it, with a state directory of its own (never /var/lib/radial). Needs
// RADIAL_FAKE_PLUGIN_ROOT, as the targets that depend on the fake plugins define it.
#pragma once

#include <filesystem>
#include <string>

#include "temp_dir.h"

namespace radial::test {

struct FakeRuntimeSetup {
    TempDir dir;
    std::string config; // dir/radiald.toml

    // `prefix` names the directory (short: socket paths live below it); `extra_run` is TOML added
    // to the [run] table.
    explicit FakeRuntimeSetup(const std::string& prefix, const std::string& extra_run = "")
        : dir(prefix) {
        std::filesystem::create_directory(dir / "plugins");
        std::filesystem::copy_file(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_good/fake.so",
                                   dir / "plugins/fake.so");
        config = dir.write("radiald.toml", "[run]\npluginDir = \"" + (dir / "plugins") +
                                               "\"\ncontainerRuntime = \"fake\"\nstateDir = \"" +
                                               (dir / "state") + "\"\n" + extra_run);
    }
};

} // namespace radial::test
