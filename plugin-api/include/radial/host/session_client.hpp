// radial/host/session_client.hpp — the host's side of the session extension ("radial.session/1",
// radial/session.h): a session's box created once, a turn per exec, destroyed at the end.
//
// Thread-safety as the extension's calls say; errors as RuntimeClient's (RuntimeError with the
// plugin's status and message, the key it named). Every call but exec is under the client's call
// deadline (RuntimeClient::set_call_deadline), with its consequences: a call past it throws
// RuntimeError(RADIAL_E_TIMEOUT) and the instance is stuck until it returns. An exec is bounded by
// its turn.
#pragma once

#include <radial/session.h>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <radial/host/runtime_client.hpp>
#include <string>

namespace radial::host {

class SessionClient {
public:
    // The sessions of `client`'s runtime. Throws RuntimeError(RADIAL_E_UNSUPPORTED) naming the
    // runtime and the extension when the runtime does not offer it.
    static SessionClient of(const RuntimeClient& client) {
        const auto& st = client.state_;
        const auto* ext = static_cast<const radial_session_ext*>(
            client.extension_table(RADIAL_SESSION_EXTENSION_ID));
        if (ext == nullptr || !RADIAL_HAS_FIELD(ext, radial_session_ext, destroy) ||
            ext->create == nullptr || ext->exec == nullptr || ext->destroy == nullptr)
            throw RuntimeError(RADIAL_E_UNSUPPORTED, {},
                               "runtime '" + st->info.id + "' (" + st->plugin_path +
                                   ") has no sessions: it does not offer the extension " +
                                   RADIAL_SESSION_EXTENSION_ID +
                                   "; pick a runtime that does (run.containerRuntime), or run "
                                   "one-shot turns");
        return SessionClient(st, ext);
    }

    // Creates and starts the session's box (see radial_session_ext.create).
    void create(const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                std::uint64_t max_lifetime_ms) const {
        bounded("session create",
                [ext = ext_, spec, idle_timeout_ms, max_lifetime_ms](RuntimeClient::State& st) {
                    CSpec c(spec);
                    detail::ErrorCollector err;
                    auto esink = err.sink();
                    std::int32_t status =
                        ext->create(st.rt, c.get(), idle_timeout_ms, max_lifetime_ms, esink);
                    if (status != RADIAL_OK) err.raise(status, "session create");
                });
    }

    // Whether an exec that failed with `code` provably ran nothing in the box: the box was gone
    // before it (RADIAL_E_NOT_FOUND) or the runtime refused to start it (RADIAL_E_REFUSED), as
    // radial_session_ext.exec defines them. Any other failure may have left it running.
    static bool exec_never_ran(std::int32_t code) noexcept {
        return code == RADIAL_E_NOT_FOUND || code == RADIAL_E_REFUSED;
    }

    // Runs one exec in the session `exec.label` to its end (see radial_session_ext.exec);
    // `on_late_output` as RuntimeClient::run's.
    RunOutcome exec(const ContainerSpec& exec, const OutputFn& on_output,
                    std::function<void()> on_late_output = {}) const {
        return RunCall::run_here("session exec", exec, on_output, exec_invoke(),
                                 RuntimeClient::teller_of(state_), std::move(on_late_output));
    }

    // The same exec on a thread of its own, which the caller can stop waiting for
    // (radial/host/run_call.hpp). Throws std::system_error without a thread.
    std::shared_ptr<RunCall> start_exec(ContainerSpec exec, OutputFn on_output) const {
        return RunCall::start("session exec", std::move(exec), std::move(on_output), exec_invoke(),
                              RuntimeClient::teller_of(state_),
                              RuntimeClient::observer_of(state_, "session exec"));
    }

    // No box labelled `label` remains afterwards.
    void destroy(std::string_view label) const {
        bounded("session destroy", [ext = ext_, l = std::string(label)](RuntimeClient::State& st) {
            detail::ErrorCollector err;
            auto esink = err.sink();
            std::int32_t status = ext->destroy(st.rt, to_c(l), esink);
            if (status != RADIAL_OK) err.raise(status, "session destroy");
        });
    }

    // Snapshots (radial_session_ext 1.1): whether the runtime offers the calls at all. The
    // calls below throw RuntimeError(RADIAL_E_UNSUPPORTED) naming the runtime when it does not.
    bool has_snapshots() const noexcept {
        return RADIAL_HAS_FIELD(ext_, radial_session_ext, remove_snapshot) &&
               ext_->resolve_image != nullptr && ext_->changes != nullptr &&
               ext_->snapshot != nullptr && ext_->remove_snapshot != nullptr;
    }

