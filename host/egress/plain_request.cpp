// host/egress/plain_request.cpp — see plain_request.h.
#include "egress/plain_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace radial::egress::detail {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// Hop-by-hop headers, and those a front end may route by instead of the Host line (a virtual
// host, a rewritten path or prefix, the scheme or port it was reached by): the Host the broker
// writes is the only name the destination is given (docs/design.md §9.7).
bool dropped_header(std::string_view name) {
    static constexpr std::string_view kDropped[] = {
        "host",    "connection", "keep-alive", "proxy-connection",     "proxy-authorization",  "te",
        "upgrade", "forwarded",  "x-host",     "x-http-host-override", "x-envoy-original-path"};
    static constexpr std::string_view kDroppedPrefixes[] = {"x-forwarded-", "x-original-",
                                                            "x-rewrite-"};
    return std::find(std::begin(kDropped), std::end(kDropped), name) != std::end(kDropped) ||
           std::any_of(std::begin(kDroppedPrefixes), std::end(kDroppedPrefixes),
                       [&](std::string_view p) { return name.starts_with(p); });
}

} // namespace

bool plain_request(const HttpHead& h, AllowRule& dest, std::string& forward, std::uint64_t& body,
                   Receipt& r) {
    const std::string_view t = h.target;
    if (lower(std::string(t.substr(0, 7))) != "http://") {
        r.reason = lower(std::string(t.substr(0, 8))) == "https://"
                       ? std::string("https goes through CONNECT, not a plain request")
                       : fmt::format("'{}' is not an absolute http:// URL", shown_target(h.target));
        return false;
    }
    const auto slash = t.find_first_of("/?#", 7);
    const std::string authority(t.substr(7, slash == std::string_view::npos ? t.npos : slash - 7));
    std::string path(slash == std::string_view::npos ? "/" : t.substr(slash));
    if (path.front() != '/') path.insert(0, "/");
    if (authority.find('@') != std::string::npos) {
        r.reason = "a URL with user information is not a destination";
        return false;
    }
    auto with_port = [](const std::string& a) {
        const bool v6 = !a.empty() && a.front() == '[';
        const auto colon = a.rfind(':');
        const bool has = colon != std::string::npos && (!v6 || colon > a.find(']'));
        return has ? a : a + ":80";
    };
    try {
        dest = parse_allow_rule(with_port(authority));
        if (dest.host.starts_with("*.")) throw PolicyError("a wildcard is no destination");
        r.destination = dest.text();
        if (const std::string* given = h.header("host")) {
            const AllowRule named = parse_allow_rule(with_port(*given));
            if (named.host != dest.host || named.port != dest.port) {
                r.reason =
                    fmt::format("the Host header names '{}', not '{}'", named.text(), dest.text());
                return false;
            }
        }
    } catch (const PolicyError& e) {
        // The authority has no user information here (refused above); the target may be long,
        // and it or the Host header may carry a query the message quotes.
        const std::string* given = h.header("host");
        r.reason =
            fmt::format("'{}' names no host:port{}", shown_target(h.target),
                        shown_why(e.what(), given != nullptr ? h.target + " " + *given : h.target));
        return false;
    }
    if (h.header("transfer-encoding") != nullptr) {
        r.reason =
            "a request body in chunks (Transfer-Encoding) is refused; send it with a "
            "Content-Length, or over https";
        return false;
    }
    body = 0;
    if (const std::string* cl = h.header("content-length")) {
        if (cl->empty() || cl->size() > 15 ||
            !std::all_of(cl->begin(), cl->end(),
                         [](unsigned char ch) { return std::isdigit(ch); })) {
            r.reason = "a Content-Length that is not a number";
            return false;
        }
        body = std::stoull(*cl);
    }
    // Methods are case-sensitive, and a destination that took "get" for GET would read it as
    // another method than the one judged here.
    if (!std::all_of(h.method.begin(), h.method.end(), [](unsigned char ch) {
            return (ch >= 'A' && ch <= 'Z') || ch == '-' || ch == '_';
        })) {
        r.reason = fmt::format(
            "the method '{}' is refused: a plain http request's method is upper-case letters "
            "(GET, POST, …)",
            shown_target(h.method));
        return false;
    }
    // A body only where the method gives it a meaning: a destination that ignored it would read it
    // as a second request, with a Host never judged (docs/design.md §9.7).
    if (body > 0 && h.method != "POST" && h.method != "PUT" && h.method != "PATCH") {
        r.reason = fmt::format(
            "a {} request with a body is refused; over plain http only POST, PUT and PATCH carry "
            "one (any method may over https)",
            h.method);
        return false;
    }
    // The port is left out when it is HTTP's own; an IPv6 literal keeps its brackets either way.
    const std::string host_header = dest.port != 80 ? dest.text()
                                    : dest.host.find(':') != std::string::npos
                                        ? fmt::format("[{}]", dest.host)
                                        : dest.host;
    forward = fmt::format("{} {} {}\r\nHost: {}\r\n", h.method, path, h.version, host_header);
    for (const auto& [n, v] : h.headers)
        if (!dropped_header(n)) forward += n + ": " + v + "\r\n";
    forward += "Connection: close\r\n\r\n";
    return true;
}

} // namespace radial::egress::detail
