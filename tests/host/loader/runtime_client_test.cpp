// The host side of the ABI against real plugin .so files: create with config, exceptions turned
// into statuses at the boundary, dispositions with the fail-safe rule, output streaming.
#include "loader/plugin_loader.h"

#include <radial/host/runtime_client.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace radial::host {
namespace {
using ::testing::HasSubstr;

loader::LoadedPlugin load(const std::string& target, const std::string& file) {
    return loader::load_plugin(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/" + target + "/" + file + ".so");
}

RuntimeClient make(const loader::LoadedPlugin& p, ConfigSection cfg = {},
                   std::vector<std::string>* logs = nullptr) {
    if (cfg.section.empty()) cfg.section = "run." + p.info.id;
    return RuntimeClient::create(p.library, p.descriptor, cfg, p.path, "radiald test",
                                 [logs](std::uint32_t, std::string_view m) {
                                     if (logs) logs->emplace_back(m);
                                 });
}

ConfigEntry strings(const std::string& key, std::vector<std::string> items) {
    ConfigEntry e;
    e.key = key;
    e.kind = RADIAL_CONFIG_STRING_ARRAY;
    e.items = std::move(items);
    return e;
}

ContainerSpec spec(std::vector<std::string> argv) {
    ContainerSpec s;
    s.label = "radial-turn-test-1";
    s.image = "img";
    s.argv = std::move(argv);
    return s;
}

TEST(RuntimeClient, RunsAndStreamsOutputThroughARealPlugin) {
    auto p = load("fake_good", "fake");
    std::vector<std::string> logs;
    auto c = make(p, {}, &logs);
    std::string out;
    auto r = c.run(spec({"echo", "hello", "world"}), [&](std::uint32_t stream, std::string_view b) {
        EXPECT_EQ(stream, static_cast<std::uint32_t>(RADIAL_STREAM_STDOUT));
        out += b;
        return true;
    });
    EXPECT_EQ(out, "hello world\n");
    EXPECT_EQ(r.flags, static_cast<std::uint32_t>(RADIAL_RUN_EXITED));
    EXPECT_EQ(r.exit_code, 0);
    ASSERT_EQ(logs.size(), 1u);
    EXPECT_EQ(logs[0], "fake run of 'radial-turn-test-1'");
}

TEST(RuntimeClient, UnknownConfigKeyIsInvalidNamingTheKey) {
    auto p = load("fake_good", "fake");
    ConfigSection cfg{"run.fake", {}};
    ConfigEntry e;
    e.key = "bogus";
    e.kind = RADIAL_CONFIG_STRING;
    e.string_value = "x";
    cfg.entries.push_back(e);
    try {
        make(p, cfg);
        FAIL() << "expected RuntimeError";
    } catch (const RuntimeError& err) {
        EXPECT_EQ(err.code(), RADIAL_E_INVALID);
        EXPECT_EQ(err.key(), "bogus");
        EXPECT_EQ(std::string(err.what()), "unknown key 'bogus' in [run.fake]");
    }
}

TEST(RuntimeClient, WrongTypedConfigKeyIsInvalid) {
    auto p = load("fake_good", "fake");
    ConfigSection cfg{"run.fake", {}};
    ConfigEntry e;
    e.key = "caps";
    e.kind = RADIAL_CONFIG_INT;
    e.int_value = 3;
    cfg.entries.push_back(e);
    try {
        make(p, cfg);
        FAIL() << "expected RuntimeError";
    } catch (const RuntimeError& err) {
        EXPECT_EQ(err.code(), RADIAL_E_INVALID);
        EXPECT_EQ(err.key(), "caps");
        EXPECT_EQ(std::string(err.what()), "caps must be an array of strings");
    }
}

TEST(RuntimeClient, CreateFailureCarriesThePluginsMessage) {
    auto p = load("fake_throwing", "throwing");
    ConfigSection cfg{"run.throwing", {}};
    ConfigEntry e;
    e.key = "createFails";
    e.kind = RADIAL_CONFIG_STRING;
    e.string_value = "backend library missing";
    cfg.entries.push_back(e);
    try {
        make(p, cfg);
        FAIL() << "expected RuntimeError";
    } catch (const RuntimeError& err) {
        EXPECT_EQ(err.code(), RADIAL_E_UNAVAILABLE);
        EXPECT_EQ(std::string(err.what()), "backend library missing");
    }
}

TEST(RuntimeClient, EveryThrowingMethodBecomesAStatusAndMessage) {
    auto p = load("fake_throwing", "throwing");
    auto c = make(p);
    auto expect_error = [](auto&& call, std::int32_t code, const std::string& message) {
        try {
            call();
            ADD_FAILURE() << "expected RuntimeError: " << message;
        } catch (const RuntimeError& e) {
            EXPECT_EQ(e.code(), code);
            EXPECT_EQ(std::string(e.what()), message);
        }
    };
    expect_error([&] { c.preflight(); }, RADIAL_E_INTERNAL, "internal error: preflight exploded");
    expect_error([&] { c.capabilities(); }, RADIAL_E_INTERNAL, "internal error: unknown exception");
    expect_error([&] { c.run(spec({"x"}), [](std::uint32_t, std::string_view) { return true; }); },
                 RADIAL_E_INTERNAL, "internal error: run exploded");
    expect_error([&] { c.list_by_label("radial-"); }, RADIAL_E_UNAVAILABLE, "engine gone");
    expect_error([&] { c.kill("x"); }, RADIAL_E_INTERNAL, "internal error: unknown exception");
}

TEST(RuntimeClient, RefusedFieldFailsRunBeforeAnythingStarts) {
    auto p = load("fake_good", "fake");
    auto c = make(p, ConfigSection{"run.fake", {strings("refuse", {"network"})}});
    auto s = spec({"echo", "never"});
    s.network = "bridge";
    auto d = c.describe(s);
    bool saw = false;
    for (const auto& x : d)
        if (x.field == RADIAL_FIELD_NETWORK) {
            saw = true;
            EXPECT_EQ(x.disposition, static_cast<std::uint32_t>(RADIAL_DISP_REFUSED));
        }
    EXPECT_TRUE(saw);
    bool called = false;
    try {
        c.run(s, [&](std::uint32_t, std::string_view) { return called = true; });
        FAIL() << "expected RuntimeError";
    } catch (const RuntimeError& e) {
        EXPECT_EQ(e.code(), RADIAL_E_REFUSED);
        EXPECT_EQ(e.key(), "network");
        EXPECT_THAT(e.what(), HasSubstr("network refused: refused by test config"));
    }
    EXPECT_FALSE(called);
}

TEST(RuntimeClient, DescribeReportsOneDispositionPerCarriedField) {
    auto p = load("fake_good", "fake");
    auto c = make(p, ConfigSection{"run.fake", {strings("supersede", {"pidsLimit"})}});
    auto s = spec({"echo"});
    s.pids_limit = 64;
    auto d = c.describe(s);
    ASSERT_EQ(d.size(), carried_fields(s).size());
    for (const auto& x : d)
        EXPECT_EQ(x.disposition, static_cast<std::uint32_t>(x.field == RADIAL_FIELD_PIDS_LIMIT
                                                                ? RADIAL_DISP_SUPERSEDED
                                                                : RADIAL_DISP_HONOURED))
            << field_name(x.field);
}

TEST(RuntimeClient, CapabilitiesComeFromThePlugin) {
    auto p = load("fake_good", "fake");
    auto c = make(p, ConfigSection{"run.fake", {strings("caps", {RADIAL_CAP_UNIX_SOCKET_MOUNTS})}});
    EXPECT_TRUE(c.has_capability(RADIAL_CAP_UNIX_SOCKET_MOUNTS));
    EXPECT_FALSE(c.has_capability(RADIAL_CAP_NAMED_NETWORKS));
}

TEST(RuntimeClient, KillFromAnotherThreadEndsARunPromptly) {
    auto p = load("fake_good", "fake");
    auto c = make(p);
    auto s = spec({"sleep", "60000"});
    std::thread killer([&] {
        for (int i = 0; i < 200 && c.list_by_label("radial-turn-test-").empty(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        c.kill(s.label);
    });
    auto t0 = std::chrono::steady_clock::now();
    auto r = c.run(s, [](std::uint32_t, std::string_view) { return true; });
    killer.join();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
    EXPECT_TRUE(r.flags & RADIAL_RUN_KILLED);
    EXPECT_TRUE(c.list_by_label("radial-turn-test-").empty());
}

} // namespace
} // namespace radial::host
