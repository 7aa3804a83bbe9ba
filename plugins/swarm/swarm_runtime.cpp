#include "swarm_runtime.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "engine_api/engine_endpoint.h"
#include "engine_api/stream_frames.h"
#include "escaped_output.h"
#include "support/box_init.h"
#include "support/run_ending.h"
#include "support/run_pump.h"

namespace radial::swarm {

namespace {

using engine_api::EngineError;
using engine_api::url_encode;
using radial::plugin::Error;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr auto kPollEvery = milliseconds(250);
// How long the drain waits for a local container's followed log stream to end on its own while
// no byte arrives, before it stops the stream and reads the rest once (docs/design.md §13.11).
constexpr auto kLocalLogsIdle = std::chrono::seconds(2);
// The rest of a local container's log is read from this long before the newest timestamp
// delivered: a line stamped earlier but written to the log after a later-stamped line of the
// other stream is still read (docs/design.md §13.11). Delivered bytes are kept per millisecond
// for twice as long.
constexpr std::int64_t kSinceMarginMs = 5000;

// True on a thread while it delivers output: a kill from inside the sink must not wait for the run
// whose output thread it is blocking.
thread_local bool tls_in_output_sink = false;
constexpr auto kRemovalBudget = std::chrono::seconds(10);
constexpr auto kEarlyKillMemory = std::chrono::seconds(60);

// An EngineError as the ABI's error: unreachable or timed out is RADIAL_E_UNAVAILABLE.
[[noreturn]] void rethrow_engine(const EngineError& e) {
    throw Error(e.status() == 0 ? RADIAL_E_UNAVAILABLE : RADIAL_E_INTERNAL, e.what());
}

std::string random_hex(std::size_t bytes) {
    std::random_device rd;
    static const char* hex = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < bytes; ++i) {
        unsigned v = rd() & 0xff;
        s += hex[v >> 4];
        s += hex[v & 15];
    }
    return s;
}

std::string label_filter(const std::string& label) {
    json f = {{"label", {{std::string(kLabelKey) + "=" + label, true}}}};
    return url_encode(f.dump());
}

// The container log stream with timestamps=1 (docs/design.md §13.11): each frame's payload is an
// RFC 3339 timestamp with nanoseconds, a space, then the message. Splits such a stream, fed in
// arbitrary pieces, into message pieces with their stream id and their timestamp's millisecond
// since the epoch (-1 when it does not parse). The framing is engine_api::FrameDemux's; throws its
// StreamFormatError for a malformed header or a payload with no timestamp.
class StampedDemux {
public:
    using Sink = std::function<bool(std::uint32_t stream, const char* data, std::size_t size,
                                    std::int64_t ms)>;
    explicit StampedDemux(Sink sink)
        : sink_(std::move(sink)),
          frames_(
              [this](std::uint32_t s, const char* p, std::size_t n) { return payload(s, p, n); },
              [this](std::uint32_t, std::uint32_t) {
                  in_stamp_ = true;
                  stamp_.clear();
              }) {}
    StampedDemux(const StampedDemux&) = delete; // the frame reader's callbacks hold `this`
    StampedDemux& operator=(const StampedDemux&) = delete;

    bool feed(std::string_view bytes) { return frames_.feed(bytes); }
    bool at_frame_boundary() const noexcept { return frames_.at_frame_boundary(); }

    // "2026-12-01T08:17:53.043416487Z" (the engine's UTC, nanoseconds) in ms since the epoch.
    static std::int64_t stamp_ms(const std::string& t) {
        std::tm tm{};
        int frac_at = 0;
        if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
                        &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &frac_at) != 6 ||
            frac_at <= 0 || t.back() != 'Z')
            return -1;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        std::int64_t ms = static_cast<std::int64_t>(::timegm(&tm)) * 1000;
        std::size_t i = static_cast<std::size_t>(frac_at);
        if (i < t.size() && t[i] == '.') {
            int digits = 0, frac = 0;
            for (++i; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i)
                if (digits < 3) frac = frac * 10 + (t[i] - '0'), ++digits;
            for (; digits < 3; ++digits) frac *= 10;
            ms += frac;
        }
        return ms;
    }

