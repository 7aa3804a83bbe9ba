// tests/plugins/docker/docker_session_live_test.cpp — the real docker.so's session extension
// ("radial.session/1", radial/session.h) against the real engine, through its C table as radiald
// reaches it (get_extension). LIVE: needs dockerd and the test_image fixture.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <radial/session.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "../../support/host_processes.h"
#include "../../support/temp_dir.h"
#include "fs/late_mount.h"
#include "loaded_docker_plugin.h"

namespace radial::test {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

bool eventually(const std::function<bool()>& f, std::chrono::milliseconds budget) {
    const auto deadline = std::chrono::steady_clock::now() + budget;
    while (std::chrono::steady_clock::now() < deadline) {
        if (f()) return true;
        std::this_thread::sleep_for(100ms);
    }
    return f();
}

class docker_session_live : public ::testing::Test {
protected:
    docker_session_live() {
        config_.str("pull", "never");
        docker_ = std::make_unique<DockerInstance>(config_);
        ext_ = static_cast<const radial_session_ext*>(
            docker_->d().get_extension(docker_->rt(), RADIAL_SESSION_EXTENSION_ID));
    }
    void TearDown() override {
        std::string names;
        for (const auto& n : cleanup_) names += " '" + n + "'";
        if (!names.empty()) shell("docker rm -f" + names + " >/dev/null 2>&1");
    }

    // Creates a session box labelled after `name` and this process; returns its label.
    std::string create(const std::string& name, std::uint64_t idle_ms = 0,
                       std::uint64_t max_ms = 120'000, Reported* reported = nullptr) {
        ContainerSpec s;
        s.label = "rds" + std::to_string(::getpid()) + "-" + name;
        cleanup_.push_back(s.label);
        s.image = RADIAL_TEST_IMAGE;
        s.user = "2000000123:2000000123";
        radial::CSpec c(s);
        Reported r;
        radial_error_sink err = error_sink(r);
        r.code = ext_->create(docker_->rt(), c.get(), idle_ms, max_ms, &err);
        if (reported != nullptr) *reported = r;
        EXPECT_TRUE(reported != nullptr || r.code == RADIAL_OK) << r.key << ": " << r.message;
        return s.label;
    }

    // The capability ids the instance reports.
    std::vector<std::string> capabilities() {
        std::vector<std::string> names;
        Reported r;
        radial_error_sink err = error_sink(r);
        radial_name_sink sink{sizeof(radial_name_sink), &names, [](void* ctx, radial_str name) {
                                  static_cast<std::vector<std::string>*>(ctx)->emplace_back(
                                      name.data, name.size);
                              }};
        EXPECT_EQ(docker_->d().capabilities(docker_->rt(), &sink, &err), RADIAL_OK) << r.message;
        return names;
    }

    RunOutcome exec(const std::string& label, const std::string& script,
                    std::vector<EnvVar> env = {}, std::uint64_t timeout_ms = 60'000) {
        ContainerSpec e;
        e.label = label;
        e.argv = {"sh", "-c", script};
        e.env = std::move(env);
        e.timeout_ms = timeout_ms;
        return exec_in_session(ext_, docker_->rt(), e);
    }

