// `radiald turn` against a TLS engine (docs/design.md §13.10): the real binary, the real docker
// plugin, and the real engine behind a real TLS endpoint — socat listening with a server
// certificate made at test time by the openssl CLI (CA, server certificate for 127.0.0.1, client
// certificate), asking for a client certificate, and forwarding to the engine's unix socket. A turn
// runs through $DOCKER_HOST + $DOCKER_TLS_VERIFY + $DOCKER_CERT_PATH and through a docker context;
// a wrong CA, a client certificate the endpoint does not trust and a missing client certificate
// fail with a message saying so, and fail closed (no turn runs on the default socket instead).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/temp_dir.h"
#include "../../support/tls_endpoint.h"

namespace radial {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

// The docker CLI's variables, unset for every turn here unless the test sets them.
const std::vector<std::string> kDockerEnv = {"DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH",
                                             "DOCKER_CONTEXT", "DOCKER_CONFIG"};

// The engine's unix socket, the one the suite's other tests use.
std::string engine_socket() {
    const char* h = std::getenv("DOCKER_HOST");
    if (h != nullptr && std::string(h).starts_with("unix://")) return std::string(h).substr(7);
    return "/var/run/docker.sock";
}

// The certificates and the TLS endpoint, shared by the suite's tests
// (tests/support/tls_endpoint.h).
class TlsEngine : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        certs_ = std::make_unique<test::TestCertificates>();
        endpoint_ = std::make_unique<test::TlsEndpoint>(*certs_, engine_socket());
        ASSERT_TRUE(endpoint_->listening()) << endpoint_->log();
    }
    static void TearDownTestSuite() {
        endpoint_.reset();
        certs_.reset();
    }

    // A directory holding ca.pem (from `ca`) and, when `client` names one, its certificate and
    // key as cert.pem and key.pem.
    static std::unique_ptr<test::TempDir> cert_dir(const std::string& ca,
                                                   const std::string& client) {
        auto c = std::make_unique<test::TempDir>("radial-certs");
        fs::copy_file(*certs_ / (ca + ".pem"), *c / "ca.pem");
        if (!client.empty()) {
            fs::copy_file(*certs_ / (client + ".pem"), *c / "cert.pem");
            fs::copy_file(*certs_ / (client + "-key.pem"), *c / "key.pem");
        }
        return c;
    }

    static int forwarded() { return endpoint_->forwarded(); }
    static std::string address() { return endpoint_->address(); }

    // `radiald turn` with exactly `env` of the docker CLI's variables (the rest unset).
    test::TurnRun turn(const std::map<std::string, std::string>& env, const std::string& marker) {
        const std::string instance = test::unique_instance_id("tls");
        setup_ = std::make_unique<test::RadialdSetup>("instanceId = \"" + instance + "\"\n");
        std::string record = setup_->dir() / "record.json";
        std::vector<std::string> argv{RADIALD_PATH,
                                      "turn",
                                      "--config",
                                      setup_->config(),
                                      "--image",
                                      RADIAL_TEST_IMAGE,
                                      "--record-file",
                                      record,
                                      "--",
                                      "sh",
                                      "-c",
                                      "echo " + marker};
        std::vector<std::string> unset;
        for (const auto& name : kDockerEnv)
            if (!env.contains(name)) unset.push_back(name);
        test::TurnRun t;
        t.result = test::run_process(argv, env, std::chrono::seconds(120), unset);
        std::string text = test::read_file(record);
        if (!text.empty()) t.record = nlohmann::json::parse(text);
        return t;
    }

    static std::unique_ptr<test::TestCertificates> certs_;
    static std::unique_ptr<test::TlsEndpoint> endpoint_;
    std::unique_ptr<test::RadialdSetup> setup_;
};

std::unique_ptr<test::TestCertificates> TlsEngine::certs_;
std::unique_ptr<test::TlsEndpoint> TlsEngine::endpoint_;

TEST_F(TlsEngine, ATurnRunsThroughDockerHostWithDockerTlsVerify) {
    auto certs = cert_dir("ca", "client");
    test::TempDir config("radial-docker-config"); // no context of the user's own
    const int before = forwarded();
    const std::string marker = test::unique_instance_id("over-tls-");
    auto t = turn({{"DOCKER_HOST", address()},
                   {"DOCKER_TLS_VERIFY", "1"},
                   {"DOCKER_CERT_PATH", certs->path()},
                   {"DOCKER_CONFIG", config.path()}},
                  marker);
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, marker + "\n") << t.result.err;
    EXPECT_EQ(t.record["status"], "succeeded");
    // The engine was reached through the TLS endpoint: create, attach (hijacked), start, wait
    // and remove each came over a connection socat forwarded.
    EXPECT_GE(forwarded() - before, 4) << endpoint_->log();
}

