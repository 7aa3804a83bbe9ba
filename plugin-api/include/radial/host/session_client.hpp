// radial/host/session_client.hpp — the host's side of the session extension ("radial.session/1",
// radial/session.h): a session's box created once, a turn per exec, destroyed at the end.
//
// Thread-safety as the extension's calls say; errors as RuntimeClient's (RuntimeError with the
// plugin's status and message, the key it named).
#pragma once

#include <radial/session.h>

#include <radial/host/runtime_client.hpp>

namespace radial::host {

class SessionClient {
public:
    // The sessions of `client`'s runtime. Throws RuntimeError(RADIAL_E_UNSUPPORTED) naming the
    // runtime and the extension when the runtime does not offer it.
    static SessionClient of(const RuntimeClient& client) {
        const auto& st = client.state_;
        const void* table = nullptr;
        if (RADIAL_HAS_FIELD(st->d, radial_runtime_descriptor, get_extension) &&
            st->d->get_extension != nullptr)
            table = st->d->get_extension(st->rt, RADIAL_SESSION_EXTENSION_ID);
        const auto* ext = static_cast<const radial_session_ext*>(table);
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
        return RunOutcome{result.flags, result.exit_code, result.term_signal, result.duration_ms};
    }

    // No box labelled `label` remains afterwards.
    void destroy(std::string_view label) const {
        detail::ErrorCollector err;
        auto esink = err.sink();
        std::int32_t status = ext_->destroy(state_->rt, to_c(label), &esink);
        if (status != RADIAL_OK) err.raise(status, "session destroy");
    }

private:
    SessionClient(std::shared_ptr<RuntimeClient::State> state, const radial_session_ext* ext)
        : state_(std::move(state)), ext_(ext) {}
    std::shared_ptr<RuntimeClient::State> state_;
    const radial_session_ext* ext_;
};

} // namespace radial::host
