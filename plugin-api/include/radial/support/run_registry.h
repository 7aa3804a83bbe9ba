// radial/support/run_registry.h — the runs in flight, by label, so that kill(label) reaches a run
// blocked in another thread (docs/design.md §5.1: run / listByLabel / kill; runtime_plugin.h
// `kill`).
#pragma once

#include <radial/support/wake_event.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace radial::plugin_support {

// One run in flight. Shared between the run's thread and any thread calling kill. [thread-safe]
class ActiveRun {
public:
    ActiveRun();

    // Asks the run to end as killed and wakes its poll loop. Idempotent; never blocks.
    void request_kill() noexcept;
    bool kill_requested() const noexcept { return kill_requested_.load(); }
    // Readable after request_kill; the run's loop polls it.
    WakeEvent& wake() noexcept { return wake_; }

    // True on the thread executing the run (e.g. kill called from inside the output callback).
    bool on_run_thread() const noexcept { return std::this_thread::get_id() == owner_; }
    // Waits until the run has finished tearing its box down, at most `budget`. False on timeout.
    bool wait_finished(std::chrono::milliseconds budget) const;

private:
    friend class RunRegistry;
    void mark_finished();

    std::atomic<bool> kill_requested_{false};
    WakeEvent wake_;
    std::thread::id owner_;
    mutable std::mutex mutex_;
    mutable std::condition_variable finished_cv_;
    bool finished_ = false;
};

// The runs in flight of one runtime instance, by label. [thread-safe]
class RunRegistry {
public:
    // Holds a run's place in the registry; leaving scope marks the run finished (waking waiting
    // killers) and removes it. Move-only.
    class Registration {
    public:
        Registration(RunRegistry& registry, std::string label, std::shared_ptr<ActiveRun> run)
            : registry_(&registry), label_(std::move(label)), run_(std::move(run)) {}
        Registration(Registration&& other) noexcept = default;
        Registration& operator=(Registration&&) = delete;
        Registration(const Registration&) = delete;
        Registration& operator=(const Registration&) = delete;
        ~Registration();
        ActiveRun& run() const noexcept { return *run_; }

    private:
        RunRegistry* registry_;
        std::string label_;
        std::shared_ptr<ActiveRun> run_;
    };

    // Registers a run of `label` on the calling thread. Throws
    // radial::plugin::Error(RADIAL_E_INVALID, "label") when a run of that label is already in
    // flight (the ABI requires concurrent runs to carry distinct labels).
    Registration enter(const std::string& label);

    // Asks the run of `label` in flight, if any, to end as killed; returns it (to wait on), or
    // nullptr when no run of that label is in flight.
    std::shared_ptr<ActiveRun> request_kill(std::string_view label);

    // The run of `label` in flight, or nullptr; asks nothing of it (whether a kill was asked
    // already: ActiveRun::kill_requested).
    std::shared_ptr<ActiveRun> find(std::string_view label);

private:
    std::mutex mutex_;
    std::map<std::string, std::shared_ptr<ActiveRun>, std::less<>> runs_;
};

} // namespace radial::plugin_support
