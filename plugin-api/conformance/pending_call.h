// plugin-api/conformance/pending_call.h — a call into a plugin made on its own thread, so that the
// harness can stop waiting for it (docs/design.md §5.11: "every external wait has a budget").
//
// A plugin call that can hang will hang one day. The harness therefore never calls into a plugin
// on the thread that runs the checks: it starts the call here and waits with a budget. A call that
// does not come back keeps its thread; everything that thread touches is owned by the shared
// state (the lambda's captures), so abandoning it leaves nothing dangling. The harness then kills
// the box and, if the call is still stuck, ends the process (harness.h, `hang`).
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

namespace radial::conformance {

// What a void call returns, so one template covers both.
struct Unit {};

// The result of a call running on its own thread. Copies share one state. [thread-safe]
template <class T>
class PendingCall {
public:
    // Starts `fn` on a new detached thread. `fn` must own (capture by value or by shared_ptr)
    // everything it uses that may not outlive the caller's scope.
    template <class F>
    static PendingCall start(F fn) {
        PendingCall p;
        p.state_ = std::make_shared<State>();
        std::thread([state = p.state_, fn = std::move(fn)]() mutable {
            std::optional<T> value;
            std::exception_ptr error;
            try {
                if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
                    fn();
                    value.emplace();
                } else {
                    value.emplace(fn());
                }
            } catch (...) {
                error = std::current_exception();
            }
            std::lock_guard lock(state->mutex);
            state->value = std::move(value);
            state->error = error;
            state->done = true;
            state->cv.notify_all();
        }).detach();
        return p;
    }

    // True when the call finished (returned or threw) within `budget`.
    bool wait_for(std::chrono::milliseconds budget) const {
        std::unique_lock lock(state_->mutex);
        return state_->cv.wait_for(lock, budget, [&] { return state_->done; });
    }

    bool done() const {
        std::lock_guard lock(state_->mutex);
        return state_->done;
    }

    // The call's value, or its exception rethrown. Only after done().
    T get() const {
        std::lock_guard lock(state_->mutex);
        if (state_->error) std::rethrow_exception(state_->error);
        return *state_->value;
    }

private:
    struct State {
        std::mutex mutex;
        std::condition_variable cv;
        bool done = false;
        std::optional<T> value;
        std::exception_ptr error;
    };
    std::shared_ptr<State> state_;
};

} // namespace radial::conformance
