// plugin-api/conformance/plugin_calls.h — one instance of the plugin under test, every call made
// through radiald's own wrapper (radial/host/runtime_client.hpp) on its own thread under the
// harness's budget, and what a run's output sink observed (docs/design.md §5.11).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <radial/container_spec.hpp>
#include <radial/host/runtime_client.hpp>
#include <radial/host/session_client.hpp>
#include <string>
#include <vector>

#include "pending_call.h"

namespace radial::conformance {

// The size of radial_runtime_descriptor in ABI 1.0: through `tcp_route`, its last 1.0 field.
inline constexpr std::uint32_t kDescriptorSize_1_0 =
    offsetof(radial_runtime_descriptor, tcp_route) + sizeof(void*);
// The size of radial_host in ABI 1.0: through `log`, its last 1.0 field.
inline constexpr std::uint32_t kHostSize_1_0 = offsetof(radial_host, log) + sizeof(void*);

// A sentence describing the exception in flight: a plugin error with its status and key, or a
// C++ exception that crossed the C ABI (a contract breach in itself).
std::string describe_current_exception();

// Everything one run's output sink saw. Shared between the sink (plugin threads) and the check;
// kept alive until the process ends, so that a plugin that calls the sink after `run` returned
// reaches a poisoned sink that counts the call instead of freed memory. [thread-safe]
struct OutputCapture {
    std::mutex mutex;
    bool keep = true;     // store the bytes (false: count them and pass to `hook`)
    std::string out, err; // what arrived on each stream (when `keep`)
    std::uint64_t out_bytes = 0, err_bytes = 0, chunks = 0;
    std::uint64_t empty_chunks = 0;   // chunks of zero bytes (the ABI promises at least one)
    std::uint64_t unknown_stream = 0; // chunks on a stream id that is neither stdout nor stderr
    std::chrono::steady_clock::time_point first_chunk{};
    // Called for each chunk after it is recorded; false asks the plugin to stop (abort).
    std::function<bool(std::uint32_t stream, std::string_view bytes)> hook;

    std::atomic<int> inside{0};        // sink calls in progress right now
    std::atomic<int> overlaps{0};      // calls that overlapped another call of the same run
    std::atomic<bool> returned{false}; // `run` has returned: the sink is poisoned
    std::atomic<int> late_calls{0};    // calls after `run` returned
};

// How one `run` call ended, as the harness saw it.
struct RunObservation {
    bool ok = false;          // run returned RADIAL_OK
    std::int32_t code = 0;    // the status when !ok (0 when a C++ exception escaped)
    std::string key;          // the key the plugin named with its error
    std::string message;      // the plugin's error message, or the escaped exception
    host::RunOutcome outcome; // when ok
    std::chrono::steady_clock::time_point started{}, returned{};
    bool needed_kill = false; // the harness had to kill the box to make run return
    std::string breach;       // when ok: what the result contradicts (host::run_result_breach)

    double seconds() const { return std::chrono::duration<double>(returned - started).count(); }
};

// One plugin instance: create ... destroy, each call under the budget. A call that does not come
// back within its budget makes the harness hang() (report and exit), except `run`, which the
// check waits for itself (it can kill the box first). Construction and destruction are on the
// check's thread; the other calls may be made from several threads at once.
class Instance {
public:
    // Creates an instance with `section` (default: the harness's config section). Throws what
    // create threw (host::RuntimeError or an exception that crossed the C ABI).
    static Instance create(const host::ConfigSection* section = nullptr);
    Instance(Instance&&) noexcept = default;
    Instance& operator=(Instance&&) noexcept = default;
    ~Instance(); // destroys the plugin instance under the budget

    void preflight() const;
    std::vector<std::string> capabilities() const;
    std::vector<host::Disposition> describe(const ContainerSpec& spec) const;
    std::vector<std::string> list(const std::string& prefix) const;
    void kill(const std::string& label) const;
    // inspect (ABI 1.1): supported = false when the plugin has none or answered UNSUPPORTED.
    host::BoxState inspect(const std::string& label) const;
    bool has_inspect() const { return client_->has_inspect(); }
    // kill on the calling thread, without a budget of its own: for calls the ABI requires on a
    // particular thread (from inside the output sink). Guard it with a Watchdog.
    void kill_on_this_thread(const std::string& label) const;
    // Starts `run` on its own thread; the returned call yields the observation. Call from the
    // check's thread only (the instance remembers the run, to settle it before destroy).
    PendingCall<RunObservation> start_run(const ContainerSpec& spec,
                                          std::shared_ptr<OutputCapture> capture) const;

    // The session extension (radial.session/1): whether the plugin offers it, and its calls,
    // each under the budget. An exec's observation is a run's (its output in `capture`).
    bool has_sessions() const;
    void session_create(const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                        std::uint64_t max_lifetime_ms) const;
    RunObservation session_exec(const ContainerSpec& exec,
                                std::shared_ptr<OutputCapture> capture) const;
    void session_destroy(const std::string& label) const;

private:
    Instance() = default;
    template <class F>
    auto budgeted(const std::string& what, F fn) const;

    std::shared_ptr<host::RuntimeClient> client_;
    // Every run started on this instance (label, call); settled before destroy.
    mutable std::vector<std::pair<std::string, PendingCall<RunObservation>>> runs_;
};

// Ends the harness (Harness::hang) unless disarmed within `budget`: the budget for a plugin call
// that must be made on the caller's own thread. RAII: the destructor disarms it.
class Watchdog {
public:
    Watchdog(std::string what, std::chrono::milliseconds budget);
    ~Watchdog();
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

private:
    struct State {
        std::mutex mutex;
        std::condition_variable cv;
        bool disarmed = false;
    };
    std::shared_ptr<State> state_;
};

// Opens Gate::created: creates and destroys one instance. nullopt on success, else why not.
std::optional<std::string> try_create_and_destroy();
// Opens Gate::ready: preflight on a fresh instance. nullopt on success, else why not.
std::optional<std::string> try_preflight();

} // namespace radial::conformance
