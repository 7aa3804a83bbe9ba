// The Engine API client over TLS (docs/design.md §13.10) against a scripted engine
// (tests/support/fake_engine.h) behind a real TLS endpoint: socat, with a CA, a server certificate
// for 127.0.0.1 and a client certificate the openssl CLI makes at test time. Plain calls, a
// streamed body, and a hijacked attach stream whose blocked read another thread's stop() ends.
// No Docker Engine.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "../../support/fake_engine.h"
#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/temp_dir.h"
#include "engine_api/engine_client.h"
#include "engine_api/stream_frames.h"

namespace radial::engine_api {
namespace {

namespace bp = boost::process;

void openssl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"openssl"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = radial::test::run_process(argv);
    ASSERT_EQ(r.exit_code, 0) << "openssl " << args.at(0) << ": " << r.err;
}

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

// socat in front of `unix_path`, this test's own child; killed with its per-connection children.
class TlsProxy {
public:
    TlsProxy(const radial::test::TempDir& certs, const std::string& unix_path)
        : port_(free_port()), log_(certs / "socat.log") {
        socat_ = bp::child(bp::search_path("socat"), "-d",
                           "OPENSSL-LISTEN:" + std::to_string(port_) +
                               ",bind=127.0.0.1,reuseaddr,fork,cert=" + (certs / "server.pem") +
                               ",key=" + (certs / "server-key.pem") +
                               ",cafile=" + (certs / "ca.pem") + ",verify=1",
                           "UNIX-CONNECT:" + unix_path, bp::std_in<bp::null, bp::std_out> bp::null,
                           bp::std_err > log_);
        listening_ =
            radial::test::wait_until([this] { return accepts(port_); }, std::chrono::seconds(20));
    }
    ~TlsProxy() {
        for (pid_t child : radial::test::children_of(socat_.id())) ::kill(child, SIGKILL);
        std::error_code ec;
        socat_.terminate(ec);
        socat_.wait(ec);
    }
    bool listening() const { return listening_; }
    std::string address() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
    std::string log() const { return radial::test::read_file(log_); }

private:
    int port_;
    std::string log_;
    bp::child socat_;
    bool listening_ = false;
};

TEST(EngineClientTls, CallsStreamsAndAStoppedAttachWorkOverTls) {
    radial::test::TempDir certs("radial-tls");
    openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", certs / "ca-key.pem", "-out", certs / "ca.pem", "-days", "2", "-subj",
             "/CN=radial-test-ca"});
    for (std::string who : {"server", "client"}) {
        openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", certs / (who + "-key.pem"), "-out", certs / (who + ".csr"), "-subj",
                 "/CN=" + who});
        certs.write(who + ".ext", who == "server"
                                      ? "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
                                      : "extendedKeyUsage=clientAuth\n");
        openssl({"x509", "-req", "-in", certs / (who + ".csr"), "-CA", certs / "ca.pem", "-CAkey",
                 certs / "ca-key.pem", "-CAcreateserial", "-out", certs / (who + ".pem"), "-days",
                 "2", "-extfile", certs / (who + ".ext")});
    }

    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    // Lets the engine's attach go before the engine joins it, however the test ends.
    struct Release {
        std::promise<void>& p;
        ~Release() { p.set_value(); }
    };
    radial::test::FakeEngine engine([&](const std::string&, const std::string& path) {
        if (path == "/version") return radial::test::EngineAnswer(200, R"({"ApiVersion":"1.41"})");
        if (path.starts_with("/v1.41/containers/x/logs"))
            return radial::test::EngineAnswer(200, "a log body over TLS");
        radial::test::EngineAnswer a;
        a.hijack = true;
        a.frames = encode_frame(1, "attached over TLS\n");
        a.close_after = [released] { released.wait(); };
        return a;
    });
    Release release_at_end{release};
    TlsProxy proxy(certs, engine.address().substr(7));
    ASSERT_TRUE(proxy.listening()) << proxy.log();

    EngineAddress address = parse_engine_address(proxy.address());
    address.tls = EngineTls{certs / "ca.pem", certs / "client.pem", certs / "client-key.pem", false,
                            "the test's certificates"};
    EngineClient c(address, std::chrono::milliseconds(10000));
    EXPECT_EQ(c.version(), (ApiVersion{1, 41}));

    auto logs = c.open_stream("/containers/x/logs?follow=1&stdout=1", "reading logs");
    std::string chunk, body;
    while (logs->read(chunk)) body += chunk;
    EXPECT_EQ(body, "a log body over TLS");

    auto stream = c.open_hijacked("/containers/x/attach?stream=1", "attaching");
    std::string attached;
    while (attached.size() < encode_frame(1, "attached over TLS\n").size()) {
        ASSERT_TRUE(stream->read(chunk)) << "the attach stream ended early";
        attached += chunk;
    }
    EXPECT_EQ(attached, encode_frame(1, "attached over TLS\n"));

    // The engine holds the connection open: the next read blocks until stop() from this thread
    // shuts the socket under the TLS layer down.
    std::promise<void> reading;
    auto reader = std::async(std::launch::async, [&] {
        reading.set_value();
        std::string more;
        return stream->read(more);
    });
    reading.get_future().wait();
    stream->stop();
    ASSERT_EQ(reader.wait_for(std::chrono::seconds(30)), std::future_status::ready)
        << "stop() did not wake the blocked TLS read";
    EXPECT_FALSE(reader.get());
}

} // namespace
} // namespace radial::engine_api