private:
    // A piece of a frame's payload: the timestamp and its space first, then the message.
    bool payload(std::uint32_t stream, const char* p, std::size_t n) {
        if (in_stamp_) {
            const void* sp = std::memchr(p, ' ', n);
            const std::size_t take =
                sp ? static_cast<std::size_t>(static_cast<const char*>(sp) - p) : n;
            if (stamp_.size() + take > 64)
                throw engine_api::StreamFormatError("the container's log stream has no timestamps");
            stamp_.append(p, take);
            if (!sp) return true;
            in_stamp_ = false;
            ms_ = stamp_ms(stamp_);
            p += take + 1; // the space
            n -= take + 1;
        }
        return n == 0 || sink_(stream, p, n, ms_);
    }

    Sink sink_;
    bool in_stamp_ = false;
    std::string stamp_;
    std::int64_t ms_ = -1;
    engine_api::FrameDemux frames_;
};

bool terminal(const std::string& state) {
    return state == "complete" || state == "failed" || state == "rejected" || state == "shutdown" ||
           state == "orphaned" || state == "remove";
}

} // namespace

// One run, from the first secret to the service being gone.
class SwarmRun {
public:
    SwarmRun(SwarmRuntime& rt, const ContainerSpec& spec, radial::plugin::Output& out,
             plugin_support::ActiveRun& active)
        : rt_(rt), spec_(spec), out_(out), active_(active) {}

    ~SwarmRun() { cleanup(); }

    radial::plugin::RunResult execute();

private:
    std::string box() const { return "box '" + spec_.label + "'"; }
    std::pair<std::string, std::optional<std::vector<std::string>>> resolve_image();
    void create_secrets();
    bool pump(engine_api::Stream& stream, std::uint64_t skip_out, std::uint64_t skip_err,
              bool stamped);
    std::string logs_target(bool follow) const;
    std::string rest_target(std::uint64_t& skip_out, std::uint64_t& skip_err);
    bool on_this_engine(const std::string& container_id);
    void saw_container(const std::string& container_id);
    void follow_logs() noexcept;
    void read_rest(const std::string& target, std::uint64_t skip_out, std::uint64_t skip_err,
                   bool stamped) noexcept;
    bool await_local_logs();
    void stop_logs();
    void cleanup() noexcept;
    bool oom_killed(const std::string& container_id);

    SwarmRuntime& rt_;
    const ContainerSpec& spec_;
    radial::plugin::Output& out_;
    plugin_support::ActiveRun& active_;

    std::vector<SecretRef> secrets_;
    std::string service_id_;
    bool cleaned_ = false;

    // Shared with the log thread. The pump outlives it: the destructor's cleanup joins the thread
    // before members go.
    std::optional<plugin_support::RunPump> run_pump_;
    std::atomic<bool> output_aborted_{false};
    std::atomic<std::uint64_t> delivered_[3] = {0, 0, 0}; // bytes per stream (1 out, 2 err)
    std::mutex stream_mutex_;
    std::unique_ptr<engine_api::Stream> stream_;
    // The log path, chosen once by the log thread before any byte is delivered (never switched
    // mid-run, so the byte offsets in delivered_ always count the same sequence): the task's
    // container on this engine (local_container_ set), else swarm's log broker
    // (docs/design.md §13.11). Guarded by stream_mutex_.
    std::condition_variable log_cv_;
    std::string seen_container_; // the task's container, once a task status named it
    bool logs_stopping_ = false; // stop_logs() was called: open nothing more
    bool path_chosen_ = false;
    std::string local_container_;
    bool follow_done_ = false;     // the log thread returned
    bool follow_complete_ = false; // ... because its stream ended on its own, at a frame boundary
    std::exception_ptr log_failure_;
    std::optional<std::thread> log_thread_;
    // The local path's delivered bytes per stream per millisecond of their timestamps, the last
    // 2 × kSinceMarginMs of them (written by the log thread; read after it was joined).
    std::map<std::int64_t, std::array<std::uint64_t, 3>> stamped_bytes_;
    std::int64_t newest_ms_ = -1;
    bool stamps_ok_ = true;     // every timestamp parsed
    bool drain_killed_ = false; // a kill cut the read of the rest short (pump thread only)
    // The task runs under radial-init, whose output is escaped (docs/design.md §13.11): the
    // bytes read are decoded per stream before delivery; the offsets above count the log's bytes.
    bool escaped_ = false;
    EscapedOutputDecoder decoders_[3];
};

