// tests/host/egress/egress_broker_test.cpp — the egress broker (host/egress/egress_broker.h) over
// its real unix socket, against servers this test starts on 127.0.0.0/8, with the ceiling's name
// map standing in for DNS: what it lets through, what it refuses (each with a receipt), its
// quotas, its connection cap, and revocation closing a long-lived connection.
#include "egress/egress_broker.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "../../support/box_descriptor_attacks.h"
#include "../../support/host_processes.h"
#include "../../support/loopback_http_server.h"
#include "../../support/temp_dir.h"
#include "egress/box_stream.h"
#include "egress/egress_connection.h"
#include "egress/operator_policy.h"

namespace radial::egress {
namespace {

using namespace std::chrono_literals;
using test::kLongLinger;
using test::lingering_pair;
using test::loopback_pair;
using test::send_with_rights;

std::string client_hello(const std::string& sni, const std::string& more_ext = {});
std::string server_hello();
std::string app_data(const std::string& payload);
// A held destination's answer to open_stream(): a ServerHello, then "streaming".
std::string streaming() { return server_hello() + "HTTP/1.0 200 OK\r\n\r\nstreaming"; }

class EgressBrokerTest : public ::testing::Test {
protected:
    EgressBrokerTest() : dir_("radial-egress") {}
    // The broker first: revoking it writes the receipts of connections still open into
    // receipts_, which must still exist then.
    ~EgressBrokerTest() override { broker_.reset(); }

    void start(const std::vector<std::string>& rules, EgressCeiling ceiling = {}) {
        if (ceiling.allow_ranges.empty())
            ceiling.allow_ranges.push_back(parse_range("127.0.0.2/32"));
        ceiling.hosts["pkg.test"] = "127.0.0.2";
        ceiling.hosts["inside.test"] = "127.0.0.3"; // loopback, not allowed by any range
        ceiling.hosts["other.test"] = "127.0.0.2";
        for (const auto& r : rules) ceiling.allow.push_back(parse_allow_rule(r));
        EgressBrokerOptions o;
        o.unix_path = dir_.path() + "/egress.sock";
        o.rules = narrow(ceiling, rules);
        o.ceiling = std::move(ceiling);
        o.hello_timeout = 2s;
        if (half_closed_timeout_) o.half_closed_timeout = *half_closed_timeout_;
        o.policy_path = policy_path();
        o.turn_id = "turn-1";
        o.on_open = [this](const Receipt& r) {
            std::lock_guard l(m_);
            opens_.push_back(r);
        };
        o.on_receipt = [this](const Receipt& r) {
            std::lock_guard l(m_);
            receipts_.push_back(r);
            cv_.notify_all();
        };
        broker_ = std::make_unique<EgressBroker>(std::move(o));
    }
    std::string policy_path() const { return dir_.path() + "/egress-policy.json"; }
    int connect_broker() {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        const std::string p = dir_.path() + "/egress.sock";
        std::memcpy(a.sun_path, p.c_str(), p.size() + 1);
        EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        return fd;
    }
    static void send_text(int fd, const std::string& s) {
        ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
    }
    // Everything the broker sends until it closes (bounded: `budget` scaled by the load factor).
    static std::string read_all(int fd, std::chrono::seconds budget = 20s) {
        std::string out;
        char buf[8192];
        const auto deadline = std::chrono::steady_clock::now() + test::scaled(budget);
        while (std::chrono::steady_clock::now() < deadline) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n <= 0) break;
            out.append(buf, static_cast<std::size_t>(n));
        }
        return out;
    }
    // One request through a new connection; the whole answer.
    // A broker that refuses at once (a cap) answers and closes without reading, so the request's
    // send may find the socket closed (EPIPE); the answer is still there to read.
    std::string ask(const std::string& request) {
        const int fd = connect_broker();
        const ssize_t sent = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
        EXPECT_TRUE(sent == static_cast<ssize_t>(request.size()) || errno == EPIPE)
            << std::strerror(errno);
        std::string out = read_all(fd);
        ::close(fd);
        return out;
    }
    // A tunnel to `dest` (a held server answering streaming()), open once its first bytes came;
    // -1 when they did not.
    int open_stream(const std::string& dest) {
        const int fd = connect_broker();
        send_text(fd, "CONNECT " + dest + " HTTP/1.1\r\n\r\n" + client_hello("pkg.test") +
                          app_data("GET / HTTP/1.0\r\n\r\n"));
        std::string got;
        char buf[256];
        while (got.find("streaming") == std::string::npos) {
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n <= 0) {
                ::close(fd);
                return -1;
            }
            got.append(buf, static_cast<std::size_t>(n));
        }
        return fd;
    }
    Receipt receipt(std::size_t n) {
        std::unique_lock l(m_);
        EXPECT_TRUE(cv_.wait_for(l, test::scaled(20s), [&] { return receipts_.size() >= n; }));
        return receipts_.size() >= n ? receipts_[n - 1] : Receipt{};
    }

    test::TempDir dir_;
    std::optional<std::chrono::milliseconds> half_closed_timeout_; // the broker's own when unset
    std::unique_ptr<EgressBroker> broker_;
    std::mutex m_;
    std::condition_variable cv_;
    std::vector<Receipt> receipts_;
    std::vector<Receipt> opens_; // on_open
};

// A ClientHello for `sni`, as a TLS client sends it first in a tunnel; with `more_ext`, that
// extension after the server name.
std::string client_hello(const std::string& sni, const std::string& more_ext) {
    auto u16 = [](std::size_t n) {
        return std::string{static_cast<char>(n >> 8), static_cast<char>(n & 0xff)};
    };
    std::string body = "\x03\x03" + std::string(32, 'r') + std::string(1, '\0') + u16(2) +
                       std::string("\x13\x01", 2) + std::string("\x01\x00", 2);
    std::string entry = std::string(1, '\0') + u16(sni.size()) + sni;
    std::string data = u16(entry.size()) + entry;
    std::string ext = u16(0) + u16(data.size()) + data + more_ext;
    body += u16(ext.size()) + ext;
    std::string hs = std::string(1, '\x01') + std::string(1, '\0') + u16(body.size()) + body;
    return std::string("\x16\x03\x01", 3) + u16(hs.size()) + hs;
}

// An application_data record: what a TLS client sends once its handshake is done (or early).
std::string app_data(const std::string& payload) {
    return std::string("\x17\x03\x03", 3) + static_cast<char>(payload.size() >> 8) +
           static_cast<char>(payload.size() & 0xff) + payload;
}

// A ServerHello record, as a TLS server answers a ClientHello first.
std::string server_hello() {
    std::string body = "\x03\x03" + std::string(32, 's') + std::string(1, '\0') +
                       std::string("\x13\x01\x00\x00\x00", 5);
    std::string hs = std::string("\x02\x00\x00", 3) + static_cast<char>(body.size()) + body;
    return std::string("\x16\x03\x03\x00", 4) + static_cast<char>(hs.size()) + hs;
}

const std::string kOk = "HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n";