    ConfigBuilder config_;
    std::unique_ptr<DockerInstance> docker_;
    const radial_session_ext* ext_ = nullptr;
    std::vector<std::string> cleanup_;
};

TEST_F(docker_session_live, WhatATurnInstallsOutsideTheWorkspaceIsThereForTheSessionsNextTurn) {
    ASSERT_NE(ext_, nullptr);
    const std::string a = create("keep-a"), b = create("keep-b");
    auto first = exec(a, "mkdir -p /tmp/tools && echo v1 > /tmp/tools/installed; id -u");
    ASSERT_EQ(first.status, RADIAL_OK) << first.error.message;
    EXPECT_EQ(first.result.flags, RADIAL_RUN_EXITED);
    EXPECT_EQ(first.out, "2000000123\n");
    auto second = exec(a, "cat /tmp/tools/installed");
    EXPECT_EQ(second.result.exit_code, 0) << second.err;
    EXPECT_EQ(second.out, "v1\n");
    auto other = exec(b, "cat /tmp/tools/installed");
    EXPECT_EQ(other.result.exit_code, 1);
    EXPECT_EQ(other.out, "");
}

TEST_F(docker_session_live, AnExecsSecretIsItsOwnAndNeverInTheBoxesConfiguration) {
    ASSERT_NE(ext_, nullptr);
    const std::string value = "s3cr3t-" + std::to_string(::getpid()) + "-value-of-the-turn";
    const std::string s = create("secret");
    auto first = exec(s, "echo \"len=${#TOKEN} plain=$PLAIN\"",
                      {{"TOKEN", value, true}, {"PLAIN", "p1", false}});
    ASSERT_EQ(first.status, RADIAL_OK) << first.error.message;
    EXPECT_EQ(first.out, "len=" + std::to_string(value.size()) + " plain=p1\n");
    auto second = exec(s,
                       "echo \"[$TOKEN][$PLAIN]\"; cat /proc/*/environ 2>/dev/null | tr '\\0' "
                       "'\\n' | grep -c TOKEN");
    EXPECT_EQ(second.out, "[][]\n0\n");
    const std::string inspected = shell("docker inspect '" + s + "'");
    EXPECT_THAT(inspected, HasSubstr(s)) << "inspect found the box";
    EXPECT_THAT(inspected, Not(HasSubstr(value)));
    EXPECT_THAT(inspected, Not(HasSubstr("TOKEN")));
}

TEST_F(docker_session_live, AnExecTimesOutAsATurnDoesAndTheSessionLivesOn) {
    ASSERT_NE(ext_, nullptr);
    const std::string s = create("timeout");
    auto slow = exec(s, "sleep 60", {}, 1000);
    ASSERT_EQ(slow.status, RADIAL_OK) << slow.error.message;
    EXPECT_EQ(slow.result.flags, RADIAL_RUN_TIMED_OUT); // as a run's: no exit code of its own
    EXPECT_LT(slow.seconds(), 30.0);
    auto after = exec(s, "echo alive; ps -o pid= | wc -l");
    EXPECT_EQ(after.result.exit_code, 0);
    EXPECT_THAT(after.out, ::testing::StartsWith("alive\n")) << "the session ended with the exec";
}

// An exec's radial-init is not PID 1, so its command (the same uid) can kill it and leave a child
// running past the turn; the sweep after each exec ends it. And the box cannot end its own
// session by signalling PID 1.
TEST_F(docker_session_live, NothingAnExecLeavesRunningOutlivesItAndTheBoxCannotStopPid1) {
    ASSERT_NE(ext_, nullptr);
    const std::string s = create("sweep");
    auto escape = exec(s, "(sleep 600 </dev/null >/dev/null 2>&1 &); kill -9 $PPID; sleep 5");
    ASSERT_EQ(escape.status, RADIAL_OK) << escape.error.message;
    auto look = exec(s, "ps -o args | grep -c '^sleep 600' ; kill -TERM 1; sleep 1; echo alive");
    EXPECT_EQ(look.out, "0\nalive\n") << look.err;
    // An exit code of 128 or more from an exec that left a process behind, and one below.
    for (const char* code : {"200", "3"}) {
        auto left = exec(s, std::string("(sleep 600 </dev/null >/dev/null 2>&1 &); exit ") + code);
        ASSERT_EQ(left.status, RADIAL_OK) << left.error.message;
        auto count = exec(s, "ps -o args | grep -c '^sleep 600'");
        EXPECT_EQ(count.out, "0\n") << "after an exec that exited " << code << ": " << count.err;
    }
    auto after = exec(s, "echo still");
    EXPECT_EQ(after.out, "still\n") << "PID 1 ended the session on the box's own SIGTERM";
}

// With no host doing anything, a session's box ends once idle for its idle timeout.
TEST_F(docker_session_live, AnIdleSessionEndsByItself) {
    ASSERT_NE(ext_, nullptr);
    const std::string s = create("idle", 1500, 120'000);
    auto one = exec(s, "true");
    ASSERT_EQ(one.status, RADIAL_OK) << one.error.message;
    auto state = [&] {
        std::string out = shell("docker inspect -f '{{.State.Status}}' '" + s + "' 2>&1");
        return out.substr(0, out.find('\n'));
    };
    EXPECT_EQ(state(), "running");
    EXPECT_TRUE(eventually([&] { return state() == "exited"; }, 60s)) << state();
    auto late = exec(s, "true");
    EXPECT_NE(late.status, RADIAL_OK);
}

TEST_F(docker_session_live, ADestroyedSessionIsGoneAndItsExecsAreNotFound) {
    ASSERT_NE(ext_, nullptr);
    const std::string s = create("destroy");
    Reported r;
    radial_error_sink err = error_sink(r);
    ASSERT_EQ(ext_->destroy(docker_->rt(), radial::to_c(s), &err), RADIAL_OK) << r.message;
    EXPECT_EQ(shell("docker ps -aq --filter name=^" + s + "$"), "");
    auto gone = exec(s, "true");
    EXPECT_EQ(gone.status, RADIAL_E_NOT_FOUND);
    // The fix (remove the session, then make it again) is radiald's to name: it knows the id.
    EXPECT_THAT(gone.error.message, HasSubstr("' is gone (its idle timeout or maximum lifetime "
                                              "passed, or it was removed)"));
}

// What every runtime's create refuses, checked by the helper before the runtime sees it.
TEST_F(docker_session_live, ABoxWithACommandOrASecretIsRefusedAtCreate) {
    ASSERT_NE(ext_, nullptr);
    for (int which = 0; which < 2; ++which) {
        ContainerSpec s;
        s.label = "rds" + std::to_string(::getpid()) + "-refused";
        cleanup_.push_back(s.label);
        s.image = RADIAL_TEST_IMAGE;
        if (which == 0)
            s.argv = {"true"};
        else
            s.env = {{"TOKEN", "value", true}};
        radial::CSpec c(s);
        Reported r;
        radial_error_sink err = error_sink(r);
        EXPECT_EQ(ext_->create(docker_->rt(), c.get(), 0, 0, &err), RADIAL_E_INVALID);
        EXPECT_EQ(r.key, which == 0 ? "argv" : "env");
    }
    EXPECT_EQ(shell("docker ps -aq --filter name=^rds" + std::to_string(::getpid()) + "-refused$"),
              "");
}

// RADIAL_CAP_MOUNT_PROPAGATION (docs/design.md §13.13): a box created with a mount that receives
// the host's later mounts sees what the host stacks on that mount's source after the box started:
// read-only when stacked so, from its first moment; writable when stacked so, although the
// receiving mount itself is read-only in the box; gone once the host unmounts it.
TEST_F(docker_session_live, AMountTheHostMakesAfterTheBoxStartedAppearsInsideIt) {
    ASSERT_NE(ext_, nullptr);
    const auto caps = capabilities();
    ASSERT_NE(std::find(caps.begin(), caps.end(), RADIAL_CAP_MOUNT_PROPAGATION), caps.end());
    TempDir late("radial-late"), ws("radial-ws");
    ws.write("brief.md", "the brief\n");
    // The box's user (not root) must reach the receiving directory and write the workspace.
    ASSERT_EQ(::chmod(late.path().c_str(), 0755), 0);
    ASSERT_EQ(::chmod(ws.path().c_str(), 0777), 0);
    fs_util::ReceivingDir receiving(late.path());

    ContainerSpec s;
    s.label = "rds" + std::to_string(::getpid()) + "-late";
    cleanup_.push_back(s.label);
    s.image = RADIAL_TEST_IMAGE;
    s.user = "2000000123:2000000123";
    s.mounts.push_back({late.path(), "/radial-late", /*read_only=*/true, /*receives=*/true});
    radial::CSpec c(s);
    Reported r;
    radial_error_sink err = error_sink(r);
    ASSERT_EQ(ext_->create(docker_->rt(), c.get(), 0, 120'000, &err), RADIAL_OK) << r.message;

    EXPECT_EQ(exec(s.label, "ls -A /radial-late").out, "");
    {
        fs_util::LateMount ro(receiving, ws.path(), /*read_only=*/true);
        const RunOutcome o = exec(s.label,
                                  "cat /radial-late/brief.md; "
                                  "touch /radial-late/new 2>&1 || echo refused");
        EXPECT_THAT(o.out, HasSubstr("the brief\n"));
        EXPECT_THAT(o.out, HasSubstr("Read-only file system"));
        EXPECT_THAT(o.out, HasSubstr("refused"));
    }
    EXPECT_EQ(exec(s.label, "ls -A /radial-late").out, "") << "the unmount did not reach the box";
    {
        fs_util::LateMount rw(receiving, ws.path(), /*read_only=*/false);
        const RunOutcome o = exec(s.label, "echo written > /radial-late/out && echo ok");
        EXPECT_EQ(o.out, "ok\n") << o.err;
        EXPECT_EQ(read_file(ws.path() + "/out"), "written\n");
    }
}

} // namespace
} // namespace radial::test
