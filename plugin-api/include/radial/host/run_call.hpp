// radial/host/run_call.hpp — one `run` (or a session's `exec`) of a plugin, made on a thread of
// its own that its caller can stop waiting for (docs/design.md §3.7).
//
// A plugin whose run ignores every kill and never returns would otherwise hold its caller for
// ever: the turn, `radiald turn` or `check`, a slot of the daemon. The call object owns everything
// the plugin's thread touches — the spec, the output function and the sinks' gates
// (radial/host/sink_gate.hpp), the plugin's instance through `invoke` — so a caller that gave up
// may go: once give_up() returned, the output function is never called again, and the call's
// thread, detached, keeps the rest until the plugin returns, if it ever does.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <radial/runtime_plugin.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <radial/container_spec.hpp>
#include <radial/host/runtime_answers.hpp>
#include <radial/host/sink_gate.hpp>
#include <string>
#include <thread>
#include <utility>

namespace radial::host {

class RunCall : public std::enable_shared_from_this<RunCall> {
public:
    // The plugin's function, called once with the call's spec, output sink, result and error sink;
    // returns its status. It owns what the call needs (the instance, its library).
    using Invoke = std::function<std::int32_t(const radial_spec*, const radial_output_sink*,
                                              radial_run_result*, const radial_error_sink*)>;
    // Puts a line about the plugin into its log (a sink called late, a late return): called on the
    // plugin's thread, possibly after the caller is gone, so it must own what it uses.
    using Tell = std::function<void(std::uint32_t level, const std::string& line)>;
    // Told on the caller's thread, from wait(), how long the call took and whether it returned
    // without a throw (false too when the caller gave up).
    using Observe = std::function<void(std::chrono::nanoseconds elapsed, bool ok)>;

    // Starts `invoke` on a thread of its own. `call` names it in errors ("run", "session exec").
    // Throws std::system_error when no thread can be made (nothing of the call started).
    static std::shared_ptr<RunCall> start(std::string call, ContainerSpec spec, OutputFn on_output,
                                          Invoke invoke, Tell tell = {}, Observe observe = {}) {
        std::shared_ptr<RunCall> self(new RunCall(std::move(call), std::move(spec),
                                                  std::move(on_output), std::move(invoke),
                                                  std::move(tell), std::move(observe)));
        std::thread([self] { self->call_plugin(); }).detach();
        return self;
    }

    // The same call made on the calling thread, to its end: its outcome, or the RuntimeError its
    // failure throws. Its sinks drop what the plugin calls them with after it returned;
    // `on_late_output` (if any) is told of each output call dropped so, on the plugin's thread
    // (it must own what it uses).
    static RunOutcome run_here(const std::string& call, const ContainerSpec& spec,
                               const OutputFn& on_output, const Invoke& invoke,
                               const Tell& tell = {}, std::function<void()> on_late_output = {}) {
        SinkGate output_gate(const_cast<OutputFn*>(&on_output));
        output_gate.on_late(
            late_teller(tell, call, spec.label, "output sink", std::move(on_late_output)));
        return invoke_once(call, spec, output_gate, invoke, tell);
    }

    // Blocks until the plugin returned, and returns its outcome or throws the RuntimeError of its
    // failure; or, once give_up() gave up on it, returns nullopt. Call once.
    std::optional<RunOutcome> wait() {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return released_ || (done_ && !given_up_); });
        const bool gave_up = given_up_;
        const auto elapsed = gave_up ? std::chrono::steady_clock::now() - started_ : elapsed_;
        const bool ok = !gave_up && !error_;
        lock.unlock();
        if (observe_) try {
                observe_(elapsed, ok);
            } catch (...) {
            }
        if (gave_up) return std::nullopt;
        if (error_) std::rethrow_exception(error_);
        return outcome_;
    }

    // Stops waiting for a plugin that does not return: true when this gave up on it (wait() then
    // returns nullopt), false when it had returned already (wait() returns its outcome). Once this
    // returned true the output function is not called again: it waited for a call of it in flight,
    // and later ones are dropped. The call counts in abandoned() until the plugin returns.
    bool give_up() noexcept {
        {
            std::lock_guard lock(mutex_);
            if (done_ || given_up_) return given_up_;
            given_up_ = true;
            // Real time: only the line of a late return says it, to an operator.
            gave_up_at_ = std::chrono::steady_clock::now();
            // Under the lock: a return right after must not count down first.
            abandoned_count().fetch_add(1);
            ever_abandoned_flag().store(true);
        }
        output_gate_.close();
        {
            std::lock_guard lock(mutex_);
            released_ = true;
        }
        cv_.notify_all();
        return true;
    }

    // Runs `fn` once the plugin returned: at once, on this thread, when it has; otherwise on the
    // call's thread when it does (never, should it not). `fn` must own what it uses.
    void when_returned(std::function<void()> fn) {
        {
            std::lock_guard lock(mutex_);
            if (!done_) {
                then_ = std::move(fn);
                return;
            }
        }
        fn();
    }

    // Calls given up on whose plugin has not returned yet, in this process: their threads are in
    // plugin code, which a process's ordinary exit (static destructors, a library unloaded) could
    // pull from under them.
    static std::size_t abandoned() noexcept { return abandoned_count().load(); }
    // Whether this process ever gave up on a call: its thread may still be in plugin code (and its
    // call object, whose last release destroys the plugin's instance) after abandoned() counted
    // it down, so an exit that must not run beside it asks this. Never false again once true.
    static bool ever_abandoned() noexcept { return ever_abandoned_flag().load(); }