    // The content digest of the local image `image` (see radial_session_ext.resolve_image).
    std::string resolve_image(std::string_view image) const {
        require_snapshots();
        return one_name("resolve_image", [ext = ext_, i = std::string(image)](
                                             radial_runtime* rt, const radial_name_sink* n,
                                             const radial_error_sink* e) {
            return ext->resolve_image(rt, to_c(i), n, e);
        });
    }

    // One changed entry at a time, then its bytes (see radial_change_sink); each returns false to
    // stop the walk. Called on the calling thread or the plugin's, one call at a time.
    struct ChangeHandler {
        std::function<bool(std::string_view path, std::uint32_t kind)> entry;
        std::function<bool(std::string_view bytes)> data;
    };
    // Walks the box's changes since `since_ms` (see radial_session_ext.changes). Throws
    // RuntimeError(RADIAL_E_CANCELLED) when a handler stopped it; a handler's exception stops it
    // and is rethrown here. Past the call deadline `handler` is let go before this throws: the
    // plugin's later calls of the sink stop its walk without reaching it.
    void changes(std::string_view label, std::uint64_t since_ms, ChangeHandler& handler) const {
        require_snapshots();
        auto ctx = std::make_shared<ChangeWalk>();
        ctx->h = &handler;
        try {
            bounded("session changes", [ext = ext_, ctx, l = std::string(label),
                                        since_ms](RuntimeClient::State& st) {
                // Through a gate of its own: a plugin thread still walking after the call
                // returned is dropped (radial/host/sink_gate.hpp).
                SinkGate gate(ctx.get());
                const radial_change_sink* sink = gate.place(radial_change_sink{
                    0, nullptr,
                    [](void* c, radial_str path, std::uint32_t kind) noexcept -> std::int32_t {
                        return ChangeWalk::step_through(
                            c, [&](ChangeHandler& h) { return h.entry(to_view(path), kind); });
                    },
                    [](void* c, const std::uint8_t* data, std::size_t n) noexcept -> std::int32_t {
                        return ChangeWalk::step_through(c, [&](ChangeHandler& h) {
                            return h.data({reinterpret_cast<const char*>(data), n});
                        });
                    }});
                detail::ErrorCollector err;
                auto esink = err.sink();
                const std::int32_t status = ext->changes(st.rt, to_c(l), since_ms, sink, esink);
                gate.close();
                if (status != RADIAL_OK) {
                    std::lock_guard lock(ctx->mutex);
                    if (ctx->failed) return; // rethrown below
                    err.raise(status, "session changes");
                }
            });
        } catch (...) {
            std::lock_guard lock(ctx->mutex);
            ctx->h = nullptr;
            throw;
        }
        std::lock_guard lock(ctx->mutex);
        ctx->h = nullptr;
        if (ctx->failed) std::rethrow_exception(ctx->failed);
    }

    // Commits the session's box to the local image `image`; its digest (see
    // radial_session_ext.snapshot).
    // A commit copies the box's whole file system, so it takes as long as that is large: the
    // call gets kSnapshotGrace beyond the call deadline, as a template load gets its budget. A
    // commit the host stopped waiting for may still end in the engine, leaving an image no record
    // names.
    static constexpr std::chrono::minutes kSnapshotGrace{15};
    std::string snapshot(std::string_view label, std::string_view image) const {
        require_snapshots();
        return one_name(
            "session snapshot", kSnapshotGrace,
            [ext = ext_, l = std::string(label), i = std::string(image)](
                radial_runtime* rt, const radial_name_sink* n, const radial_error_sink* e) {
                return ext->snapshot(rt, to_c(l), to_c(i), n, e);
            });
    }

    // No local image named `image` remains (see radial_session_ext.remove_snapshot).
    void remove_snapshot(std::string_view image) const {
        require_snapshots();
        bounded("remove snapshot", [ext = ext_, i = std::string(image)](RuntimeClient::State& st) {
            detail::ErrorCollector err;
            auto esink = err.sink();
            std::int32_t status = ext->remove_snapshot(st.rt, to_c(i), esink);
            if (status != RADIAL_OK) err.raise(status, "remove snapshot");
        });
    }

    // Since the extension's 1.2: whether the runtime can tell how much a snapshot would write
    // before taking one (see radial_session_ext.check_snapshot_size).
    bool can_check_snapshot_size() const noexcept {
        return has_snapshots() && RADIAL_HAS_FIELD(ext_, radial_session_ext, check_snapshot_size) &&
               ext_->check_snapshot_size != nullptr;
    }

