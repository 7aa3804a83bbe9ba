// radial/host/runtime_client.hpp — the host side of the C ABI in C++: negotiate a descriptor,
// create an instance, and call the runner seam with C++ values.
//
// Header-only and free of any loader: radiald and the conformance harness both load the library
// themselves (Boost.DLL, dlopen) and hand the descriptor here, so both exercise one code path.
// Every callback handed to the plugin is noexcept and catches internally, so no host exception
// ever unwinds through plugin frames.
#pragma once

#include <radial/runtime_plugin.h>

#include <algorithm>
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
#include <radial/host/run_call.hpp>
#include <radial/host/runtime_answers.hpp>
#include <radial/host/runtime_descriptor.hpp>
#include <radial/names.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace radial::host {

// A live plugin instance. Keeps the library it came from alive through `keep_alive` (any owner
// object, e.g. the Boost.DLL shared_library). Move-only; destroying it calls the plugin's destroy.
// Thread-safety: the seam calls (preflight … kill) may be made from several threads at once, as
// the ABI allows; construction and destruction may not overlap any call.
//
class SessionClient; // radial/host/session_client.hpp

// Deadlines: after set_call_deadline(d), every call but create and run (and a session's exec,
// which the turn's own timeout bounds) is made on a thread of its own and waited for at most `d`:
// the extensions' calls too (get_extension, session create, destroy and snapshot calls; a
// template load gets `d` beyond its own budget, a snapshot `d` + 15 min). A call that does not
// return in time throws RuntimeError with RADIAL_E_TIMEOUT naming the plugin and the call; the
// instance is then stuck until every such call has returned: meanwhile every later call throws at
// once, and destroy is never called (the ABI forbids it while a call is in flight; the plugin's
// memory is left to the process's exit). The last late return is logged (warn) and the plugin is
// called again. A destroy that does not return in time is reported through the log function at
// error level and abandoned.
class RuntimeClient {
public:
    // Creates an instance. Throws RuntimeError with the plugin's status and message when create
    // fails (a config error names its key). `plugin_path` and `host_version` are passed to the
    // plugin for its diagnostics.
    static RuntimeClient create(std::shared_ptr<const void> keep_alive,
                                const radial_runtime_descriptor* descriptor,
                                const ConfigSection& config, std::string plugin_path,
                                std::string host_version, LogFn log) {
        RuntimeClient c;
        c.state_ = std::make_shared<State>();
        c.state_->keep_alive = std::move(keep_alive);
        c.state_->d = descriptor;
        c.state_->info = read_descriptor_info(*descriptor);
        c.state_->plugin_path = std::move(plugin_path);
        c.state_->host_version = std::move(host_version);
        c.state_->log = std::move(log);
        auto& h = c.state_->host;
        h.struct_size = sizeof(radial_host);
        h.abi_major = RADIAL_RT_ABI_MAJOR;
        h.abi_minor = RADIAL_RT_ABI_MINOR;
        h.ctx = c.state_.get();
        h.host_version = to_c(c.state_->host_version);
        h.plugin_path = to_c(c.state_->plugin_path);
        h.log = &State::log_thunk;

        const CConfig cc(config); // borrows from `config`
        detail::ErrorCollector err;
        auto sink = err.sink();
        radial_runtime* rt = nullptr;
        std::int32_t status = descriptor->create(&c.state_->host, cc.get(), &rt, sink);
        if (status != RADIAL_OK || rt == nullptr) {
            if (status == RADIAL_OK) status = RADIAL_E_INTERNAL;
            err.raise(status, "create");
        }
        c.state_->rt = rt;
        return c;
    }

    RuntimeClient(RuntimeClient&&) noexcept = default;
    RuntimeClient& operator=(RuntimeClient&& o) noexcept {
        if (this != &o) {
            close();
            state_ = std::move(o.state_);
        }
        return *this;
    }
    ~RuntimeClient() { close(); }

    const DescriptorInfo& info() const noexcept { return state_->info; }
    const std::string& plugin_path() const noexcept { return state_->plugin_path; }

    // The longest every call but create and run may take; zero (the default) waits forever. Set
    // it before calls are made from other threads.
    void set_call_deadline(std::chrono::milliseconds deadline) noexcept {
        state_->deadline = deadline;
    }

