// radial/plugin/runtime.hpp — the header-only C++ helper for runtime plugin authors.
//
// Write one class derived from radial::plugin::Runtime and export it with one macro:
//
// clang-format off
//     class MyRuntime final : public radial::plugin::Runtime {
//     public:
//         static constexpr radial::plugin::Info info{"myrt", "My runtime", "0.1.0"};
//         MyRuntime(const radial::plugin::Host& host, radial::plugin::Config& config);
//         radial::plugin::RunResult run(const radial::ContainerSpec& spec,
//                                       radial::plugin::Output& out) override;
//         std::vector<std::string> list_by_label(std::string_view prefix) override;
//         void kill(std::string_view label) override;
//     };
//     RADIAL_EXPORT_RUNTIME(MyRuntime)
// clang-format on
//
// Its settings and errors are radial/plugin/config.hpp's (included here); the value types a
// runtime answers with (Disposition, RunResult, TcpRoute) are radial/runtime_values.hpp's, the
// same ones radiald reads them as.
// The helper generates the C descriptor and a noexcept thunk per function. Every exception is
// caught at the boundary and becomes a status code plus a message (radial::plugin::Error keeps its
// code and key; anything else is RADIAL_E_INTERNAL). Before `run` reaches the plugin, the helper
// checks the label and refuses the spec if `describe` reports any field REFUSED, so a refused
// field never starts a box. Output written after `run` returns is dropped, never delivered.
#pragma once

#include <radial/runtime_plugin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <radial/container_spec.hpp>
#include <radial/plugin/config.hpp>
#include <radial/runtime_values.hpp>
#include <radial/units.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace radial::plugin {

// The plugin's identity, as the descriptor reports it. `min_host_minor` is the lowest host ABI
// minor the plugin needs (the descriptor's abi_minor); lower it only if the plugin checks
// struct sizes before touching newer host fields.
struct Info {
    std::string_view id;      // [a-z0-9-]{1,32}: the value of run.containerRuntime
    std::string_view name;    // human name
    std::string_view version; // the plugin's own version
    std::uint16_t min_host_minor = RADIAL_RT_ABI_MINOR;
};

// The host's services. Copyable; valid until the instance is destroyed. [thread-safe]
class Host {
public:
    Host() = default;
    explicit Host(const radial_host* h) {
        if (h == nullptr) return;
        std::memcpy(&h_, h, h->struct_size < sizeof(h_) ? h->struct_size : sizeof(h_));
    }
    std::uint16_t abi_minor() const noexcept { return h_.abi_minor; }
    std::string_view host_version() const noexcept { return to_view(h_.host_version); }
    std::string_view plugin_path() const noexcept { return to_view(h_.plugin_path); }
    // Logs one line through the host (which redacts and stores it). Never throws.
    void log(std::uint32_t level, std::string_view message) const noexcept {
        if (h_.log != nullptr) h_.log(h_.ctx, level, to_c(message));
    }
    void debug(std::string_view m) const noexcept { log(RADIAL_LOG_DEBUG, m); }
    void info(std::string_view m) const noexcept { log(RADIAL_LOG_INFO, m); }
    void warn(std::string_view m) const noexcept { log(RADIAL_LOG_WARN, m); }

private:
    radial_host h_{};
};

// The run's output sink, serialised and closed when `run` returns. Copies share one state, so a
// pump thread may hold a copy; a write after `run` returned is dropped, never delivered.
// [thread-safe]
class Output {
public:
    explicit Output(const radial_output_sink* sink) : state_(std::make_shared<State>()) {
        if (sink != nullptr)
            std::memcpy(&state_->sink, sink,
                        sink->struct_size < sizeof(state_->sink) ? sink->struct_size
                                                                 : sizeof(state_->sink));
    }
    // Delivers one chunk. Returns false when the host asked to stop (the run should end as
    // killed, with RADIAL_RUN_OUTPUT_ABORTED) or the run is over.
    bool write(std::uint32_t stream, const void* data, std::size_t size) const {
        if (size == 0) return !state_->aborted;
        std::lock_guard lock(state_->mutex);
        if (state_->closed || state_->sink.write == nullptr) return false;
        if (state_->sink.write(state_->sink.ctx, stream, static_cast<const std::uint8_t*>(data),
                               size) != 0)
            state_->aborted = true;
        return !state_->aborted;
    }
    bool aborted() const noexcept { return state_->aborted; }
    // Called by the helper when `run` returns; later writes are no-ops.
    void close() const {
        std::lock_guard lock(state_->mutex);
        state_->closed = true;
    }

private:
    struct State {
        std::mutex mutex;
        radial_output_sink sink{};
        bool closed = false;
        std::atomic<bool> aborted{false};
    };
    std::shared_ptr<State> state_;
};

