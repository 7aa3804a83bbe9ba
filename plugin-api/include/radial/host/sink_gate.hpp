// radial/host/sink_gate.hpp — the sinks a host hands a plugin, made safe against a plugin that
// calls one after the call that received it returned.
//
// The ABI forbids such a call (radial/runtime_plugin.h), but a plugin that breaks the rule — a
// thread of its own still pumping a box's output after `run` returned, or after the host gave up
// on a `run` that never returned (docs/design.md §3.7) — must not make the host touch freed
// memory. So nothing a plugin holds is an address of what the call reached:
//   - the sink's struct lives in a slot of a process-wide pool that is never freed, and a slot is
//     handed out again only after kQuarantine later sinks (a plugin that keeps the struct's
//     address, not a copy, and calls it that much later may reach a later call's sink of the same
//     process: memory-safe, but no longer dropped);
//   - its ctx is a number, never an address: a sink call looks it up among the open gates and
//     reaches its target only while the gate is open. A call through a closed gate is dropped and
//     counted (late_sink_calls()), and the gate's owner may be told of each one.
// Closing a gate waits for a call of it in flight to return, so what a sink reaches is never
// destroyed under it; a sink must therefore not close its own gate.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <radial/runtime_plugin.h>
#include <radial/session.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace radial::host {

namespace detail {

// One sink's struct, whichever kind, as the plugin is handed it.
union SinkSlot {
    radial_error_sink error;
    radial_name_sink name;
    radial_disposition_sink disposition;
    radial_output_sink output;
    radial_change_sink change;
};

// The open gates and the slots of their sinks: one per process, never destroyed, since a plugin
// thread may call a sink while the process exits.
class SinkGates {
public:
    // How many freed slots wait before one is handed out again.
    static constexpr std::size_t kQuarantine = 4096;
    // How many closed gates are remembered, to tell their owners of late calls.
    static constexpr std::size_t kRemembered = 4096;

    static SinkGates& get() {
        static SinkGates* gates = new SinkGates; // never deleted: see above
        return *gates;
    }

    std::uint64_t open(void* target) {
        std::lock_guard lock(mutex_);
        const std::uint64_t id = next_id_++;
        live_.emplace(id, Entry{target});
        return id;
    }

    // A slot holding `sink` for gate `id` until release_slots.
    template <class Sink>
    const Sink* place(const Sink& sink) {
        std::lock_guard lock(mutex_);
        SinkSlot* slot = nullptr;
        if (free_.size() > kQuarantine) {
            slot = free_.front();
            free_.pop_front();
        } else {
            if (chunks_.empty() || used_in_chunk_ == kChunk) {
                chunks_.push_back(std::make_unique<SinkSlot[]>(kChunk));
                used_in_chunk_ = 0;
            }
            slot = &chunks_.back()[used_in_chunk_++];
        }
        Sink* placed = reinterpret_cast<Sink*>(slot);
        *placed = sink;
        return placed;
    }

    // Waits for a call of gate `id` in flight, then closes it: later calls are dropped, and each
    // runs `tell` (if any). `slots` go back to the pool, keeping what they hold.
    void close(std::uint64_t id, std::function<void()> tell, const std::vector<SinkSlot*>& slots) {
        std::unique_lock lock(mutex_);
        const auto it = live_.find(id);
        if (it != live_.end()) {
            Entry& e = it->second; // a reference stays valid across a rehash
            e.closing = true;
            idle_.wait(lock, [&] { return e.in_flight == 0; });
            live_.erase(id);
        }
        for (SinkSlot* s : slots) free_.push_back(s);
        if (!tell) return;
        closed_.emplace(id, std::move(tell));
        closed_order_.push_back(id);
        if (closed_order_.size() > kRemembered) {
            closed_.erase(closed_order_.front());
            closed_order_.pop_front();
        }
    }

    // Calls fn(target) when gate `ctx` is open; false when the call was dropped.
    template <class F>
    bool pass(void* ctx, F&& fn) {
        const auto id = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(ctx));
        Entry* e = nullptr;
        {
            std::unique_lock lock(mutex_);
            const auto it = live_.find(id);
            if (it == live_.end() || it->second.closing) {
                late_.fetch_add(1, std::memory_order_relaxed);
                std::function<void()> tell;
                if (const auto c = closed_.find(id); c != closed_.end()) tell = c->second;
                lock.unlock();
                if (tell) try {
                        tell();
                    } catch (...) {
                    }
                return false;
            }
            e = &it->second;
            ++e->in_flight;
        }
        // Left however fn leaves, so that a closer waiting for it is not held for ever.
        struct Leave {
            SinkGates& gates;
            Entry* e;
            ~Leave() {
                std::lock_guard lock(gates.mutex_);
                if (--e->in_flight == 0 && e->closing) gates.idle_.notify_all();
            }
        } leave{*this, e};
        fn(e->target);
        return true;
    }

