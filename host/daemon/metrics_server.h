// host/daemon/metrics_server.h — the metrics endpoint (docs/design.md §12.6): HTTP/1.1 on a unix
// socket or a loopback tcp port (config/metrics_endpoint.h) that answers GET /metrics with the
// Prometheus text format (version 0.0.4) and every other path with 404.
//
// A scraper is not trusted to behave: the server runs on a thread of its own, so nothing a client
// does reaches the daemon's loop or its turns; each connection gets one request, whose header
// must fit in max_request_bytes and which must be read and answered within request_timeout, then
// it is closed; at most max_connections are open at once: one more from a peer (a uid over a
// unix socket or from this host, socket/peer_key.h) that holds as many as any other is closed as
// soon as it is accepted, and one from another peer takes the place of the oldest connection of the
// peer holding the most. A stalled client therefore holds one slot for request_timeout at most,
// and a local user holding every slot cannot keep a scraper of another uid out.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "config/metrics_endpoint.h"

namespace radial::daemon {

// The endpoint cannot be served. what() names run.metrics, the address and what to do.
class MetricsServerError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct MetricsServerOptions {
    // Where to listen. A tcp port of 0 takes an ephemeral one (port() tells which); the config
    // never gives 0, tests do. A unix socket's parent directory must exist; a stale socket at the
    // path (nothing accepts on it) is replaced, anything else there is refused.
    config::MetricsEndpoint endpoint;
    // The body of GET /metrics; called on the server's thread for each scrape, so it must be
    // thread-safe (Metrics::text() is).
    std::function<std::string()> render;
    std::size_t max_connections = 16;
    std::size_t max_request_bytes = 8192; // the request line and header
    std::chrono::milliseconds request_timeout{5'000};

    // Throws MetricsServerError when no server could serve these (no render function, a zero
    // limit), whatever the endpoint. Pure.
    void check() const;
};

class MetricsServer {
public:
    // Binds and starts serving. A unix socket is made mode 0660: its group may scrape. Throws
    // MetricsServerError when it cannot listen (the path exists and is no stale socket, another
    // process serves on it, the port is taken, …); nothing is left behind then.
    explicit MetricsServer(MetricsServerOptions options);
    // Stops the thread, closes every connection and unlinks the unix socket (if it is still ours).
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;

    // "unix:<path>" or "<host>:<port>" with the port actually bound. [thread-safe]
    const std::string& address() const noexcept;
    // The bound tcp port; 0 for a unix socket. [thread-safe]
    std::uint16_t port() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace radial::daemon
