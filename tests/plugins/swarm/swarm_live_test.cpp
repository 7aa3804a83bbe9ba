// radiald end to end on the swarm runtime (plugins/swarm): a turn runs as a one-task swarm job on
// the one-node swarm of the `swarm` fixture, with a secret, and posts a record over the tcp turn
// socket; its service and swarm secret are gone afterwards. Each test looks only at the services
// and secrets labelled with its own turn's label.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/tls_endpoint.h"

namespace radial {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kSwarmRun = "containerRuntime = \"swarm\"\n";
const std::string kSwarmTable = "[run.swarm]\npull = \"never\"\nhostNetwork = true\n";

const std::string kPost = R"(post() { # post TOKEN BODY
  curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $1" \
       -H 'Content-Type: application/json' --data-binary "$2" \
       "http://${RADIAL_TURN_SOCKET#tcp://}/v1/records"
}
)";

// The ids of the swarm services or secrets ("service" / "secret") labelled exactly `label`.
std::string labelled(const std::string& kind, const std::string& label) {
    auto r =
        test::run_process({"docker", kind, "ls", "-q", "--filter", "label=radial.label=" + label});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
}

TEST(SwarmLive, ATurnWithASecretPostsARecordOverTcpAndLeavesNothing) {
    test::RadialdSetup s(kSwarmRun, kSwarmTable);
    const std::string key = "swarm-sk-" + std::to_string(::getpid()) + "-Zq81";
    auto t =
        s.turn({"--secret", "MODEL_KEY"},
               {"sh", "-c", kPost + R"(case "$RADIAL_TURN_SOCKET" in tcp://*) ;; *) exit 9;; esac
printf 'key=%s\n' "$MODEL_KEY"
env | grep -c '^MODEL_KEY=' >&2
post "$RADIAL_TURN_TOKEN" '{"type":"result","payload":{"answer":42}}'
exit 3)"},
               {{"MODEL_KEY", key}});
    EXPECT_EQ(t.result.exit_code, 3) << t.result.err;
    // The secret reached the workload (and was masked on the way out) ...
    EXPECT_THAT(t.result.out, HasSubstr("key=[REDACTED:MODEL_KEY]\n")) << t.result.err;
    EXPECT_THAT(t.result.err, HasSubstr("1\n"));
    EXPECT_THAT(t.result.out, HasSubstr("201\n")) << "the record was not accepted";
    EXPECT_THAT(t.result.out + t.result.err + t.record.dump(), Not(HasSubstr(key)));
    ASSERT_TRUE(t.record.is_object()) << t.result.err;
    EXPECT_EQ(t.record["exitCode"], 3) << t.record.dump();
    auto j = s.records(t.record["turnId"]);
    ASSERT_TRUE(j.is_object());
    ASSERT_EQ(j["records"].size(), 1u) << j.dump();
    EXPECT_EQ(j["records"][0]["payload"]["answer"], 42);
    // ... and neither the service nor the swarm secret outlived the turn.
    std::string label = t.record.value("label", "");
    ASSERT_FALSE(label.empty()) << t.record.dump();
    EXPECT_EQ(labelled("service", label), "");
    EXPECT_EQ(labelled("secret", label), "");
}

// A manager's engine over TLS (docs/design.md §13.10): run.swarm.host names a real TLS endpoint
// in front of the engine, the certificates come from $DOCKER_TLS_VERIFY and $DOCKER_CERT_PATH,
// and the turn's followed log stream comes over TLS too.
TEST(SwarmLive, ATurnRunsOnAManagerReachedOverTls) {
    test::TestCertificates certs;
    const char* h = std::getenv("DOCKER_HOST");
    const std::string socket = h != nullptr && std::string(h).starts_with("unix://")
                                   ? std::string(h).substr(7)
                                   : "/var/run/docker.sock";
    test::TlsEndpoint endpoint(certs, socket);
    ASSERT_TRUE(endpoint.listening()) << endpoint.log();
    test::TempDir cert_path("radial-certs");
    for (auto [from, to] : {std::pair{"ca.pem", "ca.pem"}, std::pair{"client.pem", "cert.pem"},
                            std::pair{"client-key.pem", "key.pem"}})
        cert_path.write(to, test::read_file(certs / from));
    test::RadialdSetup s(kSwarmRun, kSwarmTable + "host = \"" + endpoint.address() + "\"\n");
    const std::string marker = "swarm-over-tls-" + std::to_string(::getpid());
    auto t = s.turn({}, {"sh", "-c", "echo " + marker + "; echo to-stderr >&2; exit 4"},
                    {{"DOCKER_TLS_VERIFY", "1"}, {"DOCKER_CERT_PATH", cert_path.path()}});
    EXPECT_EQ(t.result.exit_code, 4) << t.result.err;
    EXPECT_THAT(t.result.out, HasSubstr(marker + "\n")) << t.result.err;
    EXPECT_THAT(t.result.err, HasSubstr("to-stderr\n"));
    EXPECT_GT(endpoint.forwarded(), 0) << endpoint.log();
    std::string label = t.record.value("label", "");
    ASSERT_FALSE(label.empty()) << t.record.dump();
    EXPECT_EQ(labelled("service", label), "");
}

TEST(SwarmLive, HostPortsAreRefusedBeforeAnyServiceWithoutHostNetwork) {
    test::RadialdSetup s(kSwarmRun, "[run.swarm]\npull = \"never\"\n");
    auto t = s.turn({}, {"sh", "-c", "echo should-not-run"});
    EXPECT_NE(t.result.exit_code, 0);
    EXPECT_THAT(t.result.out, Not(HasSubstr("should-not-run")));
    EXPECT_THAT(t.result.err + t.record.dump(), HasSubstr("run.swarm.hostNetwork"));
}

TEST(SwarmLive, AnImageTheManagerDoesNotHaveIsNotFoundWithoutARegistry) {
    test::RadialdSetup s(kSwarmRun, kSwarmTable);
    auto t = s.turn({}, {"true"}, {}, "radial/no-such-image-" + std::to_string(::getpid()) + ":x");
    EXPECT_NE(t.result.exit_code, 0);
    EXPECT_THAT(t.result.err + t.record.dump(), HasSubstr("is not on the manager's engine"));
}

TEST(SwarmLive, ATaskNoNodeCanTakeTimesOutSaysWhyAndLeavesNothing) {
    // A constraint no node meets: the task stays pending, the scheduler's reason is logged, the
    // timeout ends the turn and the service and its secret are removed.
    test::RadialdSetup s(kSwarmRun, kSwarmTable + "constraints = [\"node.labels.radial-test-" +
                                        std::to_string(::getpid()) + "==never\"]\n");
    auto t = s.turn({"--timeout", "3s", "--secret", "MODEL_KEY"}, {"sh", "-c", "echo ran"},
                    {{"MODEL_KEY", "pending-secret-" + std::to_string(::getpid())}});
    EXPECT_NE(t.result.exit_code, 0) << t.result.err;
    EXPECT_THAT(t.result.out, Not(HasSubstr("ran")));
    EXPECT_THAT(t.result.err, HasSubstr("no suitable node"));
    ASSERT_TRUE(t.record.is_object()) << t.result.err;
    EXPECT_EQ(t.record["status"], "timed_out") << t.record.dump();
    std::string label = t.record.value("label", "");
    ASSERT_FALSE(label.empty()) << t.record.dump();
    EXPECT_EQ(labelled("service", label), "");
    EXPECT_EQ(labelled("secret", label), "");
}

} // namespace
} // namespace radial
