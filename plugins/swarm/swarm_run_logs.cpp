// The output path of a swarm run (docs/design.md §13.11): the log thread, its choice between the
// task's container on this engine and swarm's log broker, and the read of the rest after the task
// ended (swarm_run.h).
#include "swarm_run.h"

namespace radial::swarm {

// The logs of the run's task: its container's own on this engine once the log thread chose it,
// else the service's through swarm's log broker.
// The container's are read with timestamps, so that the rest can be read from shortly before
// where the followed stream stopped instead of from the start.
std::string SwarmRun::logs_target(bool follow) const {
    const std::string query =
        std::string("/logs?follow=") + (follow ? "1" : "0") + "&stdout=1&stderr=1";
    if (!local_container_.empty())
        return "/containers/" + local_container_ + query + "&timestamps=1";
    return "/services/" + service_id_ + query;
}

// The read of the rest after the followed stream stopped, on the same path, and the bytes per
// stream it repeats (to skip). On the local path it starts kSinceMarginMs before the newest
// timestamp delivered: the engine then sends every line stamped at or after that, and the bytes
// of those already delivered are exactly the ones counted for those milliseconds. Otherwise (the
// broker, nothing stamped yet, a timestamp that did not parse) it reads from the start and skips
// everything delivered. Call only after the log thread was joined.
std::string SwarmRun::rest_target(std::uint64_t& skip_out, std::uint64_t& skip_err) {
    skip_out = delivered_[1];
    skip_err = delivered_[2];
    std::string target = logs_target(false);
    if (local_container_.empty() || !stamps_ok_ || newest_ms_ < 0) return target;
    const std::int64_t since = newest_ms_ - kSinceMarginMs;
    skip_out = skip_err = 0;
    for (auto it = stamped_bytes_.lower_bound(since); it != stamped_bytes_.end(); ++it) {
        skip_out += it->second[1];
        skip_err += it->second[2];
    }
    char value[48];
    std::snprintf(value, sizeof(value), "%lld.%03lld000000", static_cast<long long>(since / 1000),
                  static_cast<long long>(since % 1000));
    return target + "&since=" + value;
}

// Whether the task's container is known to this engine (it runs on the node whose engine radiald
// talks to). Any failure means no: the broker serves every node.
bool SwarmRun::on_this_engine(const std::string& container_id) {
    if (container_id.empty()) return false;
    try {
        auto r = rt_.engine_.request("GET", "/containers/" + url_encode(container_id) + "/json", "",
                                     "inspecting the container of " + box());
        return r.status == 200;
    } catch (const std::exception&) {
        return false;
    }
}

// Called by the task poll whenever a task status names its container.
void SwarmRun::saw_container(const std::string& container_id) {
    if (container_id.empty()) return;
    std::lock_guard lock(stream_mutex_);
    if (!seen_container_.empty()) return;
    seen_container_ = container_id;
    log_cv_.notify_all();
}

// The log thread: waits until the task's container is named, chooses the path once, then follows
// it from the start of the task's output (both paths replay what was written before they opened).
void SwarmRun::follow_logs() noexcept {
    bool complete = false;
    try {
        std::string container;
        {
            std::unique_lock lock(stream_mutex_);
            log_cv_.wait(lock, [&] { return logs_stopping_ || !seen_container_.empty(); });
            container = seen_container_;
        }
        if (!container.empty()) {
            const bool local = on_this_engine(container);
            std::unique_ptr<engine_api::Stream> s;
            {
                std::lock_guard lock(stream_mutex_);
                if (!logs_stopping_) {
                    if (local) local_container_ = container;
                    path_chosen_ = true;
                }
            }
            if (path_chosen_) {
                rt_.host_.debug(box() + ": reading its output " +
                                (local ? "from its container " + container + " on this engine"
                                       : std::string("through swarm's log broker")));
                s = rt_.engine_.open_stream(logs_target(true), "following the output of " + box());
                std::unique_lock lock(stream_mutex_);
                if (!logs_stopping_) {
                    stream_ = std::move(s);
                    lock.unlock();
                    complete = pump(*stream_, 0, 0, local);
                }
            }
        }
    } catch (...) {
        log_failure_ = std::current_exception();
    }
    std::lock_guard lock(stream_mutex_);
    follow_done_ = true;
    follow_complete_ = complete && !logs_stopping_;
    log_cv_.notify_all();
}

// The read of the rest after the task ended, on the log thread, so that a kill can stop it.
void SwarmRun::read_rest(const std::string& target, std::uint64_t skip_out, std::uint64_t skip_err,
                         bool stamped) noexcept {
    try {
        auto s = rt_.engine_.open_stream(target, "reading the rest of the output of " + box());
        std::unique_lock lock(stream_mutex_);
        if (!logs_stopping_) {
            stream_ = std::move(s);
            lock.unlock();
            pump(*stream_, skip_out, skip_err, stamped);
        }
    } catch (...) {
        log_failure_ = std::current_exception();
    }
    std::lock_guard lock(stream_mutex_);
    follow_done_ = true;
    log_cv_.notify_all();
}

// The drain of the local path: a container's followed log stream ends on its own once the
// container stopped. Waits for that while bytes keep arriving (at most kLocalLogsIdle without
// one), so that the rest read after it is short; true when it ended so. The end is not proof
// that everything arrived (docs/design.md §13.11): the caller reads the rest either way.
bool SwarmRun::await_local_logs() {
    std::uint64_t last = delivered_[1] + delivered_[2];
    auto last_progress = Clock::now();
    std::unique_lock lock(stream_mutex_);
    while (!follow_done_) {
        if (active_.kill_requested() || output_aborted_) return false;
        log_cv_.wait_for(lock, milliseconds(200));
        std::uint64_t now = delivered_[1] + delivered_[2];
        if (now != last) {
            last = now;
            last_progress = Clock::now();
        } else if (Clock::now() - last_progress >= kLocalLogsIdle) {
            return false;
        }
    }
    return follow_complete_;
}

void SwarmRun::stop_logs() {
    {
        std::lock_guard lock(stream_mutex_);
        logs_stopping_ = true;
        log_cv_.notify_all();
        if (stream_) stream_->stop();
    }
    if (log_thread_) {
        log_thread_->join();
        log_thread_.reset();
    }
}

} // namespace radial::swarm
