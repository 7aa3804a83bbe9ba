// tests/host/egress/http_head_test.cpp — the strict request head (host/egress/http_head.h): what
// it reads, and every form a lenient reader downstream could read differently, refused.
#include "egress/http_head.h"

#include <gtest/gtest.h>

namespace radial::egress {
namespace {

TEST(HttpHead, AnOrdinaryHeadIsRead) {
    std::string why;
    auto h = parse_request_head(
        "GET http://pkg.test/simple HTTP/1.1\r\nHost: pkg.test\r\nUser-Agent:  curl/7 \r\n", why);
    ASSERT_TRUE(h) << why;
    EXPECT_EQ(h->method, "GET");
    EXPECT_EQ(h->target, "http://pkg.test/simple");
    EXPECT_EQ(h->version, "HTTP/1.1");
    ASSERT_NE(h->header("user-agent"), nullptr);
    EXPECT_EQ(*h->header("user-agent"), "curl/7");
}

TEST(HttpHead, EveryAmbiguousFormIsRefused) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"GET / HTTP/1.1\nHost: a\r\n", "bare LF"},
        {"GET / HTTP/1.1\r\nHost: a\rX: b\r\n", "bare CR"},
        {"GET / HTTP/1.1\r\nHost: a\x01\r\n", "control byte"},
        {"GET  / HTTP/1.1\r\n", "request line"},
        {"GET / x HTTP/1.1\r\n", "request line"},
        {"GET\t/ HTTP/1.1\r\n", "request line"},
        {"GET / HTTP/2\r\n", "HTTP/1.0 or HTTP/1.1"},
        {"G(T / HTTP/1.1\r\n", "method"},
        {"GET / HTTP/1.1\r\nHost : a\r\n", "not a token"},
        {"GET / HTTP/1.1\r\n: a\r\n", "not a token"},
        {"GET / HTTP/1.1\r\nX: a\r\n Host: b\r\n", "folded"},
        {"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n", "more than one host"},
        {"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n", "content-length"},
        {"GET / HTTP/1.1\r\nTransfer-Encoding: a\r\nTransfer-Encoding: b\r\n", "transfer-encoding"},
    };
    for (const auto& [head, says] : cases) {
        std::string why;
        EXPECT_FALSE(parse_request_head(head.substr(0, head.size() - 2), why)) << head;
        EXPECT_NE(why.find(says), std::string::npos) << head << " -> " << why;
    }
}

// A cut is marked "...", where the receipt's redaction holds back what could begin a secret; with
// user information nothing after the scheme is shown, since a secret holding an '@' would leave
// its end there (docs/design.md §9.7).
TEST(HttpHead, AQuotedTargetLosesItsCredentialsAndIsBounded) {
    EXPECT_EQ(shown_target("http://u:p@h.test:1/x?token=y#z"), "http://...");
    EXPECT_EQ(shown_target("u:p@h.test:443"), "...");
    EXPECT_EQ(shown_target("a@b@h.test:443"), "...");
    EXPECT_EQ(shown_target("user:pa/ss@pkg.test:8443"), "...")
        << "a CONNECT target's user information with a '/' in it was kept";
    EXPECT_EQ(shown_target("adm1nPassw0rd@corpvault:443"), "...");
    EXPECT_EQ(shown_target("http://h.test/a@b"), "http://h.test/a@b") << "an @ in the path stays";
    EXPECT_EQ(shown_target("http://h.test/x?token=y#z"), "http://h.test/x...");
    EXPECT_EQ(shown_target("/relative?q=1"), "/relative...");
    EXPECT_EQ(shown_target("/Pa55w0rd#kLmN"), "/Pa55w0rd...");
    EXPECT_EQ(shown_target(std::string(200, 'a')), std::string(96, 'a') + "...");
    EXPECT_EQ(shown_text("a\xc3\xa9\r\nb", 64), "a????b");
}

} // namespace
} // namespace radial::egress
