// tests/plugin-api/sink_gate_test.cpp — closing a call's sinks (radial/host/sink_gate.hpp,
// docs/design.md §5.3): every closer returns only once no sink call is in flight, a second one
// racing the first (a give-up beside the call's own return) too, and calls after it are dropped.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <radial/host/sink_gate.hpp>
#include <thread>

namespace radial::host {
namespace {

// Two closers race while a plugin thread is inside a sink: neither may return before that call
// has. The window in which a wrong closer would return early is looked at for 200 ms before the
// call is let go; on a machine too loaded to start both closers by then the test passes without
// having raced (it cannot fail falsely).
TEST(SinkGate, EveryCloserWaitsForTheSinkCallInFlight) {
    int target = 0;
    SinkGate gate(&target);
    const auto* sink = gate.place(radial_name_sink{0, nullptr, nullptr});
    std::promise<void> entered, release;
    std::shared_future<void> go = release.get_future().share();
    std::atomic<bool> call_done{false};
    std::thread plugin([&] {
        SinkGate::pass(sink->ctx, [&](void*) {
            entered.set_value();
            go.wait();
            call_done = true;
        });
    });
    entered.get_future().wait();
    std::atomic<int> returned_early{0};
    auto closer = [&] {
        gate.close();
        if (!call_done) ++returned_early;
    };
    auto first = std::async(std::launch::async, closer);
    auto second = std::async(std::launch::async, closer);
    EXPECT_EQ(second.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
        << "a second close() returned while a sink call was in flight";
    release.set_value();
    plugin.join();
    first.get();
    second.get();
    EXPECT_EQ(returned_early.load(), 0) << "a closer returned before the sink call did";
    // Dropped after: the target is not reached.
    bool reached = false;
    EXPECT_FALSE(SinkGate::pass(sink->ctx, [&](void*) { reached = true; }));
    EXPECT_FALSE(reached);
}

} // namespace
} // namespace radial::host