// The image reference the task runs, and the image's entrypoint when this engine has the image
// (nullopt when only the nodes may pull it).
std::pair<std::string, std::optional<std::vector<std::string>>> SwarmRun::resolve_image() {
    auto& engine = rt_.engine_;
    engine_api::Response r = engine.request("GET", "/images/" + url_encode(spec_.image) + "/json",
                                            "", "looking up image '" + spec_.image + "'");
    if (r.status == 404) {
        if (rt_.settings_.pull == "always") return {spec_.image, std::nullopt};
        throw Error(RADIAL_E_NOT_FOUND, "image",
                    "starting " + box() + ": image '" + spec_.image +
                        "' is not on the manager's engine " + engine.address().text +
                        "; load it there (and on every node that may run tasks: docker load), "
                        "or set run.swarm.pull = \"always\" to let nodes pull it");
    }
    if (r.status != 200)
        throw Error(RADIAL_E_INTERNAL, "looking up image '" + spec_.image + "': HTTP " +
                                           std::to_string(r.status) + ": " +
                                           engine_api::engine_message(r.body));
    json j = json::parse(r.body);
    std::vector<std::string> entrypoint;
    if (j.contains("Config") && j["Config"].is_object() && j["Config"].contains("Entrypoint") &&
        j["Config"]["Entrypoint"].is_array())
        for (const auto& e : j["Config"]["Entrypoint"]) entrypoint.push_back(e.get<std::string>());
    // An image id makes the node skip its registry lookup (it pulls only names, never ids): with
    // pull = "never" nothing contacts a registry.
    if (rt_.settings_.pull == "never") return {j.at("Id").get<std::string>(), entrypoint};
    return {spec_.image, entrypoint};
}

void SwarmRun::create_secrets() {
    const std::string run_tag = random_hex(8);
    std::size_t index = 0;
    for (const auto& e : spec_.env) {
        if (!e.secret) continue;
        SecretRef ref;
        ref.env_name = e.name;
        ref.name = "radial-" + run_tag + "-" + std::to_string(index);
        ref.file = secret_file_name(index);
        ++index;
        json body = {{"Name", ref.name},
                     {"Labels", {{kLabelKey, spec_.label}}},
                     {"Data", engine_api::base64_encode(e.value)}};
        // The value is only in the request body, never in a message or log line.
        json answer = rt_.engine_.call("POST", "/secrets/create", &body,
                                       "creating the swarm secret for " + e.name + " of " + box());
        ref.id = answer.at("ID").get<std::string>();
        secrets_.push_back(std::move(ref));
    }
}

