// The swarm runtime on a swarm of two nodes (docs/cluster.md, "Trying it on one machine"): a turn
// whose placement constraint admits only workers runs on the worker. The swarm is this test's own
// — two extra engines started by two_node_swarm.sh under a fresh temporary directory, on loopback
// addresses, never the machine's engine or its swarm — and is always taken down again (the
// guard's destructor, on failure too).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"

namespace radial {
namespace {
using ::testing::HasSubstr;

const std::string kScript =
    std::string(RADIAL_SOURCE_DIR) + "/tests/plugins/swarm/two_node_swarm.sh";

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

// Starts the two-node swarm in its constructor, stops it and removes its directory in its
// destructor.
class TwoNodeSwarm {
public:
    TwoNodeSwarm() {
        char tmpl[] = "/tmp/radial-swarm2.XXXXXX";
        if (::mkdtemp(tmpl) == nullptr) return;
        dir_ = tmpl;
        auto r = test::run_process({kScript, "start", dir_, RADIAL_TEST_IMAGE}, {},
                                   std::chrono::seconds(240));
        start_log_ = r.err;
        if (r.exit_code != 0) return;
        manager_ = trimmed(test::read_file(dir_ + "/manager.sock"));
        worker_ = trimmed(test::read_file(dir_ + "/worker.sock"));
        worker_id_ = trimmed(test::read_file(dir_ + "/worker.id"));
    }
    ~TwoNodeSwarm() {
        if (dir_.empty()) return;
        auto r = test::run_process({kScript, "stop", dir_}, {}, std::chrono::seconds(120));
        EXPECT_EQ(r.exit_code, 0) << "stopping the two-node swarm: " << r.err;
    }
    TwoNodeSwarm(const TwoNodeSwarm&) = delete;
    TwoNodeSwarm& operator=(const TwoNodeSwarm&) = delete;

    bool up() const { return !worker_id_.empty(); }
    const std::string& start_log() const { return start_log_; }
    const std::string& manager() const { return manager_; } // unix://...
    const std::string& worker() const { return worker_; }
    const std::string& worker_id() const { return worker_id_; }

private:
    std::string dir_, start_log_, manager_, worker_, worker_id_;
};

// What engine `host` recorded about the containers labelled `label`: one line per event, the
// action and the swarm node id the container carries (the task's NodeID).
std::string container_events(const std::string& host, const std::string& label) {
    auto r = test::run_process(
        {"docker", "-H", host, "events", "--since", "30m", "--until", "0s", "--filter",
         "type=container", "--filter", "label=radial.label=" + label, "--format",
         "{{.Action}} {{index .Actor.Attributes \"com.docker.swarm.node.id\"}}"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
}

TEST(SwarmTwoNodeLive, ATurnConstrainedToWorkersRunsOnTheWorker) {
    TwoNodeSwarm swarm;
    ASSERT_TRUE(swarm.up()) << swarm.start_log();
    test::RadialdSetup s("containerRuntime = \"swarm\"\n",
                         "[run.swarm]\nhost = \"" + swarm.manager() +
                             "\"\npull = \"never\"\nhostNetwork = true\n"
                             "constraints = [\"node.role==worker\"]\n");
    auto t = s.turn({"--timeout", "90s"}, {"sh", "-c", "echo ran-on-a-worker; id -u"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_THAT(t.result.out, HasSubstr("ran-on-a-worker\n"));
    ASSERT_TRUE(t.record.is_object()) << t.result.err;
    EXPECT_EQ(t.record["status"], "succeeded") << t.record.dump();
    const std::string label = t.record.value("label", "");
    ASSERT_FALSE(label.empty());
    // The task's container was created and started on the worker, as the worker's task ...
    // (The engine logs the event as its own step: await it rather than assume it is there.)
    std::string on_worker;
    EXPECT_TRUE(test::wait_until(
        [&] {
            on_worker = container_events(swarm.worker(), label);
            return on_worker.find("start " + swarm.worker_id() + "\n") != std::string::npos;
        },
        std::chrono::seconds(30)))
        << "the worker's events for " << label << ": " << on_worker;
    // ... and nothing of it ran on the manager.
    EXPECT_EQ(container_events(swarm.manager(), label), "");
    // The service is gone from the swarm.
    auto services = test::run_process({"docker", "-H", swarm.manager(), "service", "ls", "-q",
                                       "--filter", "label=radial.label=" + label});
    EXPECT_EQ(services.out, "") << services.err;
}

} // namespace
} // namespace radial
