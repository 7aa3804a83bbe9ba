// host/daemon/metrics_endpoint_keeper.h — the daemon's metrics endpoint, served even when it
// cannot be at first (docs/design.md §12.6).
//
// Any local user can listen on a loopback port before the daemon does (at a restart, at boot):
// were a failed bind fatal, that user would keep every turn from running. The daemon runs its
// turns without the endpoint instead, says so as an error, and binds again at an interval until
// it serves.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "daemon/metrics_server.h"

namespace radial::daemon {

class MetricsEndpointKeeper {
public:
    // Serves `options` now when it can (logged "metrics: serving …"). When it cannot, logs the
    // reason as an error and tries again every `retry` on a thread of its own until it serves
    // (logged) or the keeper is destroyed; a reason that changes is logged again. Throws only
    // what starting a thread throws, and MetricsServerError for options MetricsServer refuses
    // outright (no render function, a zero limit).
    explicit MetricsEndpointKeeper(MetricsServerOptions options,
                                   std::chrono::milliseconds retry = std::chrono::seconds(30));
    // Stops trying, then stops the server (MetricsServer's destructor).
    ~MetricsEndpointKeeper();
    MetricsEndpointKeeper(const MetricsEndpointKeeper&) = delete;
    MetricsEndpointKeeper& operator=(const MetricsEndpointKeeper&) = delete;

    // The address served (MetricsServer::address()), or nullopt while not serving. [thread-safe]
    std::optional<std::string> address() const;

private:
    bool try_serve(); // under mutex_
    void keep_trying();

    MetricsServerOptions options_;
    std::chrono::milliseconds retry_;
    mutable std::mutex mutex_;
    std::condition_variable stop_cv_;
    bool stopping_ = false;
    std::string last_problem_;
    std::optional<MetricsServer> server_;
    std::thread thread_;
};

} // namespace radial::daemon
