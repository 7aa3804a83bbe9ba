#include "daemon/metrics_endpoint_keeper.h"

#include "log/logger.h"

namespace radial::daemon {

MetricsEndpointKeeper::MetricsEndpointKeeper(MetricsServerOptions options,
                                             std::chrono::milliseconds retry)
    : options_(std::move(options)), retry_(retry) {
    options_.check(); // a retry mends no such options
    std::lock_guard lock(mutex_);
    if (!try_serve()) thread_ = std::thread([this] { keep_trying(); });
}

MetricsEndpointKeeper::~MetricsEndpointKeeper() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    stop_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::optional<std::string> MetricsEndpointKeeper::address() const {
    std::lock_guard lock(mutex_);
    if (!server_) return std::nullopt;
    return server_->address();
}

bool MetricsEndpointKeeper::try_serve() {
    try {
        server_.emplace(options_);
        log::info("daemon", "metrics: serving GET /metrics on {}", server_->address());
        return true;
    } catch (const MetricsServerError& e) {
        if (e.what() != last_problem_)
            log::error("daemon",
                       "{}; the daemon runs its turns without the metrics endpoint, and tries "
                       "again every {} s",
                       e.what(), std::chrono::duration_cast<std::chrono::seconds>(retry_).count());
        last_problem_ = e.what();
        return false;
    }
}

void MetricsEndpointKeeper::keep_trying() {
    std::unique_lock lock(mutex_);
    // Real time: another process's port or socket is what is waited for, not a turn's clock.
    while (!stop_cv_.wait_for(lock, retry_, [this] { return stopping_; }))
        if (try_serve()) return;
}

} // namespace radial::daemon
