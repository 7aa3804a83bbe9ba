// tests/host/egress/egress_hello_retry_test.cpp — tunnels through the egress broker
// (host/egress/egress_broker.h) to a real TLS 1.3 server: openssl s_server on 127.0.0.2 with two
// virtual hosts (pkg.test, and other.test by its -servername), taking only P-256 key shares, so a
// client offering another one gets a HelloRetryRequest and sends a second ClientHello, which the
// server serves. Python's ssl module is the ordinary client; a client built here the attacker.
// The openssl CLI and python3 come with scripts/setup.sh; nothing leaves 127.0.0.0/8.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/temp_dir.h"
#include "../../support/tls_endpoint.h"
#include "egress/egress_broker.h"

namespace radial::egress {
namespace {

using namespace std::chrono_literals;

std::string u16(std::size_t n) { return {static_cast<char>(n >> 8), static_cast<char>(n & 0xff)}; }
std::string u24(std::size_t n) { return static_cast<char>(n >> 16) + u16(n & 0xffff); }

const std::string kRetryRandom(
    "\xcf\x21\xad\x74\xe5\x9a\x61\x11\xbe\x1d\x8c\x02\x1e\x65\xb8\x91"
    "\xc2\xa2\x11\x16\x7a\xbb\x8c\x5e\x07\x9e\x09\xe2\xc8\xa8\x33\x9c",
    32);

// A TLS 1.3 ClientHello naming `sni`, for P-256 only: without a key share (the server asks for
// one with a HelloRetryRequest), or with one (the curve's generator, a valid public key).
std::string tls13_hello(const std::string& sni, bool share) {
    const std::string entry = std::string(1, '\0') + u16(sni.size()) + sni;
    const std::string names = u16(entry.size()) + entry;
    std::string ext = u16(0) + u16(names.size()) + names;
    ext += u16(43) + u16(3) + std::string("\x02\x03\x04", 3);     // supported_versions
    ext += u16(10) + u16(4) + u16(2) + u16(0x17);                 // groups: P-256
    ext += u16(13) + u16(6) + u16(4) + u16(0x0403) + u16(0x0804); // signatures
    const std::string g =
        std::string(1, '\x04') + std::string(
                                     "\x6b\x17\xd1\xf2\xe1\x2c\x42\x47\xf8\xbc\xe6\xe5\x63\xa4"
                                     "\x40\xf2\x77\x03\x7d\x81\x2d\xeb\x33\xa0\xf4\xa1\x39\x45"
                                     "\xd8\x98\xc2\x96\x4f\xe3\x42\xe2\xfe\x1a\x7f\x9b\x8e\xe7"
                                     "\xeb\x4a\x7c\x0f\x9e\x16\x2b\xce\x33\x57\x6b\x31\x5e\xce"
                                     "\xcb\xb6\x40\x68\x37\xbf\x51\xf5",
                                     64);
    const std::string shares = share ? u16(0x17) + u16(g.size()) + g : std::string();
    ext += u16(51) + u16(shares.size() + 2) + u16(shares.size()) + shares; // key_share
    const std::string body = "\x03\x03" + std::string(32, 'r') + '\x20' + std::string(32, 's') +
                             u16(2) + std::string("\x13\x01\x01\x00", 4) + u16(ext.size()) + ext;
    const std::string hs = '\x01' + u24(body.size()) + body;
    return std::string("\x16\x03\x01", 3) + u16(hs.size()) + hs;
}

// What the handshake records among `bytes` (whole records only) hold: ServerHellos that are
// HelloRetryRequests, and those that are not.
struct ServerHellos {
    int retries = 0, hellos = 0;
};
ServerHellos server_hellos(const std::string& bytes) {
    ServerHellos out;
    for (std::size_t at = 0; bytes.size() - at >= 5;) {
        const std::size_t len = (static_cast<unsigned char>(bytes[at + 3]) << 8) |
                                static_cast<unsigned char>(bytes[at + 4]);
        if (bytes.size() - at - 5 < len) break;
        if (bytes[at] == '\x16' && len >= 4 + 2 + 32 && bytes[at + 5] == '\x02')
            ++(bytes.compare(at + 5 + 4 + 2, 32, kRetryRandom) == 0 ? out.retries : out.hellos);
        at += 5 + len;
    }
    return out;
}

class EgressHelloRetryTest : public ::testing::Test {
protected:
    EgressHelloRetryTest() : dir_("radial-egress-hrr") {
        log_ = dir_ / "s_server.log";
        // -msg prints each handshake message and the names clients ask for; to stderr, a file.
        // Port 0: the server binds a free port itself and says which ("ACCEPT 127.0.0.2:PORT"),
        // so no other process can take it between a probe and the bind.
        const std::string accept = "-accept 127.0.0.2:0";
        server_.emplace(
            std::vector<std::string>{
                "sh", "-c",
                "exec openssl s_server " + accept + " -tls1_3 -groups P-256 -www -msg -cert '" +
                    (certs_ / "server.pem") + "' -key '" + (certs_ / "server-key.pem") +
                    "' -servername other.test -cert2 '" + (certs_ / "client.pem") + "' -key2 '" +
                    (certs_ / "client-key.pem") + "' 1>&2"},
            log_);
        listening_ = test::wait_until([&] { return (port_ = accepting_port()) != 0; }, 20s);
        dest_ = "pkg.test:" + std::to_string(port_);
        EgressCeiling ceiling;
        ceiling.allow_ranges.push_back(parse_range("127.0.0.2/32"));
        ceiling.hosts["pkg.test"] = "127.0.0.2";
        ceiling.allow.push_back(parse_allow_rule(dest_));
        EgressBrokerOptions o;
        o.unix_path = dir_ / "egress.sock";
        o.rules = narrow(ceiling, {dest_});
        o.ceiling = std::move(ceiling);
        o.turn_id = "turn-1";
        o.on_receipt = [this](const Receipt& r) {
            std::lock_guard l(m_);
            receipts_.push_back(r);
            cv_.notify_all();
        };
        broker_ = std::make_unique<EgressBroker>(std::move(o));
    }
    ~EgressHelloRetryTest() override { broker_.reset(); }