    // Told how long each call took, for a host's metrics: `call` is the seam function's name
    // ("preflight", "capabilities", "describe_spec", "run", "list_by_label", "tcp_route",
    // "inspect", "kill", "get_extension" and the extensions': "box root_ids", "session create",
    // "session destroy", "resolve_image", "session changes", "session snapshot", "remove
    // snapshot", "template load"), `elapsed` the wall time until it returned or threw, `ok`
    // false when it threw (a deadline's timeout too). Called on the calling thread after each
    // call, from several threads at once: it must be thread-safe and quick; what it throws is
    // dropped. Set it, like the deadline, before calls are made from other threads.
    using CallObserver =
        std::function<void(std::string_view call, std::chrono::nanoseconds elapsed, bool ok)>;
    void set_call_observer(CallObserver observer) { state_->observer = std::move(observer); }

    // Probes the engine. Throws RuntimeError (usually RADIAL_E_UNAVAILABLE) with the plugin's
    // message.
    void preflight() const {
        if (!has_preflight()) return;
        bounded("preflight", [](State& st) {
            detail::ErrorCollector err;
            auto sink = err.sink();
            std::int32_t status = st.d->preflight(st.rt, sink);
            if (status != RADIAL_OK) err.raise(status, "preflight");
        });
    }

    // The capability ids the instance reports (RADIAL_CAP_*), asked once and kept (they follow
    // from the instance's config); none when the plugin has no `capabilities`. Throws
    // RuntimeError (and asks again next time).
    std::vector<std::string> capabilities() const {
        if (!has_capabilities()) return {};
        std::lock_guard lock(state_->answers_mutex);
        if (!state_->capabilities)
            state_->capabilities = bounded("capabilities", [](State& st) {
                detail::ErrorCollector err;
                detail::NameCollector names;
                auto esink = err.sink();
                auto nsink = names.sink();
                std::int32_t status = st.d->capabilities(st.rt, nsink, esink);
                if (status != RADIAL_OK) err.raise(status, "capabilities");
                names.check("capabilities");
                return std::move(names.names);
            });
        return *state_->capabilities;
    }

    // True when capabilities() contains `id` exactly. Throws RuntimeError.
    bool has_capability(std::string_view id) const {
        for (const auto& c : capabilities())
            if (c == id) return true;
        return false;
    }

    // One disposition per field `spec` carries. A carried field the plugin did not report is
    // returned as REFUSED ("no disposition reported"), the ABI's fail-safe rule, and so is one it
    // reported more than once with different dispositions; a plugin without
    // describe_spec is taken to honour label, image, argv and onOutput and to refuse the rest.
    // The answer for a spec asked about before (the last few) is the kept one: a plugin's
    // dispositions follow from the spec and its config, and one turn asks about its spec more
    // than once (startup, the turn, the run).
    std::vector<Disposition> describe(const ContainerSpec& spec) const {
        {
            std::lock_guard lock(state_->answers_mutex);
            for (const auto& [asked, answer] : state_->described)
                if (asked == spec) return answer;
        }
        std::vector<Disposition> reported;
        if (has_describe_spec()) {
            reported = bounded("describe_spec", [spec](State& st) {
                CSpec c(spec);
                detail::ErrorCollector err;
                detail::DispositionCollector disps;
                auto esink = err.sink();
                auto dsink = disps.sink();
                std::int32_t status = st.d->describe_spec(st.rt, c.get(), dsink, esink);
                if (status != RADIAL_OK) err.raise(status, "describe_spec");
                disps.check("describe_spec");
                return std::move(disps.reported);
            });
        } else {
            for (auto f : carried_fields(spec))
                reported.push_back(detail::seam_field(f)
                                       ? Disposition{f, RADIAL_DISP_HONOURED, {}}
                                       : Disposition{f, RADIAL_DISP_REFUSED,
                                                     "the plugin has no describe_spec, so it "
                                                     "cannot say it honours this field"});
        }
        std::vector<Disposition> out = detail::dispositions_of(spec, reported);
        std::lock_guard lock(state_->answers_mutex);
        if (state_->described.size() >= 4) state_->described.erase(state_->described.begin());
        state_->described.emplace_back(spec, out);
        return out;
    }