TEST_F(EgressBrokerTest, AnAllowedNameIsReachedThroughConnectAndPlainHttp) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    test::LoopbackHttpServer tls("127.0.0.2", server_hello() + kOk);
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    const std::string tls_dest = "pkg.test:" + std::to_string(tls.port());
    start({dest, tls_dest});
    const std::string hello = client_hello("pkg.test");
    const std::string request = app_data("GET /simple HTTP/1.0\r\n\r\n");
    const std::string tunnel = ask("CONNECT " + tls_dest + " HTTP/1.1\r\nHost: " + tls_dest +
                                   "\r\n\r\n" + hello + request);
    EXPECT_EQ(tunnel, "HTTP/1.1 200 Connection established\r\n\r\n" + server_hello() + kOk);
    Receipt r = receipt(1);
    EXPECT_EQ(r.kind, "CONNECT");
    EXPECT_EQ(r.verdict, "allowed");
    EXPECT_EQ(r.via, "socket");
    EXPECT_EQ(r.destination, tls_dest);
    EXPECT_EQ(r.address, "127.0.0.2:" + std::to_string(tls.port()));
    EXPECT_EQ(r.bytes_in, server_hello().size() + kOk.size());
    EXPECT_EQ(r.bytes_out, hello.size() + request.size());
    EXPECT_GE(r.ended_ms, r.started_ms);
    {
        std::lock_guard l(m_);
        ASSERT_EQ(opens_.size(), 1u) << "the open connection was recorded before its receipt";
        EXPECT_EQ(opens_[0].verdict, "allowed");
        EXPECT_EQ(opens_[0].address, r.address);
        EXPECT_EQ(opens_[0].ended_ms, 0);
    }

    // The headers a front end may route by instead of Host are dropped with the hop-by-hop ones:
    // the Host the broker writes is the only name the destination is given.
    const std::string plain =
        ask("GET http://" + dest + "/index HTTP/1.1\r\nHost: " + dest +
            "\r\nProxy-Connection: keep-alive\r\nX-Forwarded-Host: inside.test\r\n"
            "Forwarded: host=inside.test\r\nX-Original-URL: http://inside.test/\r\n"
            "X-Rewrite-URL: /admin\r\nX-Host: inside.test\r\nX-Forwarded-Prefix: /admin\r\n"
            "X-Original-URI: /admin\r\nX-Envoy-Original-Path: /admin\r\nAccept: */*\r\n\r\n");
    EXPECT_EQ(plain, kOk);
    EXPECT_NE(server.received().find("GET /index HTTP/1.1\r\n"), std::string::npos)
        << "origin form upstream: " << server.received();
    EXPECT_EQ(server.received().find("proxy-connection"), std::string::npos);
    for (const char* routed :
         {"x-forwarded-host", "forwarded", "x-original-url", "x-rewrite-url", "x-host",
          "x-forwarded-prefix", "x-original-uri", "x-envoy-original-path", "/admin"})
        EXPECT_EQ(server.received().find(routed), std::string::npos)
            << routed << ": " << server.received();
    EXPECT_NE(server.received().find("accept: */*"), std::string::npos) << server.received();
    EXPECT_EQ(receipt(2).verdict, "allowed");
}

TEST_F(EgressBrokerTest, WhatThePolicyDoesNotNameIsRefusedAndReceipted) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    const std::string port = std::to_string(server.port());
    start({"pkg.test:" + port, "inside.test:" + port});
    struct Case {
        std::string request, says;
    };
    const std::vector<Case> cases = {
        {"CONNECT other.test:" + port + " HTTP/1.1\r\n\r\n", "not in the turn's egress policy"},
        {"CONNECT pkg.test:" + std::to_string(server.port() == 1 ? 2 : 1) + " HTTP/1.1\r\n\r\n",
         "not in the turn's egress policy"},
        {"CONNECT inside.test:" + port + " HTTP/1.1\r\n\r\n",
         "resolves to 127.0.0.3; 127.0.0.3 is in"},
        {"CONNECT 127.0.0.2:" + port + " HTTP/1.1\r\n\r\n", "an IP literal (127.0.0.2)"},
        {"CONNECT /var/run/docker.sock HTTP/1.1\r\n\r\n", "is not host:port"},
        {"CONNECT unix:/run/docker.sock HTTP/1.1\r\n\r\n", "is not host:port"},
        {"GET http://pkg.test:" + port + "/ HTTP/1.1\r\nHost: other.test:" + port + "\r\n\r\n",
         "the Host header names 'other.test:" + port + "'"},
        {"GET https://pkg.test:" + port + "/ HTTP/1.1\r\n\r\n", "https goes through CONNECT"},
        {"GET /relative HTTP/1.1\r\nHost: pkg.test\r\n\r\n", "not an absolute http:// URL"},
    };
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const std::string answer = ask(cases[i].request);
        EXPECT_EQ(answer.rfind("HTTP/1.1 403 Forbidden\r\n", 0), 0u) << cases[i].request << answer;
        EXPECT_NE(answer.find(cases[i].says), std::string::npos) << answer;
        Receipt r = receipt(i + 1);
        EXPECT_EQ(r.verdict, "refused") << cases[i].request;
        EXPECT_NE(r.reason.find(cases[i].says), std::string::npos) << r.reason;
        EXPECT_EQ(r.address, "") << "nothing was connected to";
    }
    EXPECT_EQ(server.received(), "") << "no refused request reached the server";
}

// A refusal's receipt quotes what the box asked for, but never the credentials a URL carries
// (user information, a query's token) and never more than a bounded size, however long or
// however encoded the box's target: the receipt caps then bound what a turn's receipts take.
TEST_F(EgressBrokerTest, ARefusalsReceiptKeepsNoCredentialsAndStaysSmall) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    const std::string port = std::to_string(server.port());
    start({"pkg.test:" + port});
    const std::string secret = "tok-3f9a1c7e52";
    const std::string wide(12000, '\xc3');
    const std::vector<std::string> requests = {
        "GET http://user:" + secret + "@pkg.test:" + port + "/ HTTP/1.1\r\n\r\n",
        "GET http://pkg.test:99999/x?access_token=" + secret + " HTTP/1.1\r\n\r\n",
        "GET http://pkg.test:1/x#" + secret + " HTTP/1.1\r\n\r\n", // port 1: not allowed
        "CONNECT user:" + secret + "@pkg.test:" + port + " HTTP/1.1\r\n\r\n",
        "CONNECT " + wide + " HTTP/1.1\r\n\r\n",
        // A parser's message quoted the text it refused whole, query and fragment included.
        "CONNECT pkg.test:443?access_token=" + secret + "#frag HTTP/1.1\r\n\r\n",
        "CONNECT pkg.test:" + port + "#" + secret + " HTTP/1.1\r\n\r\n",
        "GET http://pkg.test:" + port + "/ HTTP/1.1\r\nHost: pkg.test:" + port + "?tok=" + secret +
            "\r\n\r\n",
        "GET http://" + wide + "/ HTTP/1.1\r\n\r\n",
        "GET " + wide + " HTTP/1.1\r\n\r\n",
    };
    for (std::size_t i = 0; i < requests.size(); ++i) {
        const std::string answer = ask(requests[i]);
        EXPECT_EQ(answer.find(secret), std::string::npos) << answer;
        const Receipt r = receipt(i + 1);
        EXPECT_EQ(r.verdict, "refused") << i;
        for (const std::string* field : {&r.destination, &r.reason}) {
            EXPECT_EQ(field->find(secret), std::string::npos) << i << ": " << *field;
            EXPECT_LE(field->size(), 700u) << i;
            EXPECT_TRUE(std::all_of(field->begin(), field->end(),
                                    [](unsigned char c) { return c >= 0x20 && c < 0x7f; }))
                << i << ": " << *field;
        }
    }
    EXPECT_EQ(server.requests(), 0);
}

// Openings have a cap too: past it, a connection is refused before a byte goes out, rather than
// opened with no receipt naming it (its end would have fallen under the refusals' cap, which the
// box can fill first, and a megabyte went out unjournaled).
TEST_F(EgressBrokerTest, PastTheCapOfJournaledOpeningsNoConnectionOpens) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    const std::string port = std::to_string(server.port());
    start({"pkg.test:" + port});
    const std::string get =
        "GET http://pkg.test:" + port + "/ HTTP/1.1\r\nHost: pkg.test:" + port + "\r\n\r\n";
    for (std::size_t i = 0; i < detail::kMostReceipts; ++i)
        ASSERT_NE(ask(get).find("hello"), std::string::npos) << i;
    const std::string post = "POST http://pkg.test:" + port +
                             "/exfil HTTP/1.1\r\nHost: pkg.test:" + port +
                             "\r\nContent-Length: 5\r\n\r\nhello";
    const std::string answer = ask(post);
    EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer;
    EXPECT_NE(answer.find("cannot take one more"), std::string::npos) << answer;
    // Connected, perhaps (the opening is journaled once connected), but not a byte sent.
    EXPECT_EQ(server.received().find("/exfil"), std::string::npos);
    std::lock_guard l(m_);
    EXPECT_EQ(opens_.size(), detail::kMostReceipts);
}