// Returns true when the stream ended on its own at a frame boundary with everything delivered.
bool SwarmRun::pump(engine_api::Stream& stream, std::uint64_t skip_out, std::uint64_t skip_err,
                    bool stamped) {
    // The broker sends a frame per line; consecutive frames of one stream within one read are
    // delivered as one chunk, so a chatty box costs the sink one call per read, not per line.
    std::uint32_t pending_stream = 0;
    std::string pending;
    std::uint64_t skip[3] = {0, skip_out, skip_err};
    auto deliver = [&] {
        if (pending.empty() || output_aborted_) return !output_aborted_;
        tls_in_output_sink = true;
        bool ok = out_.write(pending_stream, pending.data(), pending.size());
        tls_in_output_sink = false;
        pending.clear();
        if (!ok && out_.aborted()) {
            output_aborted_ = true;
            if (run_pump_) run_pump_->output_aborted();
        }
        return !output_aborted_.load();
    };
    auto take = [&](std::uint32_t s, const char* data, std::size_t n, std::int64_t ms) {
        // Bytes an earlier stream of this run already delivered are skipped, not repeated.
        std::size_t drop = static_cast<std::size_t>(std::min<std::uint64_t>(skip[s], n));
        skip[s] -= drop;
        data += drop;
        n -= drop;
        if (n == 0) return true;
        delivered_[s] += n;
        if (stamped) {
            if (ms < 0) stamps_ok_ = false;
            stamped_bytes_[ms][s] += n;
            if (ms > newest_ms_) newest_ms_ = ms;
            while (!stamped_bytes_.empty() &&
                   stamped_bytes_.begin()->first < newest_ms_ - 2 * kSinceMarginMs)
                stamped_bytes_.erase(stamped_bytes_.begin());
        }
        if (s != pending_stream && !deliver()) return false;
        pending_stream = s;
        if (escaped_)
            decoders_[s].feed({data, n}, pending);
        else
            pending.append(data, n);
        return true;
    };
    std::string chunk;
    if (stamped) {
        StampedDemux demux(take);
        while (stream.read(chunk))
            if (!demux.feed(chunk) || !deliver()) return false;
        return demux.at_frame_boundary() && !output_aborted_;
    }
    engine_api::FrameDemux demux(
        [&](std::uint32_t s, const char* data, std::size_t n) { return take(s, data, n, -1); });
    while (stream.read(chunk))
        if (!demux.feed(chunk) || !deliver()) return false;
    return demux.at_frame_boundary() && !output_aborted_;
}

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

void SwarmRun::cleanup() noexcept {
    if (cleaned_) return;
    cleaned_ = true;
    try {
        stop_logs();
    } catch (...) {
    }
    // By label, not only by the ids this run knows: a create whose answer was lost still left a
    // service or secret carrying the label.
    try {
        rt_.remove_by_label(spec_.label, "ending " + box());
    } catch (const std::exception& e) {
        rt_.host_.warn("removing " + box() + ": " + e.what() +
                       "; reconciliation will find it by its label");
    }
}

