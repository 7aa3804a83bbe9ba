// radial/host/session_client.hpp — the host's side of the session extension ("radial.session/1",
// radial/session.h): a session's box created once, a turn per exec, destroyed at the end.
//
// Thread-safety as the extension's calls say; errors as RuntimeClient's (RuntimeError with the
// plugin's status and message, the key it named).
#pragma once

#include <radial/session.h>

#include <exception>
#include <functional>
#include <radial/host/runtime_client.hpp>

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
        CSpec c(spec);
        detail::ErrorCollector err;
        auto esink = err.sink();
        std::int32_t status =
            ext_->create(state_->rt, c.get(), idle_timeout_ms, max_lifetime_ms, &esink);
        if (status != RADIAL_OK) err.raise(status, "session create");
    }

    // Runs one exec in the session `exec.label` to its end (see radial_session_ext.exec).
    RunOutcome exec(const ContainerSpec& exec, const OutputFn& on_output) const {
        CSpec c(exec);
        detail::ErrorCollector err;
        auto esink = err.sink();
        radial_output_sink osink{sizeof(radial_output_sink), const_cast<OutputFn*>(&on_output),
                                 &RuntimeClient::output_thunk};
        radial_run_result result{};
        result.struct_size = sizeof(result);
        std::int32_t status = ext_->exec(state_->rt, c.get(), &osink, &result, &esink);
        if (status != RADIAL_OK) err.raise(status, "session exec");
        return RunOutcome{result.flags,       result.exit_code, result.term_signal,
                          result.duration_ms, result.create_ms, result.remove_ms};
    }

    // No box labelled `label` remains afterwards.
    void destroy(std::string_view label) const {
        detail::ErrorCollector err;
        auto esink = err.sink();
        std::int32_t status = ext_->destroy(state_->rt, to_c(label), &esink);
        if (status != RADIAL_OK) err.raise(status, "session destroy");
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
        return one_name("resolve_image",
                        [&](const radial_name_sink* n, const radial_error_sink* e) {
                            return ext_->resolve_image(state_->rt, to_c(image), n, e);
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
    // and is rethrown here.
    void changes(std::string_view label, std::uint64_t since_ms, ChangeHandler& handler) const {
        require_snapshots();
        struct Ctx {
            ChangeHandler& h;
            std::exception_ptr failed;
        } ctx{handler, nullptr};
        radial_change_sink sink{
            sizeof(radial_change_sink), &ctx,
            [](void* c, radial_str path, std::uint32_t kind) noexcept -> std::int32_t {
                auto* x = static_cast<Ctx*>(c);
                try {
                    return x->h.entry(to_view(path), kind) ? 0 : 1;
                } catch (...) {
                    x->failed = std::current_exception();
                    return 1;
                }
            },
            [](void* c, const std::uint8_t* data, std::size_t n) noexcept -> std::int32_t {
                auto* x = static_cast<Ctx*>(c);
                try {
                    return x->h.data({reinterpret_cast<const char*>(data), n}) ? 0 : 1;
                } catch (...) {
                    x->failed = std::current_exception();
                    return 1;
                }
            }};
        detail::ErrorCollector err;
        auto esink = err.sink();
        const std::int32_t status = ext_->changes(state_->rt, to_c(label), since_ms, &sink, &esink);
        if (ctx.failed) std::rethrow_exception(ctx.failed);
        if (status != RADIAL_OK) err.raise(status, "session changes");
    }

    // Commits the session's box to the local image `image`; its digest (see
    // radial_session_ext.snapshot).
    std::string snapshot(std::string_view label, std::string_view image) const {
        require_snapshots();
        return one_name("session snapshot",
                        [&](const radial_name_sink* n, const radial_error_sink* e) {
                            return ext_->snapshot(state_->rt, to_c(label), to_c(image), n, e);
                        });
    }

    // No local image named `image` remains (see radial_session_ext.remove_snapshot).
    void remove_snapshot(std::string_view image) const {
        require_snapshots();
        detail::ErrorCollector err;
        auto esink = err.sink();
        std::int32_t status = ext_->remove_snapshot(state_->rt, to_c(image), &esink);
        if (status != RADIAL_OK) err.raise(status, "remove snapshot");
    }

private:
    void require_snapshots() const {
        if (!has_snapshots())
            throw RuntimeError(RADIAL_E_UNSUPPORTED, {},
                               "runtime '" + state_->info.id + "' (" + state_->plugin_path +
                                   ") keeps no snapshots: its " RADIAL_SESSION_EXTENSION_ID
                                   " extension has no snapshot calls; pick a runtime that does "
                                   "(run.containerRuntime)");
    }
    template <class F>
    std::string one_name(const char* what, F&& call) const {
        detail::ErrorCollector err;
        detail::NameCollector names;
        auto esink = err.sink();
        auto nsink = names.sink();
        std::int32_t status = call(&nsink, &esink);
        if (status != RADIAL_OK) err.raise(status, what);
        names.check(what);
        if (names.names.size() != 1)
            throw RuntimeError(RADIAL_E_INTERNAL, {},
                               std::string(what) + ": runtime '" + state_->info.id + "' gave " +
                                   std::to_string(names.names.size()) +
                                   " digests where one was due");
        return names.names.front();
    }

    SessionClient(std::shared_ptr<RuntimeClient::State> state, const radial_session_ext* ext)
        : state_(std::move(state)), ext_(ext) {}
    std::shared_ptr<RuntimeClient::State> state_;
    const radial_session_ext* ext_;
};

} // namespace radial::host
