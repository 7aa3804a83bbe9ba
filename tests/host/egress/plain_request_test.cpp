// tests/host/egress/plain_request_test.cpp — where a plain HTTP request through the broker goes
// and the head sent on (host/egress/plain_request.h): the Host written from the target, for a name
// and for an IPv6 literal, with and without HTTP's own port.
#include "egress/plain_request.h"

#include <gtest/gtest.h>

#include <string>

namespace radial::egress::detail {
namespace {

struct Sent {
    bool ok = false;
    AllowRule dest;
    std::string forward, reason;
    std::uint64_t body = 0;
};

Sent send_on(const std::string& head) {
    std::string why;
    const auto h = parse_request_head(head, why);
    EXPECT_TRUE(h) << why;
    Sent s;
    if (!h) return s;
    Receipt r;
    s.ok = plain_request(*h, s.dest, s.forward, s.body, r);
    s.reason = r.reason;
    return s;
}

TEST(PlainRequest, TheHostSentOnIsWrittenFromTheTarget) {
    const struct {
        const char* head;
        const char* host_line;
    } cases[] = {
        {"GET http://pkg.test/a HTTP/1.1\r\n", "Host: pkg.test\r\n"},
        {"GET http://pkg.test:8080/a HTTP/1.1\r\n", "Host: pkg.test:8080\r\n"},
        {"GET http://[2001:db8::1]/a HTTP/1.1\r\n", "Host: [2001:db8::1]\r\n"},
        {"GET http://[2001:db8::1]:8080/a HTTP/1.1\r\n", "Host: [2001:db8::1]:8080\r\n"},
        {"GET http://[2001:db8::1]:80/a HTTP/1.1\r\nHost: [2001:db8::1]\r\n",
         "Host: [2001:db8::1]\r\n"},
    };
    for (const auto& c : cases) {
        const Sent s = send_on(c.head);
        ASSERT_TRUE(s.ok) << c.head << ": " << s.reason;
        EXPECT_NE(s.forward.find(std::string("GET /a HTTP/1.1\r\n") + c.host_line),
                  std::string::npos)
            << c.head << " sent on as:\n"
            << s.forward;
        EXPECT_EQ(s.forward.find("Host:"), s.forward.rfind("Host:")) << "one Host only";
    }
}

// A destination that ignores a GET's body would read it as a request of its own; so would one that
// takes a lower-case "get" for GET, or ignores a DELETE's body.
TEST(PlainRequest, ABodyIsSentOnlyWithAMethodThatGivesItMeaning) {
    for (const char* method : {"GET", "HEAD", "TRACE", "DELETE", "OPTIONS", "FOO"}) {
        const Sent s =
            send_on(std::string(method) + " http://pkg.test/a HTTP/1.1\r\nContent-Length: 40\r\n");
        EXPECT_FALSE(s.ok) << method;
        EXPECT_NE(s.reason.find("with a body is refused"), std::string::npos) << s.reason;
        EXPECT_TRUE(
            send_on(std::string(method) + " http://pkg.test/a HTTP/1.1\r\nContent-Length: 0\r\n")
                .ok)
            << method << " with an empty body";
    }
    for (const char* method : {"get", "Get", "post", "gEt"}) {
        for (const char* length : {"40", "0"}) {
            const Sent s =
                send_on(std::string(method) +
                        " http://pkg.test/a HTTP/1.1\r\nContent-Length: " + length + "\r\n");
            EXPECT_FALSE(s.ok) << method;
            EXPECT_NE(s.reason.find("upper-case"), std::string::npos) << s.reason;
        }
    }
    for (const char* method : {"POST", "PUT", "PATCH"}) {
        const Sent s =
            send_on(std::string(method) + " http://pkg.test/a HTTP/1.1\r\nContent-Length: 40\r\n");
        EXPECT_TRUE(s.ok) << method << ": " << s.reason;
        EXPECT_EQ(s.body, 40u) << method;
    }
}

TEST(PlainRequest, AHostHeaderNamingAnotherDestinationIsRefused) {
    const Sent s = send_on("GET http://[2001:db8::1]/a HTTP/1.1\r\nHost: [2001:db8::2]\r\n");
    EXPECT_FALSE(s.ok);
    EXPECT_NE(s.reason.find("the Host header names"), std::string::npos) << s.reason;
}

} // namespace
} // namespace radial::egress::detail