radial::plugin::RunResult SwarmRun::execute() {
    const auto started = Clock::now();
    radial::plugin::RunResult result;
    if (active_.kill_requested()) {
        result.flags = RADIAL_RUN_KILLED;
        return result;
    }
    auto timeout_at = Clock::time_point::max();
    if (spec_.timeout_ms != 0 && spec_.timeout_ms < 100ull * 365 * 24 * 3600 * 1000)
        timeout_at = started + milliseconds(spec_.timeout_ms);

    std::string task_state, task_err, said_pending;
    std::optional<int> exit_code;
    std::string container_id; // of the ended task, for its OOM verdict
    plugin_support::Ending ending = plugin_support::Ending::none;
    try {
        auto [image_ref, entrypoint] = resolve_image();
        // Under radial-init only when the image's entrypoint is known: the init replaces it.
        escaped_ = !rt_.settings_.init_path.empty() && entrypoint.has_value();
        if (!rt_.settings_.init_path.empty() && !escaped_)
            rt_.host_.info(box() + ": image '" + spec_.image +
                           "' is not on the manager's engine, so its entrypoint is unknown: the "
                           "task runs under docker's init, its output read line by line (slow "
                           "for chatty commands) and its deadline kept by this runtime alone");
        create_secrets();
        json body =
            service_spec(spec_, rt_.settings_, image_ref,
                         entrypoint.value_or(std::vector<std::string>{}), secrets_, escaped_);
        json answer =
            rt_.engine_.call("POST", "/services/create", &body, "creating the service of " + box());
        service_id_ = answer.at("ID").get<std::string>();
        rt_.host_.debug("started " + box() + " as swarm service " + service_id_);
        if (answer.contains("Warnings") && answer["Warnings"].is_array())
            for (const auto& w : answer["Warnings"])
                if (w.is_string())
                    rt_.host_.info(box() + ": the engine warns: " + w.get<std::string>());

        // The run's wait, stop and drain are the shared pump's (docs/design.md §5.12). The box
        // ends when its task reaches a terminal state (polled), or once its service's removal
        // was asked for (the stop: a removal that fails is retried by cleanup, on every path).
        plugin_support::PumpOptions options;
        options.deadline = timeout_at;
        options.check_every = kPollEvery;
        options.settle_budget = kRemovalBudget;
        bool stopped = false;
        const std::string tasks_target =
            "/tasks?filters=" + url_encode(json({{"service", {{service_id_, true}}}}).dump());
        plugin_support::PumpBox callbacks;
        callbacks.ended = [&] {
            if (stopped) return true;
            json tasks =
                rt_.engine_.call("GET", tasks_target, nullptr, "reading the task of " + box());
            if (!tasks.is_array() || tasks.empty()) return false;
            const json& st = tasks.front().value("Status", json::object());
            task_state = st.value("State", "");
            task_err = st.value("Err", "");
            if (st.contains("ContainerStatus") && st["ContainerStatus"].is_object() &&
                st["ContainerStatus"].contains("ContainerID") &&
                st["ContainerStatus"]["ContainerID"].is_string())
                saw_container(st["ContainerStatus"]["ContainerID"].get<std::string>());
            // A task the scheduler cannot place waits in "pending" (until the timeout, if any):
            // say why once, so the operator sees it while the turn waits.
            if (!terminal(task_state) && !task_err.empty() && task_err != said_pending) {
                said_pending = task_err;
                rt_.host_.warn(box() + " is " + task_state + ": " + task_err +
                               "; check run.swarm.constraints and reservations against the "
                               "nodes (docker node ls)");
            }
            if (!terminal(task_state)) return false;
            if (st.contains("ContainerStatus") && st["ContainerStatus"].contains("ExitCode") &&
                (task_state == "complete" || task_err.starts_with("task: non-zero exit")))
                exit_code = st["ContainerStatus"]["ExitCode"].get<int>();
            if (st.contains("ContainerStatus") && st["ContainerStatus"].contains("ContainerID") &&
                st["ContainerStatus"]["ContainerID"].is_string())
                container_id = st["ContainerStatus"]["ContainerID"].get<std::string>();
            return true;
        };
        callbacks.stop = [&](const plugin_support::StopRequest&) {
            stopped = true;
            try {
                rt_.remove_by_label(spec_.label, "ending " + box());
            } catch (const std::exception& e) {
                rt_.host_.debug("ending " + box() + ": " + e.what() + "; removing it again");
            }
            return true;
        };
        callbacks.force_kill = [this] { stop_logs(); };
        callbacks.drain = [&](plugin_support::Ending why) {
            if (why != plugin_support::Ending::none || !exit_code) return;
            // A local container's followed stream ends on its own once the container stopped.
            // The broker's trails the task and never ends while the service exists: stop it, then
            // read the ended task's logs once to their end, on the same path, delivering only
            // what the followed stream had not (docs/design.md §13.11).
            // Docker 20.10 ends a container's followed stream early now and then (seen: 7.5 M of
            // 8.4 M lines), so an end on its own is not trusted: the rest is always read.
            bool local = false;
            {
                std::lock_guard lock(stream_mutex_);
                local = !local_container_.empty();
            }
            if (local) await_local_logs();
            stop_logs();
            if (log_failure_) std::rethrow_exception(log_failure_);
            if (!path_chosen_) { // the log thread never chose: choose now, nothing was delivered
                if (on_this_engine(container_id)) local_container_ = container_id;
            }
            if (output_aborted_) return;
            // The rest can be long (the whole log again on the broker path): read it on the log
            // thread while this one watches for a kill, which the pump cannot see during the
            // drain, so that a kill ends the run within its grace.
            std::uint64_t skip_out = 0, skip_err = 0;
            const std::string target = rest_target(skip_out, skip_err);
            const bool stamped = !local_container_.empty();
            {
                std::lock_guard lock(stream_mutex_);
                logs_stopping_ = false;
                follow_done_ = false;
            }
            log_thread_.emplace([this, target, skip_out, skip_err, stamped] {
                read_rest(target, skip_out, skip_err, stamped);
            });
            {
                std::unique_lock lock(stream_mutex_);
                while (!follow_done_) {
                    if (active_.kill_requested()) {
                        drain_killed_ = true;
                        break;
                    }
                    log_cv_.wait_for(lock, milliseconds(200));
                }
            }
            stop_logs();
            if (log_failure_ && !drain_killed_) std::rethrow_exception(log_failure_);
            // An escape cut at the very end (never radial-init's own) is delivered as it was.
            for (std::uint32_t s : {RADIAL_STREAM_STDOUT, RADIAL_STREAM_STDERR}) {
                std::string held;
                decoders_[s].finish(held);
                if (!held.empty() && !drain_killed_ && !output_aborted_)
                    out_.write(s, held.data(), held.size());
            }
        };
        run_pump_.emplace(active_, options, std::move(callbacks));
        log_thread_.emplace([this] { follow_logs(); });
        ending = run_pump_->run().ending;
    } catch (const EngineError& e) {
        cleanup();
        rethrow_engine(e);
    } catch (...) {
        cleanup();
        throw;
    }
    stop_logs();
    // Asked before cleanup() removes the task's container, which holds the verdict (docs/design.md
    // §13.7).
    const bool oom = ending == plugin_support::Ending::none && !drain_killed_ && exit_code &&
                     *exit_code != 0 && oom_killed(container_id);
    cleanup();
    if (log_failure_ && ending == plugin_support::Ending::none && !drain_killed_) {
        try {
            std::rethrow_exception(log_failure_);
        } catch (const EngineError& e) {
            rethrow_engine(e);
        } catch (const std::exception& e) {
            throw Error(RADIAL_E_INTERNAL, "following the output of " + box() + ": " + e.what());
        }
    }
    result.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<milliseconds>(Clock::now() - started).count());
    switch (ending) {
        case plugin_support::Ending::killed: result.flags = RADIAL_RUN_KILLED; break;
        case plugin_support::Ending::aborted:
            result.flags = RADIAL_RUN_KILLED | RADIAL_RUN_OUTPUT_ABORTED;
            break;
        case plugin_support::Ending::timed_out: result.flags = RADIAL_RUN_TIMED_OUT; break;
        case plugin_support::Ending::none:
            if (drain_killed_) { // the task ended, but its output was cut short by the kill
                result.flags = RADIAL_RUN_KILLED;
                break;
            }
            if (!exit_code)
                throw Error(
                    RADIAL_E_INTERNAL,
                    "starting " + box() + " from image '" + spec_.image + "': the swarm task " +
                        "ended '" + task_state + "' without running: " +
                        (task_err.empty() ? std::string("the engine gave no reason") : task_err) +
                        "; check the mounts, workdir, user and constraints against the nodes, "
                        "and the engine's log");
            result.flags = RADIAL_RUN_EXITED;
            result.exit_code = *exit_code;
            if (output_aborted_) result.flags |= RADIAL_RUN_OUTPUT_ABORTED;
            if (oom) result.flags |= RADIAL_RUN_OOM_KILLED;
            break;
    }
    return result;
}

