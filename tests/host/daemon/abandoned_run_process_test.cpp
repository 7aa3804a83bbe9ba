// The real `radiald turn` and `radiald run` with a plugin whose run ignores every kill and never
// returns (the hostile test plugin, tests/fakes/plugins/hostile_calls.cpp), in both
// run.pluginIsolation modes (docs/design.md §3.7): the turn ends with the give-up record, the one-
// shot command exits although a thread of it is stuck in the plugin, and the workspace is given
// back by the next reconciliation, or by the daemon once the plugin returns. The host's grace is
// shortened through RADIAL_HOST_GRACE_MS_FOR_TEST (host/daemon/test_pause.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "../../support/box_id_leases.h"
#include "daemon_harness.h"
#include "fake_daemon_setup.h"
#include "plugin_hosts.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

constexpr uid_t kOwner = 4242;
const std::map<std::string, std::string> kShortGrace{{"RADIAL_HOST_GRACE_MS_FOR_TEST", "100"}};

// The hostile plugin alone in a plugin directory of the setup's own, in `isolation`.
struct HostileSetup : test::DaemonSetup {
    explicit HostileSetup(const std::string& isolation) : DaemonSetup(keys(isolation)) {}
    static std::string plugin_dir() {
        static test::TempDir plugins("radial-hostile");
        fs::copy_file(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_hostile/hostile.so",
                      plugins.path() + "/hostile.so", fs::copy_options::overwrite_existing);
        return plugins.path();
    }
    static std::string keys(const std::string& isolation) {
        return "containerRuntime = \"hostile\"\npluginDir = \"" + plugin_dir() +
               "\"\npluginIsolation = \"" + isolation + "\"\nstopGrace = \"0s\"\n";
    }
    // A workspace of the setup's, owned by kOwner: the hand-over gives it to the box uid.
    std::string workspace(const std::string& name) const {
        const std::string ws = dir() / name;
        fs::create_directories(ws);
        EXPECT_EQ(::chown(ws.c_str(), kOwner, kOwner), 0);
        return ws;
    }
};

uid_t owner_of(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_uid : 0;
}

void expect_give_up_record(const nlohmann::json& rec) {
    EXPECT_EQ(rec["status"], "error") << rec.dump();
    EXPECT_EQ(rec["callAbandoned"], true) << rec.dump();
    const std::string error = rec.value("error", "");
    EXPECT_THAT(error, HasSubstr("runtime 'hostile' did not return from its run of box '" +
                                 rec["label"].get<std::string>() + "' after 3 kills over "));
    EXPECT_THAT(error, HasSubstr("radiald gave up on the call: the box may still be running"));
    EXPECT_THAT(error, HasSubstr("'radiald reconcile'"));
}

class AbandonedRunProcess : public ::testing::TestWithParam<std::string> {};

// `radiald turn` gives up on the run, writes the record, exits 125 — its thread in the plugin
// does not hold the exit — and leaves the workspace to the box, noted, as a killed radiald would;
// `radiald reconcile` then hands it back and frees the box's ids.
TEST_P(AbandonedRunProcess, RadialdTurnExitsWithTheGiveUpRecordAndReconcileHandsBack) {
    HostileSetup s(GetParam());
    const std::string ws = s.workspace("ws"), record = s.dir() / "record.json";
    const auto r =
        test::run_process({RADIALD_PATH, "turn", "--config", s.config(), "--image", "img",
                           "--workspace", ws, "--timeout", "200ms", "--record-file", record,
                           "--turn-id", "deaf-1", "--", "deaf", s.dir() / "never"},
                          kShortGrace, 60s);
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.out, HasSubstr("deaf run started"));
    EXPECT_THAT(r.err, HasSubstr("giving up on its run"));
    const auto rec = nlohmann::json::parse(test::read_file(record));
    expect_give_up_record(rec);
    // Left as a killed radiald leaves it: the box's, with its note and its ids.
    EXPECT_NE(owner_of(ws), kOwner);
    EXPECT_TRUE(fs::exists(s.state_dir() + "/handovers/deaf-1"));
    EXPECT_EQ(test::box_id_leases_of(s.state_dir()), 1u);
    // No process of the plugin's is left behind (its host's argv names the plugin's directory).
    EXPECT_TRUE(test::wait_until(
        [&] {
            const auto lines = test::all_cmdlines();
            return std::none_of(lines.begin(), lines.end(), [](const std::string& l) {
                return l.find(HostileSetup::plugin_dir()) != std::string::npos;
            });
        },
        20s));

    const auto reconciled = s.reconcile();
    EXPECT_EQ(reconciled.exit_code, 0) << reconciled.err;
    EXPECT_EQ(owner_of(ws), kOwner) << reconciled.err;
    EXPECT_FALSE(fs::exists(s.state_dir() + "/handovers/deaf-1"));
    EXPECT_EQ(test::box_id_leases_of(s.state_dir()), 0u);
}

// The daemon gives up on the run and serves other workspaces at once, through the same plugin
// host process; a turn on the wedged workspace waits until the plugin returns, and then runs.
TEST_P(AbandonedRunProcess, TheDaemonServesOnWhileTheCallIsOutAndHandsBackWhenItReturns) {
    HostileSetup s(GetParam());
    const std::string ws = s.workspace("ws"), other = s.workspace("other");
    const std::string release = s.dir() / "release";
    test::DaemonProcess d(s, kShortGrace);
    const std::string deaf = s.submit(test::turn_file(
        "[\"deaf\", \"" + release + "\"]", "workspace = \"" + ws + "\"\ntimeout = \"200ms\"\n"));
    ASSERT_TRUE(s.wait_terminal({deaf}, 60s)) << d.log();
    expect_give_up_record(s.terminal(deaf));
    const auto hosts = test::plugin_hosts_of(d.pid());

    const std::string same =
        s.submit(test::turn_file("[\"echo\", \"same\"]", "workspace = \"" + ws + "\"\n"));
    const std::string next =
        s.submit(test::turn_file("[\"echo\", \"next\"]", "workspace = \"" + other + "\"\n"));
    ASSERT_TRUE(s.wait_terminal({next}, 60s)) << d.log();
    EXPECT_EQ(s.terminal(next)["status"], "succeeded") << d.log();
    EXPECT_TRUE(s.terminal(same).is_null()) << "a turn ran on the wedged workspace";
    EXPECT_NE(owner_of(ws), kOwner);
    EXPECT_EQ(test::plugin_hosts_of(d.pid()), hosts);
    EXPECT_THAT(d.log(), Not(HasSubstr("started a new plugin host process")));

    std::ofstream(release) << "go\n";
    ASSERT_TRUE(s.wait_terminal({same}, 60s)) << d.log();
    EXPECT_EQ(s.terminal(same)["status"], "succeeded") << d.log();
    EXPECT_THAT(d.log(), HasSubstr("the call radiald gave up on has returned"));
    EXPECT_EQ(owner_of(ws), kOwner);
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

INSTANTIATE_TEST_SUITE_P(BothModes, AbandonedRunProcess, ::testing::Values("in-process", "process"),
                         [](const auto& p) {
                             return p.param == "process" ? std::string("InAPluginHostProcess")
                                                         : std::string("InProcess");
                         });

} // namespace
} // namespace radial
