// Startup reconciliation against the real engine (docs/design.md §8.3, docs/design.md §8.4): case
// C-05 (every state of a box survives a SIGKILL of the daemon) and two instances side by side (C-04
// ownership).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "daemon_harness.h"
#include "docker_boxes.h"

namespace radial {
namespace {
using namespace std::chrono_literals;
using test::DaemonProcess;
using test::DaemonSetup;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// A container labelled exactly as the docker plugin labels its boxes
// (plugins/docker/docker_argv.cpp:
// --name <label> --label radial.label=<label>), left in `created` or `exited` state.
void make_box(const std::string& label, bool run) {
    std::vector<std::string> a{
        "docker",  run ? "run" : "create",  "--pull",    "never", "--name",          label,
        "--label", "radial.label=" + label, "--network", "none",  RADIAL_TEST_IMAGE, "true"};
    auto r = test::run_process(a, {}, 60s);
    ASSERT_EQ(r.exit_code, 0) << r.err;
}

// C-05: inst1 runs turn A (sleep 600); one container with inst1's label is `created`, another
// `exited`. kill -9 the daemon and start it again: before it takes a new turn all three are gone
// (only inst1's), A is reclaimed, and a second restart finds nothing to do.
TEST(ReconcileLive, C05_EveryStateSurvivesASigkillOfTheDaemon) {
    std::string inst = test::unique_instance_id("c");
    std::string prefix = "radial-turn-" + inst + "-";
    std::string foreign = "radial-turn-" + inst + "0-other"; // another instance, a prefix apart
    test::BoxCleanup cleanup{prefix}, cleanup_foreign{"radial-turn-" + inst + "0-"};
    DaemonSetup s("instanceId = \"" + inst + "\"\n");
    std::string a = s.submit(test::shell_turn("sleep 600"));
    {
        DaemonProcess d(s);
        ASSERT_TRUE(test::wait_until([&] { return test::box_state(prefix + a) == "running"; }, 60s))
            << d.log();
        make_box(prefix + "created", false);
        make_box(prefix + "exited", true);
        make_box(foreign, true);
        ASSERT_EQ(test::box_state(prefix + "created"), "created");
        ASSERT_EQ(test::box_state(prefix + "exited"), "exited");
        d.crash();
    }
    ASSERT_EQ(test::box_state(prefix + a), "running")
        << "a SIGKILLed daemon leaves its box running";
    std::string b = s.submit(test::shell_turn("echo next"));

    DaemonProcess again(s);
    ASSERT_TRUE(s.wait_terminal({b}, 60s)) << again.log();
    std::string log = again.log();
    auto claimed_b = log.find("turn " + b + ": claimed");
    ASSERT_NE(claimed_b, std::string::npos) << log;
    for (const auto* box : {"created", "exited"}) {
        auto removed = log.find("removed orphaned box '" + prefix + box + "'");
        EXPECT_LT(removed, claimed_b) << log;
    }
    EXPECT_LT(log.find("removed orphaned box '" + prefix + a + "'"), claimed_b) << log;
    EXPECT_EQ(test::box_state(prefix + a), "gone");
    EXPECT_EQ(test::box_state(prefix + "created"), "gone");
    EXPECT_EQ(test::box_state(prefix + "exited"), "gone");
    EXPECT_EQ(test::box_state(foreign), "exited") << "another instance's box is never touched";
    auto rec = s.terminal(a);
    EXPECT_EQ(rec["status"], "reclaimed");
    EXPECT_EQ(rec["recordsReceived"], 0);
    EXPECT_EQ(s.terminal(b)["status"], "succeeded");
    again.signal(SIGTERM);
    ASSERT_EQ(again.wait_exit(30s), 0) << again.log();

    DaemonProcess third(s);
    ASSERT_TRUE(third.wait_for_log("serving instance", 30s)) << third.log();
    EXPECT_THAT(third.log(), HasSubstr("radiald[reconcile] info: nothing to reconcile"));
    EXPECT_THAT(third.log(), ::testing::Not(HasSubstr("removed orphaned box")));
    third.signal(SIGTERM);
    EXPECT_EQ(third.wait_exit(30s), 0);
}

// docs/design.md §8.4: reconciliation writes only what it knows. Two turns wait in
// their boxes for a file the test creates with `docker exec` once the daemon is SIGKILLed; one
// then exits 42, the other is OOM-killed. Both boxes end by themselves with no radiald left; the
// restarted radiald records each as `reclaimed` with its real ending, read before it removed them.
TEST(ReconcileLive, ABoxThatEndedByItselfIsRecordedWithItsRealEnding) {
    std::string inst = test::unique_instance_id("e");
    std::string prefix = "radial-turn-" + inst + "-";
    test::BoxCleanup cleanup{prefix};
    DaemonSetup s("instanceId = \"" + inst + "\"\n", "[run.docker]\nmemory = \"64m\"\n");
    const std::string wait = "echo waiting; while [ ! -e /tmp/go ]; do sleep 0.1; done; ";
    std::string exited = s.submit(test::shell_turn(wait + "exit 42"));
    std::string oom = s.submit(test::shell_turn(wait + "head -c 500000000 /dev/zero | tail"));
    {
        DaemonProcess d(s);
        ASSERT_TRUE(test::wait_until(
            [&] {
                return test::box_state(prefix + exited) == "running" &&
                       test::box_state(prefix + oom) == "running";
            },
            60s))
            << d.log();
        d.crash();
    }
    for (const auto& id : {exited, oom}) {
        auto go = test::run_process({"docker", "exec", prefix + id, "touch", "/tmp/go"}, {}, 60s);
        ASSERT_EQ(go.exit_code, 0) << go.err;
    }
    ASSERT_TRUE(test::wait_until(
        [&] {
            return test::box_state(prefix + exited) == "exited" &&
                   test::box_state(prefix + oom) == "exited";
        },
        60s))
        << "the boxes did not end by themselves: " << test::box_state(prefix + exited) << ", "
        << test::box_state(prefix + oom);

    auto r = s.reconcile();
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("reclaimed turn " + exited + "\n"));
    EXPECT_EQ(test::box_state(prefix + exited), "gone");
    EXPECT_EQ(test::box_state(prefix + oom), "gone");
    auto rec = s.terminal(exited);
    EXPECT_EQ(rec["status"], "reclaimed") << rec;
    EXPECT_EQ(rec["exitCode"], 42) << rec;
    EXPECT_EQ(rec["reason"],
              "the box had ended by itself (exit 42) before radiald came back; reconciliation "
              "read how and removed it")
        << rec;
    auto killed = s.terminal(oom);
    EXPECT_EQ(killed["status"], "reclaimed") << killed;
    EXPECT_THAT(killed["reason"].get<std::string>(),
                HasSubstr("the box had ended by itself (out of memory, exit "))
        << killed;
    EXPECT_TRUE(killed.contains("exitCode")) << killed;
}

// A box still running when radiald came back is killed, and its record says so (not "ended").
TEST(ReconcileLive, ABoxStillRunningIsKilledAndItsRecordSaysSo) {
    std::string inst = test::unique_instance_id("r");
    std::string prefix = "radial-turn-" + inst + "-";
    test::BoxCleanup cleanup{prefix};
    DaemonSetup s("instanceId = \"" + inst + "\"\n");
    std::string id = s.submit(test::shell_turn("sleep 600"));
    {
        DaemonProcess d(s);
        ASSERT_TRUE(
            test::wait_until([&] { return test::box_state(prefix + id) == "running"; }, 60s))
            << d.log();
        d.crash();
    }
    auto r = s.reconcile();
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(test::box_state(prefix + id), "gone");
    auto rec = s.terminal(id);
    EXPECT_EQ(rec["status"], "reclaimed") << rec;
    EXPECT_FALSE(rec.contains("exitCode")) << rec;
    EXPECT_EQ(rec["reason"],
              "the radiald running it stopped while its box ran; its box was still running and "
              "was killed and removed by reconciliation")
        << rec;
}

// run.instanceId changed while a turn's box ran under the old one (an operator's edit, or the
// generated instance-id file removed): reconciliation under the new id removes that box by the
// label the journal recorded, and the record says so, never "already gone" with the box left
// running and its ids freed for the next box (docs/design.md §8.4).
TEST(ReconcileLive, ABoxRecordedUnderAnEarlierInstanceIdIsRemovedByItsLabel) {
    const std::string inst = test::unique_instance_id("w"), next = test::unique_instance_id("n");
    const std::string prefix = "radial-turn-" + inst + "-";
    test::BoxCleanup cleanup{prefix};
    test::BoxCleanup cleanup_next{"radial-turn-" + next + "-"};
    DaemonSetup s("instanceId = \"" + inst + "\"\n");
    const std::string id = s.submit(test::shell_turn("sleep 600"));
    {
        DaemonProcess d(s);
        ASSERT_TRUE(
            test::wait_until([&] { return test::box_state(prefix + id) == "running"; }, 60s))
            << d.log();
        d.crash();
    }
    std::string text = test::read_file(s.config());
    const auto at = text.find("instanceId = \"" + inst + "\"");
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, inst.size() + 15, "instanceId = \"" + next + "\"");
    std::ofstream(s.config()) << text;
    auto r = s.reconcile();
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(test::box_state(prefix + id), "gone")
        << "the box recorded under '" << inst << "' was left running";
    auto rec = s.terminal(id);
    EXPECT_EQ(rec["status"], "reclaimed") << rec;
    EXPECT_EQ(rec["reason"],
              "the radiald running it stopped while its box ran; its box was still running and "
              "was killed and removed by reconciliation")
        << rec;
}