// Whether the memory bound ended the task: its container's State.OOMKilled. A task's status does
// not say (a task killed by the bound only "exits 137"), and the container can be asked only on
// the node whose engine this is; a task on another node is reported as not OOM-killed
// (docs/design.md §13.7).
bool SwarmRun::oom_killed(const std::string& container_id) {
    if (container_id.empty()) return false;
    try {
        auto r = rt_.engine_.request("GET", "/containers/" + container_id + "/json", "",
                                     "inspecting the container of " + box());
        if (r.status != 200) return false;
        json j = json::parse(r.body, nullptr, false);
        return !j.is_discarded() && j.contains("State") && j["State"].is_object() &&
               j["State"].value("OOMKilled", false);
    } catch (const std::exception&) {
        return false;
    }
}

SwarmRuntime::SwarmRuntime(const radial::plugin::Host& host, radial::plugin::Config& config)
    : host_(host),
      settings_([&] {
          SwarmSettings s = parse_swarm_settings(config);
          s.init_path = plugin_support::box_init_or_default(
              s.init_path, host, "swarm",
              "tasks run under docker's init, their output is read back line by line (slow for "
              "chatty commands), and a task outlives its timeout when no radiald is left to "
              "remove it");
          return s;
      }()),
      engine_([&] {
          // The same choice as the docker runtime's (docs/design.md §13.10).
          const std::string key = config.section() + ".host";
          engine_api::ResolvedEngine r;
          try {
              r = engine_api::resolve_engine(settings_.host, key,
                                             engine_api::EngineEnvironment::of_process());
          } catch (const std::invalid_argument& e) {
              throw Error(RADIAL_E_INVALID, "host", e.what());
          }
          host.debug("swarm engine " + r.address.text + " (" + r.source + ")" +
                     (r.address.tls ? ", TLS with " + r.address.tls->origin : std::string()));
          try {
              return engine_api::EngineClient(
                  r.address,
                  milliseconds(std::min<std::uint64_t>(settings_.command_timeout_ms, 3'600'000)));
          } catch (const std::invalid_argument& e) {
              throw Error(RADIAL_E_INVALID, "host",
                          "the TLS material of engine '" + r.address.text + "' (from " + r.source +
                              "): " + e.what());
          }
      }()) {}