    // Runs the box to its end. Throws RuntimeError when the runtime failed (could not start,
    // refused a field, engine gone); returns how the workload ended otherwise. `on_late_output`
    // is told of each output call the plugin makes after run returned, which is dropped
    // (radial/host/run_call.hpp); it must own what it uses.
    RunOutcome run(const ContainerSpec& spec, const OutputFn& on_output,
                   std::function<void()> on_late_output = {}) const {
        refuse_unclaimed(spec, "run");
        Timed timed(*state_, "run");
        RunOutcome out = RunCall::run_here("run", spec, on_output, run_invoke(), teller_of(state_),
                                           std::move(on_late_output));
        timed.ok = true;
        return out;
    }

    // The same run on a thread of its own, which the caller can stop waiting for
    // (radial/host/run_call.hpp): the call keeps the instance until the plugin returns. Throws
    // RuntimeError as run() before the plugin is called; std::system_error without a thread.
    std::shared_ptr<RunCall> start_run(ContainerSpec spec, OutputFn on_output) const {
        refuse_unclaimed(spec, "run");
        return RunCall::start("run", std::move(spec), std::move(on_output), run_invoke(),
                              teller_of(state_), observer_of(state_, "run"));
    }

    // Labels of every box whose label starts with exactly `prefix` (reconciliation). Throws
    // RuntimeError when the engine cannot be asked.
    std::vector<std::string> list_by_label(std::string_view prefix) const {
        return bounded("list_by_label", [p = std::string(prefix)](State& st) {
            detail::ErrorCollector err;
            detail::NameCollector names;
            auto esink = err.sink();
            auto nsink = names.sink();
            std::int32_t status = st.d->list_by_label(st.rt, to_c(p), nsink, esink);
            if (status != RADIAL_OK) err.raise(status, "list_by_label");
            names.check("list_by_label");
            return std::move(names.names);
        });
    }

    // Whether a box labelled exactly `label` is listed. list_by_label matches a prefix, so the
    // listing of "radial-turn-i-job1" also holds a live "radial-turn-i-job10": an empty listing is
    // no answer to "is this box gone". Throws as list_by_label.
    bool lists_box(std::string_view label) const {
        const auto labels = list_by_label(label);
        return std::find(labels.begin(), labels.end(), label) != labels.end();
    }

    // The plugin's tcp route; an empty field means it reported none (the host's default applies).
    using TcpRoute = radial::TcpRoute;
    TcpRoute tcp_route() const {
        if (!(RADIAL_HAS_FIELD(state_->d, radial_runtime_descriptor, tcp_route) &&
              state_->d->tcp_route != nullptr))
            return {};
        return bounded("tcp_route", [](State& st) {
            detail::ErrorCollector err;
            detail::NameCollector bind, box;
            auto esink = err.sink();
            auto bsink = bind.sink();
            auto xsink = box.sink();
            std::int32_t status = st.d->tcp_route(st.rt, bsink, xsink, esink);
            if (status != RADIAL_OK) err.raise(status, "tcp_route");
            bind.check("tcp_route");
            box.check("tcp_route");
            return TcpRoute{bind.names.empty() ? std::string() : bind.names.front(),
                            box.names.empty() ? std::string() : box.names.front()};
        });
    }

    // What became of the box labelled exactly `label`, read-only (reconciliation, docs/design.md
    // §8.4). Under the call deadline like the other calls. Returns supported = false when the
    // plugin cannot tell; throws RuntimeError for any other failure (the engine cannot be asked).
    BoxState inspect(std::string_view label) const {
        if (!has_inspect()) return {};
        return bounded("inspect", [l = std::string(label)](State& st) {
            detail::ErrorCollector err;
            auto esink = err.sink();
            radial_box_state c{};
            c.struct_size = sizeof(c);
            std::int32_t status = st.d->inspect(st.rt, to_c(l), &c, esink);
            if (status == RADIAL_E_UNSUPPORTED) return BoxState{};
            if (status != RADIAL_OK) err.raise(status, "inspect");
            BoxState b;
            b.supported = true;
            b.state = c.state <= RADIAL_BOX_ENDED ? c.state : std::uint32_t{RADIAL_BOX_UNKNOWN};
            if (b.state == RADIAL_BOX_ENDED) {
                b.flags =
                    c.flags & (RADIAL_RUN_EXITED | RADIAL_RUN_SIGNALED | RADIAL_RUN_OOM_KILLED);
                b.exit_code = c.exit_code;
                b.term_signal = c.term_signal;
            }
            return b;
        });
    }

