// A stop signal that reaches `radiald session create` or `session rm` between two of their steps
// (docs/design.md §13.12, §12.3) — SIGTERM from a process manager, Ctrl-C, a closed terminal —
// neither kills the command there nor leaves a half-made session: create undoes what it made and
// exits 130 saying so; rm finishes the removal, then says the signal came. The real radiald, the
// real docker.so, the real engine behind a proxy that holds its answer (stop_in_window.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <filesystem>

#include "../../support/box_id_leases.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/scope_exit.h"
#include "../../support/temp_dir.h"
#include "../../support/unix_socket_proxy.h"
#include "../daemon/docker_boxes.h"
#include "session_fixture.h"
#include "stop_in_window.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::Session;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A setup whose engine is reached through `proxy`.
std::string through(const test::UnixSocketProxy& proxy) {
    return "[run.docker]\nhost = \"unix://" + proxy.path() + "\"\n";
}

// What `session create` of `id` keeps under `state_dir/sessions` (its record, lock, socket and
// identity directories).
std::vector<std::string> session_files(const std::string& state_dir, const std::string& id) {
    std::vector<std::string> left;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(state_dir + "/sessions", ec))
        if (e.path().filename().string().rfind(id + ".", 0) == 0)
            left.push_back(e.path().filename().string());
    return left;
}

// What a killed command left of `setup`'s sessions (a lease of its ids in the host-wide
// directory above all), removed by reconciliation when the test ends however it ends.
test::ScopeExit reconciled_at_end(const test::RadialdSetup& setup) {
    return test::ScopeExit([&setup] {
        if (test::box_id_leases_of(setup.state_dir()) > 0)
            test::run_process({RADIALD_PATH, "reconcile", "--config", setup.config()}, {}, 120s);
    });
}

std::string sig(int signo) { return std::string("SIG") + ::sigabbrev_np(signo); }

// SIGTERM, SIGINT, SIGHUP or SIGQUIT reaching `session create` once the engine made its box: the
// box, its ids' lease and the session's files go, the command says so on one line and exits 130
// (it died of the signal, leaving the box, the lease and the files, and the id blocked until
// `radiald reconcile`). The id can be used at once.
TEST(SessionSignalsLive, ASignalDuringSessionCreateUndoesTheSession) {
    for (const int signo : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) {
        SCOPED_TRACE(sig(signo));
        test::TempDir sock("radial-proxy");
        test::UnixSocketProxy proxy(sock / "docker.sock", "/var/run/docker.sock");
        test::RadialdSetup setup("", through(proxy));
        const auto reconcile = reconciled_at_end(setup);
        const std::string id = "sig-" + std::to_string(::getpid()) + "-" + std::to_string(signo);
        const std::string log = setup.dir() / "create.log";
        // The box by its name, "radial-session-<instanceId>-<id>" (session_fixture.h).
        auto box = [&] {
            const std::string inst = test::read_file(setup.state_dir() + "/instance-id");
            return "radial-session-" + inst.substr(0, inst.find_first_of(" \n")) + "-" + id;
        };
        test::ScopeExit remove_box([&] { test::remove_boxes_with_prefix(box()); });
        // The box is made and started; radiald waits for the start's answer.
        proxy.hold_answers_to("/start");
        test::BackgroundProcess create(
            {RADIALD_PATH, "session", "create", "--config", setup.config(), "--image",
             RADIAL_TEST_IMAGE, "--session-id", id},
            log, true);
        const bool caught = test::signal_while_held(create, proxy, signo);
        const int status = create.wait(120s);
        const std::string err = test::read_file(log);
        ASSERT_TRUE(caught) << "session create never waited on its box's start: " << err;
        EXPECT_EQ(status, 130) << err;
        EXPECT_THAT(err, HasSubstr("interrupted by " + sig(signo) +
                                   ": the session was not created; nothing is left"));
        EXPECT_EQ(create.read_line(10s), std::nullopt) << "an id was printed";
        EXPECT_THAT(test::boxes_with_prefix(box()), IsEmpty()) << "its box stayed";
        EXPECT_EQ(test::box_id_leases_of(setup.state_dir()), 0u) << "its ids stay leased";
        EXPECT_THAT(session_files(setup.state_dir(), id), IsEmpty());
        Session again(setup, {"--session-id", id});
        EXPECT_EQ(again.created.exit_code, 0) << again.created.err;
    }
}