// Refusals have a cap of their own: past it, a connection that opened is still journaled, its
// opening and its end.
TEST_F(EgressBrokerTest, AFloodOfRefusalsDoesNotHideAConnectionThatOpened) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    const std::string port = std::to_string(server.port());
    start({"pkg.test:" + port});
    const std::string refused = "CONNECT other.test:" + port + " HTTP/1.1\r\n\r\n";
    for (std::size_t i = 0; i < detail::kMostReceipts + 5; ++i)
        ASSERT_EQ(ask(refused).rfind("HTTP/1.1 403 Forbidden\r\n", 0), 0u) << i;
    const std::string answer =
        ask("GET http://pkg.test:" + port + "/ HTTP/1.1\r\nHost: pkg.test:" + port + "\r\n\r\n");
    EXPECT_NE(answer.find("hello"), std::string::npos) << answer;
    const Receipt r = receipt(detail::kMostReceipts + 1);
    EXPECT_EQ(r.verdict, "allowed") << "the refusals past the cap were not journaled, this was";
    EXPECT_EQ(r.destination, "pkg.test:" + port);
    EXPECT_GT(r.bytes_in, 0u);
    std::lock_guard l(m_);
    EXPECT_EQ(receipts_.size(), detail::kMostReceipts + 1);
    ASSERT_EQ(opens_.size(), 1u);
    EXPECT_EQ(opens_[0].destination, "pkg.test:" + port);
}

// Encrypted Client Hello: the allowed name outside is a front for the one inside, which the
// broker cannot read; the tunnel is closed before the hello reaches the destination.
TEST_F(EgressBrokerTest, ATunnelWhoseTlsOffersEncryptedClientHelloIsClosed) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    start({dest});
    const std::string ech = std::string("\xfe\x0d\x00\x01", 4) + std::string(1, '\x00');
    const std::string answer =
        ask("CONNECT " + dest + " HTTP/1.1\r\n\r\n" + client_hello("pkg.test", ech));
    EXPECT_EQ(answer, "HTTP/1.1 200 Connection established\r\n\r\n") << "and nothing more";
    Receipt r = receipt(1);
    EXPECT_EQ(r.verdict, "refused");
    EXPECT_NE(r.reason.find("Encrypted Client Hello"), std::string::npos) << r.reason;
    EXPECT_EQ(server.received(), "") << "the hello never reached the destination";
}

TEST_F(EgressBrokerTest, ATunnelWhoseTlsNamesAnotherHostIsClosed) {
    test::LoopbackHttpServer server("127.0.0.2", server_hello() + kOk);
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    start({dest});
    const std::string answer =
        ask("CONNECT " + dest + " HTTP/1.1\r\n\r\n" + client_hello("metadata.google.internal"));
    EXPECT_EQ(answer, "HTTP/1.1 200 Connection established\r\n\r\n") << "and nothing more";
    Receipt r = receipt(1);
    EXPECT_EQ(r.verdict, "refused");
    EXPECT_NE(r.reason.find("TLS names 'metadata.google.internal', not 'pkg.test'"),
              std::string::npos)
        << r.reason;
    EXPECT_EQ(server.received(), "") << "the hello never reached the destination";

    const int fd = connect_broker(); // the right name goes through
    send_text(fd, "CONNECT " + dest + " HTTP/1.1\r\n\r\n" + client_hello("pkg.test") +
                      app_data("\r\n\r\n"));
    EXPECT_NE(read_all(fd).find(kOk), std::string::npos);
    ::close(fd);
    EXPECT_EQ(receipt(2).verdict, "allowed");
}

// A breach delivers exactly what the quota had left, then closes the connection, and the receipt
// counts what the box was given. The quota was checked after each read of up to 1 MiB: the read
// that passed it was dropped whole, so the box got nothing of it, yet it was charged to the turn.
TEST_F(EgressBrokerTest, AQuotaBreachClosesTheConnectionAndSaysSo) {
    test::LoopbackHttpServer server("127.0.0.2",
                                    "HTTP/1.0 200 OK\r\n\r\n" + std::string(5'000'000, 'x'));
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    EgressCeiling c;
    c.max_bytes_in = 1'000'000;
    start({dest}, c);
    const std::string answer =
        ask("GET http://" + dest + "/big HTTP/1.1\r\nHost: " + dest + "\r\n\r\n");
    EXPECT_EQ(answer.size(), 1'000'000u) << "the box got other than the quota's bytes";
    Receipt r = receipt(1);
    EXPECT_EQ(r.verdict, "allowed");
    EXPECT_NE(r.reason.find("quota of 1000000 bytes to the box"), std::string::npos) << r.reason;
    EXPECT_EQ(r.bytes_in, 1'000'000u);
    // Spent: the next connection is refused.
    const std::string again =
        ask("GET http://" + dest + "/again HTTP/1.1\r\nHost: " + dest + "\r\n\r\n");
    EXPECT_EQ(again.rfind("HTTP/1.1 403 Forbidden", 0), 0u) << again;
    EXPECT_NE(receipt(2).reason.find("the turn's egress quota is spent"), std::string::npos)
        << receipt(2).reason;
}

