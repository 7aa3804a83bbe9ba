#include "egress/egress_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace radial::egress {

namespace {

namespace ip = boost::asio::ip;

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

bool dns_name(std::string_view name) {
    if (name.empty() || name.size() > 253 || name.front() == '.' || name.front() == '-')
        return false;
    return std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '-' || c == '.' || c == '_';
    });
}

bool is_ip_literal(std::string_view host) {
    boost::system::error_code ec;
    ip::make_address(std::string(host), ec);
    return !ec;
}

} // namespace

ip::address unmapped(const ip::address& a) {
    if (a.is_v6() && a.to_v6().is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, a.to_v6());
    return a;
}

std::string AllowRule::text() const {
    return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                               : fmt::format("{}:{}", host, port);
}

namespace {
std::vector<unsigned char> bytes_of(const ip::address& a) {
    if (a.is_v4()) {
        const auto b = a.to_v4().to_bytes();
        return {b.begin(), b.end()};
    }
    const auto b = a.to_v6().to_bytes();
    return {b.begin(), b.end()};
}
} // namespace

bool AddressRange::contains(const ip::address& raw) const {
    const ip::address a = unmapped(raw);
    if (a.is_v4() != base.is_v4()) return false;
    const auto want = bytes_of(base), have = bytes_of(a);
    unsigned bits = prefix;
    for (std::size_t i = 0; i < want.size() && bits > 0; ++i) {
        const unsigned take = std::min(bits, 8u);
        const auto mask = static_cast<unsigned char>(0xff00u >> take);
        if ((want[i] & mask) != (have[i] & mask)) return false;
        bits -= take;
    }
    return true;
}

std::string AddressRange::text() const { return fmt::format("{}/{}", base.to_string(), prefix); }

bool AddressRange::single() const { return prefix == (base.is_v4() ? 32u : 128u); }

bool AddressRange::holds(const AddressRange& inner) const {
    return base.is_v4() == inner.base.is_v4() && prefix <= inner.prefix && contains(inner.base);
}

AllowRule parse_allow_rule(std::string_view text) {
    std::string_view host, port;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
            throw PolicyError(
                fmt::format("'{}': write an IPv6 destination as [address]:port", text));
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string_view::npos)
            throw PolicyError(
                fmt::format("'{}' names no port; write host:port, such as pypi.org:443", text));
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
    }
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
        throw PolicyError(fmt::format("'{}': the port must be a number from 1 to 65535", text));
    AllowRule rule;
    rule.port = static_cast<std::uint16_t>(value);
    rule.host = lower(host);
    if (rule.host.size() > 1 && rule.host.back() == '.') rule.host.pop_back();
    const bool bracketed = !text.empty() && text.front() == '[';
    if (bracketed != (rule.host.find(':') != std::string::npos) || (bracketed && rule.host.empty()))
        throw PolicyError(fmt::format(
            "'{}': only an IPv6 address is written in brackets, and it always is: [::1]:443, "
            "pypi.org:443",
            text));
    if (is_ip_literal(rule.host)) {
        // One spelling per address (IPv6 compressed, IPv4-mapped written as IPv4): rules are
        // compared as text, and an operator's deny written as [::0:1]:443 must meet a turn's
        // [::1]:443 (docs/design.md §9.7).
        rule.host = unmapped(ip::make_address(rule.host)).to_string();
        return rule;
    }
    const std::string_view name =
        rule.host.starts_with("*.") ? std::string_view(rule.host).substr(2) : rule.host;
    if (!dns_name(name) || name.find('*') != std::string_view::npos)
        throw PolicyError(
            fmt::format("'{}': '{}' is not a host name, an IP address, or '*.' followed by a name",
                        text, rule.host));
    return rule;
}

AddressRange parse_range(std::string_view text) {
    const auto slash = text.find('/');
    boost::system::error_code ec;
    AddressRange r;
    r.base = ip::make_address(std::string(text.substr(0, slash)), ec);
    if (ec) throw PolicyError(fmt::format("'{}' is not an address or address/prefix", text));
    const unsigned most = r.base.is_v4() ? 32 : 128;
    r.prefix = most;
    if (slash != std::string_view::npos) {
        const auto p = text.substr(slash + 1);
        const auto [end, perr] = std::from_chars(p.data(), p.data() + p.size(), r.prefix);
        if (perr != std::errc() || end != p.data() + p.size() || r.prefix > most)
            throw PolicyError(
                fmt::format("'{}': the prefix length must be a number from 0 to {}", text, most));
    }
    // Addresses are judged unmapped (contains), so a range written in IPv4-mapped form is its
    // IPv4 range; one wider than the mapped block would mix both families and is refused.
    if (r.base.is_v6() && r.base.to_v6().is_v4_mapped()) {
        if (r.prefix < 96)
            throw PolicyError(fmt::format(
                "'{}': an IPv4-mapped range needs a prefix of at least 96; write its IPv4 range "
                "and its IPv6 range separately",
                text));
        r.base = unmapped(r.base);
        r.prefix -= 96;
    }
    return r;
}