// A command whose step waits long (an engine that does not answer, a lock another command holds)
// caught every stop signal and could then be ended by SIGKILL alone. A second stop signal ends it
// at once, saying what may be left for reconciliation; SIGUSR1 is logged and ignored (it killed
// the command between two steps).
TEST(SessionSignalsLive, ASecondStopSignalEndsACommandThatWaits) {
    test::TempDir sock("radial-proxy");
    test::UnixSocketProxy proxy(sock / "docker.sock", "/var/run/docker.sock");
    test::RadialdSetup setup("", through(proxy));
    const auto reconcile = reconciled_at_end(setup);
    const std::string id = "sig2-" + std::to_string(::getpid());
    const std::string log = setup.dir() / "create.log";
    test::ScopeExit remove_box([&] {
        const std::string inst = test::read_file(setup.state_dir() + "/instance-id");
        test::remove_boxes_with_prefix("radial-session-" +
                                       inst.substr(0, inst.find_first_of(" \n")) + "-" + id);
    });
    proxy.hold_answers_to("/start"); // never let through: an engine that does not answer
    test::BackgroundProcess create({RADIALD_PATH, "session", "create", "--config", setup.config(),
                                    "--image", RADIAL_TEST_IMAGE, "--session-id", id},
                                   log, true);
    ASSERT_TRUE(test::wait_until([&] { return proxy.held() > 0 || !create.running(); }, 120s))
        << test::read_file(log);
    ASSERT_TRUE(create.running()) << test::read_file(log);
    const auto logged = [&](const std::string& line) {
        return test::wait_until(
            [&] { return test::read_file(log).find(line) != std::string::npos; }, 60s);
    };
    create.signal(SIGUSR1);
    ASSERT_TRUE(logged("SIGUSR1 received and ignored")) << test::read_file(log);
    EXPECT_TRUE(create.running()) << "SIGUSR1 ended it: " << test::read_file(log);
    create.signal(SIGTERM);
    // Seen before the second is sent: two sent at once may reach it as one.
    ASSERT_TRUE(logged("SIGTERM received: stopping")) << test::read_file(log);
    create.signal(SIGTERM);
    const int status = create.wait(60s);
    proxy.release_held();
    const std::string err = test::read_file(log);
    EXPECT_EQ(status, SIGTERM) << "not ended by the signal: " << err;
    EXPECT_THAT(err, HasSubstr("SIGTERM again: stopping now"));
}

// SIGTERM reaching `session rm` once the engine removed the box: the removal is finished — its ids'
// lease and the session's files go too — and the command exits as it would have, saying the signal
// came (it died of it, leaving the session's record and its ids leased with its box gone).
TEST(SessionSignalsLive, ASignalDuringSessionRmLetsTheRemovalFinish) {
    test::TempDir sock("radial-proxy");
    test::UnixSocketProxy proxy(sock / "docker.sock", "/var/run/docker.sock");
    test::RadialdSetup setup("", through(proxy));
    const auto reconcile = reconciled_at_end(setup);
    Session s(setup, {"--session-id", "sig-rm-" + std::to_string(::getpid())});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    ASSERT_EQ(test::box_id_leases_of(setup.state_dir()), 1u);
    const std::string log = setup.dir() / "rm.log";
    proxy.hold_answers_to("DELETE ");
    test::BackgroundProcess rm({RADIALD_PATH, "session", "rm", "--config", setup.config(), s.id},
                               log, true);
    const bool caught = test::signal_while_held(rm, proxy, SIGTERM);
    const int status = rm.wait(120s);
    const std::string err = test::read_file(log);
    ASSERT_TRUE(caught) << "session rm never waited on its box's removal: " << err;
    EXPECT_EQ(status, 0) << err;
    EXPECT_EQ(rm.read_line(10s), "removed session " + s.id) << err;
    EXPECT_THAT(err, HasSubstr("SIGTERM came while session '" + s.id +
                               "' was being removed: that was finished first"));
    EXPECT_EQ(test::box_state(s.box()), "gone");
    EXPECT_EQ(test::box_id_leases_of(setup.state_dir()), 0u) << "its ids stay leased";
    EXPECT_THAT(session_files(setup.state_dir(), s.id), IsEmpty());
    if (status == 0) s.id.clear(); // removed: nothing left for ~Session
}

} // namespace
} // namespace radial