    std::uint64_t late_calls() const noexcept { return late_.load(std::memory_order_relaxed); }

private:
    static constexpr std::size_t kChunk = 256;
    struct Entry {
        void* target;
        unsigned in_flight = 0;
        bool closing = false;
    };
    SinkGates() = default;
    std::mutex mutex_;
    std::condition_variable idle_;
    std::uint64_t next_id_ = 1;
    std::unordered_map<std::uint64_t, Entry> live_;
    std::vector<std::unique_ptr<SinkSlot[]>> chunks_;
    std::size_t used_in_chunk_ = 0;
    std::deque<SinkSlot*> free_;
    std::unordered_map<std::uint64_t, std::function<void()>> closed_;
    std::deque<std::uint64_t> closed_order_;
    std::atomic<std::uint64_t> late_{0};
};

} // namespace detail

// How many sink calls plugins made in this process through a sink whose call had returned (or
// whose gate its owner closed): each was dropped.
inline std::uint64_t late_sink_calls() noexcept { return detail::SinkGates::get().late_calls(); }

// The gate of one call's sinks, reaching `target` while open. Not movable; closed at the latest
// when destroyed, so declare it after what its sinks reach (it is destroyed first).
class SinkGate {
public:
    explicit SinkGate(void* target) : id_(detail::SinkGates::get().open(target)) {}
    ~SinkGate() { close(); }
    SinkGate(const SinkGate&) = delete;
    SinkGate& operator=(const SinkGate&) = delete;

    // The sink to hand the plugin: `sink` with this gate's ctx, in a slot that stays readable after
    // the gate closes (its calls are then dropped). May throw bad_alloc.
    template <class Sink>
    const Sink* place(Sink sink) {
        sink.struct_size = sizeof(Sink);
        sink.ctx = reinterpret_cast<void*>(static_cast<std::uintptr_t>(id_));
        const Sink* placed = detail::SinkGates::get().place(sink);
        std::lock_guard lock(mutex_);
        slots_.push_back(reinterpret_cast<detail::SinkSlot*>(const_cast<Sink*>(placed)));
        return placed;
    }

    // Told of each call through this gate after it closed (set before close()). It runs on the
    // plugin's thread, possibly long after the gate's owner is gone: it must own what it uses.
    void on_late(std::function<void()> tell) {
        std::lock_guard lock(mutex_);
        tell_ = std::move(tell);
    }

    // Waits for a sink call in flight, then drops every later one. Idempotent, and every caller
    // returns only once the gate is closed: a second close() racing the first (a give-up beside
    // the call's own return) waits for it, so what the sinks reach is never destroyed under a
    // call still in flight. Not from inside one of this gate's own sinks.
    void close() noexcept {
        std::function<void()> tell;
        std::vector<detail::SinkSlot*> slots;
        {
            std::unique_lock lock(mutex_);
            if (state_ != State::open) {
                closed_cv_.wait(lock, [this] { return state_ == State::closed; });
                return;
            }
            state_ = State::closing;
            tell = std::move(tell_);
            slots.swap(slots_);
        }
        try {
            detail::SinkGates::get().close(id_, std::move(tell), slots);
        } catch (...) {
            // Out of memory remembering the gate: it is closed all the same, its slots kept.
        }
        {
            std::lock_guard lock(mutex_);
            state_ = State::closed;
        }
        closed_cv_.notify_all();
    }

    // In a sink's C callback: calls fn(target) while the gate of `ctx` is open and returns true;
    // false when the call was dropped. `fn` must not throw.
    template <class F>
    static bool pass(void* ctx, F&& fn) noexcept {
        try {
            return detail::SinkGates::get().pass(ctx, std::forward<F>(fn));
        } catch (...) {
            return false; // a mutex that could not be locked: the call goes nowhere
        }
    }

private:
    const std::uint64_t id_;
    std::mutex mutex_;
    std::condition_variable closed_cv_;
    enum class State { open, closing, closed } state_ = State::open;
    std::vector<detail::SinkSlot*> slots_;
    std::function<void()> tell_;
};

} // namespace radial::host
