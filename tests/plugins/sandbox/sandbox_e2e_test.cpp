// tests/plugins/sandbox/sandbox_e2e_test.cpp — a turn end to end through the real sandbox.so,
// against either the Docker-backed simulator (tests/fakes/sbx/sbx-docker-sim; CTest label `live`,
// fixture test_image) or a real sbx (docs/design.md §13.5 checklist; only with
// RADIAL_SANDBOX_TESTS=1).
//
// Mode, from the environment CTest sets:
//   RADIAL_SBX_E2E_MODE=sim    the simulator, one private state directory per test
//   RADIAL_SBX_E2E_MODE=real   $RADIAL_SBX_BINARY (default: sbx from PATH), template
//                              $RADIAL_SBX_TEMPLATE (default: the test image, which the operator
//                              loads once: docker image save IMG -o t.tar && sbx template load
//                              t.tar), agent $RADIAL_SBX_AGENT (default: shell). Without
//                              RADIAL_SANDBOX_TESTS=1 the program runs nothing and exits 77, which
//                              CTest reports as skipped (not run) — never as passed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <radial/session.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "../../support/loopback_http_server.h"
#include "../../support/temp_dir.h"
#include "loaded_sandbox_plugin.h"

#ifndef RADIAL_SBX_SIM
#error "RADIAL_SBX_SIM must name the simulator script"
#endif

