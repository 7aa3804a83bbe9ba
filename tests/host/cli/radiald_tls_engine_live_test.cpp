// `radiald turn` against a TLS engine (docs/design.md §13.10): the real binary, the real docker
// plugin, and the real engine behind a real TLS endpoint — socat listening with a server
// certificate made at test time by the openssl CLI (CA, server certificate for 127.0.0.1, client
// certificate), asking for a client certificate, and forwarding to the engine's unix socket. A turn
// runs through $DOCKER_HOST + $DOCKER_TLS_VERIFY + $DOCKER_CERT_PATH and through a docker context;
// a wrong CA and a missing client certificate fail with a message saying so, and fail closed (no
// turn runs on the default socket instead).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
namespace bp = boost::process;

// The docker CLI's variables, unset for every turn here unless the test sets them.
const std::vector<std::string> kDockerEnv = {"DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH",
                                             "DOCKER_CONTEXT", "DOCKER_CONFIG"};

void openssl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"openssl"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = test::run_process(argv);
    ASSERT_EQ(r.exit_code, 0) << "openssl " << args.at(0) << ": " << r.err;
}

// A CA and a certificate it signs, as PEM files in `dir`: <name>.pem and <name>-key.pem.
void make_ca(const test::TempDir& dir, const std::string& name) {
    openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", dir / (name + "-key.pem"), "-out", dir / (name + ".pem"), "-days", "2",
             "-subj", "/CN=" + name});
}
void make_signed(const test::TempDir& dir, const std::string& ca, const std::string& name,
                 const std::string& extensions) {
    openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", dir / (name + "-key.pem"), "-out", dir / (name + ".csr"), "-subj",
             "/CN=" + name});
    dir.write(name + ".ext", extensions);
    openssl({"x509", "-req", "-in", dir / (name + ".csr"), "-CA", dir / (ca + ".pem"), "-CAkey",
             dir / (ca + "-key.pem"), "-CAcreateserial", "-out", dir / (name + ".pem"), "-days",
             "2", "-extfile", dir / (name + ".ext")});
}

// A port of 127.0.0.1 nobody listens on now (bound to port 0, then released for socat).
int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
        return -1;
    ::close(fd);
    return ntohs(a.sin_port);
}

bool accepts(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    if (fd >= 0) ::close(fd);
    return ok;
}

// The engine's unix socket, the one the suite's other tests use.
std::string engine_socket() {
    const char* h = std::getenv("DOCKER_HOST");
    if (h != nullptr && std::string(h).starts_with("unix://")) return std::string(h).substr(7);
    return "/var/run/docker.sock";
}

// The certificates and the TLS endpoint, shared by the suite's tests; socat is this test's own
// child, killed (with the children it forked per connection) by pid at the end.
class TlsEngine : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = std::make_unique<test::TempDir>("radial-tls");
        const auto& d = *dir_;
        make_ca(d, "ca");
        make_ca(d, "other-ca");
        make_signed(d, "ca", "server",
                    "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
        make_signed(d, "ca", "client", "extendedKeyUsage=clientAuth\n");
        make_signed(d, "other-ca", "stranger", "extendedKeyUsage=clientAuth\n");
        port_ = free_port();
        ASSERT_GT(port_, 0);
        log_ = d / "socat.log";
        socat_ = std::make_unique<bp::child>(
            bp::search_path("socat"), "-d", "-d",
            "OPENSSL-LISTEN:" + std::to_string(port_) +
                ",bind=127.0.0.1,reuseaddr,fork,cert=" + (d / "server.pem") +
                ",key=" + (d / "server-key.pem") + ",cafile=" + (d / "ca.pem") + ",verify=1",
            "UNIX-CONNECT:" + engine_socket(), bp::std_in<bp::null, bp::std_out> bp::null,
            bp::std_err > log_);
        ASSERT_TRUE(test::wait_until([] { return accepts(port_); }, std::chrono::seconds(20)))
            << "socat never listened on 127.0.0.1:" << port_ << ": " << test::read_file(log_);
    }
    static void TearDownTestSuite() {
        if (socat_) {
            for (pid_t child : test::children_of(socat_->id())) ::kill(child, SIGKILL);
            std::error_code ec;
            socat_->terminate(ec);
            socat_->wait(ec);
            socat_.reset();
        }
        dir_.reset();
    }

    // A directory holding ca.pem (from `ca`) and, when `client` names one, its certificate and
    // key as cert.pem and key.pem.
    static std::unique_ptr<test::TempDir> cert_dir(const std::string& ca,
                                                   const std::string& client) {
        auto c = std::make_unique<test::TempDir>("radial-certs");
        fs::copy_file(*dir_ / (ca + ".pem"), *c / "ca.pem");
        if (!client.empty()) {
            fs::copy_file(*dir_ / (client + ".pem"), *c / "cert.pem");
            fs::copy_file(*dir_ / (client + "-key.pem"), *c / "key.pem");
        }
        return c;
    }

    // How many connections socat has forwarded to the engine so far (a TLS handshake that
    // failed never gets this far).
    static int forwarded() {
        std::string log = test::read_file(log_);
        int n = 0;
        for (auto at = log.find("starting data transfer loop"); at != std::string::npos;
             at = log.find("starting data transfer loop", at + 1))
            ++n;
        return n;
    }

    static std::string address() { return "tcp://127.0.0.1:" + std::to_string(port_); }

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

    static std::unique_ptr<test::TempDir> dir_;
    static int port_;
    static std::string log_;
    static std::unique_ptr<bp::child> socat_;
    std::unique_ptr<test::RadialdSetup> setup_;
};

std::unique_ptr<test::TempDir> TlsEngine::dir_;
int TlsEngine::port_ = 0;
std::string TlsEngine::log_;
std::unique_ptr<bp::child> TlsEngine::socat_;

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
    EXPECT_GE(forwarded() - before, 4) << test::read_file(log_);
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
    EXPECT_GE(forwarded() - before, 4) << test::read_file(log_);
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