    // True when the plugin has an `inspect` entry (it may still answer RADIAL_E_UNSUPPORTED).
    bool has_inspect() const noexcept {
        return RADIAL_HAS_FIELD(state_->d, radial_runtime_descriptor, inspect) &&
               state_->d->inspect != nullptr;
    }

    // Removes the box with that label and makes a run of it return promptly; an unknown label is
    // fine. May be called from any thread, also while run() blocks. Throws RuntimeError.
    void kill(std::string_view label) const {
        bounded("kill", [l = std::string(label)](State& st) {
            detail::ErrorCollector err;
            auto esink = err.sink();
            std::int32_t status = st.d->kill(st.rt, to_c(l), esink);
            if (status != RADIAL_OK) err.raise(status, "kill");
        });
    }

private:
    struct State {
        std::shared_ptr<const void> keep_alive;
        const radial_runtime_descriptor* d = nullptr;
        radial_runtime* rt = nullptr;
        DescriptorInfo info;
        std::string plugin_path;
        std::string host_version;
        LogFn log;
        radial_host host{};
        std::chrono::milliseconds deadline{0};
        CallObserver observer;                   // set_call_observer; empty: none
        std::atomic<const char*> stuck{nullptr}; // the call that did not return in time
        // Runs and session execs in the plugin now, a call given up on among them (RunCall):
        // close() does not destroy the instance under one; its thread holds the state, and the
        // last owner destroys it once the plugin returned.
        std::atomic<int> runs_out{0};
        // Calls abandoned past their deadline that have not returned yet; guarded by
        // stuck_mutex, which also orders the changes of `stuck`.
        std::mutex stuck_mutex;
        int abandoned = 0;
        void abandon(const char* call) {
            std::lock_guard lock(stuck_mutex);
            ++abandoned;
            const char* expected = nullptr;
            stuck.compare_exchange_strong(expected, call);
        }
        // An abandoned call returned: with none still out, the plugin is called again. True then.
        bool returned_late() {
            std::lock_guard lock(stuck_mutex);
            if (--abandoned > 0) return false;
            stuck.store(nullptr);
            return true;
        }
        // Answers kept (capabilities(), describe()); guarded by answers_mutex.
        std::mutex answers_mutex;
        std::optional<std::vector<std::string>> capabilities;
        std::vector<std::pair<ContainerSpec, std::vector<Disposition>>> described;
        void destroy_now() noexcept {
            if (rt != nullptr && stuck.load() == nullptr) d->destroy(rt);
            rt = nullptr;
        }
        ~State() { destroy_now(); }
        static void log_thunk(void* ctx, std::uint32_t level, radial_str message) noexcept {
            try {
                auto* self = static_cast<State*>(ctx);
                if (!self->log) return;
                if (message.size <= kMaxPluginText)
                    self->log(level, to_view(message));
                else
                    self->log(level, plugin_text(to_view(message)));
            } catch (...) {
            }
        }
    };

    // Optional functions: present only when the descriptor is long enough and the pointer is set.
    bool has_preflight() const noexcept {
        return RADIAL_HAS_FIELD(state_->d, radial_runtime_descriptor, preflight) &&
               state_->d->preflight != nullptr;
    }
    bool has_capabilities() const noexcept {
        return RADIAL_HAS_FIELD(state_->d, radial_runtime_descriptor, capabilities) &&
               state_->d->capabilities != nullptr;
    }
    bool has_describe_spec() const noexcept {
        return RADIAL_HAS_FIELD(state_->d, radial_runtime_descriptor, describe_spec) &&
               state_->d->describe_spec != nullptr;
    }

    // What a call running on its own thread left behind: shared by the caller and the thread.
    template <class T>
    struct Slot {
        std::mutex mutex;
        std::condition_variable cv;
        bool done = false;
        bool abandoned = false; // the caller gave up waiting
        std::optional<T> value;
        std::exception_ptr error;
    };
    struct Unit {};

    static std::string stuck_message(const State& st, const char* call, const char* stuck) {
        return "runtime plugin '" + st.info.id + "' (" + st.plugin_path + "): " + call +
               " was not called because " + stuck +
               " did not return in time earlier; the plugin is stuck, restart radiald";
    }

