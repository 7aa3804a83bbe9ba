// The host side of the ABI against real plugin .so files: create with config, exceptions turned
// into statuses at the boundary, dispositions with the fail-safe rule, output streaming.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <radial/host/runtime_client.hpp>
#include <radial/host/session_client.hpp>
#include <radial/host/template_client.hpp>
#include <set>
#include <thread>
#include <tuple>

#include "../../support/host_processes.h"
#include "../../support/temp_dir.h"
#include "loader/plugin_loader.h"

namespace radial::host {
namespace {
using ::testing::HasSubstr;

loader::LoadedPlugin load(const std::string& target, const std::string& file) {
    return loader::load_plugin(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/" + target + "/" + file +
                               ".so");
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
    EXPECT_EQ(std::count(logs.begin(), logs.end(), "fake run of 'radial-turn-test-1'"), 1);
}

// "Is this box gone" is asked of the exact label: list_by_label matches a prefix, and the listing
// of job1 holds a live job10. Taken for job1's box, it kept job1's ids leased and skipped its
// Codex write-back after a failed turn.
TEST(RuntimeClient, ABoxIsListedByItsExactLabelNotByAPrefixOfAnother) {
    auto p = load("fake_good", "fake");
    auto c = make(p);
    ContainerSpec longer = spec({"sleep", "60000"});
    longer.label = "radial-turn-test-job10";
    std::thread running(
        [&] { c.run(longer, [](std::uint32_t, std::string_view) { return true; }); });
    EXPECT_TRUE(test::wait_until([&] { return c.lists_box("radial-turn-test-job10"); },
                                 std::chrono::seconds(30)));
    EXPECT_FALSE(c.list_by_label("radial-turn-test-job1").empty()) << "the prefix's listing";
    EXPECT_FALSE(c.lists_box("radial-turn-test-job1"));
    c.kill("radial-turn-test-job10");
    running.join();
    EXPECT_FALSE(c.lists_box("radial-turn-test-job10"));
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

// `run` of `s` is refused (RADIAL_E_REFUSED naming `key`, the message containing `text`) and no
// output callback was ever called.
void expect_refused_before_run(const RuntimeClient& c, const ContainerSpec& s,
                               const std::string& key, const std::string& text) {
    bool called = false;
    try {
        c.run(s, [&](std::uint32_t, std::string_view) { return called = true; });
        FAIL() << "expected RuntimeError";
    } catch (const RuntimeError& e) {
        EXPECT_EQ(e.code(), RADIAL_E_REFUSED);
        EXPECT_EQ(e.key(), key);
        EXPECT_THAT(e.what(), HasSubstr(text));
    }
    EXPECT_FALSE(called);
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
    expect_refused_before_run(c, s, "network", "network refused: refused by test config");
}

// A mount that must receive the host's later mounts goes only to a runtime that claims
// radial.cap.mount-propagation: refused here, before the plugin sees the spec (the message is the
// host's, naming the runtime).
TEST(RuntimeClient, AMountReceivingLaterMountsIsRefusedBeforeARuntimeWithoutTheCapability) {
    auto p = load("fake_good", "fake");
    auto c = make(p, ConfigSection{"run.fake", {strings("caps", {RADIAL_CAP_UNIX_SOCKET_MOUNTS})}});
    auto s = spec({"echo", "never"});
    s.mounts = {{"/srv/pool/1", "/radial-late", true, true}};
    expect_refused_before_run(c, s, "mounts",
                              "run: mount '/radial-late' must receive the host's later mounts, "
                              "which runtime 'fake' does not claim");
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

// A field reported REFUSED and then HONOURED was taken as honoured (the last answer won), and the
// turn ran: two answers for one field are refused, whichever comes last; one answer given twice
// is just that answer.
TEST(RuntimeClient, AFieldReportedWithTwoDispositionsIsRefused) {
    auto p = load("fake_good", "fake");
    auto c = make(p, ConfigSection{"run.fake", {strings("contradict", {"network"})}});
    auto s = spec({"echo"});
    s.network = "bridge";
    const auto d = c.describe(s);
    ASSERT_EQ(d.size(), carried_fields(s).size());
    for (const auto& x : d) {
        EXPECT_EQ(x.disposition, static_cast<std::uint32_t>(x.field == RADIAL_FIELD_NETWORK
                                                                ? RADIAL_DISP_REFUSED
                                                                : RADIAL_DISP_HONOURED))
            << field_name(x.field);
        if (x.field == RADIAL_FIELD_NETWORK) {
            EXPECT_EQ(x.note,
                      "the plugin reported more than one disposition for this field, "
                      "which the host does not guess between");
        }
    }
}

TEST(RuntimeClient, CapabilitiesComeFromThePlugin) {
    auto p = load("fake_good", "fake");
    auto c = make(p, ConfigSection{"run.fake", {strings("caps", {RADIAL_CAP_UNIX_SOCKET_MOUNTS})}});
    EXPECT_TRUE(c.has_capability(RADIAL_CAP_UNIX_SOCKET_MOUNTS));
    EXPECT_FALSE(c.has_capability(RADIAL_CAP_NAMED_NETWORKS));
}

// One question per plugin: capabilities are asked once per instance, and a spec asked about again
// gets the kept dispositions; another spec is asked.
TEST(RuntimeClient, CapabilitiesAreAskedOnceAndASpecsDispositionsAreKept) {
    auto p = load("fake_good", "fake");
    std::vector<std::string> logs;
    auto c = make(p, ConfigSection{"run.fake", {strings("caps", {RADIAL_CAP_UNIX_SOCKET_MOUNTS})}},
                  &logs);
    auto asked = [&](const std::string& line) {
        return std::count(logs.begin(), logs.end(), line);
    };
    EXPECT_TRUE(c.has_capability(RADIAL_CAP_UNIX_SOCKET_MOUNTS));
    EXPECT_FALSE(c.has_capability(RADIAL_CAP_NAMED_NETWORKS));
    EXPECT_EQ(c.capabilities().size(), 1u);
    EXPECT_EQ(asked("fake capabilities"), 1);
    auto one = spec({"true"});
    const auto first = c.describe(one);
    EXPECT_EQ(c.describe(one).size(), first.size());
    EXPECT_EQ(asked("fake describe of '" + one.label + "'"), 1);
    auto other = one;
    other.label = one.label + "-2";
    (void)c.describe(other);
    EXPECT_EQ(asked("fake describe of '" + other.label + "'"), 1);
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

// --- deadlines and [any-thread] sinks ---------------------------------------------------------

namespace deadlines {

using Clock = std::chrono::steady_clock;

loader::LoadedPlugin load_zoo(const std::string& lower) {
    return loader::load_plugin(std::string(RADIAL_ZOO_PLUGIN_ROOT) + "/" + lower + "/zoo_" + lower +
                               ".so");
}

// The good zoo runtime with its config `hang` naming `call`: that call never returns.
ConfigSection hanging(const std::string& call) {
    return ConfigSection{"run.zoo-good", {strings("hang", {call})}};
}

// The same, but the hung calls return once the file `release` exists.
ConfigSection hanging_until(std::vector<std::string> calls, const std::string& release) {
    ConfigEntry file;
    file.key = "releaseFile";
    file.string_value = release;
    return ConfigSection{"run.zoo-good", {strings("hang", std::move(calls)), file}};
}

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// The zoo told to hang in `name`, under a 300 ms deadline: `call` fails within `within`, naming the
// plugin and the call, and the instance is stuck: a later call fails at once, naming the hung one.
// Destroying it returns (destroy is not called while a call is in flight).
void expect_hangs_past_deadline(const loader::LoadedPlugin& p, const std::string& name,
                                const std::string& within,
                                const std::function<void(const RuntimeClient&)>& call) {
    SCOPED_TRACE(name);
    auto c = make(p, hanging(name));
    c.set_call_deadline(std::chrono::milliseconds(300));
    auto t0 = Clock::now();
    try {
        call(c);
        ADD_FAILURE() << name << " returned although the plugin never does";
    } catch (const RuntimeError& e) {
        EXPECT_EQ(e.code(), RADIAL_E_TIMEOUT);
        EXPECT_THAT(e.what(), HasSubstr("runtime plugin 'zoo-good'"));
        EXPECT_THAT(e.what(), HasSubstr(name + " did not return within " + within));
    }
    EXPECT_LT(seconds_since(t0), 5.0);
    try {
        (void)c.capabilities();
        ADD_FAILURE() << "a call after the hung " << name << " went into the plugin";
    } catch (const RuntimeError& e) {
        EXPECT_THAT(e.what(), HasSubstr("because " + name + " did not return in time"));
    }
}

TEST(RuntimeClientDeadline, EachHungCallFailsWithinTheDeadlineNamingPluginAndCall) {
    auto p = load_zoo("good");
    const std::vector<std::pair<std::string, std::function<void(const RuntimeClient&)>>> calls = {
        {"preflight", [](const RuntimeClient& c) { c.preflight(); }},
        {"describe_spec", [](const RuntimeClient& c) { (void)c.describe(spec({"true"})); }},
        {"list_by_label", [](const RuntimeClient& c) { (void)c.list_by_label("radial-turn-x-"); }},
        {"kill", [](const RuntimeClient& c) { c.kill("radial-turn-x-1"); }},
    };
    for (const auto& [name, call] : calls) expect_hangs_past_deadline(p, name, "300 ms", call);
}

// The extensions' calls are the plugin's code too: each is under the same deadline (a template
// load, beyond its own budget), and the instance is stuck after one of them hung.
TEST(RuntimeClientDeadline, EachHungExtensionCallFailsWithinTheDeadlineNamingIt) {
    auto p = load_zoo("good");
    using Call = std::function<void(const RuntimeClient&)>;
    const std::vector<std::tuple<std::string, std::string, Call>> calls = {
        {"get_extension", "300 ms", [](const RuntimeClient& c) { (void)SessionClient::of(c); }},
        {"session create", "300 ms",
         [](const RuntimeClient& c) { SessionClient::of(c).create(spec({}), 1000, 0); }},
        {"session destroy", "300 ms",
         [](const RuntimeClient& c) { SessionClient::of(c).destroy("radial-session-x-1"); }},
        {"resolve_image", "300 ms",
         [](const RuntimeClient& c) { (void)SessionClient::of(c).resolve_image("img"); }},
        {"session changes", "300 ms",
         [](const RuntimeClient& c) {
             SessionClient::ChangeHandler h{[](std::string_view, std::uint32_t) { return true; },
                                            [](std::string_view) { return true; }};
             SessionClient::of(c).changes("radial-session-x-1", 0, h);
         }},
        {"remove snapshot", "300 ms",
         [](const RuntimeClient& c) { SessionClient::of(c).remove_snapshot("radial-snapshot:x"); }},
        {"template load", "500 ms",
         [](const RuntimeClient& c) {
             auto templates = TemplateClient::of(c);
             ASSERT_TRUE(templates.has_value()) << "the zoo offers templates when told to hang";
             templates->load("/proc/self/exe", std::chrono::milliseconds(200));
         }},
    };
    for (const auto& [name, within, call] : calls)
        expect_hangs_past_deadline(p, name, within, call);
}

// A call that returned after its deadline leaves the plugin free again: stuck until then (every
// call fails at once), answering after. It stayed stuck for good, so one slow walk of a session's
// changes, or an engine slow for a while, left the daemon unable to run a turn until a restart.
TEST(RuntimeClientDeadline, ACallThatReturnsLateFreesThePluginAgain) {
    auto p = load_zoo("good");
    test::TempDir dir("radial-late");
    auto c = make(p, hanging_until({"kill", "session changes"}, dir / "release"));
    c.set_call_deadline(std::chrono::milliseconds(300));
    EXPECT_THROW(c.kill("radial-turn-x-1"), RuntimeError);
    SessionClient::ChangeHandler h{[](std::string_view, std::uint32_t) { return true; },
                                   [](std::string_view) { return true; }};
    EXPECT_THROW(SessionClient::of(c).changes("radial-session-x-1", 0, h), RuntimeError);
    try {
        (void)c.list_by_label("radial-turn-nothing-");
        ADD_FAILURE() << "a call went into the plugin while two calls were still in it";
    } catch (const RuntimeError& e) {
        EXPECT_THAT(e.what(), HasSubstr("because kill did not return in time"));
    }
    dir.write("release", "");
    EXPECT_TRUE(test::wait_until(
        [&] {
            try {
                return c.list_by_label("radial-turn-nothing-").empty();
            } catch (const RuntimeError&) {
                return false;
            }
        },
        std::chrono::seconds(30)))
        << "the plugin stayed stuck after both late calls returned";
}

// A snapshot's commit copies the box's whole file system: it is waited for kSnapshotGrace beyond
// the call deadline, so a large box's commit is not abandoned at the deadline (which left an image
// no record named once the engine finished it).
TEST(RuntimeClientDeadline, ASnapshotIsWaitedForBeyondTheCallDeadline) {
    auto p = load_zoo("good");
    test::TempDir dir("radial-snap");
    auto c = make(p, hanging_until({"session snapshot"}, dir / "release"));
    c.set_call_deadline(std::chrono::milliseconds(300));
    const auto sessions = SessionClient::of(c);
    auto snapshot = std::async(std::launch::async, [&] {
        try {
            (void)sessions.snapshot("radial-session-x-1", "radial-snapshot:x");
            return std::string("(returned)");
        } catch (const RuntimeError& e) {
            return std::string(e.what());
        }
    });
    // Well past the 300 ms deadline, the call is still waited for.
    EXPECT_EQ(snapshot.wait_for(std::chrono::seconds(1)), std::future_status::timeout);
    dir.write("release", "");
    const std::string said = snapshot.get();
    EXPECT_THAT(said, ::testing::Not(HasSubstr("did not return within"))) << said;
    EXPECT_TRUE(c.list_by_label("radial-turn-nothing-").empty()) << "the instance is not stuck";
}

// Under a deadline an extension call that returns answers as it would without one: here the
// plugin's own refusal, and the instance stays usable.
TEST(RuntimeClientDeadline, ACallThatDoesNotHangStillAnswersUnderTheDeadline) {
    auto p = load_zoo("good");
    auto c = make(p);
    c.set_call_deadline(std::chrono::milliseconds(5000));
    const auto sessions = SessionClient::of(c);
    try {
        (void)sessions.resolve_image("img");
        ADD_FAILURE() << "the zoo keeps no snapshots, and said it resolved one";
    } catch (const RuntimeError& e) {
        EXPECT_EQ(e.code(), RADIAL_E_UNSUPPORTED);
        EXPECT_THAT(e.what(), HasSubstr("keeps no snapshots"));
    }
    SessionClient::ChangeHandler h{[](std::string_view, std::uint32_t) { return true; },
                                   [](std::string_view) { return true; }};
    EXPECT_THROW(sessions.changes("radial-session-x-1", 0, h), RuntimeError);
    EXPECT_TRUE(c.list_by_label("radial-turn-nothing-").empty()) << "the instance is not stuck";
}

TEST(RuntimeClientDeadline, TheObserverIsToldOfEachCallItsDurationAndWhetherItFailed) {
    auto p = load_zoo("good");
    auto c = make(p, hanging("kill"));
    c.set_call_deadline(std::chrono::milliseconds(300));
    std::vector<std::tuple<std::string, std::chrono::nanoseconds, bool>> seen;
    std::mutex mutex;
    c.set_call_observer([&](std::string_view call, std::chrono::nanoseconds elapsed, bool ok) {
        std::lock_guard lock(mutex);
        seen.emplace_back(std::string(call), elapsed, ok);
    });
    (void)c.list_by_label("radial-turn-x-");
    EXPECT_THROW(c.kill("radial-turn-x-1"), RuntimeError); // hangs past the deadline
    std::lock_guard lock(mutex);
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(std::get<0>(seen[0]), "list_by_label");
    EXPECT_TRUE(std::get<2>(seen[0]));
    EXPECT_EQ(std::get<0>(seen[1]), "kill");
    EXPECT_FALSE(std::get<2>(seen[1])); // a timeout is a failed call
    EXPECT_GE(std::get<1>(seen[1]), std::chrono::milliseconds(300));
}

TEST(RuntimeClientDeadline, HungDestroyIsAbandonedAndLogged) {
    auto p = load_zoo("hang_destroy");
    auto logs = std::make_shared<std::vector<std::string>>();
    auto mutex = std::make_shared<std::mutex>();
    auto t0 = Clock::now();
    {
        auto c =
            RuntimeClient::create(p.library, p.descriptor, {"run.zoo-hang-destroy", {}}, p.path,
                                  "radiald test", [logs, mutex](std::uint32_t, std::string_view m) {
                                      std::lock_guard lock(*mutex);
                                      logs->emplace_back(m);
                                  });
        c.set_call_deadline(std::chrono::milliseconds(300));
        (void)c.list_by_label("radial-turn-x-");
    }
    EXPECT_LT(seconds_since(t0), 5.0);
    std::lock_guard lock(*mutex);
    bool found = false;
    for (const auto& l : *logs)
        found = found || (l.find("runtime plugin 'zoo-hang-destroy'") != std::string::npos &&
                          l.find("destroy did not return within 300 ms") != std::string::npos);
    EXPECT_TRUE(found) << "no log line named the hung destroy";
}

TEST(RuntimeClientDeadline, NoDeadlineCallsOnTheCallersThread) {
    auto p = load_zoo("good");
    auto c = make(p);
    EXPECT_TRUE(c.list_by_label("radial-turn-nothing-").empty());
    c.set_call_deadline(std::chrono::milliseconds(5000));
    EXPECT_TRUE(c.list_by_label("radial-turn-nothing-").empty());
}

TEST(RuntimeClientSinks, TwoPluginThreadsReportingAtOnceLoseNothing) {
    auto p = load("fake_two_threads", "two_threads");
    auto c = make(p);
    auto names = c.list_by_label("box-");
    EXPECT_EQ(names.size(), 10000u);
    std::set<std::string> distinct(names.begin(), names.end());
    EXPECT_EQ(distinct.size(), 10000u) << "names were lost or torn by the race";
    auto d = c.describe(spec({"true"}));
    for (const auto& x : d) {
        if (x.field == RADIAL_FIELD_LABEL || x.field == RADIAL_FIELD_ARGV) {
            EXPECT_EQ(x.disposition, static_cast<std::uint32_t>(RADIAL_DISP_HONOURED));
        }
    }
    try {
        c.kill("box-0-0");
        FAIL() << "kill reported errors and returned RADIAL_E_INTERNAL";
    } catch (const RuntimeError& e) {
        EXPECT_EQ(e.code(), RADIAL_E_INTERNAL);
        EXPECT_EQ(e.key(), "k");
        // 10000 reports are more than the host keeps of one call's error (kMaxPluginText): what
        // it kept must be whole reports, none torn by the race, and marked as cut.
        std::string m = e.what();
        const std::string mark = " [cut: the plugin's text was longer]";
        ASSERT_TRUE(m.ends_with(mark)) << m;
        m.resize(m.size() - mark.size());
        EXPECT_LE(m.size(), kMaxPluginText);
        std::size_t parts = 0;
        for (std::size_t at = 0; at < m.size();) {
            const std::size_t end = std::min(m.find("; ", at), m.size());
            const std::string part = m.substr(at, end - at);
            EXPECT_TRUE(part == "e0" || part == "e1") << "torn report '" << part << "'";
            ++parts;
            at = end + 2;
        }
        EXPECT_GE(parts, 1000u) << "error reports were lost by the race";
    }
}

TEST(RuntimeClientDescribe, WithoutDescribeSpecOnlyTheSeamFieldsAreHonoured) {
    // The same raw plugin with its describe_spec taken away.
    auto p = load("fake_two_threads", "two_threads");
    radial_runtime_descriptor without = *p.descriptor;
    without.describe_spec = nullptr;
    p.descriptor = &without;
    auto c = make(p);
    ContainerSpec s = spec({"sh", "-c", "true"});
    s.env = {{"A", "1", false}};
    s.timeout_ms = 1000;
    s.pids_limit = 10;
    for (const auto& d : c.describe(s)) {
        bool seam = d.field == RADIAL_FIELD_LABEL || d.field == RADIAL_FIELD_IMAGE ||
                    d.field == RADIAL_FIELD_ARGV || d.field == RADIAL_FIELD_ON_OUTPUT;
        EXPECT_EQ(d.disposition,
                  static_cast<std::uint32_t>(seam ? RADIAL_DISP_HONOURED : RADIAL_DISP_REFUSED))
            << field_name(d.field);
        if (!seam) {
            EXPECT_THAT(d.note, HasSubstr("no describe_spec"));
        }
    }
}

} // namespace deadlines

} // namespace
} // namespace radial::host
