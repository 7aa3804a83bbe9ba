// tests/host/egress/tls_client_hello_test.cpp — the server name of a ClientHello
// (host/egress/tls_client_hello.h), from bytes built here by the TLS 1.2/1.3 layout: whole, split
// across records, cut short, absent, and not TLS at all.
#include "egress/tls_client_hello.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

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

// A ClientHello body whose extensions are exactly `ext`.
std::string hello_with(const std::string& ext) {
    std::string b = "\x03\x03" + std::string(32, 'r') + std::string(1, '\0'); // no session id
    b += u16(2) + std::string("\x13\x01", 2) + std::string("\x01\x00", 2);
    return b + u16(ext.size()) + ext;
}

// A server_name extension listing `names`, each a (name type, name) pair.
std::string server_name_ext(const std::vector<std::pair<char, std::string>>& names) {
    std::string list;
    for (const auto& [type, name] : names) list += std::string(1, type) + u16(name.size()) + name;
    const std::string data = u16(list.size()) + list;
    return u16(0) + u16(data.size()) + data;
}

// A server reading another name than the first would be reached under a name never judged.
TEST(ClientHello, ASecondServerNameIsMalformedInEitherPlace) {
    const auto scan = [](const std::string& ext) {
        return scan_client_hello(record(handshake(hello_with(ext)))).state;
    };
    EXPECT_EQ(scan(server_name_ext({{'\0', "a.example"}})), ClientHelloScan::State::sni);
    EXPECT_EQ(scan(server_name_ext({{'\0', "a.example"}}) + server_name_ext({{'\0', "b.example"}})),
              ClientHelloScan::State::malformed)
        << "two server_name extensions";
    EXPECT_EQ(scan(server_name_ext({{'\0', "a.example"}, {'\0', "b.example"}})),
              ClientHelloScan::State::malformed)
        << "two host names in one extension";
    EXPECT_EQ(scan(server_name_ext({{'\0', "a.example"}}) + server_name_ext({})),
              ClientHelloScan::State::malformed)
        << "a second, empty server_name extension";
    // A name of another type beside the host name is no second host name.
    const auto other = scan_client_hello(
        record(handshake(hello_with(server_name_ext({{'\x07', "x"}, {'\0', "A.example"}})))));
    EXPECT_EQ(other.state, ClientHelloScan::State::sni);
    EXPECT_EQ(other.server_name, "a.example");
}

// A hello offering Encrypted Client Hello names an allowed front outside and the host it really
// wants inside, out of sight: refused wherever the extension stands, with or without the outer
// name, under its published code point or a draft's that clients shipped (0xfe08 to 0xfe0c), and so
// the older encrypted SNI (docs/design.md §9.7).
TEST(ClientHello, AHelloOfferingEncryptedClientHelloIsToldApart) {
    const auto scan = [](const std::string& ext) {
        return scan_client_hello(record(handshake(hello_with(ext)))).state;
    };
    const std::string ech = u16(0xfe0d) + u16(5) + std::string("\x00\x00\x01\x00\x01", 5);
    const std::string esni = u16(0xffce) + u16(2) + u16(0);
    const std::string sni = server_name_ext({{'\0', "allowed.example"}});
    EXPECT_EQ(scan(sni + ech), ClientHelloScan::State::encrypted);
    EXPECT_EQ(scan(ech + sni), ClientHelloScan::State::encrypted);
    EXPECT_EQ(scan(ech), ClientHelloScan::State::encrypted);
    EXPECT_EQ(scan(sni + esni), ClientHelloScan::State::encrypted);
    for (std::size_t draft = 0xfe08; draft <= 0xfe0c; ++draft)
        EXPECT_EQ(scan(sni + u16(draft) + u16(0)), ClientHelloScan::State::encrypted) << draft;
    // Another extension type near them is nothing of the sort.
    EXPECT_EQ(scan(sni + u16(0xfe07) + u16(0)), ClientHelloScan::State::sni);
    EXPECT_EQ(scan(sni + u16(0xfe0e) + u16(0)), ClientHelloScan::State::sni);
}

} // namespace
} // namespace radial::egress