    // Throws RuntimeError(RADIAL_E_REFUSED) naming the biggest files when a snapshot of the
    // session's box would write more than `max_bytes` (0: no bound) or more than the free space
    // it would be written to (see radial_session_ext.check_snapshot_size);
    // RuntimeError(RADIAL_E_UNSUPPORTED) when the runtime cannot tell (can_check_snapshot_size).
    void check_snapshot_size(std::string_view label, std::uint64_t max_bytes) const {
        if (!can_check_snapshot_size())
            throw RuntimeError(RADIAL_E_UNSUPPORTED, {},
                               "runtime '" + state_->info.id + "' (" + state_->plugin_path +
                                   ") cannot tell how much a snapshot would write before taking "
                                   "one: its " RADIAL_SESSION_EXTENSION_ID
                                   " extension has no check_snapshot_size");
        bounded("check snapshot size", [ext = ext_, l = std::string(label),
                                        max_bytes](RuntimeClient::State& st) {
            detail::ErrorCollector err;
            auto esink = err.sink();
            std::int32_t status = ext->check_snapshot_size(st.rt, to_c(l), max_bytes, esink);
            if (status != RADIAL_OK) err.raise(status, "check snapshot size");
        });
    }

private:
    // A walk of changes, shared with the call's thread.
    struct ChangeWalk {
        std::mutex mutex; // held while the handler runs; the handler is null once let go
        ChangeHandler* h = nullptr;
        std::exception_ptr failed;
        // A step through the gate of the walk's sink (ctx): "stop" once it closed.
        template <class Step>
        static std::int32_t step_through(void* ctx, Step&& fn) noexcept {
            std::int32_t rc = 1;
            SinkGate::pass(ctx, [&](void* walk) { rc = static_cast<ChangeWalk*>(walk)->step(fn); });
            return rc;
        }
        template <class Step>
        std::int32_t step(Step&& fn) noexcept {
            std::lock_guard lock(mutex);
            if (h == nullptr) return 1;
            try {
                return fn(*h) ? 0 : 1;
            } catch (...) {
                failed = std::current_exception();
                return 1;
            }
        }
    };
    // The extension's exec, counted as a run (RuntimeClient::RunsOut); holds the state.
    RunCall::Invoke exec_invoke() const {
        return [st = state_, ext = ext_](const radial_spec* spec, const radial_output_sink* out,
                                         radial_run_result* result, const radial_error_sink* err) {
            const RuntimeClient::RunsOut counted(*st);
            return ext->exec(st->rt, spec, out, result, err);
        };
    }
    void require_snapshots() const {
        if (!has_snapshots())
            throw RuntimeError(RADIAL_E_UNSUPPORTED, {},
                               "runtime '" + state_->info.id + "' (" + state_->plugin_path +
                                   ") keeps no snapshots: its " RADIAL_SESSION_EXTENSION_ID
                                   " extension has no snapshot calls; pick a runtime that does "
                                   "(run.containerRuntime)");
    }
    template <class F>
    auto bounded(const char* call, F fn) const -> std::invoke_result_t<F&, RuntimeClient::State&> {
        return RuntimeClient::bounded_on(state_, call, state_->deadline, std::move(fn));
    }
    template <class F>
    std::string one_name(const char* what, F call) const {
        return one_name(what, std::chrono::milliseconds(0), std::move(call));
    }
    // With `grace` beyond the call deadline (when there is one).
    template <class F>
    std::string one_name(const char* what, std::chrono::milliseconds grace, F call) const {
        const auto deadline = state_->deadline;
        return RuntimeClient::bounded_on(
            state_, what, deadline.count() > 0 ? deadline + grace : deadline,
            [what, call = std::move(call)](RuntimeClient::State& st) {
                detail::ErrorCollector err;
                detail::NameCollector names;
                auto esink = err.sink();
                auto nsink = names.sink();
                std::int32_t status = call(st.rt, nsink, esink);
                if (status != RADIAL_OK) err.raise(status, what);
                names.check(what);
                if (names.names.size() != 1)
                    throw RuntimeError(RADIAL_E_INTERNAL, {},
                                       std::string(what) + ": runtime '" + st.info.id + "' gave " +
                                           std::to_string(names.names.size()) +
                                           " digests where one was due");
                return std::move(names.names.front());
            });
    }

    SessionClient(std::shared_ptr<RuntimeClient::State> state, const radial_session_ext* ext)
        : state_(std::move(state)), ext_(ext) {}
    std::shared_ptr<RuntimeClient::State> state_;
    const radial_session_ext* ext_;
};

} // namespace radial::host