// Two daemons, instance ids a prefix apart ("<x>" and "<x>0"): reconciling one after a crash
// removes its boxes and leaves the other's running turns alone, which then finish normally.
// A label the engine lists is the runtime's word, checked for radiald's prefix only: one holding
// a terminal's escape sequence is printed escaped by `radiald reconcile` (docs/design.md §14.7),
// and its box removed like any orphan.
TEST(ReconcileLive, ALabelWithAnEscapeSequenceIsPrintedEscaped) {
    const std::string inst = test::unique_instance_id("e");
    const std::string prefix = "radial-turn-" + inst + "-";
    test::BoxCleanup cleanup{prefix};
    DaemonSetup s("instanceId = \"" + inst + "\"\n");
    const std::string label = prefix + "x\x1b]0;pwned\x07";
    const auto made =
        test::run_process({"docker", "run", "-d", "--network", "none", "--label",
                           "radial.label=" + label, RADIAL_TEST_IMAGE, "sleep", "300"});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    const auto r = s.reconcile();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
    EXPECT_THAT(r.out, HasSubstr("removed box " + prefix + "x\\x1b]0;pwned\\x07\n")) << r.out;
    EXPECT_THAT(test::boxes_with_prefix(prefix), IsEmpty());
}

TEST(ReconcileLive, TwoInstancesSideBySideNeverTouchEachOthersBoxes) {
    std::string inst = test::unique_instance_id("p");
    std::string mine = "radial-turn-" + inst + "-", theirs = "radial-turn-" + inst + "0-";
    test::BoxCleanup c1{mine}, c2{theirs};
    DaemonSetup one("instanceId = \"" + inst + "\"\n");
    DaemonSetup two("instanceId = \"" + inst + "0\"\n");
    std::vector<std::string> one_ids = {one.submit(test::shell_turn("sleep 600")),
                                        one.submit(test::shell_turn("sleep 600"))};
    std::vector<std::string> two_ids = {two.submit(test::shell_turn("sleep 6; echo two-done")),
                                        two.submit(test::shell_turn("sleep 6; echo two-done"))};
    DaemonProcess d2(two);
    {
        DaemonProcess d1(one);
        ASSERT_TRUE(
            test::wait_until([&] { return test::boxes_with_prefix(mine).size() == 2; }, 60s))
            << d1.log();
        ASSERT_TRUE(
            test::wait_until([&] { return test::boxes_with_prefix(theirs).size() == 2; }, 60s))
            << d2.log();
        d1.crash();
    }
    auto r = one.reconcile();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("removed box " + mine + one_ids[0] + "\n"));
    EXPECT_THAT(r.out, HasSubstr("removed box " + mine + one_ids[1] + "\n"));
    EXPECT_THAT(r.out, HasSubstr("reclaimed turn " + one_ids[0] + "\n"));
    EXPECT_THAT(test::boxes_with_prefix(mine), IsEmpty());
    EXPECT_THAT(test::boxes_with_prefix(theirs),
                UnorderedElementsAre(theirs + two_ids[0], theirs + two_ids[1]));
    ASSERT_TRUE(two.wait_terminal(two_ids, 60s)) << d2.log();
    for (const auto& id : two_ids) {
        EXPECT_EQ(two.terminal(id)["status"], "succeeded") << two.terminal(id);
        EXPECT_EQ(two.terminal(id)["outputTail"]["stdout"], "two-done\n");
    }
    d2.signal(SIGTERM);
    EXPECT_EQ(d2.wait_exit(30s), 0) << d2.log();
}