    // Tells the observer how long the call it was made for took, when it goes out of scope.
    struct Timed {
        State& st;
        const char* call;
        std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
        bool ok = false; // set once the call returned
        Timed(State& s, const char* c) : st(s), call(c) {}
        Timed(const Timed&) = delete;
        Timed& operator=(const Timed&) = delete;
        ~Timed() {
            if (!st.observer) return;
            try {
                st.observer(call, std::chrono::steady_clock::now() - start, ok);
            } catch (...) {
            }
        }
    };

    // `fn(State&)` under the deadline (see the class comment), timed for the observer. Throws what
    // `fn` threw, or RuntimeError(RADIAL_E_TIMEOUT) naming the plugin and `call`.
    template <class F>
    auto bounded(const char* call, F fn) const -> std::invoke_result_t<F&, State&> {
        return bounded_on(state_, call, state_->deadline, std::move(fn));
    }

    // The same for the extension clients, which share the state: under `deadline` (zero: none).
    template <class F>
    static auto bounded_on(const std::shared_ptr<State>& state, const char* call,
                           std::chrono::milliseconds deadline, F fn)
        -> std::invoke_result_t<F&, State&> {
        Timed timed(*state, call);
        if constexpr (std::is_void_v<std::invoke_result_t<F&, State&>>) {
            bounded_untimed(state, call, deadline, std::move(fn));
            timed.ok = true;
        } else {
            auto value = bounded_untimed(state, call, deadline, std::move(fn));
            timed.ok = true;
            return value;
        }
    }

    template <class F>
    static auto bounded_untimed(const std::shared_ptr<State>& state, const char* call,
                                std::chrono::milliseconds deadline, F fn)
        -> std::invoke_result_t<F&, State&> {
        using R = std::invoke_result_t<F&, State&>;
        if (const char* stuck = state->stuck.load())
            throw RuntimeError(RADIAL_E_TIMEOUT, {}, stuck_message(*state, call, stuck));
        if (deadline.count() <= 0) return fn(*state);
        using T = std::conditional_t<std::is_void_v<R>, Unit, R>;
        auto slot = std::make_shared<Slot<T>>();
        // The thread shares the state: an abandoned call keeps the instance and its library alive.
        std::thread([slot, st = state, call, fn = std::move(fn)]() mutable {
            std::optional<T> value;
            std::exception_ptr error;
            try {
                if constexpr (std::is_void_v<R>) {
                    fn(*st);
                    value.emplace();
                } else {
                    value.emplace(fn(*st));
                }
            } catch (...) {
                error = std::current_exception();
            }
            std::lock_guard lock(slot->mutex);
            slot->value = std::move(value);
            slot->error = error;
            slot->done = true;
            slot->cv.notify_all();
            // Late, but back: the plugin is no longer inside that call, so the ABI lets it be
            // called again (a walk of changes whose handler was let go ends at its next sink
            // call, then returns here).
            if (slot->abandoned && st->returned_late())
                State::log_thunk(st.get(), RADIAL_LOG_WARN,
                                 to_c(std::string(call) +
                                      " returned after its deadline; the plugin is called again"));
        }).detach();
        std::unique_lock lock(slot->mutex);
        if (!slot->cv.wait_for(lock, deadline, [&] { return slot->done; })) {
            slot->abandoned = true;
            state->abandon(call);
            throw RuntimeError(RADIAL_E_TIMEOUT, {},
                               "runtime plugin '" + state->info.id + "' (" + state->plugin_path +
                                   "): " + call + " did not return within " +
                                   deadline_text(deadline) +
                                   "; the plugin or the engine behind it is stuck");
        }
        if (slot->error) std::rethrow_exception(slot->error);
        if constexpr (!std::is_void_v<R>) return std::move(*slot->value);
    }

    static std::string deadline_text(std::chrono::milliseconds d) {
        if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
        return std::to_string(d.count()) + " ms";
    }

