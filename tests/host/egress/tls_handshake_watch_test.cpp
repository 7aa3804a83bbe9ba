// tests/host/egress/tls_handshake_watch_test.cpp — every ClientHello of a tunnel's handshake is
// judged (host/egress/tls_handshake_watch.h), from bytes built here by the TLS 1.3 layout: the
// second hello a HelloRetryRequest asks for, in one piece or byte by byte, and what else may pass
// before the destination's ServerHello ends the watch.
#include "egress/tls_handshake_watch.h"

#include <gtest/gtest.h>

#include <string>

namespace radial::egress::detail {
namespace {

std::string u16(std::size_t n) { return {static_cast<char>(n >> 8), static_cast<char>(n & 0xff)}; }
std::string u24(std::size_t n) { return static_cast<char>(n >> 16) + u16(n & 0xffff); }

std::string record(char type, const std::string& payload) {
    return std::string(1, type) + std::string("\x03\x03", 2) + u16(payload.size()) + payload;
}

// A ClientHello record naming `sni` (none when empty), with `more_ext` after it.
std::string hello(const std::string& sni, const std::string& more_ext = {}) {
    std::string ext;
    if (!sni.empty()) {
        const std::string entry = std::string(1, '\0') + u16(sni.size()) + sni;
        const std::string data = u16(entry.size()) + entry;
        ext += u16(0) + u16(data.size()) + data;
    }
    ext += u16(43) + u16(3) + std::string("\x02\x03\x04", 3) + more_ext; // supported_versions
    const std::string body = "\x03\x03" + std::string(32, 'r') + std::string(1, '\0') + u16(2) +
                             std::string("\x13\x01\x01\x00", 4) + u16(ext.size()) + ext;
    return record('\x16', std::string(1, '\x01') + u24(body.size()) + body);
}

// A ServerHello record; with `retry`, a HelloRetryRequest (its random is TLS 1.3's fixed one).
std::string server_hello(bool retry) {
    const std::string random =
        retry ? std::string(
                    "\xcf\x21\xad\x74\xe5\x9a\x61\x11\xbe\x1d\x8c\x02\x1e\x65\xb8\x91"
                    "\xc2\xa2\x11\x16\x7a\xbb\x8c\x5e\x07\x9e\x09\xe2\xc8\xa8\x33\x9c",
                    32)
              : std::string(32, 's');
    const std::string body = "\x03\x03" + random + std::string(1, '\0') +
                             std::string("\x13\x01\x00", 3) + u16(6) + u16(43) + u16(2) +
                             u16(0x0304);
    return record('\x16', std::string(1, '\x02') + u24(body.size()) + body);
}

const std::string kCcs = record('\x14', std::string(1, '\x01'));

// Feeds `bytes` to the watch from the box, in pieces of `piece` bytes (0: at once).
bool box_sends(TlsHandshakeWatch& w, const std::string& bytes, std::size_t piece = 0) {
    if (piece == 0) return w.from_box(bytes);
    for (std::size_t at = 0; at < bytes.size(); at += piece)
        if (!w.from_box(std::string_view(bytes).substr(at, piece))) return false;
    return true;
}

// The attack: an allowed name in the first hello, which asks for a retry (no key share), and
// another name in the second, which the server then serves.
TEST(TlsHandshakeWatch, ASecondHelloAfterAHelloRetryRequestIsJudgedAsTheFirst) {
    for (const std::size_t piece : {std::size_t{0}, std::size_t{1}, std::size_t{7}}) {
        SCOPED_TRACE(piece);
        TlsHandshakeWatch w("pkg.test", false);
        ASSERT_TRUE(box_sends(w, hello("pkg.test"), piece));
        EXPECT_TRUE(w.first_hello_judged());
        EXPECT_TRUE(w.from_destination(server_hello(true) + kCcs));
        EXPECT_FALSE(w.over()) << "a HelloRetryRequest does not end the watch";
        EXPECT_FALSE(box_sends(w, kCcs + hello("other.test"), piece));
        EXPECT_EQ(w.why(),
                  "the tunnel's TLS names 'other.test', not 'pkg.test' in ClientHello #2 (after "
                  "the destination's HelloRetryRequest)");
    }
    // The same name again goes on, and the ServerHello after it ends the watch: what the box
    // sends then is encrypted, and no hello.
    TlsHandshakeWatch w("pkg.test", false);
    ASSERT_TRUE(w.from_box(hello("PKG.test")));
    ASSERT_TRUE(w.from_destination(server_hello(true)));
    EXPECT_TRUE(w.from_box(kCcs + hello("pkg.test")));
    EXPECT_TRUE(w.from_destination(server_hello(false) + record('\x17', "encrypted")));
    EXPECT_TRUE(w.over());
    EXPECT_TRUE(w.from_box(hello("other.test"))) << "the watch is over: nothing is read";
}

// A second hello sent at once behind the first, before the server answered: judged too, before
// any of it goes on.
TEST(TlsHandshakeWatch, AHelloPipelinedBehindTheFirstIsJudged) {
    TlsHandshakeWatch w("pkg.test", false);
    EXPECT_FALSE(w.from_box(hello("pkg.test") + hello("other.test")));
    EXPECT_NE(w.why().find("names 'other.test', not 'pkg.test' in ClientHello #2"),
              std::string::npos)
        << w.why();
    EXPECT_FALSE(w.from_box(record('\x17', "x"))) << "refused stays refused";
}

// Every later hello gets every check of the first: no name, Encrypted Client Hello.
TEST(TlsHandshakeWatch, ALaterHelloWithoutANameOrWithEchIsRefused) {
    const std::string ech = u16(0xfe0d) + u16(1) + std::string(1, '\0');
    {
        TlsHandshakeWatch w("pkg.test", false);
        ASSERT_TRUE(w.from_box(hello("pkg.test")));
        EXPECT_FALSE(w.from_box(hello("")));
        EXPECT_NE(w.why().find("names no server"), std::string::npos) << w.why();
    }
    {
        TlsHandshakeWatch w("pkg.test", false);
        ASSERT_TRUE(w.from_box(hello("pkg.test")));
        EXPECT_FALSE(w.from_box(hello("pkg.test", ech)));
        EXPECT_NE(w.why().find("Encrypted Client Hello"), std::string::npos) << w.why();
    }
    {
        // An IP literal's tunnel: hellos without a name, but not one naming a host.
        TlsHandshakeWatch w("192.0.2.7", true);
        ASSERT_TRUE(w.from_box(hello("")));
        EXPECT_TRUE(w.from_box(hello("")));
        EXPECT_FALSE(w.from_box(hello("other.test")));
    }
}

// Between the hellos: the change_cipher_spec of middlebox compatibility, an alert, and early data
// (which a server that asked for a retry skips unread). Nothing else: not another handshake
// message of the box's, not bytes that are no TLS record, nor a record cutting a hello in two.
TEST(TlsHandshakeWatch, OnlyWhatAServerSkipsMayComeBetweenHellos) {
    {
        TlsHandshakeWatch w("pkg.test", false);
        EXPECT_TRUE(w.from_box(hello("pkg.test") + record('\x17', "early") + kCcs +
                               record('\x15', std::string("\x01\x00", 2)) + hello("pkg.test")));
    }
    const std::string finished = record('\x16', std::string("\x14\x00\x00\x01", 4) + "f");
    const std::string h = hello("pkg.test");
    const std::string split =
        h.substr(0, 5 + 10).replace(3, 2, u16(10)) + kCcs + record('\x16', h.substr(15));
    for (const std::string& after : {finished, std::string("GET / HTTP/1.1\r\n\r\n"),
                                     record('\x18', "heartbeat"), split, record('\x16', "")}) {
        TlsHandshakeWatch w("pkg.test", false);
        ASSERT_TRUE(w.from_box(hello("pkg.test")));
        EXPECT_FALSE(w.from_box(after)) << after.size();
        EXPECT_EQ(w.why(), "the tunnel's TLS handshake cannot be read");
    }
    // Before the first hello only a hello: early data cannot come first.
    TlsHandshakeWatch first("pkg.test", false);
    EXPECT_FALSE(first.from_box(record('\x17', "early") + hello("pkg.test")));
    TlsHandshakeWatch plain("pkg.test", false);
    EXPECT_FALSE(plain.from_box("G"));
    EXPECT_NE(plain.why().find("does not start with TLS"), std::string::npos) << plain.why();
}

// The destination's side is followed only as far as its ServerHello: an answer that is no TLS
// handshake cannot say when the watch may end, and ends the tunnel instead.
TEST(TlsHandshakeWatch, TheDestinationsAnswerMustBeATlsHandshake) {
    for (const std::string& answer :
         {std::string("HTTP/1.1 200 OK\r\n\r\n"), record('\x17', "data"),
          record('\x16', std::string("\x0b\x00\x00\x00", 4))}) {
        TlsHandshakeWatch w("pkg.test", false);
        ASSERT_TRUE(w.from_box(hello("pkg.test")));
        EXPECT_FALSE(w.from_destination(answer)) << answer;
        EXPECT_FALSE(w.over());
        EXPECT_NE(w.why().find("destination"), std::string::npos) << w.why();
    }
    TlsHandshakeWatch w("pkg.test", false);
    ASSERT_TRUE(w.from_box(hello("pkg.test")));
    EXPECT_TRUE(w.from_destination(record('\x15', std::string("\x02\x28", 2))))
        << "an alert passes (the server ends)";
    const std::string sh = server_hello(false);
    for (char c : sh) ASSERT_TRUE(w.from_destination(std::string(1, c)));
    EXPECT_TRUE(w.over()) << "a ServerHello read byte by byte";
}

// A server may send its whole first flight in one record: the watch is over at the ServerHello,
// and a Certificate larger than the watch would read, behind it in the record, is not its to judge
// (a TLS 1.2 server's, in the clear).
TEST(TlsHandshakeWatch, WhatFollowsTheServerHelloInItsRecordIsNotJudged) {
    TlsHandshakeWatch w("pkg.test", false);
    ASSERT_TRUE(w.from_box(hello("pkg.test")));
    const std::string flight = server_hello(false).substr(5) + std::string(1, '\x0b') + u24(70000) +
                               std::string(1000, 'c');
    EXPECT_TRUE(w.from_destination(record('\x16', flight))) << w.why();
    EXPECT_TRUE(w.over());
}

} // namespace
} // namespace radial::egress::detail