using radial::Disposition;
using radial::RunResult;
using radial::TcpRoute;

// What a box of one label became (radial_box_state, ABI 1.1): RADIAL_BOX_*, and with
// RADIAL_BOX_ENDED the RADIAL_RUN_EXITED / SIGNALED / OOM_KILLED flags the runtime recorded.
struct BoxState {
    std::uint32_t state = RADIAL_BOX_UNKNOWN; // RADIAL_BOX_*
    std::uint32_t flags = 0;                  // RADIAL_RUN_*, with RADIAL_BOX_ENDED
    std::int32_t exit_code = 0;               // with RADIAL_RUN_EXITED
    std::int32_t term_signal = 0;             // with RADIAL_RUN_SIGNALED
};

// The runner seam in C++. Threading as in radial/runtime_plugin.h: every method but the
// constructor and destructor may be called from several threads at once.
class Runtime {
public:
    virtual ~Runtime() = default;
    // Probe the engine; throw Error(RADIAL_E_UNAVAILABLE, ...) when it cannot dispatch.
    virtual void preflight() {}
    // Capability ids this instance honours (RADIAL_CAP_*).
    virtual std::vector<std::string> capabilities() { return {}; }
    // One disposition per field the spec carries. Default: fails closed, as radiald treats a
    // plugin without describe_spec — label, image, argv and onOutput HONOURED, every other field
    // REFUSED with a note saying to override describe(). A runtime claims what it does there.
    virtual std::vector<Disposition> describe(const ContainerSpec& spec) {
        std::vector<Disposition> out;
        for (auto f : carried_fields(spec)) {
            if (f == RADIAL_FIELD_LABEL || f == RADIAL_FIELD_IMAGE || f == RADIAL_FIELD_ARGV ||
                f == RADIAL_FIELD_ON_OUTPUT)
                out.push_back({f, RADIAL_DISP_HONOURED, {}});
            else
                out.push_back(
                    {f, RADIAL_DISP_REFUSED,
                     "this runtime does not say that it honours " + field_name(f) +
                         " (its describe() is the helper's default, which refuses every "
                         "field but label, image, argv and onOutput); override describe()"});
        }
        return out;
    }
    virtual RunResult run(const ContainerSpec& spec, Output& out) = 0;
    virtual std::vector<std::string> list_by_label(std::string_view prefix) = 0;
    virtual void kill(std::string_view label) = 0;
    virtual const void* extension(std::string_view /*id*/) { return nullptr; }
    // Where the host binds a tcp turn socket and how the box names the host. Default: the host's.
    virtual TcpRoute tcp_route() { return {}; }
    // Read-only: what became of the box labelled exactly `label` (runtime_plugin.h `inspect`).
    // Default: RADIAL_E_UNSUPPORTED, which the host takes as "cannot tell".
    virtual BoxState inspect(std::string_view /*label*/) {
        throw Error(RADIAL_E_UNSUPPORTED, "this runtime cannot inspect a box");
    }
};