    // The port of the server's "ACCEPT 127.0.0.2:PORT" line, once it has written it whole; or 0.
    int accepting_port() const {
        const std::string text = test::read_file(log_), said = "ACCEPT 127.0.0.2:";
        const auto at = text.find(said);
        if (at == std::string::npos) return 0;
        const auto end = text.find('\n', at);
        if (end == std::string::npos) return 0;
        const std::string digits = text.substr(at + said.size(), end - at - said.size());
        if (digits.empty() || digits.size() > 5 ||
            digits.find_first_not_of("0123456789") != std::string::npos)
            return 0;
        const int port = std::stoi(digits);
        return port <= 65535 ? port : 0;
    }
    int connect_broker() {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        const std::string p = dir_ / "egress.sock";
        std::memcpy(a.sun_path, p.c_str(), p.size() + 1);
        EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        return fd;
    }
    // Reads from `fd` into `got` until `done(got)` or its end; false at the end or after 20 s
    // (scaled by the load factor).
    template <class Done>
    static bool read_until(int fd, std::string& got, Done done) {
        const auto deadline = std::chrono::steady_clock::now() + test::scaled(20s);
        char buf[4096];
        while (!done(got)) {
            pollfd p{fd, POLLIN, 0};
            if (std::chrono::steady_clock::now() >= deadline) return false;
            if (::poll(&p, 1, 100) <= 0) continue;
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n <= 0) return false;
            got.append(buf, static_cast<std::size_t>(n));
        }
        return true;
    }
    Receipt receipt() {
        std::unique_lock l(m_);
        EXPECT_TRUE(cv_.wait_for(l, test::scaled(20s), [&] { return !receipts_.empty(); }));
        return receipts_.empty() ? Receipt{} : receipts_.front();
    }

