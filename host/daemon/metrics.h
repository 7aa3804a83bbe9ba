// host/daemon/metrics.h — what a running daemon reports about itself (docs/design.md §12.6): one
// Prometheus registry (prometheus-cpp's core) holding every figure, read two ways that therefore
// always agree — the text exposition format a scraper reads from the metrics endpoint
// (metrics_server.h), and a JSON snapshot the daemon writes to its state directory for
// `radiald status` (metrics_snapshot.h).
//
// The figures, all prefixed radiald_:
//   turns_ended_total{kind,status}         counter: turns and checks that got a terminal record
//   turn_duration_seconds{kind}            histogram: from a claimed turn's start to its record
//   turns_refused_total                    counter: claimed requests refused before they ran
//   turns_running, turns_queued, turns_waiting_for_box_ids   gauges
//   boxes_reclaimed_total{by}              counter: orphaned boxes removed, by "startup" (the
//                                          startup reconciliation) or "sweep" (the orphan sweep)
//   plugin_call_duration_seconds{call}     histogram: each runtime plugin call
//   plugin_call_errors_total{call}         counter: plugin calls that failed or timed out
//   journal_errors_total{code}             counter: journal calls that failed, by JournalErrc
//   pool_boxes_idle{image,mode}, pool_boxes_target{image,mode}  gauges: the warm pool's idle
//                                          boxes of a class, and its size
//   pool_claims_total{image,mode,result}   counter: turns of a pooled class, "hit" or "miss"
//   pool_create_failing{image,mode}        gauge: 1 while the pool's last create of it failed
//   start_time_seconds, build_info{version} gauges
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace prometheus {
class Registry;
template <typename T>
class Family;
class Counter;
class Gauge;
class Histogram;
} // namespace prometheus

namespace radial::daemon {

// The registry and its metrics. Every member function is [thread-safe] (prometheus-cpp's metrics
// are, and the families lock when a new label set is added) and never throws but std::bad_alloc.
class Metrics {
public:
    // Registers every family and sets start_time_seconds to now and build_info to `version`.
    explicit Metrics(std::string_view version);
    ~Metrics();
    Metrics(const Metrics&) = delete;
    Metrics& operator=(const Metrics&) = delete;

    // A turn ("turn" or "check") ended with terminal status `status` ("succeeded", "failed", …)
    // after `elapsed`.
    void turn_ended(std::string_view kind, std::string_view status,
                    std::chrono::steady_clock::duration elapsed);
    // A claimed request was refused before it ran (unreadable, or refused by policy).
    void turn_refused();
    // The gauges of running and queued turns, and of the queued ones that wait for a box id.
    void set_turns(std::size_t running, std::size_t queued, std::size_t waiting_for_box_ids = 0);
    // `count` orphaned boxes were removed; `by` is "startup" or "sweep".
    void boxes_reclaimed(std::string_view by, std::size_t count);
    // One runtime plugin call (host::RuntimeClient::CallObserver's arguments).
    void plugin_call(std::string_view call, std::chrono::nanoseconds elapsed, bool ok);
    // A journal call threw JournalError with code `code` ("storage", "unknown_turn", …).
    void journal_error(std::string_view code);
    // A warm pool class's figures (pool/warm_pool.h; a class is an image in a mode): its idle boxes
    // and size, its hits and misses so far (counters: only a rise is taken), and whether its last
    // create failed.
    void set_pool(std::string_view image, std::string_view mode, std::size_t idle,
                  std::size_t target, std::uint64_t hits, std::uint64_t misses, bool failing);

    // Every figure in the Prometheus text format, version 0.0.4.
    std::string text() const;
    // Every figure as JSON: {"<family>": [{"labels": {…}, "value": v}] for counters and gauges,
    // [{"labels": {…}, "count": n, "sum": s}] for histograms}, family names in order.
    nlohmann::ordered_json json() const;
    // Bumped by every call above but the gauges' when a value changed: a snapshot writer compares
    // it to know whether there is anything new to write.
    std::uint64_t generation() const noexcept;

private:
    struct Families;
    std::shared_ptr<prometheus::Registry> registry_;
    std::unique_ptr<Families> f_;
};

} // namespace radial::daemon
