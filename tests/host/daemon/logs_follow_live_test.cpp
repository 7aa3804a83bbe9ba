// `radiald logs -f` on a daemon's running turn (docs/design.md §11.7), with the real docker plugin
// and engine: it prints what the turn printed so far, waits while the turn waits (on a file the
// test creates), prints what comes next and exits when the turn ends; and a daemon killed mid-turn
// does not leave it waiting for ever once the turn is reclaimed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "../../support/process_runner.h"
#include "daemon_harness.h"
#include "docker_boxes.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::DaemonProcess;
using test::DaemonSetup;
using ::testing::HasSubstr;

struct FollowSetup {
    std::string instance;
    test::BoxCleanup cleanup;
    DaemonSetup setup;
    test::TempDir ws{"radial-ws"};
    explicit FollowSetup(const std::string& stem)
        : instance(test::unique_instance_id(stem)),
          cleanup{"radial-turn-" + instance + "-"},
          setup("instanceId = \"" + instance + "\"\n") {
        // The box's user writes its ready file there.
        if (::chown(ws.path().c_str(), 65534, 65534) != 0) ADD_FAILURE() << "chown " << ws.path();
    }
    // A turn that prints, says it is waiting (ready), waits for the test's go, prints and exits 3.
    std::string submit_waiting_turn() const {
        return setup.submit(test::shell_turn(
            "echo before-go; echo err-before-go >&2; touch /work/ready; "
            "while [ ! -e /work/go ]; do sleep 0.1; done; echo after-go; echo err-after-go >&2; "
            "exit 3",
            "workspace = \"" + ws.path() + "\"\n"));
    }
    std::unique_ptr<test::BackgroundProcess> follow(const std::string& id,
                                                    const std::string& err_path) const {
        return std::make_unique<test::BackgroundProcess>(
            std::vector<std::string>{RADIALD_PATH, "logs", "--config", setup.config(), "-f", id},
            err_path, true);
    }
};

TEST(RadialdLogsFollowLive, FollowsARunningTurnAndExitsWhenItEnds) {
    FollowSetup f("lgf");
    const std::string id = f.submit_waiting_turn();
    DaemonProcess d(f.setup);
    ASSERT_TRUE(test::wait_until([&] { return fs::exists(f.ws / "ready"); }, 120s)) << d.log();
    const std::string err_path = f.setup.dir() / "follow.err";
    auto follower = f.follow(id, err_path);
    // What the turn printed before: printed at once.
    EXPECT_EQ(follower->read_line(), std::optional<std::string>("before-go"));
    // The turn waits for the test: so does the follower.
    EXPECT_TRUE(follower->running());
    std::ofstream(f.ws / "go").put('\n');
    EXPECT_EQ(follower->read_line(), std::optional<std::string>("after-go"));
    EXPECT_EQ(follower->read_line(), std::nullopt); // its stdout closed: it ended
    EXPECT_EQ(follower->wait(60s), 0);
    const std::string err = test::read_file(err_path);
    EXPECT_THAT(err, HasSubstr("err-before-go\nerr-after-go\n"));
    ASSERT_TRUE(f.setup.wait_terminal({id}, 60s)) << d.log();
    auto rec = f.setup.terminal(id);
    EXPECT_EQ(rec["status"], "failed") << rec;
    EXPECT_EQ(rec["exitCode"], 3);
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(30s), 0) << d.log();
}

// A SIGKILLed daemon writes no end record: the follower says so at once, and stops once the
// journal says the turn is no longer in flight (here: reclaimed by `radiald reconcile`).
TEST(RadialdLogsFollowLive, AFollowerOfATurnWhoseDaemonDiedEndsOnceTheTurnIsReclaimed) {
    FollowSetup f("lgk");
    const std::string id = f.submit_waiting_turn();
    {
        DaemonProcess d(f.setup);
        ASSERT_TRUE(test::wait_until([&] { return fs::exists(f.ws / "ready"); }, 120s)) << d.log();
        // The box writes its ready file right after its first line; radiald may not have taken
        // that line off the stream yet, and a SIGKILLed radiald loses what it had not written.
        // The crash waits until the log holds it.
        ASSERT_TRUE(test::wait_until(
            [&] {
                auto r = test::run_process({RADIALD_PATH, "logs", "--config", f.setup.config(), id},
                                           {}, 30s);
                return r.out.find("before-go\n") != std::string::npos;
            },
            120s))
            << d.log();
        d.crash();
    }
    const std::string err_path = f.setup.dir() / "follow.err";
    auto follower = f.follow(id, err_path);
    EXPECT_EQ(follower->read_line(), std::optional<std::string>("before-go"));
    // Said, not silently waited out: nothing writes the log any more.
    EXPECT_TRUE(test::wait_until(
        [&] {
            return test::read_file(err_path).find("is no longer run by any radiald") !=
                   std::string::npos;
        },
        60s))
        << test::read_file(err_path);
    EXPECT_TRUE(follower->running()); // the journal still says started
    auto r = f.setup.reconcile();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(follower->read_line(), std::nullopt);
    EXPECT_EQ(follower->wait(60s), 0);
    EXPECT_EQ(f.setup.terminal(id)["status"], "reclaimed");
}

} // namespace
} // namespace radial
