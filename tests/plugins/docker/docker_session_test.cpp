// tests/plugins/docker/docker_session_test.cpp — a session exec's secrets (plugins/docker/
// docker_session.cpp) against a scripted Engine API (fake_engine.h): they reach radial-init's
// stdin only after radial-init said it is ready, once no other process of the box can have opened
// that stdin; without the line, they are never sent.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "../../support/fake_engine.h"
#include "../../support/host_processes.h"
#include "../../support/plugin_error.h"
#include "../support/config_builder.h"
#include "docker_runtime.h"
#include "engine_api/stream_frames.h"

// Its own namespace: a unity batch shares a translation unit with docker_runtime_test.cpp.
namespace radial::docker::session_test {
namespace {

using engine_api::encode_frame;
using radial::test::EngineAnswer;
using radial::test::FakeEngine;
using radial::test::ping_answer;

const std::string kV = "/v1.41";
const std::string kBox(64, 'a');
const std::string kLabel = "radial-session-inst1-s1";
const std::string kSecret = "sk-session-secret-value";

// The exec's stream: what radial-init and the command wrote (frames), how the exec ended.
struct ExecScript {
    std::string frames;
    int exit_code = 0;
    int processes = 2; // what GET /containers/{id}/top lists: PID 1 and the exec
    // The engine's answers to the exec's create and start, when not the usual ones.
    std::optional<EngineAnswer> create, start;
    // What GET /containers/{id}/json answers once the exec ended; unset: not asked for.
    std::optional<EngineAnswer> box;
};

FakeEngine::Route route(const ExecScript& s) {
    return [&s](const std::string& method, const std::string& path) -> EngineAnswer {
        if (path == "/_ping") return ping_answer("1.41");
        if (method == "GET" && path.starts_with(kV + "/containers/json"))
            return {200,
                    R"([{"Id":")" + kBox + R"(","Labels":{"radial.label":")" + kLabel + R"("}}])"};
        if (method == "POST" && path == kV + "/containers/" + kBox + "/exec")
            return s.create ? *s.create : EngineAnswer{201, R"({"Id":"e1"})"};
        if (method == "POST" && path == kV + "/exec/e1/start" && s.start) return *s.start;
        if (method == "POST" && path == kV + "/exec/e1/start") {
            EngineAnswer a;
            a.hijack = true;
            a.half_close = true;
            a.frames = s.frames;
            return a;
        }
        if (method == "GET" && path == kV + "/containers/" + kBox + "/top") {
            std::string rows;
            for (int i = 1; i <= s.processes; ++i)
                rows += (i > 1 ? "," : "") + std::string("[\"") + std::to_string(i) + "\"]";
            return {200, R"({"Titles":["PID"],"Processes":[)" + rows + "]}"};
        }
        if (method == "GET" && path == kV + "/containers/" + kBox + "/json" && s.box) return *s.box;
        if (method == "GET" && path == kV + "/exec/e1/json")
            return {200, R"({"Running":false,"ExitCode":)" + std::to_string(s.exit_code) + "}"};
        return {500, R"({"message":"unexpected request"})"};
    };
}

struct Collected {
    std::string out, err;
};

// One exec of `argv` with the secret variable TOKEN in the session box, against `engine`.
radial::plugin::RunResult exec_with_secret(const FakeEngine& engine, Collected& c) {
    radial::test::ConfigBuilder b;
    b.str("host", engine.address()).str("pull", "never").integer("commandTimeout", 30000);
    radial::plugin::Config config(b.get());
    DockerRuntime rt(radial::plugin::Host(), config);
    ContainerSpec exec;
    exec.label = kLabel;
    exec.argv = {"sh", "-c", "echo hi"};
    exec.env = {{"TOKEN", kSecret, true}};
    radial_output_sink sink{
        sizeof(radial_output_sink), &c,
        [](void* ctx, std::uint32_t stream, const std::uint8_t* data, std::size_t size) {
            auto* col = static_cast<Collected*>(ctx);
            (stream == RADIAL_STREAM_STDOUT ? col->out : col->err)
                .append(reinterpret_cast<const char*>(data), size);
            return 0;
        }};
    radial::plugin::Output out(&sink);
    return rt.exec(exec, out);
}

// What the plugin wrote on the exec's stream, once it closed it.
std::string written(FakeEngine& engine) {
    EXPECT_TRUE(radial::test::wait_until([&] { return !engine.hijacked_input().empty(); },
                                         std::chrono::seconds(30)));
    const auto input = engine.hijacked_input();
    return input.empty() ? std::string() : input.front();
}

TEST(docker_session, TheSecretsGoToRadialInitOnlyAfterItSaidItIsReady) {
    ExecScript script;
    // The line split across frames; the command's output after it.
    script.frames = encode_frame(RADIAL_STREAM_STDOUT, "radial-init: re") +
                    encode_frame(RADIAL_STREAM_STDOUT, "ady\nhi\n");
    FakeEngine engine(route(script));
    Collected c;
    auto r = exec_with_secret(engine, c);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(c.out, "hi\n") << "radial-init's line is not the command's output";
    const std::string in = written(engine);
    EXPECT_TRUE(in.starts_with("radial-env ")) << in.size();
    EXPECT_NE(in.find("TOKEN=" + kSecret), std::string::npos);
    EXPECT_NE(engine.body_of("POST " + kV + "/containers/" + kBox + "/exec").find("--say-ready"),
              std::string::npos);
}

TEST(docker_session, WithoutTheReadyLineTheSecretsAreNeverSent) {
    // radial-init could not end what an earlier turn left, and exited before saying it.
    ExecScript ended;
    ended.frames = encode_frame(RADIAL_STREAM_STDERR,
                                "radial-init: processes left in the session's box could not be "
                                "ended; the command was not run\n");
    ended.exit_code = 125;
    {
        FakeEngine engine(route(ended));
        Collected c;
        auto r = exec_with_secret(engine, c);
        EXPECT_EQ(r.exit_code, 125);
        EXPECT_NE(c.err.find("could not be ended"), std::string::npos) << c.err;
        EXPECT_EQ(written(engine), "") << "the secrets went to an exec that never said ready";
    }
    // Something else on stdout first: not radial-init's line, so not sent, and said.
    ExecScript other;
    other.frames = encode_frame(RADIAL_STREAM_STDOUT, "radial-init: rea\x01 other\n");
    FakeEngine engine(route(other));
    Collected c;
    auto e = radial::test::error_of([&] { exec_with_secret(engine, c); });
    EXPECT_EQ(e.code(), RADIAL_E_INTERNAL);
    EXPECT_NE(std::string(e.what()).find("the exec's secrets were not sent"), std::string::npos)
        << e.what();
    EXPECT_EQ(written(engine), "");
}

// The line, but the engine counts a third process in the box: a leftover that stopped
// radial-init before it could end it and wrote the line itself. Nothing is sent.
TEST(docker_session, AReadyLineWithAnotherProcessLeftInTheBoxSendsNothing) {
    ExecScript forged;
    forged.frames = encode_frame(RADIAL_STREAM_STDOUT, "radial-init: ready\n");
    forged.processes = 3;
    FakeEngine engine(route(forged));
    Collected c;
    auto e = radial::test::error_of([&] { exec_with_secret(engine, c); });
    EXPECT_EQ(e.code(), RADIAL_E_INTERNAL);
    EXPECT_NE(std::string(e.what()).find("holds 3 processes"), std::string::npos) << e.what();
    EXPECT_EQ(written(engine), "");
}

// RADIAL_E_REFUSED from an exec tells the host nothing of it ran (radial/session.h): so every
// answer of the engine that refuses to make or start the exec is said so, and only those; a box
// that is not running any more is gone (RADIAL_E_NOT_FOUND).
// The box removed under the exec (`docker rm -f`), the engine still answering the exec's 137: the
// exec was killed with its box, not ended by its command (docs/design.md §13.12).
TEST(docker_session, AnExecWhoseBoxWasRemovedUnderItWasKilledNotEndedByItsCommand) {
    ExecScript script;
    script.frames = encode_frame(RADIAL_STREAM_STDOUT, "radial-init: ready\nhi\n");
    script.exit_code = 137;
    script.box = EngineAnswer{404, R"({"message":"No such container"})"};
    FakeEngine engine(route(script));
    Collected c;
    auto r = exec_with_secret(engine, c);
    EXPECT_TRUE(r.flags & RADIAL_RUN_KILLED) << r.flags;
    EXPECT_FALSE(r.flags & RADIAL_RUN_EXITED) << "137 is not the command's: " << r.exit_code;
}

TEST(docker_session, AnExecTheEngineWouldNotMakeOrStartIsRefusedAndOnlyThat) {
    const EngineAnswer paused{
        409, R"({"message":"Container x is paused, unpause the container before exec"})"};
    struct Case {
        const char* name;
        std::optional<EngineAnswer> create, start;
        std::int32_t code;
    };
    const Case cases[] = {
        {"paused at create", paused, std::nullopt, RADIAL_E_REFUSED},
        {"refused at create", EngineAnswer{500, R"({"message":"no"})"}, std::nullopt,
         RADIAL_E_REFUSED},
        {"not running at create", EngineAnswer{409, R"({"message":"container x is not running"})"},
         std::nullopt, RADIAL_E_NOT_FOUND},
        {"paused at start", std::nullopt, paused, RADIAL_E_REFUSED},
        {"failed to start", std::nullopt,
         EngineAnswer{500, R"({"message":"OCI runtime exec failed"})"}, RADIAL_E_REFUSED},
    };
    for (const auto& k : cases) {
        ExecScript script;
        script.create = k.create;
        script.start = k.start;
        FakeEngine engine(route(script));
        Collected c;
        auto e = radial::test::error_of([&] { exec_with_secret(engine, c); });
        EXPECT_EQ(e.code(), k.code) << k.name << ": " << e.what();
        if (k.code == RADIAL_E_REFUSED) {
            EXPECT_NE(std::string(e.what()).find("nothing of the exec ran"), std::string::npos)
                << k.name << ": " << e.what();
        }
    }
}

} // namespace
} // namespace radial::docker::session_test
