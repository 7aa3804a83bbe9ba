// host/egress/egress_policy.h — what a box may reach through its egress broker (docs/design.md
// §9.7): the operator's ceiling ([run.egress]), a turn's narrowing of it (`egress = [...]`), and
// the checks the broker makes on each destination name and on each address it would connect to.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace radial::egress {

// A destination a rule allows: `host` is a lowercase DNS name, "*.suffix" (any name under suffix,
// not suffix itself), or an IP literal (an IPv6 one without brackets); `port` 1..65535.
struct AllowRule {
    std::string host;
    std::uint16_t port = 0;
    // "host:port", IPv6 literals bracketed.
    std::string text() const;
};

// An address range, "10.0.0.0/8" or "fc00::/7".
struct AddressRange {
    boost::asio::ip::address base;
    unsigned prefix = 0;
    bool contains(const boost::asio::ip::address& a) const;
    std::string text() const;
    // One address: /32 or /128.
    bool single() const;
    // Whether every address of `inner` is in this range.
    bool holds(const AddressRange& inner) const;
};

// A rule or range the operator or a request wrote that cannot be read. what() names it.
class PolicyError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// [run.egress]: the most any turn may reach. Without it (no allow rules) no turn gets a broker.
struct EgressCeiling {
    std::vector<AllowRule> allow;               // allow: "host:port" patterns
    std::vector<AddressRange> allow_ranges;     // allowRanges: built-in denied ranges allowed
    std::vector<AddressRange> deny_ranges;      // denyRanges: refused, whatever allowRanges say
    std::map<std::string, std::string> hosts;   // hosts: name -> address, used instead of DNS
    std::size_t max_connections = 16;           // maxConnections: open at once, per turn
    std::uint64_t max_bytes_in = 1ull << 30;    // maxBytesIn: to the box, per turn
    std::uint64_t max_bytes_out = 256ull << 20; // maxBytesOut: from the box, per turn
    // runtimePolicy: a runtime that enforces destinations with its own policy (the sandbox
    // runtime's sbx rules) may carry turns' egress, without what only the broker gives: receipts,
    // the quotas and connection cap, these ranges and hosts, `radiald policy`. Off: refused.
    bool runtime_policy = false;
    bool enabled() const noexcept { return !allow.empty(); }
};

// "host:port" → AllowRule: host lowercased, one trailing '.' dropped; "[v6]:port" for IPv6. An
// IP address is kept in one spelling (IPv6 compressed, an IPv4-mapped one as IPv4), so that two
// spellings of one address are one rule.
// Throws PolicyError naming `text` and what is wrong (no port, a port outside 1..65535, a host
// with characters a DNS name cannot hold, a '*' anywhere but a leading "*.").
AllowRule parse_allow_rule(std::string_view text);

// "a.b.c.d/n" or "v6/n" (a bare address is /32 or /128). Throws PolicyError.
AddressRange parse_range(std::string_view text);

// The ranges no box may reach unless the ceiling's allowRanges name them: this host (loopback,
// "this network"), link-local (and with it the cloud metadata services at 169.254.169.254 and
// fd00:ec2::254), private and carrier-grade NAT ranges, unique local IPv6, multicast, broadcast
// and reserved, and Azure's host agent (168.63.129.16), public but the host's. Pure.
const std::vector<AddressRange>& builtin_denied_ranges();

// Whether `rule` allows `name:port` (`name` lowercase): an exact match, or for "*.suffix" any name
// ending in ".suffix". Pure.
bool matches(const AllowRule& rule, std::string_view name, std::uint16_t port);

// Whether every destination `narrower` allows, `wider` allows too: the same host and port, or a
// wildcard of `wider` covering the name or wildcard of `narrower`. Pure.
bool covers(const AllowRule& wider, const AllowRule& narrower);

// A turn's rules: each of `requested` parsed, and each covered by a ceiling rule. Throws
// PolicyError naming the first entry that is unreadable or outside the ceiling (and the key
// run.egress.allow to widen). Pure.
std::vector<AllowRule> narrow(const EgressCeiling& ceiling,
                              const std::vector<std::string>& requested);

// `a` as IPv4 when it is an IPv4-mapped IPv6 address (::ffff:a.b.c.d), which reaches the same
// IPv4 host; otherwise `a`. Pure.
boost::asio::ip::address unmapped(const boost::asio::ip::address& a);

// Why the broker may not connect to `address`, or empty when it may: in the ceiling's denyRanges
// (whatever allowRanges say), or in a built-in denied range and in no allowRanges range. An
// IPv4-mapped IPv6 address is judged as its IPv4 address. Pure.
std::string address_refusal(const EgressCeiling& ceiling, const boost::asio::ip::address& address);

// What `radiald config check` warns of in the ceiling's ranges, given this host's addresses
// `own`: an allowRanges entry a denyRanges entry holds whole (it allows nothing), and one of
// `own` inside an allowRanges entry that does not name it alone (it stays refused). Pure.
std::vector<std::string> range_warnings(const EgressCeiling& ceiling,
                                        const std::vector<boost::asio::ip::address>& own);

} // namespace radial::egress
