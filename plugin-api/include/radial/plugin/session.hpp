// radial/plugin/session.hpp — the session extension ("radial.session/1", radial/session.h) for a
// runtime written with the C++ helper: derive the runtime from both radial::plugin::Runtime and
// radial::plugin::Sessions, and answer its id from extension():
//
//     const void* extension(std::string_view id) override {
//         return id == RADIAL_SESSION_EXTENSION_ID ? radial::plugin::session_extension() : nullptr;
//     }
//
// The helper checks what every runtime must (a valid label, an empty argv at create, no secret in
// the box's configuration, an argv for each exec) before the runtime's methods see the call, and
// turns exceptions into statuses as for every other call.
#pragma once

#include <radial/session.h>

#include <radial/plugin/runtime.hpp>

namespace radial::plugin {

class Sessions {
public:
    virtual ~Sessions() = default;
    // Creates the session's box from `spec` (no argv, no secret) and starts it idle; it ends by
    // itself after `idle_timeout_ms` without an exec or at `max_lifetime_ms` (0: no limit).
    virtual void create_session(const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                                std::uint64_t max_lifetime_ms) = 0;
    // Runs `exec.argv` with `exec.env`, `exec.workdir` and `exec.timeout_ms` in the session
    // labelled `exec.label`; the other fields of `exec` are unset.
    virtual RunResult exec(const ContainerSpec& exec, Output& out) = 0;
    // No box labelled `label` remains.
    virtual void destroy_session(std::string_view label) = 0;
};

namespace detail {

inline Sessions& sessions_of(radial_runtime* rt) {
    auto* s = dynamic_cast<Sessions*>(&impl(rt));
    if (s == nullptr)
        throw Error(RADIAL_E_UNSUPPORTED,
                    "this runtime answers radial.session/1 but does not "
                    "implement radial::plugin::Sessions");
    return *s;
}

inline void check_label(const std::string& label) {
    if (!valid_label(label))
        throw Error(RADIAL_E_INVALID, "label",
                    "label '" + label + "' must match [A-Za-z0-9][A-Za-z0-9_.-]{0,127}");
}

inline std::int32_t session_create(radial_runtime* rt, const radial_spec* spec,
                                   std::uint64_t idle_timeout_ms, std::uint64_t max_lifetime_ms,
                                   const radial_error_sink* err) noexcept {
    return guarded(err, [&] {
        if (spec == nullptr) throw Error(RADIAL_E_INVALID, "no spec given");
        ContainerSpec s = from_c(*spec);
        check_label(s.label);
        if (!s.argv.empty())
            throw Error(RADIAL_E_INVALID, "argv",
                        "a session's box is created without a command; each turn is an exec");
        for (const auto& e : s.env)
            if (e.secret)
                throw Error(RADIAL_E_INVALID, "env",
                            "secret variable '" + e.name +
                                "' in a session's box: secrets go to each exec, never to the box");
        for (const auto& d : impl(rt).describe(s))
            if (d.disposition == RADIAL_DISP_REFUSED)
                throw Error(RADIAL_E_REFUSED, field_name(d.field),
                            field_name(d.field) + " refused: " + d.note);
        sessions_of(rt).create_session(s, idle_timeout_ms, max_lifetime_ms);
    });
}

inline std::int32_t session_exec(radial_runtime* rt, const radial_spec* exec,
                                 const radial_output_sink* out, radial_run_result* result,
                                 const radial_error_sink* err) noexcept {
    Output output(out);
    std::int32_t status = guarded(err, [&] {
        if (exec == nullptr || result == nullptr)
            throw Error(RADIAL_E_INVALID, "no exec or result given");
        ContainerSpec s = from_c(*exec);
        check_label(s.label);
        if (s.argv.empty()) throw Error(RADIAL_E_INVALID, "argv", "argv is empty");
        put_result(sessions_of(rt).exec(s, output), result);
    });
    output.close();
    return status;
}

inline std::int32_t session_destroy(radial_runtime* rt, radial_str label,
                                    const radial_error_sink* err) noexcept {
    return guarded(err, [&] { sessions_of(rt).destroy_session(to_view(label)); });
}

} // namespace detail

// The extension table of every helper runtime that implements Sessions.
inline const radial_session_ext* session_extension() noexcept {
    static const radial_session_ext table = [] {
        radial_session_ext t{};
        t.struct_size = sizeof(t);
        t.create = &detail::session_create;
        t.exec = &detail::session_exec;
        t.destroy = &detail::session_destroy;
        return t;
    }();
    return &table;
}

} // namespace radial::plugin
