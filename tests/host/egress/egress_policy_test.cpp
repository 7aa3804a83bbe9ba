// tests/host/egress/egress_policy_test.cpp — the egress rules (host/egress/egress_policy.h): how a
// rule reads, what a wildcard matches, that a request only narrows the ceiling, and which
// addresses no box reaches unless the operator names them.
#include "egress/egress_policy.h"

#include <gtest/gtest.h>

#include "egress/egress_dial.h"

namespace radial::egress {
namespace {

namespace ip = boost::asio::ip;

EgressCeiling ceiling(std::vector<std::string> allow) {
    EgressCeiling c;
    for (const auto& a : allow) c.allow.push_back(parse_allow_rule(a));
    return c;
}

TEST(EgressPolicy, RulesReadHostAndPortAndRefuseWhatIsNotOne) {
    auto r = parse_allow_rule("PyPI.org.:443");
    EXPECT_EQ(r.host, "pypi.org");
    EXPECT_EQ(r.port, 443);
    EXPECT_EQ(parse_allow_rule("[::1]:8080").text(), "[::1]:8080");
    EXPECT_EQ(parse_allow_rule("*.example.test:80").host, "*.example.test");
    for (const char* bad : {"pypi.org", "pypi.org:0", "pypi.org:65536", "pypi.org:x", "a*b.org:1",
                            "*:443", "ex ample.org:1", ":443", "[::1:443", "*.*.org:1",
                            // Brackets are an IPv6 address's, and only its: one spelling a rule.
                            "[pkg.test]:8080", "[127.0.0.1]:80", "[]:80", "::1:443"})
        EXPECT_THROW(parse_allow_rule(bad), PolicyError) << bad;
}

TEST(EgressPolicy, AWildcardMatchesNamesUnderItNotItselfNorLookalikes) {
    auto w = parse_allow_rule("*.example.test:443");
    EXPECT_TRUE(matches(w, "a.example.test", 443));
    EXPECT_TRUE(matches(w, "b.a.example.test", 443));
    EXPECT_FALSE(matches(w, "example.test", 443));
    EXPECT_FALSE(matches(w, "evilexample.test", 443));
    EXPECT_FALSE(matches(w, "a.example.test", 80));
}

TEST(EgressPolicy, ARequestOnlyNarrowsTheCeiling) {
    auto c = ceiling({"pypi.org:443", "*.example.test:443"});
    EXPECT_EQ(narrow(c, {"pypi.org:443", "a.example.test:443", "*.b.example.test:443"}).size(), 3u);
    EXPECT_THROW(narrow(c, {"pypi.org:80"}), PolicyError);
    EXPECT_THROW(narrow(c, {"*.org:443"}), PolicyError);
    EXPECT_THROW(narrow(c, {"*.example.test:80"}), PolicyError);
    EXPECT_THROW(narrow(c, {"files.pythonhosted.org:443"}), PolicyError);
    try {
        narrow(c, {"pypi.org:443", "evil.test:443"});
        FAIL();
    } catch (const PolicyError& e) {
        EXPECT_NE(std::string(e.what()).find("'evil.test:443' is outside what run.egress.allow"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(narrow(EgressCeiling{}, {"pypi.org:443"}), PolicyError) << "no ceiling, no egress";
}

TEST(EgressPolicy, LoopbackLinkLocalMetadataPrivateAndMappedAddressesAreRefused) {
    EgressCeiling c;
    for (const char* a : {"127.0.0.1", "127.1.2.3", "0.0.0.0", "169.254.169.254", "10.1.2.3",
                          "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1", "::1",
                          "fe80::1", "fd00:ec2::254", "::ffff:127.0.0.1", "::ffff:169.254.169.254",
                          "224.0.0.1", "255.255.255.255", "168.63.129.16", "::ffff:168.63.129.16"})
        EXPECT_FALSE(address_refusal(c, ip::make_address(a)).empty()) << a;
    for (const char* a : {"93.184.216.34", "172.32.0.1", "2606:4700::1", "8.8.8.8", "168.63.129.15",
                          "168.63.129.17"})
        EXPECT_TRUE(address_refusal(c, ip::make_address(a)).empty()) << a;
}

TEST(EgressPolicy, TheOperatorAllowsAndDeniesRangesExplicitly) {
    EgressCeiling c;
    c.allow_ranges.push_back(parse_range("127.0.0.2/32"));
    c.deny_ranges.push_back(parse_range("8.8.8.0/24"));
    EXPECT_TRUE(address_refusal(c, ip::make_address("127.0.0.2")).empty());
    EXPECT_FALSE(address_refusal(c, ip::make_address("127.0.0.3")).empty());
    EXPECT_NE(address_refusal(c, ip::make_address("8.8.8.8")).find("run.egress.denyRanges"),
              std::string::npos);
    EXPECT_THROW(parse_range("10.0.0.0/33"), PolicyError);
    EXPECT_THROW(parse_range("nope/8"), PolicyError);
}

// A range written in IPv4-mapped form is the IPv4 range it maps, for addresses of either form.
TEST(EgressPolicy, ARangeInIpv4MappedFormIsItsIpv4Range) {
    EgressCeiling c;
    c.deny_ranges.push_back(parse_range("::ffff:8.8.8.0/120"));
    c.allow_ranges.push_back(parse_range("::ffff:127.0.0.2"));
    for (const char* a : {"8.8.8.8", "::ffff:8.8.8.8", "8.8.8.255"})
        EXPECT_NE(address_refusal(c, ip::make_address(a)).find("run.egress.denyRanges"),
                  std::string::npos)
            << a;
    EXPECT_TRUE(address_refusal(c, ip::make_address("8.8.9.1")).empty());
    EXPECT_TRUE(address_refusal(c, ip::make_address("127.0.0.2")).empty());
    EXPECT_TRUE(address_refusal(c, ip::make_address("::ffff:127.0.0.2")).empty());
    EXPECT_FALSE(address_refusal(c, ip::make_address("127.0.0.3")).empty());
    // Wider than the mapped block, it would hold IPv6 and IPv4 addresses both: refused, named.
    try {
        parse_range("::ffff:0:0/80");
        ADD_FAILURE() << "a mapped range below /96 was accepted";
    } catch (const PolicyError& e) {
        EXPECT_NE(std::string(e.what()).find("at least 96"), std::string::npos) << e.what();
    }
}

// A DNS answer naming this host's own address is refused even when the address is public.
TEST(EgressPolicy, ThisHostsOwnAddressesAreRefused) {
    EgressCeiling c;
    const std::vector<ip::address> own = {ip::make_address("93.184.216.34")};
    EXPECT_NE(detail::dial_refusal(c, own, own[0]).find("an address of this host"),
              std::string::npos);
    EXPECT_TRUE(detail::dial_refusal(c, own, ip::make_address("93.184.216.35")).empty());
    // The same host in IPv4-mapped form (an AAAA answer): an AF_INET6 socket reaches it over IPv4.
    EXPECT_NE(detail::dial_refusal(c, own, ip::make_address("::ffff:93.184.216.34"))
                  .find("an address of this host"),
              std::string::npos);
    const std::vector<ip::address> own_mapped = {ip::make_address("::ffff:93.184.216.34")};
    EXPECT_NE(detail::dial_refusal(c, own_mapped, own[0]).find("an address of this host"),
              std::string::npos);
    c.allow_ranges.push_back(parse_range("93.184.216.34"));
    EXPECT_TRUE(detail::dial_refusal(c, own, own[0]).empty()) << "unless allowRanges names it";
    const auto listed = detail::own_addresses();
    ASSERT_TRUE(listed.has_value());
    EXPECT_FALSE(listed->empty()) << "getifaddrs lists at least loopback";
}

// The kernel delivers more to this host than its interfaces' addresses: the whole loopback block,
// 0.0.0.0 (connect(2) takes it for this host) and ::. A wide allowRanges entry (a DNS answer of
// 0.0.0.0 under 0.0.0.0/0) reaches none of them; only an entry naming one alone does.
TEST(EgressPolicy, EveryAddressTheKernelGivesThisHostIsRefused) {
    EgressCeiling c;
    c.allow_ranges.push_back(parse_range("0.0.0.0/0"));
    c.allow_ranges.push_back(parse_range("::/0"));
    c.deny_ranges.clear();               // nothing but the host rule in the way
    const std::vector<ip::address> none; // not even the interfaces' own
    for (const char* a : {"0.0.0.0", "0.1.2.3", "127.0.0.3", "127.255.255.254", "::", "::1",
                          "::ffff:127.0.0.3", "::ffff:0.0.0.0"})
        EXPECT_NE(
            detail::dial_refusal(c, none, ip::make_address(a)).find("an address of this host"),
            std::string::npos)
            << a;
    c.allow_ranges.push_back(parse_range("127.0.0.3/32"));
    EXPECT_EQ(detail::dial_refusal(c, none, ip::make_address("127.0.0.3")), "")
        << "named alone, it is reached";
    // The kernel's own answer, for what no fixed block holds.
    EXPECT_EQ(detail::routed_locally(ip::make_address("127.0.0.9")), std::optional<bool>(true));
    const auto own = detail::own_addresses();
    ASSERT_TRUE(own.has_value());
    for (const auto& mine : *own) {
        if (mine.is_v6() && mine.to_v6().is_link_local()) continue; // needs its interface
        EXPECT_EQ(detail::routed_locally(unmapped(mine)), std::optional<bool>(true)) << mine;
    }
    EXPECT_NE(detail::routed_locally(ip::make_address("198.51.100.7")), std::optional<bool>(true))
        << "a documentation address is no address of this host";
}

// An operator's denyRanges entry inside a wider allowRanges entry carves it out: the deny was
// never applied when allowRanges were read first (docs/design.md §9.7).
TEST(EgressPolicy, ADenyInsideAWiderAllowIsApplied) {
    EgressCeiling c;
    c.allow_ranges.push_back(parse_range("10.0.0.0/8"));
    c.deny_ranges.push_back(parse_range("10.1.2.3/32"));
    c.allow_ranges.push_back(parse_range("fd00::/8"));
    c.deny_ranges.push_back(parse_range("fd00:ec2::254/128"));
    for (const char* a : {"10.1.2.3", "::ffff:10.1.2.3", "fd00:ec2::254"})
        EXPECT_NE(address_refusal(c, ip::make_address(a)).find("run.egress.denyRanges"),
                  std::string::npos)
            << a;
    for (const char* a : {"10.1.2.4", "10.200.0.1", "fd00::1"})
        EXPECT_TRUE(address_refusal(c, ip::make_address(a)).empty()) << a;
    // The same through the dial check, the one the broker makes.
    EXPECT_NE(detail::dial_refusal(c, {}, ip::make_address("10.1.2.3")).find("denyRanges"),
              std::string::npos);
}

// A range allowed for a network does not open this host's own address in it: only an entry
// naming the address alone does, and a deny of it still wins.
TEST(EgressPolicy, ThisHostsOwnAddressIsOpenedOnlyByAnAllowRangeNamingItAlone) {
    EgressCeiling c;
    c.allow_ranges.push_back(parse_range("10.0.0.0/8"));
    const std::vector<ip::address> own = {ip::make_address("10.1.1.5"),
                                          ip::make_address("fd00::5")};
    c.allow_ranges.push_back(parse_range("fd00::/64"));
    for (const char* a : {"10.1.1.5", "::ffff:10.1.1.5", "fd00::5"})
        EXPECT_NE(detail::dial_refusal(c, own, ip::make_address(a)).find("an address of this host"),
                  std::string::npos)
            << a;
    EXPECT_TRUE(detail::dial_refusal(c, own, ip::make_address("10.1.1.6")).empty());
    c.allow_ranges.push_back(parse_range("10.1.1.5/32"));
    c.allow_ranges.push_back(parse_range("fd00::5"));
    EXPECT_TRUE(detail::dial_refusal(c, own, ip::make_address("10.1.1.5")).empty());
    EXPECT_TRUE(detail::dial_refusal(c, own, ip::make_address("fd00::5")).empty());
    c.deny_ranges.push_back(parse_range("10.1.1.0/24"));
    EXPECT_NE(detail::dial_refusal(c, own, ip::make_address("10.1.1.5")).find("denyRanges"),
              std::string::npos);
}

// config check warns of what has no effect now that a deny wins: an allow a deny holds whole,
// and a host address inside a wide allow. A deny inside an allow is a carve-out: no warning.
TEST(EgressPolicy, RangeWarningsNameWhatTheRangesDoNotDo) {
    EgressCeiling c;
    c.allow_ranges.push_back(parse_range("10.0.0.0/8"));
    c.deny_ranges.push_back(parse_range("10.1.2.3/32"));
    EXPECT_TRUE(range_warnings(c, {}).empty()) << "a deny inside an allow is meaningful";
    c.allow_ranges.push_back(parse_range("192.168.7.0/24"));
    c.deny_ranges.push_back(parse_range("192.168.0.0/16"));
    auto w = range_warnings(c, {ip::make_address("10.1.1.5")});
    ASSERT_EQ(w.size(), 2u);
    EXPECT_NE(w[0].find("192.168.7.0/24 lies inside denyRanges' 192.168.0.0/16"), std::string::npos)
        << w[0];
    EXPECT_NE(w[1].find("10.0.0.0/8 holds this host's own address 10.1.1.5"), std::string::npos)
        << w[1];
    c.allow_ranges.push_back(parse_range("10.1.1.5/32"));
    EXPECT_EQ(range_warnings(c, {ip::make_address("10.1.1.5")}).size(), 1u)
        << "named alone: the host's address is meant";
}

} // namespace
} // namespace radial::egress