// A request head may be 16 KiB with its blank line and no more, however it arrives: the size was
// checked only before each read, so a head sent at once could be about 20 KiB.
TEST_F(EgressBrokerTest, ARequestHeadIsAtMost16KiBHoweverItArrives) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    start({dest});
    auto head_of = [&](std::size_t size) {
        const std::string start =
            "GET http://" + dest + "/a HTTP/1.1\r\nHost: " + dest + "\r\nX-Pad: ";
        return start + std::string(size - start.size() - 4, 'p') + "\r\n\r\n";
    };
    ASSERT_EQ(head_of(16 << 10).size(), 16u << 10);
    EXPECT_EQ(ask(head_of(16 << 10)), kOk) << "a head of exactly 16 KiB is served";
    // Its receipt is journaled when its relay ends, which may be after the box saw the end: waited
    // for here, so that the next connection's receipt is the second.
    (void)receipt(1);
    EXPECT_EQ(ask(head_of((16 << 10) + 1)).find("hello"), std::string::npos);
    EXPECT_NE(receipt(2).reason.find("head is over 16 KiB"), std::string::npos)
        << receipt(2).reason;
    EXPECT_EQ(ask(head_of(20'050)).find("hello"), std::string::npos);
    EXPECT_NE(receipt(3).reason.find("head is over 16 KiB"), std::string::npos);
}

// A download that uses the quota to its last byte and ends there is a clean close, not a breach.
TEST_F(EgressBrokerTest, ADownloadThatEndsAtTheQuotaIsNoBreach) {
    const std::string body = "HTTP/1.0 200 OK\r\n\r\n" + std::string(300'000, 'x');
    test::LoopbackHttpServer server("127.0.0.2", body);
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    EgressCeiling c;
    c.max_bytes_in = body.size();
    start({dest}, c);
    EXPECT_EQ(ask("GET http://" + dest + "/fits HTTP/1.1\r\nHost: " + dest + "\r\n\r\n"), body);
    Receipt r = receipt(1);
    EXPECT_EQ(r.reason, "closed");
    EXPECT_EQ(r.bytes_in, body.size());
}

// The head that would pass the quota from the box is not sent, and the receipt counts none of it.
TEST_F(EgressBrokerTest, AHeadBeyondTheQuotaFromTheBoxIsNotSentNorCounted) {
    test::LoopbackHttpServer server("127.0.0.2", "HTTP/1.0 200 OK\r\n\r\nhello");
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    EgressCeiling c;
    c.max_bytes_out = 10;
    start({dest}, c);
    const std::string answer =
        ask("GET http://" + dest + "/a HTTP/1.1\r\nHost: " + dest + "\r\n\r\n");
    EXPECT_EQ(answer.find("hello"), std::string::npos) << answer;
    Receipt r = receipt(1);
    EXPECT_NE(r.reason.find("quota of 10 bytes from the box"), std::string::npos) << r.reason;
    EXPECT_EQ(r.bytes_out, 0u);
    EXPECT_EQ(r.bytes_in, 0u);
}

TEST_F(EgressBrokerTest, RevocationClosesALongLivedConnectionAtOnce) {
    test::LoopbackHttpServer server("127.0.0.2", streaming(), true);
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    start({dest});
    const int fd = open_stream(dest);
    ASSERT_GE(fd, 0);
    char buf[256];
    EXPECT_EQ(broker_->open_connections(), 1u);
    broker_->revoke();
    EXPECT_TRUE(server.peer_closed_within(10s)) << "the destination's side was closed";
    EXPECT_EQ(::read(fd, buf, sizeof buf), 0) << "and the box's";
    ::close(fd);
    Receipt r = receipt(1);
    EXPECT_EQ(r.reason, "revoked at the turn's end");
    EXPECT_EQ(::access((dir_.path() + "/egress.sock").c_str(), F_OK), -1) << "socket removed";
}

TEST_F(EgressBrokerTest, ConnectionsBeyondTheCapAreRefused) {
    test::LoopbackHttpServer server("127.0.0.2", server_hello() + "HTTP/1.0 200 OK\r\n\r\nheld",
                                    true);
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    EgressCeiling c;
    c.max_connections = 1;
    start({dest}, c);
    const int first = connect_broker();
    send_text(first, "CONNECT " + dest + " HTTP/1.1\r\n\r\n" + client_hello("pkg.test") +
                         app_data("GET / HTTP/1.0\r\n\r\n"));
    std::string got;
    char buf[256];
    while (got.find("held") == std::string::npos) {
        const ssize_t n = ::read(first, buf, sizeof buf);
        ASSERT_GT(n, 0);
        got.append(buf, static_cast<std::size_t>(n));
    }
    const std::string second = ask("CONNECT " + dest + " HTTP/1.1\r\n\r\n");
    EXPECT_EQ(second.rfind("HTTP/1.1 503", 0), 0u) << second;
    EXPECT_NE(second.find("run.egress.maxConnections"), std::string::npos);
    ::close(first);
}

// A tunnel carries TLS to its host and nothing else: plain HTTP inside it (whose Host the broker
// would not see), or silence past the hello timeout, is refused before anything is connected.
TEST_F(EgressBrokerTest, ATunnelThatDoesNotStartWithTlsIsRefusedBeforeAnyConnect) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    start({dest});
    EXPECT_EQ(
        ask("CONNECT " + dest + " HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: evil.example\r\n\r\n"),
        "HTTP/1.1 200 Connection established\r\n\r\n");
    EXPECT_NE(receipt(1).reason.find("does not start with TLS"), std::string::npos);
    const int fd = connect_broker(); // says nothing: the hello timeout (2 s here) refuses it
    send_text(fd, "CONNECT " + dest + " HTTP/1.1\r\n\r\n");
    read_all(fd);
    ::close(fd);
    EXPECT_EQ(receipt(2).reason, "no TLS handshake in time");
    EXPECT_EQ(server.requests(), 0) << "nothing was connected to";
}

// A plain request is read strictly and sent on alone: what a lenient reader would take for a
// second request, another Host, or a line break is refused or never sent.
TEST_F(EgressBrokerTest, APlainRequestCannotSmuggleAnotherHostOrRequest) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    const std::string p = std::to_string(server.port());
    const std::string dest = "pkg.test:" + p;
    start({dest});
    const std::vector<std::string> refused = {
        "GET http://" + dest + "/ HTTP/1.1\nHost: evil.example\nX: HTTP/1.1\r\n\r\n",
        "GET http://" + dest + "/ HTTP/1.1\r\nHost: " + dest + "\r\nHost: evil.example\r\n\r\n",
        "GET http://" + dest + "/ HTTP/1.1\r\nHost : evil.example\r\n\r\n",
        "GET http://" + dest + "/ HTTP/1.1\r\nX: a\r\n Host: evil.example\r\n\r\n",
        "GET http://" + dest + "/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "GET http://user@" + dest + "/ HTTP/1.1\r\n\r\n",
        "GET http://" + dest + "/a b HTTP/1.1\r\n\r\n",
    };
    for (const auto& request : refused) {
        const std::string answer = ask(request);
        EXPECT_TRUE(answer.rfind("HTTP/1.1 400", 0) == 0 || answer.rfind("HTTP/1.1 403", 0) == 0)
            << request << " -> " << answer;
    }
    EXPECT_EQ(server.requests(), 0);
    // A second request pipelined behind the first is never sent; the Host sent is the target's.
    const std::string answer =
        ask("POST http://" + dest + "/one HTTP/1.1\r\nHost: " + dest +
            "\r\nContent-Length: 4\r\n\r\nbodyGET /two HTTP/1.1\r\nHost: evil.example\r\n\r\n");
    EXPECT_EQ(answer, kOk);
    EXPECT_EQ(server.requests(), 1);
    EXPECT_NE(server.received().find("POST /one HTTP/1.1\r\nHost: pkg.test:" + p + "\r\n"),
              std::string::npos)
        << server.received();
    EXPECT_EQ(server.received().find("evil.example"), std::string::npos) << server.received();
}

// radial-init's hand-over (docs/design.md §9.7): a 0x00 byte carrying descriptors.
void hand_over(int unix_fd, const std::vector<int>& fds) {
    send_with_rights(unix_fd, std::string(1, '\0'), fds);
}

TEST_F(EgressBrokerTest, AHandedOverBoxConnectionIsServedWithoutTheEndpointRelaying) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    start({dest});
    auto [client, accepted] = loopback_pair();
    const int u = connect_broker();
    // The request may already wait in the socket when it is handed over.
    send_text(client, "GET http://" + dest + "/handed HTTP/1.1\r\nHost: " + dest + "\r\n\r\n");
    hand_over(u, {accepted});
    char answer = 0;
    ASSERT_EQ(::read(u, &answer, 1), 1);
    EXPECT_EQ(answer, 'K');
    ::close(accepted); // the endpoint's copy: only the broker's keeps the connection now
    ::close(u);
    EXPECT_EQ(read_all(client), kOk);
    ::close(client);
    EXPECT_NE(server.received().find("GET /handed HTTP/1.1\r\n"), std::string::npos);
    Receipt r = receipt(1);
    EXPECT_EQ(r.verdict, "allowed");
    EXPECT_EQ(r.via, "handed");
    EXPECT_EQ(r.bytes_in, kOk.size());
}

// A handed socket the box set to linger, with data its peer never reads: the broker's close of it
// must not wait out the linger, so revocation (the turn's end) is not held by the box.
TEST_F(EgressBrokerTest, ALingeringHandedSocketDoesNotHoldRevocation) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    start({"pkg.test:" + std::to_string(server.port())});
    auto [reader, lingering] = lingering_pair();
    ASSERT_GE(lingering, 0);
    const int u = connect_broker();
    hand_over(u, {lingering});
    char answer = 0;
    ASSERT_EQ(::read(u, &answer, 1), 1);
    EXPECT_EQ(answer, 'K');
    ::close(lingering); // the broker holds the last reference now
    ::close(u);
    auto revoked = std::async(std::launch::async, [&] { broker_->revoke(); });
    EXPECT_EQ(revoked.wait_for(60s), std::future_status::ready)
        << "revocation waited on the box's linger (120 s)";
    revoked.wait();
    ::close(reader);
}