const std::vector<AddressRange>& builtin_denied_ranges() {
    static const std::vector<AddressRange> ranges = [] {
        std::vector<AddressRange> out;
        for (const char* r :
             {"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
              "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15",
              "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "::/128",
              "::1/128", "64:ff9b::/96", "100::/64", "2001:db8::/32", "fc00::/7", "fe80::/10",
              "ff00::/8", "::/96", "::ffff:0:0:0/96", "64:ff9b:1::/48", "2001::/32", "2002::/16",
              "fec0::/10", "192.88.99.0/24",
              // Public, but a host agent on every Azure machine (WireServer: its goal state,
              // extension settings and certificates), reached only from the host itself.
              "168.63.129.16/32"})
            out.push_back(parse_range(r));
        return out;
    }();
    return ranges;
}

bool matches(const AllowRule& rule, std::string_view name, std::uint16_t port) {
    if (rule.port != port) return false;
    if (rule.host.starts_with("*.")) {
        const std::string_view suffix = std::string_view(rule.host).substr(1); // ".suffix"
        return name.size() > suffix.size() && name.ends_with(suffix);
    }
    return name == rule.host;
}

bool covers(const AllowRule& wider, const AllowRule& narrower) {
    if (wider.port != narrower.port) return false;
    if (narrower.host.starts_with("*.")) {
        // A wildcard is covered only by a wildcard whose suffix contains it.
        if (!wider.host.starts_with("*.")) return false;
        const std::string_view w = std::string_view(wider.host).substr(1);
        const std::string_view n = std::string_view(narrower.host).substr(1);
        return n == w || n.ends_with(w);
    }
    return matches(wider, narrower.host, narrower.port);
}

std::vector<AllowRule> narrow(const EgressCeiling& ceiling,
                              const std::vector<std::string>& requested) {
    std::vector<AllowRule> out;
    for (const auto& text : requested) {
        AllowRule rule = parse_allow_rule(text);
        const bool inside = std::any_of(ceiling.allow.begin(), ceiling.allow.end(),
                                        [&](const AllowRule& c) { return covers(c, rule); });
        if (!inside)
            throw PolicyError(
                ceiling.enabled()
                    ? fmt::format("egress '{}' is outside what run.egress.allow permits; a request "
                                  "may only narrow it (the operator widens run.egress.allow)",
                                  rule.text())
                    : fmt::format("egress '{}': this host brokers no egress (run.egress.allow is "
                                  "not set), so a box has no network at all",
                                  rule.text()));
        out.push_back(std::move(rule));
    }
    return out;
}

std::string address_refusal(const EgressCeiling& ceiling, const ip::address& raw) {
    const ip::address a = unmapped(raw);
    // The operator's denyRanges before allowRanges: a deny inside a wider allow carves it out
    // (docs/design.md §9.7).
    for (const auto& r : ceiling.deny_ranges)
        if (r.contains(a))
            return fmt::format("{} is in run.egress.denyRanges' {}", a.to_string(), r.text());
    for (const auto& r : ceiling.allow_ranges)
        if (r.contains(a)) return {};
    for (const auto& r : builtin_denied_ranges())
        if (r.contains(a))
            return fmt::format(
                "{} is in {}, which no box reaches (loopback, link-local and metadata, private "
                "and reserved ranges) unless run.egress.allowRanges names it",
                a.to_string(), r.text());
    return {};
}

std::vector<std::string> range_warnings(const EgressCeiling& ceiling,
                                        const std::vector<ip::address>& own) {
    std::vector<std::string> out;
    for (const auto& allow : ceiling.allow_ranges)
        for (const auto& deny : ceiling.deny_ranges)
            if (deny.holds(allow))
                out.push_back(fmt::format(
                    "run.egress.allowRanges' {} lies inside denyRanges' {}, which wins: it "
                    "allows nothing",
                    allow.text(), deny.text()));
    for (const auto& mine : own) {
        const ip::address a = unmapped(mine);
        const bool alone =
            std::any_of(ceiling.allow_ranges.begin(), ceiling.allow_ranges.end(),
                        [&](const AddressRange& r) { return r.single() && r.contains(a); });
        if (alone) continue;
        for (const auto& r : ceiling.allow_ranges)
            if (r.contains(a)) {
                out.push_back(fmt::format(
                    "run.egress.allowRanges' {} holds this host's own address {}, which stays "
                    "refused (as do 127.0.0.0/8, 0.0.0.0/8, ::1 and :: whole): only an entry "
                    "naming that address alone ({}/{}) lets a box reach it",
                    r.text(), a.to_string(), a.to_string(), a.is_v4() ? 32 : 128));
                break;
            }
    }
    return out;
}

} // namespace radial::egress
