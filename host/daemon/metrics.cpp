#include "daemon/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <atomic>

namespace radial::daemon {

namespace {
using Seconds = std::chrono::duration<double>;

// Turns run from seconds (a check's `true`) to the turn timeout's hours.
const prometheus::Histogram::BucketBoundaries kTurnBuckets{1,   5,   15,   30,   60,   120,
                                                           300, 600, 1800, 3600, 7200, 14400};
// Plugin calls run from milliseconds (a kill of a gone box) to minutes (run.pluginCallTimeout).
const prometheus::Histogram::BucketBoundaries kCallBuckets{
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};

nlohmann::ordered_json labels_json(const prometheus::ClientMetric& m) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& l : m.label) out[l.name] = l.value;
    return out;
}
} // namespace

struct Metrics::Families {
    prometheus::Family<prometheus::Counter>& turns_ended;
    prometheus::Family<prometheus::Histogram>& turn_duration;
    prometheus::Counter& turns_refused;
    prometheus::Gauge& running;
    prometheus::Gauge& queued;
    prometheus::Gauge& waiting_for_box_ids;
    prometheus::Family<prometheus::Counter>& boxes_reclaimed;
    prometheus::Family<prometheus::Histogram>& call_duration;
    prometheus::Family<prometheus::Counter>& call_errors;
    prometheus::Family<prometheus::Counter>& journal_errors;
    prometheus::Family<prometheus::Gauge>& pool_idle;
    prometheus::Family<prometheus::Gauge>& pool_target;
    prometheus::Family<prometheus::Counter>& pool_claims;
    prometheus::Family<prometheus::Gauge>& pool_failing;
    std::atomic<std::uint64_t> generation{0};
};

Metrics::Metrics(std::string_view version) : registry_(std::make_shared<prometheus::Registry>()) {
    using namespace prometheus;
    auto& r = *registry_;
    f_.reset(new Families{
        BuildCounter()
            .Name("radiald_turns_ended_total")
            .Help("Turns and checks that got their terminal record, by kind and status")
            .Register(r),
        BuildHistogram()
            .Name("radiald_turn_duration_seconds")
            .Help("Time from the start of a claimed turn to its terminal record, by kind")
            .Register(r),
        BuildCounter()
            .Name("radiald_turns_refused_total")
            .Help("Claimed requests refused before they ran (unreadable or against policy)")
            .Register(r)
            .Add({}),
        BuildGauge().Name("radiald_turns_running").Help("Turns running now").Register(r).Add({}),
        BuildGauge()
            .Name("radiald_turns_queued")
            .Help("Turns queued and not yet claimed")
            .Register(r)
            .Add({}),
        BuildGauge()
            .Name("radiald_turns_waiting_for_box_ids")
            .Help("Queued turns that wait for a free id of run.boxIdRange")
            .Register(r)
            .Add({}),
        BuildCounter()
            .Name("radiald_boxes_reclaimed_total")
            .Help("Orphaned boxes removed, by the startup reconciliation or the orphan sweep")
            .Register(r),
        BuildHistogram()
            .Name("radiald_plugin_call_duration_seconds")
            .Help("Runtime plugin calls, by call")
            .Register(r),
        BuildCounter()
            .Name("radiald_plugin_call_errors_total")
            .Help("Runtime plugin calls that failed or timed out, by call")
            .Register(r),
        BuildCounter()
            .Name("radiald_journal_errors_total")
            .Help("Journal calls that failed, by error code")
            .Register(r),
        BuildGauge()
            .Name("radiald_pool_boxes_idle")
            .Help("Warm pool boxes started and not yet claimed, by image")
            .Register(r),
        BuildGauge()
            .Name("radiald_pool_boxes_target")
            .Help("Idle boxes the warm pool keeps, by image (run.pool.size)")
            .Register(r),
        BuildCounter()
            .Name("radiald_pool_claims_total")
            .Help("Turns of a pooled image that claimed a warm box (hit) or started one (miss)")
            .Register(r),
        BuildGauge()
            .Name("radiald_pool_create_failing")
            .Help("1 while the warm pool's last attempt to make a box of the image failed (the "
                  "daemon's log says why), else 0")
            .Register(r),
    });
    // Real time: the process's own start (docs/design.md §12.7).
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    BuildGauge()
        .Name("radiald_start_time_seconds")
        .Help("When this daemon started, in seconds since the Unix epoch")
        .Register(r)
        .Add({})
        .Set(std::chrono::duration_cast<Seconds>(now).count());
    BuildGauge()
        .Name("radiald_build_info")
        .Help("Always 1; the radiald version is its label")
        .Register(r)
        .Add({{"version", std::string(version)}})
        .Set(1);
    // Both kinds' first figures exist from the start, so a dashboard's rate() has a zero to begin
    // from and the snapshot lists them.
    for (const char* kind : {"turn", "check"})
        f_->turn_duration.Add({{"kind", kind}}, kTurnBuckets);
    for (const char* by : {"startup", "sweep"}) f_->boxes_reclaimed.Add({{"by", by}});
}