// docs/design.md §17, C-16: configs A and B share an instance id but not a state directory. While
// A's `radiald turn` runs a box, every radiald of B (reconcile, run, turn) refuses to start, naming
// A's state directory; A's box is untouched and its turn ends normally.
TEST(ReconcileLive, C16_TheSameInstanceIdOnAnotherStateDirectoryRefusesToStart) {
    std::string inst = test::unique_instance_id("o");
    std::string prefix = "radial-turn-" + inst + "-";
    test::BoxCleanup cleanup{prefix};
    DaemonSetup a("instanceId = \"" + inst + "\"\n");
    DaemonSetup b("instanceId = \"" + inst + "\"\n");
    test::ProcessResult turn;
    std::thread runner([&] {
        turn = test::run_process(
            {RADIALD_PATH, "turn", "--config", a.config(), "--image", RADIAL_TEST_IMAGE,
             "--turn-id", "c16", "--", "sh", "-c", "sleep 4; echo a-done"},
            {}, 120s);
    });
    const bool running =
        test::wait_until([&] { return test::box_state(prefix + "c16") == "running"; }, 60s);
    auto reconcile = b.reconcile();
    auto run = test::run_process({RADIALD_PATH, "run", "--config", b.config()}, {}, 60s);
    auto other_turn = test::run_process({RADIALD_PATH, "turn", "--config", b.config(), "--image",
                                         RADIAL_TEST_IMAGE, "--", "echo", "b-ran"},
                                        {}, 60s);
    const std::string box_state = test::box_state(prefix + "c16");
    runner.join();
    ASSERT_TRUE(running) << turn.err;
    EXPECT_EQ(box_state, "running") << "B touched A's box";
    EXPECT_EQ(reconcile.exit_code, 1) << reconcile.out << reconcile.err;
    EXPECT_THAT(reconcile.err, HasSubstr("run.instanceId '" + inst +
                                         "' is in use by the radiald "
                                         "of state directory '" +
                                         a.state_dir() + "'"));
    EXPECT_THAT(reconcile.out, ::testing::Not(HasSubstr("removed box")));
    EXPECT_EQ(run.exit_code, 1) << run.err;
    EXPECT_THAT(run.err, HasSubstr(a.state_dir()));
    EXPECT_EQ(other_turn.exit_code, 125) << other_turn.err;
    EXPECT_THAT(other_turn.out, ::testing::Not(HasSubstr("b-ran")));
    EXPECT_THAT(other_turn.err, HasSubstr(a.state_dir()));
    EXPECT_EQ(turn.exit_code, 0) << turn.err;
    EXPECT_EQ(turn.out, "a-done\n");
    auto rec = a.terminal("c16");
    EXPECT_EQ(rec["status"], "succeeded") << rec;

    // Once A is done, B may use the instance id (the claim dies with its holder).
    auto later = b.reconcile();
    EXPECT_EQ(later.exit_code, 0) << later.err;
}

