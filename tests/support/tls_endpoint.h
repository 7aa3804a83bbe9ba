// tests/support/tls_endpoint.h — a real TLS endpoint in front of a unix-socket engine, for tests of
// TLS engines (docs/design.md §13.10): certificates made at test time by the openssl CLI in the
// test's own directory, and socat listening on a port of 127.0.0.1 of its own, asking for a
// client certificate and forwarding each connection to the engine's socket. socat is the test's
// child, killed by pid (with the children it forked per connection) when the endpoint goes.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host_processes.h"
#include "process_runner.h"
#include "temp_dir.h"

namespace radial::test {

// A directory of PEM files: two CAs ("ca", "other-ca"), and signed by "ca" a server certificate
// for 127.0.0.1 ("server") and a client certificate ("client"); "stranger" is a client certificate
// signed by "other-ca". Each <name>.pem has its key in <name>-key.pem. Failures are test failures.
class TestCertificates {
public:
    TestCertificates() : dir_("radial-tls") {
        make_ca("ca");
        make_ca("other-ca");
        make_signed("ca", "server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
        make_signed("ca", "client", "extendedKeyUsage=clientAuth\n");
        make_signed("other-ca", "stranger", "extendedKeyUsage=clientAuth\n");
    }
    const TempDir& dir() const { return dir_; }
    std::string operator/(const std::string& name) const { return dir_ / name; }

private:
    void openssl(const std::vector<std::string>& args) {
        std::vector<std::string> argv{"openssl"};
        argv.insert(argv.end(), args.begin(), args.end());
        auto r = run_process(argv);
        EXPECT_EQ(r.exit_code, 0) << "openssl " << args.at(0) << ": " << r.err;
    }
    void make_ca(const std::string& name) {
        openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-nodes", "-keyout", dir_ / (name + "-key.pem"), "-out", dir_ / (name + ".pem"),
                 "-days", "2", "-subj", "/CN=" + name});
    }
    void make_signed(const std::string& ca, const std::string& name, const std::string& ext) {
        openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", dir_ / (name + "-key.pem"), "-out", dir_ / (name + ".csr"), "-subj",
                 "/CN=" + name});
        dir_.write(name + ".ext", ext);
        openssl({"x509", "-req", "-in", dir_ / (name + ".csr"), "-CA", dir_ / (ca + ".pem"),
                 "-CAkey", dir_ / (ca + "-key.pem"), "-CAcreateserial", "-out",
                 dir_ / (name + ".pem"), "-days", "2", "-extfile", dir_ / (name + ".ext")});
    }

    TempDir dir_;
};

// socat: TLS with the "server" certificate on 127.0.0.1:<a free port>, verifying clients against
// "ca", forwarding to `unix_path`.
class TlsEndpoint {
public:
    TlsEndpoint(const TestCertificates& certs, const std::string& unix_path)
        : port_(free_port()), log_(certs / ("socat-" + std::to_string(port_) + ".log")) {
        socat_.emplace(
            std::vector<std::string>{
                "socat", "-d", "-d",
                "OPENSSL-LISTEN:" + std::to_string(port_) + ",bind=127.0.0.1,reuseaddr,fork,cert=" +
                    (certs / "server.pem") + ",key=" + (certs / "server-key.pem") +
                    ",cafile=" + (certs / "ca.pem") + ",verify=1",
                "UNIX-CONNECT:" + unix_path},
            log_);
        listening_ =
            port_ > 0 && wait_until([this] { return accepts(); }, std::chrono::seconds(20));
    }
    ~TlsEndpoint() {
        for (pid_t child : children_of(socat_->pid())) ::kill(child, SIGKILL);
        socat_->signal(SIGKILL);
        socat_->wait();
    }
    TlsEndpoint(const TlsEndpoint&) = delete;
    TlsEndpoint& operator=(const TlsEndpoint&) = delete;

    // Whether socat accepted a connection within 20 s of starting (else see log()).
    bool listening() const { return listening_; }
    std::string address() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
    std::string log() const { return read_file(log_); }
    // How many connections socat has forwarded to the engine so far: a TLS handshake that failed
    // never gets that far.
    int forwarded() const {
        const std::string text = log(), mark = "starting data transfer loop";
        int n = 0;
        for (auto at = text.find(mark); at != std::string::npos; at = text.find(mark, at + 1)) ++n;
        return n;
    }

private:
    static sockaddr_in loopback(int port) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        return a;
    }
    // A port of 127.0.0.1 nobody listens on now (bound to port 0, then released for socat).
    static int free_port() {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a = loopback(0);
        socklen_t len = sizeof a;
        int port = -1;
        if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
            port = ntohs(a.sin_port);
        if (fd >= 0) ::close(fd);
        return port;
    }
    bool accepts() const {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a = loopback(port_);
        bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        if (fd >= 0) ::close(fd);
        return ok;
    }

    int port_;
    std::string log_;
    std::optional<BackgroundProcess> socat_;
    bool listening_ = false;
};

} // namespace radial::test
