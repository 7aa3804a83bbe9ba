#include "config/metrics_endpoint.h"

#include <fmt/format.h>

#include <boost/asio/ip/address.hpp>
#include <charconv>

namespace radial::config {

namespace {
constexpr std::string_view kExamples =
    "write \"unix:/run/radial/metrics.sock\", \"127.0.0.1:9464\" or \"[::1]:9464\"";
// sizeof(sockaddr_un::sun_path) minus its NUL.
constexpr std::size_t kMaxUnixPathBytes = 107;
} // namespace

std::optional<MetricsEndpoint> parse_metrics_endpoint(std::string_view text, std::string& problem) {
    MetricsEndpoint e;
    if (text.starts_with("unix:")) {
        e.kind = MetricsEndpoint::Kind::unix_socket;
        e.path = std::string(text.substr(5));
        if (e.path.empty() || e.path.front() != '/') {
            problem = fmt::format("'{}' names no absolute socket path; {}", text, kExamples);
            return std::nullopt;
        }
        if (e.path.size() > kMaxUnixPathBytes) {
            problem = fmt::format("the socket path is {} bytes, more than a unix socket takes ({})",
                                  e.path.size(), kMaxUnixPathBytes);
            return std::nullopt;
        }
        return e;
    }
    e.kind = MetricsEndpoint::Kind::tcp;
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
        problem = fmt::format("'{}' is neither unix:PATH nor HOST:PORT; {}", text, kExamples);
        return std::nullopt;
    }
    std::string_view host = text.substr(0, colon), port = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 ||
        value > 65535) {
        problem = fmt::format("'{}' has no port from 1 to 65535; {}", text, kExamples);
        return std::nullopt;
    }
    boost::system::error_code aec;
    const auto addr = boost::asio::ip::make_address(std::string(host), aec);
    if (aec) {
        problem =
            fmt::format("'{}' is not an IP address (no name is looked up); {}", host, kExamples);
        return std::nullopt;
    }
    if (!addr.is_loopback()) {
        problem = fmt::format(
            "'{}' is not a loopback address: the metrics endpoint has no authentication, so "
            "radiald serves it only on this host; use 127.0.0.1 or ::1 (a scraper elsewhere "
            "reaches it through a proxy you secure), or a unix socket",
            host);
        return std::nullopt;
    }
    e.host = addr.to_string();
    e.port = static_cast<std::uint16_t>(value);
    return e;
}

std::string to_string(const MetricsEndpoint& e) {
    if (e.kind == MetricsEndpoint::Kind::unix_socket) return "unix:" + e.path;
    if (e.host.find(':') != std::string::npos) return fmt::format("[{}]:{}", e.host, e.port);
    return fmt::format("{}:{}", e.host, e.port);
}

} // namespace radial::config
