// tests/host/turn/hostile_plugin_fixture.h — TurnSession and the runtime clients with the hostile
// test plugin (tests/fakes/plugins/hostile_calls.cpp), a real .so through the real loader, in
// radiald's process or in a radial-plugin-host process (docs/design.md §5.13), on an injected
// clock. Needs RADIAL_FAKE_PLUGIN_ROOT and RADIAL_PLUGIN_HOST_PATH.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <mutex>
#include <radial/host/run_call.hpp>
#include <radial/host/session_client.hpp>
#include <string>
#include <vector>

#include "../../support/host_processes.h"
#include "../../support/temp_dir.h"
#include "isolation/isolated_runtime.h"
#include "journal/journal_sqlite.h"
#include "loader/plugin_loader.h"
#include "log/logger.h"
#include "time/clock.h"
#include "turn/turn_session.h"

namespace radial::turn::test_hostile {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

enum class Isolation { in_process, process };

inline std::string name_of(const ::testing::TestParamInfo<Isolation>& p) {
    return p.param == Isolation::in_process ? "InProcess" : "InAPluginHostProcess";
}

// The workspace's owner, not root: a hand-over gives it to the box's uid for the turn.
inline constexpr uid_t kOwner = 4242;

// Lets the plugin's deaf runs return when it goes: a test that stops early must not leave its
// future waiting for one for ever.
struct ReleasedAtTheEnd {
    std::string path;
    ~ReleasedAtTheEnd() { std::ofstream(path) << "go\n"; }
};

struct HostilePluginFixture : ::testing::TestWithParam<Isolation> {
    test::TempDir dir{"radial-abandon"};
    loader::LoadedPlugin plugin =
        loader::load_plugin(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_hostile/hostile.so");
    std::shared_ptr<isolation::IsolatedPlugin> isolated;
    config::HostConfig cfg = [this] {
        config::HostConfig c;
        c.state_dir = dir / "state";
        c.instance_id = test::unique_instance_id("ab");
        c.min_free_bytes = 0;
        return c;
    }();
    std::unique_ptr<host::RuntimeClient> client;
    std::unique_ptr<journal::Journal> journal;
    time::ManualClock clock;
    std::mutex mutex;
    std::vector<std::string> lines;
    std::string release = dir / "release";

    void SetUp() override {
        fs::create_directories(cfg.state_dir);
        log::set_sink([this](std::string_view l) {
            std::lock_guard lock(mutex);
            lines.emplace_back(l);
        });
        journal = journal::open_sqlite_journal(cfg.state_dir + "/journal.sqlite3");
        std::shared_ptr<const void> keep = plugin.library;
        const radial_runtime_descriptor* d = plugin.descriptor;
        if (GetParam() == Isolation::process) {
            isolated = isolation::IsolatedPlugin::make(*plugin.descriptor, plugin.path,
                                                       RADIAL_PLUGIN_HOST_PATH, 30s);
            d = isolated->descriptor();
            keep = isolated;
        }
        client = std::make_unique<host::RuntimeClient>(
            host::RuntimeClient::create(keep, d, {"run.hostile", {}}, plugin.path, "t",
                                        [this](std::uint32_t, std::string_view l) {
                                            std::lock_guard lock(mutex);
                                            lines.emplace_back(l);
                                        }));
        client->set_call_deadline(30s);
    }
    void TearDown() override {
        if (HasFailure()) {
            std::lock_guard lock(mutex);
            for (const auto& l : lines) std::cerr << "log: " << l << "\n";
        }
        // Whatever the test left blocked in the plugin returns before the fixture goes.
        std::ofstream(release) << "go\n";
        EXPECT_TRUE(test::wait_until([] { return host::RunCall::abandoned() == 0; }, 20s));
        client.reset();
        log::set_sink({});
    }
    TurnEnvironment env() {
        TurnEnvironment e{cfg, *client, *journal, ResolvedTransport{}};
        e.host_timeout_grace = 1h;
        e.clock = &clock;
        return e;
    }
    std::string workspace(const std::string& name) {
        const std::string ws = dir / name;
        fs::create_directories(ws);
        EXPECT_EQ(::chown(ws.c_str(), kOwner, kOwner), 0);
        return ws;
    }
    static TurnRequest request(const std::string& id, std::vector<std::string> argv,
                               const std::string& ws = "") {
        TurnRequest r;
        r.turn_id = id;
        r.image = "img";
        r.argv = std::move(argv);
        r.timeout_ms = 1000;
        r.workspace = ws;
        return r;
    }
    // Runs a turn to its end on this thread, its output into `out`.
    TerminalRecord run(const std::string& id, std::vector<std::string> argv,
                       const std::string& ws = "", std::string* out = nullptr) {
        const TurnEnvironment e = env(); // the session refers to it
        TurnSession s(e, request(id, std::move(argv), ws));
        return s.run([this, out](std::uint32_t, std::string_view bytes) {
            std::lock_guard lock(mutex);
            if (out != nullptr) out->append(bytes);
        });
    }
    std::size_t logged(const std::string& fragment) {
        std::lock_guard lock(mutex);
        return static_cast<std::size_t>(std::count_if(
            lines.begin(), lines.end(),
            [&](const std::string& l) { return l.find(fragment) != std::string::npos; }));
    }
    // A session's box made through `sessions`, and the spec of an exec in it.
    ContainerSpec session(const host::SessionClient& sessions, const std::string& name) const {
        ContainerSpec spec;
        spec.label = "radial-session-" + cfg.instance_id + "-" + name;
        spec.image = "img";
        spec.argv = {"sleep"};
        sessions.create(spec, 0, 0);
        return spec;
    }
    static uid_t owner_of(const std::string& path) {
        struct stat st {};
        return ::stat(path.c_str(), &st) == 0 ? st.st_uid : 0;
    }
    // Moves the clock an hour (the grace) at each look, and gives the turn a moment to take it,
    // until `ran` is ready; false when it is not within 20 s (scaled).
    bool advance_until_ready(std::future<TerminalRecord>& ran) {
        return test::wait_until(
            [&] {
                clock.advance(1h);
                return ran.wait_for(200ms) == std::future_status::ready;
            },
            20s);
    }
};

} // namespace radial::turn::test_hostile
