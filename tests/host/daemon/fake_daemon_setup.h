// tests/host/daemon/fake_daemon_setup.h — a daemon setup running the fake runtime (no engine),
// and the turn files its tests submit. Needs RADIAL_FAKE_PLUGIN_ROOT (tests/fakes).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

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

// The most of the succeeded turns `ids` that were ever running at once, from their terminal
// records' start and end times (a turn that did not succeed is a test failure).
inline int peak_running(const FakeSetup& s, const std::vector<std::string>& ids) {
    std::vector<std::pair<std::string, int>> events;
    for (const auto& id : ids) {
        auto rec = s.terminal(id);
        EXPECT_EQ(rec["status"], "succeeded") << id;
        events.push_back({rec["startedAt"], +1});
        events.push_back({rec["endedAt"], -1});
    }
    std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second < b.second;
    });
    int running = 0, peak = 0;
    for (const auto& [at, delta] : events) peak = std::max(peak, running += delta);
    return peak;
}

} // namespace radial::test
