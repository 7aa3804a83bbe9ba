// `radiald run` whose engine disappears mid-turn and comes back, for this daemon only: the docker
// runtime talks to the engine through a unix-socket proxy the test controls ([run.docker] host),
// never by stopping the shared engine. The turn ends, its box is left behind while the engine is
// away, and once the engine answers again the running daemon's orphan sweep removes it without a
// restart and without any further turn.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "../../support/unix_socket_proxy.h"
#include "daemon_harness.h"
#include "docker_boxes.h"

namespace radial {
namespace {
using namespace std::chrono_literals;
using test::DaemonProcess;
using test::DaemonSetup;
using ::testing::HasSubstr;

// How many of the boxes whose label starts with `prefix` are running.
std::size_t running_boxes(const std::string& prefix) {
    auto r = test::run_process({"docker", "ps", "--filter", "label=radial.label", "--filter",
                                "status=running", "--format", "{{.Label \"radial.label\"}}"});
    std::size_t n = 0;
    for (std::size_t at = r.out.find(prefix); at != std::string::npos;
         at = r.out.find(prefix, at + 1))
        ++n;
    return n;
}

TEST(RadialdEngineProxyLive, AnEngineGoneMidTurnLeavesABoxTheRunningDaemonSweepsOnceItIsBack) {
    const std::string instance = test::unique_instance_id("prox");
    const std::string prefix = "radial-turn-" + instance + "-";
    test::BoxCleanup cleanup{prefix};
    test::TempDir sock("radial-proxy");
    test::UnixSocketProxy proxy(sock / "docker.sock", "/var/run/docker.sock");
    DaemonSetup setup("instanceId = \"" + instance + "\"\n",
                      "[run.docker]\nhost = \"unix://" + proxy.path() + "\"\npull = \"never\"\n");
    std::string id = setup.submit("image = \"" RADIAL_TEST_IMAGE
                                  "\"\nargv = [\"sh\", \"-c\", \"echo up; sleep 600\"]\n");
    DaemonProcess d(setup);
    // The box runs (seen through the shared engine directly, not through the proxy): its command
    // has started, so the engine vanishes mid-turn, not mid-start.
    ASSERT_TRUE(test::wait_until([&] { return running_boxes(prefix) == 1; }, 60s)) << d.log();

    proxy.cut();
    ASSERT_TRUE(setup.wait_terminal({id}, 120s)) << d.log();
    // The turn is the runtime's error, not the docker client's exit 125, and the runtime could not
    // remove the box through a vanished engine: it is still there.
    auto rec = setup.terminal(id);
    EXPECT_EQ(rec["status"], "error") << rec;
    EXPECT_THAT(rec["error"].get<std::string>(), HasSubstr("the engine stopped answering")) << rec;
    EXPECT_EQ(test::boxes_with_prefix(prefix).size(), 1u) << d.log();

    // The engine answers again; nothing else happens: no new turn, no restart.
    proxy.restore();
    EXPECT_TRUE(test::wait_until([&] { return test::boxes_with_prefix(prefix).empty(); }, 90s))
        << d.log();
    EXPECT_TRUE(d.wait_for_log("sweep removed 1 orphaned box(es)", 10s)) << d.log();
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// A turn that succeeds but whose box the runtime cannot remove afterwards (the engine refuses
// every removal for a while: the proxy answers each DELETE with an error while refusing) ends
// `succeeded`, as the docker runtime documents; the daemon still looks for the box after the turn
// and sweeps it once removal works again, without a restart or a further turn.
TEST(RadialdEngineProxyLive, ABoxLeftBehindByASucceededTurnIsSweptOnceRemovalWorks) {
    const std::string instance = test::unique_instance_id("left");
    const std::string prefix = "radial-turn-" + instance + "-";
    test::BoxCleanup cleanup{prefix};
    test::TempDir sock("radial-rmfail");
    test::UnixSocketProxy proxy(sock / "docker.sock", "/var/run/docker.sock");
    proxy.refuse_removals(true);
    DaemonSetup setup("instanceId = \"" + instance + "\"\n",
                      "[run.docker]\nhost = \"unix://" + proxy.path() + "\"\npull = \"never\"\n");
    std::string id =
        setup.submit("image = \"" RADIAL_TEST_IMAGE "\"\nargv = [\"sh\", \"-c\", \"echo done\"]\n");
    DaemonProcess d(setup);
    ASSERT_TRUE(setup.wait_terminal({id}, 120s)) << d.log();
    EXPECT_EQ(setup.terminal(id)["status"], "succeeded") << setup.terminal(id);
    EXPECT_EQ(test::boxes_with_prefix(prefix).size(), 1u) << "the box was left behind\n" << d.log();
    EXPECT_TRUE(d.wait_for_log("its box '" + prefix + id + "' is still there after the turn", 10s))
        << d.log();

    proxy.refuse_removals(false);
    EXPECT_TRUE(test::wait_until([&] { return test::boxes_with_prefix(prefix).empty(); }, 90s))
        << d.log();
    EXPECT_TRUE(d.wait_for_log("sweep removed 1 orphaned box(es)", 10s)) << d.log();
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

} // namespace
} // namespace radial