namespace radial::test {
namespace {

using namespace std::chrono_literals;

std::string env_or(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

bool real_mode() { return env_or("RADIAL_SBX_E2E_MODE", "sim") == "real"; }

// An HTTP server on 127.0.0.1 standing in for the tcp turn socket (docs/design.md §9.1).
const char* const kHostReply = "HTTP/1.0 200 OK\r\nContent-Length: 16\r\n\r\nhello-from-host\n";

class sandbox_e2e : public ::testing::Test {
protected:
    void SetUp() override {
        if (real_mode()) {
            config_.str("binary", env_or("RADIAL_SBX_BINARY", "sbx"));
        } else {
            state_ = std::make_unique<TempDir>("radial-sbxsim");
            std::filesystem::create_symlink(RADIAL_SBX_SIM, *state_ / "sbx");
            config_.str("binary", *state_ / "sbx");
        }
        config_.str("template", env_or("RADIAL_SBX_TEMPLATE", RADIAL_TEST_IMAGE))
            .str("agent", env_or("RADIAL_SBX_AGENT", "shell"));
        sandbox_ = std::make_unique<SandboxInstance>(config_);
    }
    void TearDown() override {
        for (const auto& label : labels_) sandbox_->kill(label);
        sandbox_.reset();
        if (state_)
            shell("docker ps -aq --filter 'label=radial.sbx.sim=" + state_->path() +
                  "' | xargs -r docker rm -f >/dev/null 2>&1");
    }
    std::string label(const std::string& name) {
        std::string l = "rsbx" + std::to_string(::getpid()) + "-" + name;
        labels_.push_back(l);
        return l;
    }
    ContainerSpec spec(const std::string& name, std::vector<std::string> argv) {
        ContainerSpec s;
        s.label = label(name);
        s.image = RADIAL_TEST_IMAGE;
        s.argv = std::move(argv);
        s.timeout_ms = 120'000;
        s.memory_bytes = 512ull << 20;
        return s;
    }
    // No sandbox of this test's labels is listed any more.
    void expect_none_left() {
        Reported r;
        auto left = sandbox_->list("rsbx" + std::to_string(::getpid()) + "-", &r);
        EXPECT_EQ(r.code, RADIAL_OK) << r.message;
        EXPECT_TRUE(left.empty()) << left.front();
        if (state_) {
            EXPECT_TRUE(sandbox_->list("").empty()) << "the simulator's `sbx ls` is empty";
            EXPECT_EQ(read_file(*state_ / "rules"), "") << "no rule outlives its sandbox";
        }
    }

    ConfigBuilder config_{"run.sandbox"};
    std::unique_ptr<TempDir> state_;
    std::unique_ptr<SandboxInstance> sandbox_;
    std::vector<std::string> labels_;
};

// Sessions (radial.session/1) on the sandbox runtime: one sandbox for the session, an exec per
// turn, the session's keeper in it (docs/design.md §13.12). The labels hold only letters, digits
// and '-', so each sandbox is named as its label (sbx_names.h).
class sandbox_session_e2e : public sandbox_e2e {
protected:
    const radial_session_ext* ext() {
        return static_cast<const radial_session_ext*>(
            sandbox_->d().get_extension(sandbox_->rt(), RADIAL_SESSION_EXTENSION_ID));
    }
    Reported create(const std::string& l, std::uint64_t idle_ms = 0,
                    std::uint64_t max_ms = 300'000) {
        ContainerSpec s;
        s.label = l;
        s.image = RADIAL_TEST_IMAGE;
        s.memory_bytes = 512ull << 20;
        radial::CSpec c(s);
        Reported r;
        radial_error_sink err = error_sink(r);
        r.code = ext()->create(sandbox_->rt(), c.get(), idle_ms, max_ms, &err);
        return r;
    }
    RunOutcome exec(const std::string& l, const std::string& script, std::vector<EnvVar> env = {},
                    std::uint64_t timeout_ms = 120'000, std::vector<std::uint32_t> ports = {}) {
        ContainerSpec e;
        e.label = l;
        e.argv = {"sh", "-c", script};
        e.env = std::move(env);
        e.timeout_ms = timeout_ms;
        e.host_ports = std::move(ports);
        return exec_in_session(ext(), sandbox_->rt(), e);
    }
    bool listed(const std::string& l) {
        auto names = sandbox_->list(l);
        return std::find(names.begin(), names.end(), l) != names.end();
    }
};

TEST_F(sandbox_session_e2e, WhatAnExecInstallsOutsideTheWorkspaceIsThereForTheSessionsNextExec) {
    ASSERT_NE(ext(), nullptr);
    EXPECT_EQ(ext()->resolve_image, nullptr) << "sbx keeps no snapshots: the table says so";
    const std::string a = label("sess-a"), b = label("sess-b");
    Reported ca = create(a), cb = create(b);
    ASSERT_EQ(ca.code, RADIAL_OK) << ca.message;
    ASSERT_EQ(cb.code, RADIAL_OK) << cb.message;
    auto first = exec(a, "mkdir -p /opt/cache/tools && echo v1 > /opt/cache/tools/installed");
    ASSERT_EQ(first.status, RADIAL_OK) << first.error.message;
    EXPECT_EQ(first.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_EXITED);
    EXPECT_EQ(first.result.exit_code, 0) << first.err;
    auto second = exec(a, "cat /opt/cache/tools/installed");
    EXPECT_EQ(second.result.exit_code, 0) << second.err;
    EXPECT_EQ(second.out, "v1\n");
    auto other = exec(b, "cat /opt/cache/tools/installed");
    EXPECT_EQ(other.result.exit_code, 1);
    EXPECT_EQ(other.out, "");
    EXPECT_TRUE(listed(a)) << "the session's sandbox is kept between its execs";
}

TEST_F(sandbox_session_e2e, AnExecsSecretAndPortAreItsOwn) {
    ASSERT_NE(ext(), nullptr);
    const std::string value = "s3cr3t-" + std::to_string(::getpid()) + "-of-the-exec";
    const std::string s = label("sess-secret");
    ASSERT_EQ(create(s).code, RADIAL_OK);
    test::LoopbackHttpServer turn_socket("127.0.0.1", kHostReply);
    auto first = exec(s,
                      "sleep 600 & echo \"len=${#TOKEN}\"; curl -s --max-time 20 "
                      "\"http://host.docker.internal:$PORT/records\"",
                      {{"TOKEN", value, true}, {"PORT", std::to_string(turn_socket.port()), false}},
                      120'000, {turn_socket.port()});
    ASSERT_EQ(first.status, RADIAL_OK) << first.error.message;
    EXPECT_EQ(first.out, "len=" + std::to_string(value.size()) + "\nhello-from-host\n");
    auto second = exec(s,
                       "echo \"[$TOKEN]\"; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' "
                       "'\\n' | grep -c TOKEN; ps -o args | grep -c '[s]leep 600'");
    EXPECT_EQ(second.out, "[]\n0\n0\n")
        << "no process of the first exec (its sleep) outlived it to read the next one's";
    if (state_) {
        EXPECT_EQ(read_file(*state_ / "calls.log").find(value), std::string::npos)
            << "no secret on an argv";
        EXPECT_EQ(shell("docker inspect '" + s + "'").find(value), std::string::npos)
            << "nor in the sandbox's configuration";
        EXPECT_EQ(read_file(*state_ / "rules"), "") << "the exec's port rule was revoked after it";
    }
}

TEST_F(sandbox_session_e2e, AnExecTimesOutAsATurnDoesAndTheSessionLivesOn) {
    ASSERT_NE(ext(), nullptr);
    const std::string s = label("sess-timeout");
    ASSERT_EQ(create(s).code, RADIAL_OK);
    auto slow = exec(s, "echo started; sleep 600", {}, 2000);
    ASSERT_EQ(slow.status, RADIAL_OK) << slow.error.message;
    EXPECT_EQ(slow.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_TIMED_OUT);
    EXPECT_EQ(slow.out, "started\n");
    EXPECT_LT(slow.seconds(), 60.0);
    auto after = exec(s, "echo alive; ps -o args | grep -c '[s]leep 600'");
    EXPECT_EQ(after.result.exit_code, 1) << "grep -c found no sleep: " << after.out;
    EXPECT_EQ(after.out, "alive\n0\n");
}

// The keeper lives in the sandbox: with the runtime (radiald) gone, an idle session ends there on
// its own, and the next exec is refused and removes the sandbox.
TEST_F(sandbox_session_e2e, AnIdleSessionEndsOnItsOwnWithTheRuntimeGone) {
    ASSERT_NE(ext(), nullptr);
    const std::string s = label("sess-idle");
    ASSERT_EQ(create(s, 2000).code, RADIAL_OK);
    ASSERT_EQ(exec(s, "true").result.exit_code, 0);
    sandbox_.reset(); // nothing of the host side is left
    if (state_) {
        const std::string name = s;
        const auto deadline = std::chrono::steady_clock::now() + 120s;
        std::string ended;
        while (std::chrono::steady_clock::now() < deadline) {
            ended = shell("docker exec '" + name +
                          "' sh -c 'cat \"$HOME/.radial-session/ended\"' "
                          "2>/dev/null");
            if (!ended.empty()) break;
            std::this_thread::sleep_for(200ms);
        }
        EXPECT_EQ(ended, "it was idle for 2 s\n");
    }
    sandbox_ = std::make_unique<SandboxInstance>(config_);
    if (!state_) std::this_thread::sleep_for(10s); // a real sbx: give the keeper its time
    auto refused = exec(s, "echo should-not-run");
    EXPECT_EQ(refused.status, RADIAL_E_NOT_FOUND) << refused.error.message;
    EXPECT_NE(refused.error.message.find("has ended (ended: it was idle"), std::string::npos)
        << refused.error.message;
    EXPECT_EQ(refused.out, "");
    EXPECT_FALSE(listed(s)) << "the ended session's sandbox was removed";
}

TEST_F(sandbox_session_e2e, TheMaximumLifetimeEndsARunningExecAndTheSession) {
    ASSERT_NE(ext(), nullptr);
    const std::string s = label("sess-max");
    ASSERT_EQ(create(s, 0, 4000).code, RADIAL_OK);
    auto o = exec(s, "echo started; sleep 600", {}, 0);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_KILLED);
    EXPECT_EQ(o.out, "started\n");
    EXPECT_FALSE(listed(s));
    auto gone = exec(s, "true");
    EXPECT_EQ(gone.status, RADIAL_E_NOT_FOUND) << gone.error.message;
}

TEST_F(sandbox_session_e2e, DestroyRemovesTheSandboxAndEndsAnExecInIt) {
    ASSERT_NE(ext(), nullptr);
    const std::string s = label("sess-destroy");
    ASSERT_EQ(create(s).code, RADIAL_OK);
    RunOutcome o;
    std::thread runner([&] { o = exec(s, "echo started; sleep 600"); });
    // The exec runs once its output arrives; the test watches the sandbox's processes instead.
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    while (std::chrono::steady_clock::now() < deadline &&
           (state_ ? shell("docker exec '" + s +
                           "' sh -c \"ps -o args | grep -c '[s]leep 600'\" 2>/dev/null") != "1\n"
                   : false))
        std::this_thread::sleep_for(100ms);
    Reported r;
    radial_error_sink err = error_sink(r);
    r.code = ext()->destroy(sandbox_->rt(), radial_str{s.data(), s.size()}, &err);
    runner.join();
    EXPECT_EQ(r.code, RADIAL_OK) << r.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_KILLED);
    EXPECT_FALSE(listed(s));
}

TEST_F(sandbox_e2e, PreflightAnswers) {
    Reported r = sandbox_->preflight();
    EXPECT_EQ(r.code, RADIAL_OK) << r.message;
}

TEST_F(sandbox_e2e, ATurnEndToEnd) {
    TempDir ws("radial-sbxws");
    ws.write("brief.md", "the brief\n");
    test::LoopbackHttpServer turn_socket("127.0.0.1", kHostReply);
    const std::vector<std::string> values = {"it's \"q\" $HOME `id` \\", "line1\nline2",
                                             "h\xC3\xA9llo \xE2\x9C\x93", "sk-FAKE-0123456789"};
    ContainerSpec s = spec(
        "turn", {"sh", "-c",
                 "test -f /work/brief.md && cat /work/brief.md; echo early; echo to-stderr >&2; "
                 "printf '%s\\0' \"$V0\" \"$V1\" \"$V2\" \"$V3\" > /work/env.bin; "
                 "curl -s --max-time 20 \"http://host.docker.internal:$PORT/records\"; "
                 "sleep 2; echo late > /work/late.txt; echo late; exit 3"});
    s.mounts = {{ws.path(), "/work", false}};
    s.workdir = "/work";
    for (std::size_t i = 0; i < values.size(); ++i)
        s.env.push_back({"V" + std::to_string(i), values[i], true});
    s.env.push_back({"PORT", std::to_string(turn_socket.port()), false});
    s.host_ports = {turn_socket.port()};

    RunOutcome o = sandbox_->run(s);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_EXITED);
    EXPECT_EQ(o.result.exit_code, 3);
    EXPECT_EQ(o.out, "the brief\nearly\nhello-from-host\nlate\n");
    EXPECT_NE(o.err.find("to-stderr\n"), std::string::npos) << o.err;
    EXPECT_LT(o.first_chunk_seconds() + 1.5, o.seconds()) << "output is streamed, not collected";
    EXPECT_NE(turn_socket.received().find("GET /records"), std::string::npos)
        << "the box reached the host's loopback port through host.docker.internal";
    std::string expected;
    for (const auto& v : values) expected += v + '\0';
    EXPECT_EQ(read_file(ws / "env.bin"), expected) << "the environment, byte for byte";
    EXPECT_EQ(read_file(ws / "late.txt"), "late\n") << "the bridged /work is the workspace";
    if (state_) {
        std::string calls = read_file(*state_ / "calls.log");
        EXPECT_EQ(calls.find("sk-FAKE-0123456789"), std::string::npos) << "no secret on an argv";
        EXPECT_NE(calls.find(std::string("--sandbox\037") + s.label +
                             "\037localhost:" + std::to_string(turn_socket.port())),
                  std::string::npos)
            << calls;
    }
    expect_none_left();
}

TEST_F(sandbox_e2e, ATimeoutEndsTheTurnAndRemovesTheSandbox) {
    ContainerSpec s = spec("timeout", {"sh", "-c", "echo started; exec sleep 600"});
    s.timeout_ms = 4000;
    RunOutcome o = sandbox_->run(s);
    ASSERT_EQ(o.status, RADIAL_OK) << o.error.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_TIMED_OUT);
    EXPECT_EQ(o.out, "started\n");
    EXPECT_LT(o.seconds(), 30.0);
    expect_none_left();
}

