// host/config/metrics_endpoint.h — where `radiald run` serves its Prometheus metrics
// (docs/design.md §12.6): run.metrics names a unix socket ("unix:/run/radial/metrics.sock") or a
// loopback address and port ("127.0.0.1:9464", "[::1]:9464"); unset, nothing is served. Metrics
// carry no secret, but the endpoint answers without authentication, so it never listens beyond
// the host: a non-loopback address is refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace radial::config {

// A parsed run.metrics value.
struct MetricsEndpoint {
    enum class Kind { unix_socket, tcp };
    Kind kind = Kind::unix_socket;
    std::string path;       // unix: absolute, at most 107 bytes (sockaddr_un)
    std::string host;       // tcp: a loopback IP literal, without brackets
    std::uint16_t port = 0; // tcp: 1..65535
};

// Parses `text`. On failure returns nullopt and sets `problem` to what is wrong and how to write
// it instead (no key name: the caller prefixes it). Never throws but std::bad_alloc. Pure.
std::optional<MetricsEndpoint> parse_metrics_endpoint(std::string_view text, std::string& problem);

// "unix:<path>" or "<host>:<port>" ("[v6]:<port>"), as run.metrics spells it.
std::string to_string(const MetricsEndpoint& e);

} // namespace radial::config