    test::TempDir dir_;
    test::TestCertificates certs_;
    int port_ = 0;
    std::string log_;
    std::optional<test::BackgroundProcess> server_;
    bool listening_ = false;
    std::string dest_;
    std::mutex m_;
    std::condition_variable cv_;
    std::vector<Receipt> receipts_;
    std::unique_ptr<EgressBroker> broker_;
};

// An ordinary client's handshake with a HelloRetryRequest in it (its first key share is not
// P-256), through the broker: both hellos name pkg.test, and the page comes back.
TEST_F(EgressHelloRetryTest, AnOrdinaryHandshakeWithAHelloRetryRequestGoesThrough) {
    ASSERT_TRUE(listening_) << test::read_file(log_);
    const std::string client = R"(
import socket, ssl, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(("CONNECT %s HTTP/1.1\r\n\r\n" % sys.argv[2]).encode())
head = b""
while not head.endswith(b"\r\n\r\n"):
    head += s.recv(1)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.minimum_version = ssl.TLSVersion.TLSv1_3
t = ctx.wrap_socket(s, server_hostname="pkg.test")
t.sendall(b"GET / HTTP/1.0\r\n\r\n")
out = b""
while True:
    d = t.recv(65536)
    if not d:
        break
    out += d
print(out.split(b"\r\n")[0].decode())
)";
    const auto r = test::run_process({"python3", "-c", client, dir_ / "egress.sock", dest_});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "HTTP/1.0 200 ok\n") << r.err;
    const Receipt receipt_ = receipt();
    EXPECT_EQ(receipt_.verdict, "allowed") << receipt_.reason;
    const std::string log = test::read_file(log_);
    std::size_t hellos = 0;
    for (auto at = log.find("], ClientHello"); at != std::string::npos;
         at = log.find("], ClientHello", at + 1))
        ++hellos;
    EXPECT_EQ(hellos, 2u) << "the server asked for a second hello:\n" << log;
}

// The attack: the first hello names pkg.test and offers no key share, so the server asks for a
// second; the second names other.test, whose virtual host the server would serve. It never
// reaches the server: the tunnel closes with no ServerHello, and the receipt says why.
TEST_F(EgressHelloRetryTest, ASecondHelloNamingAnotherVirtualHostNeverReachesTheServer) {
    ASSERT_TRUE(listening_) << test::read_file(log_);
    const int fd = connect_broker();
    const std::string first =
        "CONNECT " + dest_ + " HTTP/1.1\r\n\r\n" + tls13_hello("pkg.test", false);
    ASSERT_EQ(::send(fd, first.data(), first.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(first.size()));
    std::string got;
    ASSERT_TRUE(read_until(fd, got,
                           [](const std::string& g) {
                               const auto at = g.find("\r\n\r\n");
                               return at != std::string::npos &&
                                      server_hellos(g.substr(at + 4)).retries == 1;
                           }))
        << "no HelloRetryRequest came: " << test::read_file(log_);
    const std::string second = tls13_hello("other.test", true);
    ASSERT_EQ(::send(fd, second.data(), second.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(second.size()));
    read_until(fd, got, [](const std::string&) { return false; }); // to the end
    ::close(fd);
    EXPECT_EQ(server_hellos(got.substr(got.find("\r\n\r\n") + 4)).hellos, 0)
        << "the server answered the second hello";
    const Receipt r = receipt();
    EXPECT_EQ(r.verdict, "refused");
    EXPECT_EQ(r.reason,
              "the tunnel's TLS names 'other.test', not 'pkg.test' in ClientHello #2 (after the "
              "destination's HelloRetryRequest)");
    const std::string log = test::read_file(log_);
    EXPECT_EQ(log.find("other.test\""), std::string::npos) << log;
    EXPECT_EQ(log.find("Switching server context"), std::string::npos) << log;
}

} // namespace
} // namespace radial::egress