Metrics::~Metrics() = default;

void Metrics::turn_ended(std::string_view kind, std::string_view status,
                         std::chrono::steady_clock::duration elapsed) {
    const std::string k(kind);
    f_->turns_ended.Add({{"kind", k}, {"status", std::string(status)}}).Increment();
    f_->turn_duration.Add({{"kind", k}}, kTurnBuckets)
        .Observe(std::chrono::duration_cast<Seconds>(elapsed).count());
    ++f_->generation;
}

void Metrics::turn_refused() {
    f_->turns_refused.Increment();
    ++f_->generation;
}

void Metrics::set_turns(std::size_t running, std::size_t queued, std::size_t waiting_for_box_ids) {
    const auto r = static_cast<double>(running), q = static_cast<double>(queued),
               w = static_cast<double>(waiting_for_box_ids);
    if (f_->running.Value() == r && f_->queued.Value() == q && f_->waiting_for_box_ids.Value() == w)
        return;
    f_->running.Set(r);
    f_->queued.Set(q);
    f_->waiting_for_box_ids.Set(w);
    ++f_->generation;
}

void Metrics::boxes_reclaimed(std::string_view by, std::size_t count) {
    if (count == 0) return;
    f_->boxes_reclaimed.Add({{"by", std::string(by)}}).Increment(static_cast<double>(count));
    ++f_->generation;
}

void Metrics::plugin_call(std::string_view call, std::chrono::nanoseconds elapsed, bool ok) {
    const std::string c(call);
    f_->call_duration.Add({{"call", c}}, kCallBuckets)
        .Observe(std::chrono::duration_cast<Seconds>(elapsed).count());
    if (!ok) f_->call_errors.Add({{"call", c}}).Increment();
    ++f_->generation;
}

void Metrics::journal_error(std::string_view code) {
    f_->journal_errors.Add({{"code", std::string(code)}}).Increment();
    ++f_->generation;
}

void Metrics::set_pool(std::string_view image, std::string_view mode, std::size_t idle,
                       std::size_t target, std::uint64_t hits, std::uint64_t misses, bool failing) {
    const std::string i(image), m(mode);
    bool changed = false;
    auto set = [&](prometheus::Gauge& g, double v) {
        if (g.Value() != v) {
            g.Set(v);
            changed = true;
        }
    };
    auto reach = [&](prometheus::Counter& c, double v) {
        if (v > c.Value()) {
            c.Increment(v - c.Value());
            changed = true;
        }
    };
    set(f_->pool_idle.Add({{"image", i}, {"mode", m}}), static_cast<double>(idle));
    set(f_->pool_target.Add({{"image", i}, {"mode", m}}), static_cast<double>(target));
    reach(f_->pool_claims.Add({{"image", i}, {"mode", m}, {"result", "hit"}}),
          static_cast<double>(hits));
    reach(f_->pool_claims.Add({{"image", i}, {"mode", m}, {"result", "miss"}}),
          static_cast<double>(misses));
    set(f_->pool_failing.Add({{"image", i}, {"mode", m}}), failing ? 1.0 : 0.0);
    if (changed) ++f_->generation;
}

std::string Metrics::text() const {
    return prometheus::TextSerializer().Serialize(registry_->Collect());
}

nlohmann::ordered_json Metrics::json() const {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& family : registry_->Collect()) {
        auto samples = nlohmann::ordered_json::array();
        for (const auto& m : family.metric) {
            nlohmann::ordered_json s{{"labels", labels_json(m)}};
            switch (family.type) {
                case prometheus::MetricType::Counter: s["value"] = m.counter.value; break;
                case prometheus::MetricType::Gauge: s["value"] = m.gauge.value; break;
                case prometheus::MetricType::Histogram:
                    s["count"] = m.histogram.sample_count;
                    s["sum"] = m.histogram.sample_sum;
                    break;
                default: // no summaries or untyped metrics are registered
                    break;
            }
            samples.push_back(std::move(s));
        }
        out[family.name] = std::move(samples);
    }
    return out;
}

std::uint64_t Metrics::generation() const noexcept { return f_->generation.load(); }

} // namespace radial::daemon