// Descriptors the box attaches to any bytes on the broker's socket — its request head, a hand-over
// with more than one, a connection refused for want of room — are taken and closed by the broker
// with its bound, never left to the kernel to drop on the reading thread: there the last close of
// a socket the box set to linger held that thread (and the turn's end, which joins it) for as long
// as the box liked.
TEST_F(EgressBrokerTest, DescriptorsTheBoxAttachesToItsBytesHoldNoThreadOfTheBroker) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    start({"pkg.test:" + std::to_string(server.port())});
    auto [reader, lingering] = lingering_pair();
    ASSERT_GE(lingering, 0);
    auto [reader2, lingering2] = lingering_pair();
    ASSERT_GE(lingering2, 0);
    // A head the broker refuses: answered only once it was read.
    const int head = connect_broker();
    send_with_rights(head, "GET http://inside.test/ HTTP/1.1\r\nHost: inside.test\r\n\r\n",
                     {lingering});
    // A hand-over carrying two descriptors: refused, nothing answered.
    const int two = connect_broker();
    hand_over(two, {lingering2, lingering2});
    ::close(lingering); // the broker holds the last references now
    ::close(lingering2);
    // A body relayed from the broker's socket itself (no descriptor handed over, as under gVisor).
    auto [reader3, lingering3] = lingering_pair();
    ASSERT_GE(lingering3, 0);
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    const int streamed = connect_broker();
    hand_over(streamed, {});
    char answer = 0;
    ASSERT_EQ(::read(streamed, &answer, 1), 1);
    EXPECT_EQ(answer, 'S');
    send_text(streamed, "POST http://" + dest + "/relayed HTTP/1.1\r\nHost: " + dest +
                            "\r\nContent-Length: 5\r\n\r\n");
    ASSERT_TRUE(test::wait_until(
        [&] { return server.received().find("POST /relayed") != std::string::npos; }, 30s));
    send_with_rights(streamed, "hello", {lingering3});
    ::close(lingering3);
    ::shutdown(streamed, SHUT_WR);
    EXPECT_TRUE(test::wait_until(
        [&] {
            std::lock_guard l(m_);
            return std::any_of(receipts_.begin(), receipts_.end(),
                               [](const Receipt& r) { return r.via == "relayed"; });
        },
        60s))
        << "the relay that took the body waited out the linger";
    const std::string refused = read_all(head, 60s);
    EXPECT_EQ(refused.rfind("HTTP/1.1 403", 0), 0u)
        << "the refusal came not within 60 s: the read that took the head waited out the linger";
    EXPECT_EQ(read_all(two, 60s), "");
    auto revoked = std::async(std::launch::async, [&] { broker_->revoke(); });
    EXPECT_EQ(revoked.wait_for(60s), std::future_status::ready)
        << "revocation waited on the box's linger (120 s)";
    revoked.wait();
    for (int fd : {head, two, streamed, reader, reader2, reader3}) ::close(fd);
}

// The acceptor's refusal of a connection over the limit closes it with the same bound: a socket
// the box queued on it before the refusal must not hold the acceptor (and with it policy changes
// and every later connection of the turn).
TEST(EgressRefuseAtOnce, DescriptorsQueuedOnARefusedConnectionHoldNoThread) {
    auto [reader, lingering] = lingering_pair();
    ASSERT_GE(lingering, 0);
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    send_with_rights(pair[0], "GET / HTTP/1.1\r\n", {lingering});
    ::close(lingering);
    detail::BrokerShared shared;
    auto refused =
        std::async(std::launch::async, [&] { detail::refuse_at_once(shared, pair[1], "full"); });
    EXPECT_EQ(refused.wait_for(60s), std::future_status::ready)
        << "the refusal's close waited on the box's linger (120 s)";
    refused.wait();
    EXPECT_TRUE(test::wait_until([] { return detail::box_socket_closes_in_flight() == 0; }, 30s));
    ::close(pair[0]);
    ::close(reader);
}

// The same with the box keeping a duplicate: it waits for the broker to switch lingering off, sets
// it again and closes its duplicate, so that the broker's close is the last and would wait out the
// linger (120 s) on a thread of radiald's, one per connection, without end. Each close now ends
// within about a second.
TEST_F(EgressBrokerTest, ALingerSetAgainAfterTheBrokerSwitchedItOffHoldsNoCloseForLong) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    start({"pkg.test:" + std::to_string(server.port())});
    auto [reader, lingering] = lingering_pair();
    ASSERT_GE(lingering, 0);
    const int kept = ::dup(lingering);
    ASSERT_GE(kept, 0);
    std::atomic<bool> set_again = false;
    std::thread box([&] {
        // Spins, to act in the moment between the broker's switch and its close; gives up after
        // 60 s (the broker never switched).
        const auto give_up = std::chrono::steady_clock::now() + 60s;
        for (unsigned n = 0;; ++n) {
            linger now{};
            socklen_t len = sizeof now;
            if (::getsockopt(kept, SOL_SOCKET, SO_LINGER, &now, &len) != 0) break;
            if (now.l_onoff == 0) {
                ::setsockopt(kept, SOL_SOCKET, SO_LINGER, &kLongLinger, sizeof kLongLinger);
                set_again = true;
                break;
            }
            if (n % 4096 == 0 && std::chrono::steady_clock::now() > give_up) break;
        }
        // Had the broker closed first (a loaded machine may let it), this close would be the
        // last and wait out the linger here: the broker's own bound ends it.
        detail::bounded_close(kept);
    });
    const int u = connect_broker();
    hand_over(u, {lingering});
    char answer = 0;
    ASSERT_EQ(::read(u, &answer, 1), 1);
    EXPECT_EQ(answer, 'K');
    ::close(lingering);
    ::close(u);
    broker_->revoke();
    box.join();
    ASSERT_TRUE(set_again) << "the broker never switched lingering off";
    EXPECT_TRUE(test::wait_until([] { return detail::box_socket_closes_in_flight() == 0; }, 30s))
        << "a close of radiald's waits out the box's linger";
    ::close(reader);
}

TEST_F(EgressBrokerTest, AHandOverWithoutADescriptorIsRelayedAsAStream) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    start({dest});
    const int u = connect_broker();
    hand_over(u, {}); // what gVisor's endpoint gets through: the byte, not the descriptor
    char answer = 0;
    ASSERT_EQ(::read(u, &answer, 1), 1);
    EXPECT_EQ(answer, 'S');
    send_text(u, "GET http://" + dest + "/streamed HTTP/1.1\r\n\r\n");
    EXPECT_EQ(read_all(u), kOk);
    ::close(u);
    EXPECT_EQ(receipt(1).verdict, "allowed");
    EXPECT_EQ(receipt(1).via, "relayed");
}

TEST_F(EgressBrokerTest, AHandOverOfAnythingButTheBoxsLoopbackTcpIsRefused) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    start({"pkg.test:" + std::to_string(server.port())});
    int pipe_fds[2], unix_pair[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, unix_pair), 0);
    const int listening = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(listening, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(listening, 1), 0);
    const int unconnected = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    auto [c1, c2] = loopback_pair();
    struct Case {
        std::vector<int> fds;
        std::string says;
    };
    const std::vector<Case> cases = {
        {{pipe_fds[0]}, "no socket"},
        {{unix_pair[0]}, "not TCP"},
        {{udp}, "not TCP"},
        {{listening}, "listening"},
        {{unconnected}, "not connected"},
        {{c1, c2}, "more than one descriptor"},
    };
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const int u = connect_broker();
        hand_over(u, cases[i].fds);
        EXPECT_EQ(read_all(u), "") << "closed without an answer: " << cases[i].says;
        ::close(u);
        Receipt r = receipt(i + 1);
        EXPECT_EQ(r.verdict, "refused");
        EXPECT_NE(r.reason.find(cases[i].says), std::string::npos) << r.reason;
    }
    for (int fd : {pipe_fds[0], pipe_fds[1], unix_pair[0], unix_pair[1], listening, unconnected,
                   udp, c1, c2})
        ::close(fd);
    EXPECT_EQ(server.requests(), 0);
}

