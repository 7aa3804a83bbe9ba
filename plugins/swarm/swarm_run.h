// plugins/swarm/swarm_run.h — one run of the swarm runtime (docs/design.md §5.1, §13.11): the
// service of one box from its first secret to its removal, and the helpers the runtime shares
// with it. Private to the plugin: swarm_run.cpp (the run), swarm_run_logs.cpp (its output path),
// swarm_runtime.cpp (the runtime).
#pragma once

#include <radial/support/run_ending.h>
#include <radial/support/run_pump.h>

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
#include "swarm_runtime.h"

namespace radial::swarm {

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
inline thread_local bool tls_in_output_sink = false;
constexpr auto kRemovalBudget = std::chrono::seconds(10);
constexpr auto kEarlyKillMemory = std::chrono::seconds(60);

// An EngineError as the ABI's error: unreachable or timed out is RADIAL_E_UNAVAILABLE.
[[noreturn]] inline void rethrow_engine(const EngineError& e) {
    throw Error(e.status() == 0 ? RADIAL_E_UNAVAILABLE : RADIAL_E_INTERNAL, e.what());
}

inline std::string random_hex(std::size_t bytes) {
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

inline std::string label_filter(const std::string& label) {
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

inline bool terminal(const std::string& state) {
    return state == "complete" || state == "failed" || state == "rejected" || state == "shutdown" ||
           state == "orphaned" || state == "remove";
}

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
    // Whether its service is still listed; true when the engine cannot say.
    bool still_listed() noexcept;
    bool oom_killed(const std::string& container_id, int exit_code);

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

} // namespace radial::swarm