TEST_F(sandbox_e2e, AKillEndsTheTurnAndRemovesTheSandbox) {
    ContainerSpec s = spec("kill", {"sh", "-c", "echo started; exec sleep 600"});
    std::atomic<bool> started{false}, returned{false};
    RunOutcome o;
    std::thread runner([&] {
        o = sandbox_->run(s, [&](std::uint32_t, std::string_view) {
            started = true;
            return 0;
        });
        returned = true;
    });
    auto deadline = std::chrono::steady_clock::now() + 120s;
    while (!started && !returned && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(50ms);
    Reported k = sandbox_->kill(s.label);
    runner.join();
    EXPECT_EQ(k.code, RADIAL_OK) << k.message;
    EXPECT_EQ(o.result.flags & ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES),
              RADIAL_RUN_KILLED);
    expect_none_left();
}

} // namespace
} // namespace radial::test

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    const char* gate = std::getenv("RADIAL_SANDBOX_TESTS");
    if (radial::test::real_mode() && !::testing::GTEST_FLAG(list_tests) &&
        (gate == nullptr || std::string(gate) != "1")) {
        std::printf(
            "not run: the end-to-end test against a real sbx needs RADIAL_SANDBOX_TESTS=1 "
            "(and sbx signed in, its policy initialised, the template loaded)\n");
        return 77;
    }
    return RUN_ALL_TESTS();
}
