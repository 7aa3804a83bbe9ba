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

// Where a runtime gives a session box's changed entries (radial_change_sink): entry() for each,
// then data() with its bytes. Either returns false when the host asked to stop; the runtime then
// stops walking (the helper turns that into RADIAL_E_CANCELLED).
class ChangeSink {
public:
    explicit ChangeSink(const radial_change_sink* s) : s_(s) {}
    bool entry(std::string_view path, std::uint32_t kind) {
        if (!stopped_ && s_ != nullptr && s_->entry != nullptr)
            stopped_ = s_->entry(s_->ctx, to_c(path), kind) != 0;
        return !stopped_;
    }
    bool data(const void* bytes, std::size_t n) {
        if (!stopped_ && n != 0 && s_ != nullptr && s_->data != nullptr)
            stopped_ = s_->data(s_->ctx, static_cast<const std::uint8_t*>(bytes), n) != 0;
        return !stopped_;
    }
    bool stopped() const noexcept { return stopped_; }

private:
    const radial_change_sink* s_;
    bool stopped_ = false;
};

class Sessions {
public:
    virtual ~Sessions() = default;
    // Creates the session's box from `spec` (no argv, no secret) and starts it idle; it ends by
    // itself after `idle_timeout_ms` without an exec or at `max_lifetime_ms` (0: no limit).
    virtual void create_session(const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                                std::uint64_t max_lifetime_ms) = 0;
    // Runs `exec.argv` with `exec.env`, `exec.workdir` and `exec.timeout_ms` in the session
    // labelled `exec.label`, letting it reach `exec.host_ports`; the other fields are unset.
    virtual RunResult exec(const ContainerSpec& exec, Output& out) = 0;
    // No box labelled `label` remains.
    virtual void destroy_session(std::string_view label) = 0;

    // Snapshots (radial_session_ext 1.1). The defaults refuse, naming the call: a runtime that
    // keeps no snapshots needs to override none of them.
    // The content digest ("sha256:<hex>") of the local image `image`.
    virtual std::string resolve_image(std::string_view image) {
        throw Error(RADIAL_E_UNSUPPORTED, "resolving image '" + std::string(image) +
                                              "' to a digest: this runtime keeps no snapshots");
    }
    // Gives every entry of the box's own file system changed at or after `since_ms` to `sink`.
    virtual void changes(std::string_view label, std::uint64_t since_ms, ChangeSink& sink) {
        (void)since_ms;
        (void)sink;
        throw Error(RADIAL_E_UNSUPPORTED, "listing the changes of session box '" +
                                              std::string(label) +
                                              "': this runtime keeps no snapshots");
    }
    // Commits the box's own file system to the local image `image`; returns its digest.
    virtual std::string snapshot(std::string_view label, std::string_view image) {
        (void)image;
        throw Error(RADIAL_E_UNSUPPORTED, "snapshotting session box '" + std::string(label) +
                                              "': this runtime keeps no snapshots");
    }
    // No local image named `image` remains.
    virtual void remove_snapshot(std::string_view image) {
        throw Error(RADIAL_E_UNSUPPORTED, "removing snapshot '" + std::string(image) +
                                              "': this runtime keeps no snapshots");
    }
    // Since 1.2: throws Error(RADIAL_E_REFUSED) when a snapshot of the box would write more than
    // `max_bytes` (0: no bound) or more than the free space it would be written to (see
    // radial_session_ext.check_snapshot_size).
    virtual void check_snapshot_size(std::string_view label, std::uint64_t max_bytes) {
        (void)max_bytes;
        throw Error(RADIAL_E_UNSUPPORTED, "sizing a snapshot of session box '" +
                                              std::string(label) +
                                              "': this runtime cannot tell it before taking one");
    }
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
        refuse_unclaimed(impl(rt), s);
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

inline void give_name(const radial_name_sink* sink, const std::string& name) {
    if (sink != nullptr && sink->add != nullptr) sink->add(sink->ctx, to_c(name));
}

inline std::int32_t session_resolve_image(radial_runtime* rt, radial_str image,
                                          const radial_name_sink* digest,
                                          const radial_error_sink* err) noexcept {
    return guarded(err, [&] { give_name(digest, sessions_of(rt).resolve_image(to_view(image))); });
}

inline std::int32_t session_changes(radial_runtime* rt, radial_str label, std::uint64_t since_ms,
                                    const radial_change_sink* changes,
                                    const radial_error_sink* err) noexcept {
    return guarded(err, [&] {
        std::string l(to_view(label));
        check_label(l);
        ChangeSink sink(changes);
        sessions_of(rt).changes(l, since_ms, sink);
        if (sink.stopped())
            throw Error(RADIAL_E_CANCELLED, "the host stopped the walk of '" + l + "'s changes");
    });
}

inline std::int32_t session_snapshot(radial_runtime* rt, radial_str label, radial_str image,
                                     const radial_name_sink* digest,
                                     const radial_error_sink* err) noexcept {
    return guarded(err, [&] {
        std::string l(to_view(label));
        check_label(l);
        if (image.size == 0) throw Error(RADIAL_E_INVALID, "image", "no image name given");
        give_name(digest, sessions_of(rt).snapshot(l, to_view(image)));
    });
}

inline std::int32_t session_remove_snapshot(radial_runtime* rt, radial_str image,
                                            const radial_error_sink* err) noexcept {
    return guarded(err, [&] {
        if (image.size == 0) throw Error(RADIAL_E_INVALID, "image", "no image name given");
        sessions_of(rt).remove_snapshot(to_view(image));
    });
}

inline std::int32_t session_check_snapshot_size(radial_runtime* rt, radial_str label,
                                                std::uint64_t max_bytes,
                                                const radial_error_sink* err) noexcept {
    return guarded(err, [&] {
        std::string l(to_view(label));
        check_label(l);
        sessions_of(rt).check_snapshot_size(l, max_bytes);
    });
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
        t.resolve_image = &detail::session_resolve_image;
        t.changes = &detail::session_changes;
        t.snapshot = &detail::session_snapshot;
        t.remove_snapshot = &detail::session_remove_snapshot;
        t.check_snapshot_size = &detail::session_check_snapshot_size;
        return t;
    }();
    return &table;
}

// The table of a helper runtime that implements Sessions but keeps no snapshots: the 1.1 and 1.2
// calls are null, so a host sees has_snapshots() false and never asks for them.
inline const radial_session_ext* session_extension_without_snapshots() noexcept {
    static const radial_session_ext table = [] {
        radial_session_ext t = *session_extension();
        t.resolve_image = nullptr;
        t.changes = nullptr;
        t.snapshot = nullptr;
        t.remove_snapshot = nullptr;
        t.check_snapshot_size = nullptr;
        return t;
    }();
    return &table;
}

} // namespace radial::plugin