TEST_F(TlsEngine, ATurnRunsThroughTheCurrentDockerContext) {
    test::TempDir config("radial-docker-config");
    const std::string name = "radial-tls-" + test::unique_instance_id("ctx");
    // The docker CLI's layout: meta and TLS material under the SHA-256 of the context's name.
    auto sha =
        test::run_process({"sh", "-c", "printf %s \"$0\" | sha256sum | cut -d' ' -f1", name});
    ASSERT_EQ(sha.exit_code, 0) << sha.err;
    const std::string hash = sha.out.substr(0, 64);
    fs::create_directories(config / ("contexts/meta/" + hash));
    fs::create_directories(config / ("contexts/tls/" + hash + "/docker"));
    config.write(
        "contexts/meta/" + hash + "/meta.json",
        nlohmann::json{{"Name", name},
                       {"Metadata", nlohmann::json::object()},
                       {"Endpoints", {{"docker", {{"Host", address()}, {"SkipTLSVerify", false}}}}}}
            .dump());
    auto certs = cert_dir("ca", "client");
    for (const char* f : {"ca.pem", "cert.pem", "key.pem"})
        fs::copy_file(*certs / f, config / ("contexts/tls/" + hash + "/docker/" + f));
    config.write("config.json", nlohmann::json{{"currentContext", name}}.dump());
    const int before = forwarded();
    const std::string marker = test::unique_instance_id("via-context-");
    auto t = turn({{"DOCKER_CONFIG", config.path()}}, marker);
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, marker + "\n") << t.result.err;
    EXPECT_EQ(t.record["status"], "succeeded");
    EXPECT_GE(forwarded() - before, 4) << endpoint_->log();
}

TEST_F(TlsEngine, AWrongCaFailsClosedSayingTheEnginesCertificateFailedVerification) {
    auto certs = cert_dir("other-ca", "client");
    test::TempDir config("radial-docker-config");
    const int before = forwarded();
    const std::string marker = test::unique_instance_id("never-");
    auto t = turn({{"DOCKER_HOST", address()},
                   {"DOCKER_TLS_VERIFY", "1"},
                   {"DOCKER_CERT_PATH", certs->path()},
                   {"DOCKER_CONFIG", config.path()}},
                  marker);
    EXPECT_NE(t.result.exit_code, 0);
    EXPECT_THAT(t.result.out, Not(HasSubstr(marker))); // no turn on the default socket instead
    EXPECT_THAT(t.result.err, HasSubstr(address()));
    EXPECT_THAT(t.result.err, HasSubstr("the engine's certificate failed verification"));
    EXPECT_THAT(t.result.err, HasSubstr(*certs / "ca.pem"));
    EXPECT_EQ(forwarded(), before);
}

TEST_F(TlsEngine, AClientCertificateTheEngineDoesNotTrustFailsClosedNamingIt) {
    auto certs = cert_dir("ca", "stranger");
    test::TempDir config("radial-docker-config");
    const int before = forwarded();
    const std::string marker = test::unique_instance_id("never-");
    auto t = turn({{"DOCKER_HOST", address()},
                   {"DOCKER_TLS_VERIFY", "1"},
                   {"DOCKER_CERT_PATH", certs->path()},
                   {"DOCKER_CONFIG", config.path()}},
                  marker);
    EXPECT_NE(t.result.exit_code, 0);
    EXPECT_THAT(t.result.out, Not(HasSubstr(marker)));
    EXPECT_THAT(t.result.err, HasSubstr(address()));
    EXPECT_THAT(t.result.err, HasSubstr("client certificate '" + (*certs / "cert.pem") + "'"));
    EXPECT_EQ(forwarded(), before);
}

TEST_F(TlsEngine, NoClientCertificateFailsClosedSayingNoneWasSent) {
    auto certs = cert_dir("ca", "");
    test::TempDir config("radial-docker-config");
    const int before = forwarded();
    const std::string marker = test::unique_instance_id("never-");
    auto t = turn({{"DOCKER_HOST", address()},
                   {"DOCKER_TLS_VERIFY", "1"},
                   {"DOCKER_CERT_PATH", certs->path()},
                   {"DOCKER_CONFIG", config.path()}},
                  marker);
    EXPECT_NE(t.result.exit_code, 0);
    EXPECT_THAT(t.result.out, Not(HasSubstr(marker)));
    EXPECT_THAT(t.result.err, HasSubstr(address()));
    EXPECT_THAT(t.result.err, HasSubstr("it wants a client certificate and none was sent"));
    EXPECT_THAT(t.result.err, HasSubstr(certs->path()));
    EXPECT_EQ(forwarded(), before);
}

} // namespace
} // namespace radial