private:
    RunCall(std::string call, ContainerSpec spec, OutputFn on_output, Invoke invoke, Tell tell,
            Observe observe)
        : call_(std::move(call)),
          spec_(std::move(spec)),
          on_output_(std::move(on_output)),
          invoke_(std::move(invoke)),
          tell_(std::move(tell)),
          observe_(std::move(observe)) {
        output_gate_.on_late(late_teller(tell_, call_, spec_.label, "output sink"));
    }

    static std::atomic<std::size_t>& abandoned_count() noexcept {
        static std::atomic<std::size_t> n{0};
        return n;
    }
    static std::atomic<bool>& ever_abandoned_flag() noexcept {
        static std::atomic<bool> flag{false};
        return flag;
    }

    static std::int32_t output_thunk(void* ctx, std::uint32_t stream, const std::uint8_t* data,
                                     std::size_t size) noexcept {
        std::int32_t rc = 1; // dropped: "stop", to a plugin that should have stopped already
        SinkGate::pass(ctx, [&](void* target) {
            try {
                const auto& fn = *static_cast<const OutputFn*>(target);
                rc =
                    fn(stream, std::string_view(reinterpret_cast<const char*>(data), size)) ? 0 : 1;
            } catch (...) {
                rc = 1;
            }
        });
        return rc;
    }

    // What a gate does with each late call: the first is said (once per call and sink), and each
    // is passed to `also`.
    static std::function<void()> late_teller(const Tell& tell, const std::string& call,
                                             const std::string& label, const char* sink,
                                             std::function<void()> also = {}) {
        if (!tell && !also) return {};
        const std::string line = "called the " + std::string(sink) + " of its " + call +
                                 " of box '" + label +
                                 "' after that call had returned, which the plugin ABI forbids "
                                 "(radial/runtime_plugin.h): radiald dropped it, and drops any "
                                 "later one without a word";
        auto said = std::make_shared<std::atomic<bool>>(false);
        return [tell, line, said, also] {
            if (tell && !said->exchange(true)) tell(RADIAL_LOG_ERROR, line);
            if (also) also();
        };
    }

    static RunOutcome invoke_once(const std::string& call, const ContainerSpec& spec,
                                  SinkGate& output_gate, const Invoke& invoke, const Tell& tell) {
        const CSpec c(spec);
        detail::ErrorCollector err;
        err.gate.on_late(late_teller(tell, call, spec.label, "error sink"));
        const radial_output_sink* osink =
            output_gate.place(radial_output_sink{0, nullptr, &output_thunk});
        radial_run_result result{};
        result.struct_size = sizeof(result);
        const std::int32_t status = invoke(c.get(), osink, &result, err.sink());
        output_gate.close();
        if (status != RADIAL_OK) err.raise(status, call);
        return RunOutcome{result.flags,       result.exit_code, result.term_signal,
                          result.duration_ms, result.create_ms, result.remove_ms};
    }

    // The call's thread.
    void call_plugin() noexcept {
        RunOutcome out{};
        std::exception_ptr error;
        try {
            out = invoke_once(call_, spec_, output_gate_, invoke_, tell_);
        } catch (...) {
            error = std::current_exception();
        }
        std::function<void()> then;
        bool late = false;
        std::chrono::steady_clock::duration after{};
        {
            std::lock_guard lock(mutex_);
            done_ = true;
            outcome_ = out;
            error_ = error;
            elapsed_ = std::chrono::steady_clock::now() - started_;
            late = given_up_;
            if (late) after = std::chrono::steady_clock::now() - gave_up_at_;
            then = std::move(then_);
        }
        cv_.notify_all();
        if (late && tell_) try {
                tell_(RADIAL_LOG_WARN,
                      "its " + call_ + " of box '" + spec_.label + "' returned " +
                          std::to_string(
                              std::chrono::duration_cast<std::chrono::seconds>(after).count()) +
                          " s after radiald gave up on it");
            } catch (...) {
            }
        if (then) try {
                then();
            } catch (...) {
            }
        // Last: a process waiting for its abandoned calls may end once nothing of this one runs.
        if (late) abandoned_count().fetch_sub(1);
    }

    const std::string call_;
    const ContainerSpec spec_;
    const OutputFn on_output_;
    const Invoke invoke_;
    const Tell tell_;
    const Observe observe_;
    // After the output function it reaches: closed (at the latest) before that goes.
    SinkGate output_gate_{const_cast<OutputFn*>(&on_output_)};
    const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;     // the plugin returned
    bool given_up_ = false; // give_up() gave up on it
    bool released_ = false; // and closed the output gate: wait() may return
    std::chrono::steady_clock::time_point gave_up_at_;
    std::chrono::steady_clock::duration elapsed_{};
    RunOutcome outcome_{};
    std::exception_ptr error_;
    std::function<void()> then_;
};

} // namespace radial::host