    // Destroys the instance (under the deadline when one is set) and lets go of the state.
    void close() noexcept {
        if (!state_) return;
        std::shared_ptr<State> st = std::move(state_);
        if (st->deadline.count() <= 0 || st->stuck.load() != nullptr || st->runs_out.load() > 0)
            return; // ~State destroys, on the thread of whoever lets go of it last
        auto slot = std::make_shared<Slot<Unit>>();
        std::chrono::milliseconds deadline = st->deadline;
        std::string id = st->info.id, path = st->plugin_path;
        LogFn log = st->log;
        try {
            std::thread([slot, st]() mutable {
                st->destroy_now();
                st.reset();
                std::lock_guard lock(slot->mutex);
                slot->done = true;
                slot->cv.notify_all();
            }).detach();
        } catch (...) {
            return; // no thread: ~State destroys on this one
        }
        std::unique_lock lock(slot->mutex);
        if (!slot->cv.wait_for(lock, deadline, [&] { return slot->done; }) && log) {
            try {
                log(RADIAL_LOG_ERROR, "runtime plugin '" + id + "' (" + path +
                                          "): destroy did not return within " +
                                          deadline_text(deadline) + "; abandoned");
            } catch (...) {
            }
        }
    }
    // The plugin's run, counted in runs_out while it is in the plugin; holds the state (the
    // instance, its library) for as long as it may be called.
    RunCall::Invoke run_invoke() const {
        return [st = state_](const radial_spec* spec, const radial_output_sink* out,
                             radial_run_result* result, const radial_error_sink* err) {
            const RunsOut counted(*st);
            return st->d->run(st->rt, spec, out, result, err);
        };
    }
    struct RunsOut {
        State& st;
        explicit RunsOut(State& s) : st(s) { ++st.runs_out; }
        ~RunsOut() { --st.runs_out; }
        RunsOut(const RunsOut&) = delete;
        RunsOut& operator=(const RunsOut&) = delete;
    };
    // A run's lines in the plugin's log, naming it: usable after the client is gone (it does
    // nothing once the state is).
    static RunCall::Tell teller_of(const std::shared_ptr<State>& state) {
        return [w = std::weak_ptr<State>(state)](std::uint32_t level, const std::string& line) {
            if (const auto st = w.lock())
                State::log_thunk(st.get(), level,
                                 to_c("runtime plugin '" + st->info.id + "' (" + st->plugin_path +
                                      "): " + line));
        };
    }
    // The call observer (set_call_observer) for a call on a thread of its own, told by
    // RunCall::wait on the caller's thread.
    static RunCall::Observe observer_of(const std::shared_ptr<State>& state, const char* call) {
        return [st = state, call](std::chrono::nanoseconds elapsed, bool ok) {
            if (st->observer) st->observer(call, elapsed, ok);
        };
    }

    RuntimeClient() = default;
    // Throws RuntimeError(RADIAL_E_REFUSED, "mounts") before the plugin sees a spec whose mount
    // must receive the host's later mounts when the runtime does not report
    // RADIAL_CAP_MOUNT_PROPAGATION: a box that would never see its workspace must not start. (A
    // session's create is checked by the plugin helper, radial/plugin/runtime.hpp.)
    void refuse_unclaimed(const ContainerSpec& spec, const char* call) const {
        for (const auto& m : spec.mounts)
            if (m.receives_host_mounts && !has_capability(RADIAL_CAP_MOUNT_PROPAGATION))
                throw RuntimeError(RADIAL_E_REFUSED, "mounts",
                                   std::string(call) + ": mount '" + m.target +
                                       "' must receive the host's later mounts, which runtime '" +
                                       state_->info.id +
                                       "' does not claim (" RADIAL_CAP_MOUNT_PROPAGATION ")");
    }
    // The plugin's table for extension `id` (radial/<extension>.h), or nullptr when it has none or
    // predates get_extension; for the extension clients below. Under the call deadline: it is the
    // plugin's code like any other call.
    const void* extension_table(const char* id) const {
        if (RADIAL_HAS_FIELD(state_->d, radial_runtime_descriptor, get_extension) &&
            state_->d->get_extension != nullptr)
            return bounded("get_extension", [ext = std::string(id)](State& st) {
                return st.d->get_extension(st.rt, ext.c_str());
            });
        return nullptr;
    }
    std::shared_ptr<State> state_;
    friend class SessionClient;  // the session extension's calls, beside these
    friend class BoxRootClient;  // the box-root extension's call
    friend class TemplateClient; // the template extension's call
};

} // namespace radial::host