void SwarmRuntime::preflight() {
    try {
        engine_api::ApiVersion v = engine_.version();
        json info = engine_.call("GET", "/info", nullptr, "checking the engine is a swarm manager");
        json sw = info.value("Swarm", json::object());
        std::string state = sw.value("LocalNodeState", "");
        bool manager = sw.value("ControlAvailable", false);
        if (state != "active")
            throw Error(RADIAL_E_UNAVAILABLE,
                        "the engine at " + engine_.address().text +
                            " is not in a swarm (LocalNodeState '" + state +
                            "'); the swarm runtime runs turns as swarm services. Make it a "
                            "manager: `docker swarm init --advertise-addr <this host's address>` "
                            "(on one machine: --advertise-addr 127.0.0.1 --listen-addr "
                            "127.0.0.1:2377), or point run.swarm.host at a manager's engine");
        if (!manager)
            throw Error(RADIAL_E_UNAVAILABLE,
                        "the engine at " + engine_.address().text +
                            " is a swarm worker; services can only be created on a manager: "
                            "point run.swarm.host at a manager's engine, or promote this node "
                            "(`docker node promote <node>` on a manager)");
        host_.debug("swarm manager answers at " + engine_.address().text + ", Engine API " +
                    v.text());
        host_.warn("swarm services at Engine API " + v.text() +
                   " cannot set no-new-privileges: tasks run with every capability dropped and a "
                   "non-root user, but a setuid binary in the image can still change uid");
    } catch (const EngineError& e) {
        throw Error(RADIAL_E_UNAVAILABLE, e.what());
    }
}

std::vector<radial::plugin::Disposition> SwarmRuntime::describe(const ContainerSpec& spec) {
    return describe_for_swarm(spec, settings_);
}

radial::plugin::RunResult SwarmRuntime::run(const ContainerSpec& spec,
                                            radial::plugin::Output& out) {
    std::optional<plugin_support::RunRegistry::Registration> registration;
    {
        std::lock_guard lock(kill_mutex_);
        registration.emplace(runs_.enter(spec.label));
        auto it = early_kills_.find(spec.label);
        if (it != early_kills_.end()) {
            bool recent = Clock::now() - it->second < kEarlyKillMemory;
            early_kills_.erase(it);
            if (recent) {
                host_.info("box '" + spec.label + "' was killed before its run began");
                registration->run().request_kill(); // the run then starts nothing
            }
        }
    }
    SwarmRun run(*this, spec, out, registration->run());
    return run.execute();
}

std::vector<std::string> SwarmRuntime::list_by_label(std::string_view prefix) {
    std::set<std::string> labels;
    try {
        json f = {{"label", {{kLabelKey, true}}}};
        json services = engine_.call("GET", "/services?filters=" + url_encode(f.dump()), nullptr,
                                     "listing boxes");
        for (const auto& s : services) {
            const json& l = s.value("Spec", json::object()).value("Labels", json::object());
            if (!l.contains(kLabelKey) || !l[kLabelKey].is_string()) continue;
            std::string label = l[kLabelKey].get<std::string>();
            if (std::string_view(label).starts_with(prefix)) labels.insert(std::move(label));
        }
    } catch (const EngineError& e) {
        rethrow_engine(e);
    }
    return {labels.begin(), labels.end()};
}