// The far end of one TCP connection on 127.0.0.2: keeps every byte it receives; a test can send
// on the connection once it is accepted.
class RawPeer {
public:
    RawPeer() {
        listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        ::inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
        socklen_t len = sizeof a;
        EXPECT_EQ(::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        EXPECT_EQ(::listen(listen_, 1), 0);
        ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~RawPeer() {
        stop_ = true;
        thread_.join();
        for (int fd : {listen_, conn_.load()})
            if (fd >= 0) ::close(fd);
    }
    std::uint16_t port() const { return port_; }
    std::string received() {
        std::lock_guard l(m_);
        return received_;
    }
    // The accepted connection (-1 if none came within 20 s).
    int connection() {
        test::wait_until([this] { return conn_ >= 0; }, 20s);
        return conn_;
    }
    // Whether the broker's side of the connection ended within 20 s.
    bool closed_within_20s() {
        return test::wait_until([this] { return closed_.load(); }, 20s);
    }

private:
    void serve() {
        while (!stop_ && conn_ < 0) {
            pollfd p{listen_, POLLIN, 0};
            if (::poll(&p, 1, 50) > 0) conn_ = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
        }
        char buf[4096];
        while (!stop_) {
            pollfd q{conn_, POLLIN, 0};
            if (::poll(&q, 1, 50) <= 0) continue;
            const ssize_t n = ::read(conn_, buf, sizeof buf);
            if (n <= 0) break;
            std::lock_guard l(m_);
            received_.append(buf, static_cast<std::size_t>(n));
        }
        closed_ = !stop_;
    }
    int listen_ = -1;
    std::atomic<int> conn_{-1};
    std::uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<bool> closed_{false};
    std::mutex m_;
    std::string received_;
    std::thread thread_;
};

// TCP urgent data stops splice(2) at its mark. One urgent byte in a tunnel, from the box (whose
// kept duplicate of its handed socket may make it non-blocking again) or from the destination,
// must neither spin the relay (readable, yet nothing spliced) nor end the stream there (a blocking
// socket's splice returns 0 at the mark): what follows the byte still goes both ways.
TEST_F(EgressBrokerTest, UrgentDataNeitherStallsNorEndsATunnel) {
    for (const bool nonblocking : {false, true}) {
        SCOPED_TRACE(nonblocking ? "the box's socket non-blocking" : "the box's socket blocking");
        broker_.reset();
        RawPeer peer;
        const std::string dest = "pkg.test:" + std::to_string(peer.port());
        start({dest});
        auto [client, accepted] = loopback_pair();
        const int u = connect_broker();
        const std::string hello = client_hello("pkg.test");
        send_text(client, "CONNECT " + dest + " HTTP/1.1\r\n\r\n" + hello);
        hand_over(u, {accepted});
        char answer = 0;
        ASSERT_EQ(::read(u, &answer, 1), 1);
        ::close(u);
        const int far = peer.connection();
        ASSERT_GE(far, 0);
        ASSERT_TRUE(test::wait_until([&] { return peer.received() == hello; }, 20s));
        if (nonblocking) ::fcntl(accepted, F_SETFL, O_NONBLOCK);
        send_text(far, server_hello()); // the handshake's clear part ends: the rest is spliced
        std::string answered;
        char buf[256];
        while (answered.find("\r\n\r\n" + server_hello()) == std::string::npos) {
            const ssize_t n = ::read(client, buf, sizeof buf);
            ASSERT_GT(n, 0);
            answered.append(buf, static_cast<std::size_t>(n));
        }
        send_text(client, "ab");
        ASSERT_EQ(::send(client, "!", 1, MSG_OOB), 1);
        send_text(client, "cd");
        EXPECT_TRUE(test::wait_until([&] { return peer.received() == hello + "abcd"; }, 20s))
            << "the destination got " << peer.received().size() - hello.size()
            << " bytes after the hello";
        send_text(client, "ef");
        EXPECT_TRUE(test::wait_until([&] { return peer.received() == hello + "abcdef"; }, 20s));
        // The other way: the destination's urgent byte.
        send_text(far, "12");
        ASSERT_EQ(::send(far, "!", 1, MSG_OOB), 1);
        send_text(far, "34");
        std::string down;
        const auto deadline = std::chrono::steady_clock::now() + test::scaled(20s);
        while (down != "1234" && std::chrono::steady_clock::now() < deadline) {
            pollfd p{client, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            const ssize_t n = ::recv(client, buf, sizeof buf, 0);
            if (n <= 0) break;
            down.append(buf, static_cast<std::size_t>(n));
        }
        EXPECT_EQ(down, "1234");
        ::close(client);
        ::close(accepted);
        ::shutdown(far, SHUT_WR); // both ends done: the relay ends and receipts the tunnel
        EXPECT_EQ(receipt(1).verdict, "allowed");
        EXPECT_EQ(receipt(1).bytes_in, server_hello().size() + 4)
            << "what the destination sent, but its urgent byte";
        broker_.reset();
        std::lock_guard l(m_);
        receipts_.clear();
        opens_.clear();
    }
}

// A box that gives up on a plain request (curl --max-time) closes its connection while the
// destination has not answered. The broker no longer reads the box once the request is whole,
// yet it must see that close: the connection ends, its receipt says so, and its maxConnections
// slot is free for the next request, rather than held until the destination answers or the turn
// ends. Closed whole on the broker's socket, half closed (what radial-init's relay passes on when
// the box's client closes), a handed socket closed, and a close before the body was whole.
TEST_F(EgressBrokerTest, APlainRequestTheBoxGaveUpOnEndsAndFreesItsSlot) {
    half_closed_timeout_ = 300ms; // the destination never answers: only how it ends is waited for
    test::LoopbackHttpServer answering("127.0.0.2", kOk);
    const std::string other = "pkg.test:" + std::to_string(answering.port());
    enum class Way { closed, half_closed, handed_closed, inside_body };
    for (const Way way : {Way::closed, Way::half_closed, Way::handed_closed, Way::inside_body}) {
        SCOPED_TRACE(static_cast<int>(way));
        broker_.reset();
        {
            std::lock_guard l(m_);
            receipts_.clear();
        }
        RawPeer hung; // reads the request and never answers
        const std::string dest = "pkg.test:" + std::to_string(hung.port());
        EgressCeiling c;
        c.max_connections = 1;
        start({dest, other}, c);
        const std::string request =
            way == Way::inside_body
                ? "POST http://" + dest + "/slow HTTP/1.1\r\nContent-Length: 10\r\n\r\nfour"
                : "POST http://" + dest + "/slow HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody";
        int box = -1;
        if (way == Way::handed_closed) {
            auto [client, accepted] = loopback_pair();
            const int u = connect_broker();
            send_text(client, request);
            hand_over(u, {accepted});
            char answer = 0;
            ASSERT_EQ(::read(u, &answer, 1), 1);
            ::close(accepted);
            ::close(u);
            box = client;
        } else {
            box = connect_broker();
            send_text(box, request);
        }
        ASSERT_GE(hung.connection(), 0);
        ASSERT_TRUE(test::wait_until(
            [&] {
                return hung.received().find(way == Way::inside_body ? "four" : "body") !=
                       std::string::npos;
            },
            20s));
        if (way == Way::half_closed)
            ::shutdown(box, SHUT_WR);
        else
            ::close(box);
        Receipt r = receipt(1);
        EXPECT_EQ(r.verdict, "allowed");
        // A half-close (or a handed TCP socket's close, which looks the same) ends it once the
        // destination has been silent for half_closed_timeout; a unix socket's close at once.
        EXPECT_EQ(r.reason,
                  way == Way::inside_body ? "the box closed the connection inside its request body"
                  : way == Way::closed
                      ? "the box closed the connection"
                      : "the box ended its side and the destination sent nothing for 300 ms; "
                        "closed");
        EXPECT_TRUE(hung.closed_within_20s()) << "the destination's side was closed";
        EXPECT_TRUE(test::wait_until([&] { return broker_->open_connections() == 0; }, 20s));
        EXPECT_EQ(ask("GET http://" + other + "/ HTTP/1.1\r\n\r\n"), kOk)
            << "the slot is free again";
        if (way == Way::half_closed) ::close(box);
    }
}

// A client that ends its side once its request is sent (nc, a scripted client) still gets the
// answer.
TEST_F(EgressBrokerTest, APlainRequestWhoseBoxEndedItsSideStillGetsItsAnswer) {
    test::LoopbackHttpServer answering("127.0.0.2", kOk);
    const std::string dest = "pkg.test:" + std::to_string(answering.port());
    start({dest});
    const int box = connect_broker();
    send_text(box, "GET http://" + dest + "/ HTTP/1.0\r\n\r\n");
    ::shutdown(box, SHUT_WR);
    EXPECT_EQ(read_all(box), kOk);
    ::close(box);
    EXPECT_EQ(receipt(1).verdict, "allowed");
}

// A tunnel whose box ended its side: what the destination still sends reaches the box, but a
// destination that stays silent does not hold the connection (and its slot) until the turn ends:
// it is closed after half_closed_timeout of silence, or at once when the box's socket is closed
// whole.
TEST_F(EgressBrokerTest, ATunnelTheBoxEndedIsClosedWhenTheDestinationStaysSilent) {
    // Long enough for the test to answer after it saw the box's end, even on a loaded machine.
    half_closed_timeout_ = 3000ms;
    for (const bool whole : {false, true}) {
        SCOPED_TRACE(whole ? "closed whole" : "half closed");
        broker_.reset();
        {
            std::lock_guard l(m_);
            receipts_.clear();
        }
        RawPeer peer;
        const std::string dest = "pkg.test:" + std::to_string(peer.port());
        start({dest});
        const int fd = connect_broker();
        const std::string hello = client_hello("pkg.test");
        send_text(fd, "CONNECT " + dest + " HTTP/1.1\r\n\r\n" + hello);
        const int far = peer.connection();
        ASSERT_GE(far, 0);
        ASSERT_TRUE(test::wait_until([&] { return peer.received() == hello; }, 20s));
        std::string got;
        char buf[256];
        while (got.find("\r\n\r\n") == std::string::npos) {
            const ssize_t n = ::read(fd, buf, sizeof buf);
            ASSERT_GT(n, 0);
            got.append(buf, static_cast<std::size_t>(n));
        }
        if (whole) {
            ::close(fd);
            EXPECT_EQ(receipt(1).reason, "the box closed the connection");
        } else {
            ::shutdown(fd, SHUT_WR);
            ASSERT_TRUE(peer.closed_within_20s()) << "the box's end was passed on";
            send_text(far, server_hello() + "late");
            EXPECT_EQ(read_all(fd), server_hello() + "late")
                << "what the destination still sends reaches the box";
            Receipt r = receipt(1);
            EXPECT_NE(r.reason.find("the box ended its side and the destination sent nothing for "
                                    "3000 ms"),
                      std::string::npos)
                << r.reason;
            EXPECT_EQ(r.bytes_in, server_hello().size() + 4);
            ::close(fd);
        }
        EXPECT_TRUE(test::wait_until([&] { return broker_->open_connections() == 0; }, 20s));
    }
}

// A ServerHello that is a HelloRetryRequest (its random is TLS 1.3's fixed one).
std::string hello_retry_request() {
    std::string r = server_hello();
    r.replace(5 + 4 + 2, 32,
              std::string("\xcf\x21\xad\x74\xe5\x9a\x61\x11\xbe\x1d\x8c\x02\x1e\x65\xb8\x91"
                          "\xc2\xa2\x11\x16\x7a\xbb\x8c\x5e\x07\x9e\x09\xe2\xc8\xa8\x33\x9c",
                          32));
    return r;
}

// TLS 1.3: a server that answers with a HelloRetryRequest reads a second ClientHello, in the
// clear, and serves the name that one gives. Every hello of the box's is judged as the first:
// one naming another host closes the tunnel before it reaches the destination, the receipt says
// why; the same name again goes through, and the ServerHello after it ends the watch.
TEST_F(EgressBrokerTest, ASecondClientHelloNamingAnotherHostClosesTheTunnel) {
    for (const bool other : {true, false}) {
        SCOPED_TRACE(other ? "another name" : "the same name");
        broker_.reset();
        {
            std::lock_guard l(m_);
            receipts_.clear();
        }
        RawPeer peer;
        const std::string dest = "pkg.test:" + std::to_string(peer.port());
        start({dest});
        const int fd = connect_broker();
        const std::string first = client_hello("pkg.test");
        send_text(fd, "CONNECT " + dest + " HTTP/1.1\r\n\r\n" + first);
        const int far = peer.connection();
        ASSERT_GE(far, 0);
        ASSERT_TRUE(test::wait_until([&] { return peer.received() == first; }, 20s));
        send_text(far, hello_retry_request());
        std::string got;
        char buf[256];
        while (got.find("\r\n\r\n" + hello_retry_request()) == std::string::npos) {
            const ssize_t n = ::read(fd, buf, sizeof buf);
            ASSERT_GT(n, 0);
            got.append(buf, static_cast<std::size_t>(n));
        }
        const std::string second = client_hello(other ? "other.test" : "pkg.test");
        send_text(fd, second);
        if (other) {
            Receipt r = receipt(1);
            EXPECT_EQ(r.verdict, "refused");
            EXPECT_EQ(r.reason,
                      "the tunnel's TLS names 'other.test', not 'pkg.test' in ClientHello #2 "
                      "(after the destination's HelloRetryRequest)");
            EXPECT_EQ(r.bytes_out, first.size()) << "the second hello was not sent on";
            EXPECT_TRUE(peer.closed_within_20s());
            EXPECT_EQ(peer.received(), first) << "the second hello never reached the destination";
            EXPECT_EQ(read_all(fd), "") << "and the box's side is closed";
            ::close(fd);
        } else {
            ASSERT_TRUE(test::wait_until([&] { return peer.received() == first + second; }, 20s));
            send_text(far, server_hello() + "encrypted");
            ::shutdown(far, SHUT_WR);
            EXPECT_EQ(read_all(fd), server_hello() + "encrypted");
            ::close(fd);
            Receipt r = receipt(1);
            EXPECT_EQ(r.verdict, "allowed");
            EXPECT_EQ(r.reason, "closed");
        }
    }
}

// `radiald policy` while the turn runs (operator_policy.h): the broker sees the file replaced. A
// turn holding a connection to one port of pkg.test, another port of it allowed too.
class OperatorDenyTest : public EgressBrokerTest {
protected:
    test::LoopbackHttpServer held{"127.0.0.2", streaming(), true};
    test::LoopbackHttpServer other{"127.0.0.2", kOk};
    const std::string dest = "pkg.test:" + std::to_string(held.port());
    const std::string kept = "pkg.test:" + std::to_string(other.port());

    // The operator denies `rule` to every turn while the connection is held: it must close.
    void deny_while_held(const std::string& rule) {
        start({dest, kept});
        const int fd = open_stream(dest);
        ASSERT_GE(fd, 0);
        OperatorPolicy p;
        p.deny.push_back(parse_allow_rule(rule));
        write_operator_policy(policy_path(), p);
        EXPECT_TRUE(held.peer_closed_within(20s)) << "the denied connection stayed open";
        read_all(fd);
        ::close(fd);
    }
};

TEST_F(OperatorDenyTest, AnOperatorsDenyClosesOpenConnectionsToItAndRefusesNewOnes) {
    deny_while_held(dest);
    Receipt r = receipt(1);
    EXPECT_EQ(r.verdict, "allowed");
    EXPECT_NE(r.reason.find("revoked by radiald policy: " + dest + " is denied now"),
              std::string::npos)
        << r.reason;
    const std::string refused = ask("GET http://" + dest + "/ HTTP/1.1\r\n\r\n");
    EXPECT_NE(refused.find("403 Forbidden"), std::string::npos) << refused;
    EXPECT_NE(receipt(2).reason.find("denied by the operator"), std::string::npos)
        << receipt(2).reason;
    EXPECT_EQ(ask("GET http://" + kept + "/ HTTP/1.1\r\n\r\n"), kOk) << "the rest still goes";
}

// An operator's deny of an address:port names it however a box reaches it: by a name resolving
// there too, both the connection open and the next one.
TEST_F(OperatorDenyTest, AnOperatorsDenyOfAnAddressClosesWhatANameReachedThere) {
    deny_while_held("127.0.0.2:" + std::to_string(held.port()));
    EXPECT_NE(receipt(1).reason.find("revoked by radiald policy"), std::string::npos)
        << receipt(1).reason;
    const std::string refused = ask("GET http://" + dest + "/ HTTP/1.1\r\n\r\n");
    EXPECT_NE(refused.find("403 Forbidden"), std::string::npos) << refused;
    EXPECT_NE(receipt(2).reason.find("denied by the operator"), std::string::npos)
        << receipt(2).reason;
    EXPECT_EQ(ask("GET http://" + kept + "/ HTTP/1.1\r\n\r\n"), kOk) << "another port still goes";
}

TEST_F(EgressBrokerTest, ADestinationAddedForTheTurnIsReachedAndOneForAnotherTurnIsNot) {
    test::LoopbackHttpServer server("127.0.0.2", kOk);
    const std::string dest = "pkg.test:" + std::to_string(server.port());
    EgressCeiling c;
    c.allow.push_back(parse_allow_rule(dest));
    start({}, c);
    const std::string request = "GET http://" + dest + "/ HTTP/1.1\r\n\r\n";
    EXPECT_NE(ask(request).find("not in the turn's egress policy"), std::string::npos);
    OperatorPolicy p;
    p.turns["turn-2"].allow.push_back(parse_allow_rule(dest));
    write_operator_policy(policy_path(), p);
    broker_->reload_policy(); // the same as the broker's own reload when the file changes
    EXPECT_NE(ask(request).find("403"), std::string::npos) << "another turn's addition";
    p.turns["turn-1"].allow.push_back(parse_allow_rule(dest));
    write_operator_policy(policy_path(), p);
    broker_->reload_policy();
    EXPECT_EQ(ask(request), kOk);
    EXPECT_EQ(server.requests(), 1);
}

// Removing the policy file drops every change `radiald policy` made (operator_policy.cpp says so
// to the operator): a running broker sees the removal too, and closes what only the file allowed.
TEST_F(EgressBrokerTest, ThePolicyFileRemovedClosesWhatOnlyItAllowed) {
    test::LoopbackHttpServer held("127.0.0.2", streaming(), true);
    const std::string dest = "pkg.test:" + std::to_string(held.port());
    EgressCeiling c;
    c.allow.push_back(parse_allow_rule(dest));
    start({}, c);
    OperatorPolicy p;
    p.turns["turn-1"].allow.push_back(parse_allow_rule(dest));
    write_operator_policy(policy_path(), p);
    broker_->reload_policy();
    const int fd = open_stream(dest);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::unlink(policy_path().c_str()), 0);
    EXPECT_TRUE(held.peer_closed_within(20s)) << "the broker did not see the policy file go";
    read_all(fd);
    ::close(fd);
    EXPECT_NE(receipt(1).reason.find("revoked by radiald policy"), std::string::npos)
        << receipt(1).reason;
}

// The inotify instances this process holds.
int inotify_instances() {
    int n = 0;
    // hermetic-ok: this process's own descriptor table
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        n += std::filesystem::read_symlink(e.path(), ec).string() == "anon_inode:inotify";
    }
    return n;
}

// More brokers than root may have inotify instances (fs.inotify.max_user_instances, 128 by
// default) all start, hold one watch of the policy between them, and each sees the file change:
// one instance per broker failed every egress turn past about a hundred at once.
TEST(OperatorPolicy, ManyBrokersShareOneWatchAndEachSeesTheFileChange) {
    test::TempDir dir("radial-policy-watch");
    const std::string policy = operator_policy_path(dir.path());
    std::atomic<int> told = 0;
    std::vector<std::unique_ptr<EgressBroker>> brokers;
    for (int i = 0; i < 130; ++i) {
        EgressBrokerOptions o;
        o.unix_path = dir.path() + "/e" + std::to_string(i) + ".sock";
        o.policy_path = policy;
        o.turn_id = "turn-" + std::to_string(i);
        o.on_log = [&told](const std::string& line) {
            if (line.find("the operator's policy is kept as it was") != std::string::npos) ++told;
        };
        ASSERT_NO_THROW(brokers.push_back(std::make_unique<EgressBroker>(std::move(o)))) << i;
    }
    EXPECT_EQ(inotify_instances(), 1);
    dir.write("egress-policy.json", "not json"); // each broker reads it again, and keeps its own
    EXPECT_TRUE(test::wait_until([&] { return told >= 130; }, 30s)) << told << " of 130 were told";
    brokers.clear();
    EXPECT_EQ(inotify_instances(), 0) << "the watch outlived its last broker";
}

TEST(OperatorPolicy, IsWrittenWholeAndReadBackAndAnUnreadableFileIsNamed) {
    test::TempDir dir("radial-policy");
    const std::string path = operator_policy_path(dir.path());
    EXPECT_TRUE(read_operator_policy(path).deny.empty()) << "no file: no changes";
    OperatorPolicy p;
    p.deny.push_back(parse_allow_rule("*.example.com:443"));
    p.turns["t1"].allow.push_back(parse_allow_rule("pypi.org:443"));
    write_operator_policy(path, p);
    const auto back = read_operator_policy(path);
    ASSERT_EQ(back.deny.size(), 1u);
    EXPECT_EQ(back.deny[0].text(), "*.example.com:443");
    EXPECT_EQ(back.turns.at("t1").allow[0].text(), "pypi.org:443");
    const std::vector<AllowRule> ceiling = {parse_allow_rule("*.com:443"),
                                            parse_allow_rule("pypi.org:443")};
    const auto rules = effective_rules({parse_allow_rule("*.com:443")}, back, "t1", ceiling);
    EXPECT_TRUE(rules.permits("files.pythonhosted.com", 443, false));
    EXPECT_FALSE(rules.permits("a.example.com", 443, false)) << "a deny wins over a wildcard";
    EXPECT_TRUE(rules.permits("pypi.org", 443, false)) << "added for t1";
    EXPECT_FALSE(effective_rules({}, back, "t2", ceiling).permits("pypi.org", 443, false));
    EXPECT_FALSE(effective_rules({}, back, "t1", {parse_allow_rule("*.com:443")})
                     .permits("pypi.org", 443, false))
        << "an addition outside the running turn's ceiling is not applied";
    for (const char* bad :
         {"not json", "[]", "{\"deny\": [\"no-port\"]}", "{\"turns\": {\"t\": {\"allow\": 5}}}"}) {
        dir.write("egress-policy.json", bad);
        try {
            read_operator_policy(path);
            ADD_FAILURE() << "read: " << bad;
        } catch (const PolicyError& e) {
            EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        }
    }
}

// An operator's deny of an address meets the turn's rule however either spells the address: the
// rules were compared as typed, so `deny [0:0:0:0:0:0:0:1]:9443` let `[::1]:9443` through.
TEST(OperatorPolicy, ADenyOfAnAddressHoldsHoweverTheAddressIsWritten) {
    const std::vector<std::pair<const char*, const char*>> spellings = {
        {"[::1]:9443", "[0:0:0:0:0:0:0:1]:9443"},       {"[0:0:0:0:0:0:0:1]:9443", "[::1]:9443"},
        {"[2001:db8::1]:443", "[2001:DB8:0::0:1]:443"}, {"127.0.0.2:80", "[::ffff:127.0.0.2]:80"},
        {"[::ffff:7f00:2]:80", "127.0.0.2:80"},
    };
    for (const auto& [allowed, denied] : spellings) {
        SCOPED_TRACE(std::string(allowed) + " denied as " + denied);
        const std::vector<AllowRule> ceiling = {parse_allow_rule(allowed)};
        OperatorPolicy p;
        p.deny.push_back(parse_allow_rule(denied));
        const AllowRule dest = parse_allow_rule(allowed);
        EXPECT_TRUE(effective_rules(ceiling, {}, "t", ceiling).permits(dest.host, dest.port, true));
        EXPECT_FALSE(effective_rules(ceiling, p, "t", ceiling).permits(dest.host, dest.port, true));
        EXPECT_TRUE(covers(parse_allow_rule(denied), dest))
            << "a deny must cover the rule it names";
    }
}

} // namespace
} // namespace radial::egress