// docs/design.md §17, C-16, the other half: a box removed under a running turn by something other
// than the radiald running it is recorded as such (status error, saying so), never as the command's
// own failure with exit 137.
TEST(ReconcileLive, C16_ABoxRemovedFromOutsideIsRecordedAsSuch) {
    std::string inst = test::unique_instance_id("v");
    std::string prefix = "radial-turn-" + inst + "-";
    test::BoxCleanup cleanup{prefix};
    DaemonSetup a("instanceId = \"" + inst + "\"\n");
    test::ProcessResult turn;
    std::thread runner([&] {
        turn = test::run_process({RADIALD_PATH, "turn", "--config", a.config(), "--image",
                                  RADIAL_TEST_IMAGE, "--turn-id", "gone", "--", "sleep", "60"},
                                 {}, 120s);
    });
    const bool running =
        test::wait_until([&] { return test::box_state(prefix + "gone") == "running"; }, 60s);
    auto rm = test::run_process({"docker", "rm", "--force", prefix + "gone"}, {}, 60s);
    runner.join();
    ASSERT_TRUE(running) << turn.err;
    ASSERT_EQ(rm.exit_code, 0) << rm.err;
    EXPECT_EQ(turn.exit_code, 125) << turn.err;
    auto rec = a.terminal("gone");
    EXPECT_EQ(rec["status"], "error") << rec;
    EXPECT_FALSE(rec.contains("exitCode")) << rec;
    EXPECT_THAT(rec.value("error", ""),
                HasSubstr("was removed while it ran by something other than this radiald"));
}

} // namespace
} // namespace radial