std::size_t SwarmRuntime::remove_by_label(const std::string& label, const std::string& why) {
    const std::string filter = label_filter(label);
    json services = engine_.call("GET", "/services?filters=" + filter, nullptr, why);
    std::size_t removed = 0;
    for (const auto& s : services) {
        std::string id = s.value("ID", "");
        auto r = engine_.request("DELETE", "/services/" + id, "", why);
        if (r.status == 200) ++removed;
        if (r.status != 200 && r.status != 404)
            throw EngineError(why + ": DELETE /services/" + id + " answered HTTP " +
                                  std::to_string(r.status) + ": " +
                                  engine_api::engine_message(r.body),
                              r.status, false);
    }
    remove_local_containers(label, why);
    // A secret stays "in use" until its service is gone from the store; retry briefly.
    const auto deadline = Clock::now() + kRemovalBudget;
    for (;;) {
        json secrets = engine_.call("GET", "/secrets?filters=" + filter, nullptr, why);
        std::string last_error;
        for (const auto& s : secrets) {
            std::string id = s.value("ID", "");
            auto r = engine_.request("DELETE", "/secrets/" + id, "", why);
            if (r.status != 204 && r.status != 200 && r.status != 404)
                last_error = "DELETE /secrets/" + id + " answered HTTP " +
                             std::to_string(r.status) + ": " + engine_api::engine_message(r.body);
        }
        if (last_error.empty()) return removed;
        if (Clock::now() >= deadline) throw EngineError(why + ": " + last_error, 409, false);
        std::this_thread::sleep_for(milliseconds(100));
    }
}

void SwarmRuntime::remove_local_containers(const std::string& label, const std::string& why) {
    // The node keeps the container of a finished task after its service is deleted (docs/design.md
    // §13.7): left there, every run would leave an exited container behind.
    json containers =
        engine_.call("GET", "/containers/json?all=1&filters=" + label_filter(label), nullptr, why);
    for (const auto& c : containers) {
        const std::string id = c.value("Id", "");
        if (id.empty()) continue;
        auto r =
            engine_.request("DELETE", "/containers/" + url_encode(id) + "?force=1&v=1", "", why);
        // 404: gone meanwhile; 409: the node's own removal of it is under way.
        if (r.status != 204 && r.status != 200 && r.status != 404 && r.status != 409)
            throw EngineError(why + ": DELETE /containers/" + id.substr(0, 12) + " answered HTTP " +
                                  std::to_string(r.status) + ": " +
                                  engine_api::engine_message(r.body),
                              r.status, false);
    }
}

void SwarmRuntime::kill(std::string_view label) {
    std::shared_ptr<plugin_support::ActiveRun> active;
    {
        std::lock_guard lock(kill_mutex_);
        active = runs_.request_kill(label);
        if (active == nullptr) {
            auto now = Clock::now();
            std::erase_if(early_kills_,
                          [&](const auto& e) { return now - e.second >= kEarlyKillMemory; });
            early_kills_[std::string(label)] = now;
        }
    }
    std::size_t removed = 0;
    try {
        removed = remove_by_label(std::string(label), "killing box '" + std::string(label) + "'");
    } catch (const EngineError& e) {
        rethrow_engine(e);
    }
    // A kill that found a service but no run was cleaning up an orphan (reconciliation), not
    // overtaking a run to come.
    if (active == nullptr && removed > 0) {
        std::lock_guard lock(kill_mutex_);
        early_kills_.erase(std::string(label));
    }
    if (active != nullptr && !active->on_run_thread() && !tls_in_output_sink &&
        !active->wait_finished(kRemovalBudget))
        host_.warn("killing box '" + std::string(label) +
                   "': its run did not finish within 10 s; it goes on removing the service");
}

} // namespace radial::swarm
