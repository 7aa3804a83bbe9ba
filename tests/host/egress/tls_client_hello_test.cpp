// tests/host/egress/tls_client_hello_test.cpp — the server name of a ClientHello
// (host/egress/tls_client_hello.h), from bytes built here by the TLS 1.2/1.3 layout: whole, split
// across records, cut short, absent, and not TLS at all.
#include "egress/tls_client_hello.h"

#include <gtest/gtest.h>

#include <string>

namespace radial::egress {
namespace {

std::string u16(std::size_t n) { return {static_cast<char>(n >> 8), static_cast<char>(n & 0xff)}; }
std::string u24(std::size_t n) { return static_cast<char>(n >> 16) + u16(n & 0xffff); }

// A ClientHello body with `sni` (none when empty) and one other extension before it.
std::string hello_body(const std::string& sni) {
    std::string b = "\x03\x03" + std::string(32, 'r');
    b += '\x20' + std::string(32, 's');                            // session id
    b += u16(4) + std::string("\x13\x01\x13\x02", 4);              // cipher suites
    b += std::string("\x01\x00", 2);                               // compression: null
    std::string ext = u16(0x000a) + u16(4) + u16(2) + u16(0x001d); // supported_groups
    if (!sni.empty()) {
        std::string entry = std::string(1, '\0') + u16(sni.size()) + sni;
        std::string data = u16(entry.size()) + entry;
        ext += u16(0) + u16(data.size()) + data;
    }
    return b + u16(ext.size()) + ext;
}

std::string handshake(const std::string& body) {
    return std::string(1, '\x01') + u24(body.size()) + body;
}

std::string record(const std::string& payload) {
    return std::string("\x16\x03\x01", 3) + u16(payload.size()) + payload;
}

TEST(ClientHello, AWholeHelloNamesItsServer) {
    auto s = scan_client_hello(record(handshake(hello_body("PyPI.org"))));
    EXPECT_EQ(s.state, ClientHelloScan::State::sni);
    EXPECT_EQ(s.server_name, "pypi.org");
}

TEST(ClientHello, AHelloSplitAcrossRecordsIsJoined) {
    const std::string h = handshake(hello_body("a.example.test"));
    const std::string bytes = record(h.substr(0, 20)) + record(h.substr(20));
    EXPECT_EQ(scan_client_hello(bytes).server_name, "a.example.test");
}

TEST(ClientHello, APartialHelloAsksForMoreAtEveryCut) {
    const std::string bytes = record(handshake(hello_body("pypi.org")));
    for (std::size_t cut = 1; cut < bytes.size(); ++cut)
        EXPECT_EQ(scan_client_hello(bytes.substr(0, cut)).state, ClientHelloScan::State::need_more)
            << cut;
}

TEST(ClientHello, NoSniNotTlsAndGarbageAreTold) {
    EXPECT_EQ(scan_client_hello(record(handshake(hello_body("")))).state,
              ClientHelloScan::State::no_sni);
    EXPECT_EQ(scan_client_hello("SSH-2.0-OpenSSH\r\n").state, ClientHelloScan::State::not_tls);
    EXPECT_EQ(scan_client_hello("G").state, ClientHelloScan::State::not_tls);
    std::string body = hello_body("pypi.org");
    body.resize(40); // the hello says more than it holds
    std::string h = std::string(1, '\x01') + u24(body.size()) + body;
    EXPECT_EQ(scan_client_hello(record(h)).state, ClientHelloScan::State::malformed);
    EXPECT_EQ(scan_client_hello(record(std::string("\x02") + u24(0))).state,
              ClientHelloScan::State::malformed)
        << "a handshake that is not a ClientHello";
}

} // namespace
} // namespace radial::egress