// True when `label` is a valid box label: [A-Za-z0-9][A-Za-z0-9_.-]{0,127}.
inline bool valid_label(std::string_view label) noexcept {
    if (label.empty() || label.size() > 128) return false;
    for (std::size_t i = 0; i < label.size(); ++i) {
        char c = label[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-'))) return false;
    }
    return true;
}

namespace detail {

inline void report(const radial_error_sink* err, std::int32_t code, std::string_view key,
                   std::string_view message) noexcept {
    if (err == nullptr || err->struct_size < sizeof(radial_error_sink) || err->report == nullptr)
        return;
    err->report(err->ctx, code, to_c(key), to_c(message));
}

// Runs `f`, turning any exception into a status and a report.
template <class F>
std::int32_t guarded(const radial_error_sink* err, F&& f) noexcept {
    try {
        f();
        return RADIAL_OK;
    } catch (const Error& e) {
        report(err, e.code(), e.key(), e.what());
        return e.code() == RADIAL_OK ? RADIAL_E_INTERNAL : e.code();
    } catch (const std::exception& e) {
        report(err, RADIAL_E_INTERNAL, {}, std::string("internal error: ") + e.what());
        return RADIAL_E_INTERNAL;
    } catch (...) {
        report(err, RADIAL_E_INTERNAL, {}, "internal error: unknown exception");
        return RADIAL_E_INTERNAL;
    }
}

struct Instance {
    Host host;
    std::unique_ptr<Runtime> impl;
};

// Copies `c` into the host's `*out` after its struct_size field: only the bytes the host's struct
// holds (the growth rules, runtime_plugin.h), so an older host's smaller struct is never
// overrun. out->struct_size stays the host's.
template <class T>
void copy_to_host(const T& c, T* out) noexcept {
    const std::uint32_t n = out->struct_size < sizeof(c) ? out->struct_size : sizeof(c);
    std::memcpy(reinterpret_cast<unsigned char*>(out) + sizeof(std::uint32_t),
                reinterpret_cast<const unsigned char*>(&c) + sizeof(std::uint32_t),
                n > sizeof(std::uint32_t) ? n - sizeof(std::uint32_t) : 0);
}

inline Runtime& impl(radial_runtime* rt) { return *reinterpret_cast<Instance*>(rt)->impl; }

template <class T>
std::int32_t create(const radial_host* host, const radial_config* config, radial_runtime** out,
                    const radial_error_sink* err) noexcept {
    if (out == nullptr) return RADIAL_E_INVALID;
    *out = nullptr;
    return guarded(err, [&] {
        auto inst = std::make_unique<Instance>();
        inst->host = Host(host);
        Config cfg(config);
        inst->impl = std::make_unique<T>(inst->host, cfg);
        cfg.finish();
        *out = reinterpret_cast<radial_runtime*>(inst.release());
    });
}

inline void destroy(radial_runtime* rt) noexcept {
    std::unique_ptr<Instance> owned(reinterpret_cast<Instance*>(rt));
    const Host host = owned ? owned->host : Host();
    try {
        owned.reset();
    } catch (...) {
        // destroy has no error sink and must not throw (docs/design.md §14.2): the host's log is
        // the one place left to say it. A fixed line: building one could throw in turn.
        host.log(RADIAL_LOG_ERROR,
                 "destroy: the runtime's destructor threw; some of its resources may not have "
                 "been released");
    }
}

inline std::int32_t preflight(radial_runtime* rt, const radial_error_sink* err) noexcept {
    return guarded(err, [&] { impl(rt).preflight(); });
}

inline std::int32_t capabilities(radial_runtime* rt, const radial_name_sink* caps,
                                 const radial_error_sink* err) noexcept {
    return guarded(err, [&] {
        for (const auto& c : impl(rt).capabilities())
            if (caps != nullptr && caps->add != nullptr) caps->add(caps->ctx, to_c(c));
    });
}

inline std::int32_t describe_spec(radial_runtime* rt, const radial_spec* spec,
                                  const radial_disposition_sink* out,
                                  const radial_error_sink* err) noexcept {
    return guarded(err, [&] {
        if (spec == nullptr) throw Error(RADIAL_E_INVALID, "no spec given");
        for (const auto& d : impl(rt).describe(from_c(*spec)))
            if (out != nullptr && out->field != nullptr)
                out->field(out->ctx, d.field, d.disposition, to_c(d.note));
    });
}

// Hands a run's (or an exec's) result to the host's struct.
inline void put_result(const RunResult& r, radial_run_result* result) noexcept {
    radial_run_result c{};
    c.struct_size = sizeof(c);
    c.flags = r.flags;
    c.exit_code = r.exit_code;
    c.term_signal = r.term_signal;
    c.duration_ms = r.duration_ms;
    c.create_ms = r.create_ms;
    c.remove_ms = r.remove_ms;
    // A host too old to hold the times must not be told they are there.
    if (!RADIAL_HAS_FIELD(result, radial_run_result, remove_ms))
        c.flags &= ~static_cast<std::uint32_t>(RADIAL_RUN_PHASE_TIMES);
    copy_to_host(c, result);
}

// Refuses (RADIAL_E_REFUSED, "mounts") a spec whose mount must receive the host's later mounts
// when the runtime does not report RADIAL_CAP_MOUNT_PROPAGATION: the helper reads the chained
// addition for every runtime, and one that does not claim it would otherwise start a box that never
// sees its workspace (radial_spec_propagation).
inline void refuse_unclaimed(Runtime& runtime, const ContainerSpec& s) {
    for (const auto& m : s.mounts) {
        if (!m.receives_host_mounts) continue;
        const auto caps = runtime.capabilities();
        if (std::find(caps.begin(), caps.end(), RADIAL_CAP_MOUNT_PROPAGATION) == caps.end())
            throw Error(RADIAL_E_REFUSED, "mounts",
                        "mounts refused: mount '" + m.target +
                            "' must receive the host's later mounts, which this runtime does "
                            "not claim (" RADIAL_CAP_MOUNT_PROPAGATION ")");
        return;
    }
}

inline std::int32_t run(radial_runtime* rt, const radial_spec* spec, const radial_output_sink* out,
                        radial_run_result* result, const radial_error_sink* err) noexcept {
    Output output(out);
    std::int32_t status = guarded(err, [&] {
        if (spec == nullptr || result == nullptr)
            throw Error(RADIAL_E_INVALID, "no spec or result given");
        ContainerSpec s = from_c(*spec);
        if (!valid_label(s.label))
            throw Error(RADIAL_E_INVALID, "label",
                        "label '" + s.label + "' must match [A-Za-z0-9][A-Za-z0-9_.-]{0,127}");
        if (s.argv.empty()) throw Error(RADIAL_E_INVALID, "argv", "argv is empty");
        refuse_unclaimed(impl(rt), s);
        for (const auto& d : impl(rt).describe(s))
            if (d.disposition == RADIAL_DISP_REFUSED)
                throw Error(RADIAL_E_REFUSED, field_name(d.field),
                            field_name(d.field) + " refused: " + d.note);
        put_result(impl(rt).run(s, output), result);
    });
    output.close();
    return status;
}

inline std::int32_t list_by_label(radial_runtime* rt, radial_str prefix,
                                  const radial_name_sink* names,
                                  const radial_error_sink* err) noexcept {
    return guarded(err, [&] {
        for (const auto& n : impl(rt).list_by_label(to_view(prefix)))
            if (names != nullptr && names->add != nullptr) names->add(names->ctx, to_c(n));
    });
}

inline std::int32_t kill(radial_runtime* rt, radial_str label,
                         const radial_error_sink* err) noexcept {
    return guarded(err, [&] { impl(rt).kill(to_view(label)); });
}

inline const void* get_extension(radial_runtime* rt, const char* id) noexcept {
    try {
        return id == nullptr ? nullptr : impl(rt).extension(id);
    } catch (...) {
        // No error sink here either: logged, and answered as "no such extension".
        reinterpret_cast<Instance*>(rt)->host.warn(
            "get_extension threw; answering that the extension is not supported");
        return nullptr;
    }
}

inline std::int32_t tcp_route(radial_runtime* rt, const radial_name_sink* bind_host,
                              const radial_name_sink* box_host,
                              const radial_error_sink* err) noexcept {
    return guarded(err, [&] {
        TcpRoute r = impl(rt).tcp_route();
        if (!r.bind_host.empty() && bind_host != nullptr && bind_host->add != nullptr)
            bind_host->add(bind_host->ctx, to_c(r.bind_host));
        if (!r.box_host.empty() && box_host != nullptr && box_host->add != nullptr)
            box_host->add(box_host->ctx, to_c(r.box_host));
    });
}

inline std::int32_t inspect(radial_runtime* rt, radial_str label, radial_box_state* state,
                            const radial_error_sink* err) noexcept {
    return guarded(err, [&] {
        if (state == nullptr) throw Error(RADIAL_E_INVALID, "no state given");
        BoxState b = impl(rt).inspect(to_view(label));
        radial_box_state c{};
        c.struct_size = sizeof(c);
        c.state = b.state;
        c.flags = b.flags;
        c.exit_code = b.exit_code;
        c.term_signal = b.term_signal;
        copy_to_host(c, state);
    });
}

template <class T>
const radial_runtime_descriptor* descriptor() noexcept {
    static const radial_runtime_descriptor d = [] {
        radial_runtime_descriptor x{};
        x.struct_size = sizeof(radial_runtime_descriptor);
        x.abi_major = RADIAL_RT_ABI_MAJOR;
        x.abi_minor = T::info.min_host_minor;
        x.id = to_c(T::info.id);
        x.name = to_c(T::info.name);
        x.version = to_c(T::info.version);
        x.create = &create<T>;
        x.destroy = &destroy;
        x.preflight = &preflight;
        x.capabilities = &capabilities;
        x.describe_spec = &describe_spec;
        x.run = &run;
        x.list_by_label = &list_by_label;
        x.kill = &kill;
        x.get_extension = &get_extension;
        x.tcp_route = &tcp_route;
        x.inspect = &inspect;
        return x;
    }();
    return &d;
}

} // namespace detail
} // namespace radial::plugin

// Exports the plugin's entry symbol for runtime class T. Use exactly once per shared object.
#define RADIAL_EXPORT_RUNTIME(T)                                                              \
    extern "C" RADIAL_RT_EXPORT const radial_runtime_descriptor* radial_runtime_plugin_entry( \
        void) {                                                                               \
        return ::radial::plugin::detail::descriptor<T>();                                     \
    }
