// radial/host/runtime_answers.hpp — what a plugin's calls answer, as the host sees them: the
// error a failed call raises (RuntimeError), the value types of the answers (Disposition,
// RunOutcome, BoxState), and the callbacks that collect them from the plugin (detail::). Used by
// RuntimeClient and SessionClient.
//
// Every callback handed to the plugin is noexcept and catches internally, so no host exception
// ever unwinds through plugin frames. Thread-safety as each type says.
#pragma once

#include <radial/runtime_plugin.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <radial/container_spec.hpp>
#include <radial/host/sink_gate.hpp>
#include <radial/names.hpp>
#include <radial/runtime_values.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace radial::host {

// The most the host keeps of one plugin message, in bytes: an error (all of one call's reports
// together), a log line, a disposition's note, a name. A plugin's text goes into records, the
// journal and the log; its size is not the plugin's to choose (docs/design.md §5.2).
inline constexpr std::size_t kMaxPluginText = 4096;

// Appends `text` to `to`, keeping `to` within kMaxPluginText bytes (cut at a UTF-8 character's
// start) plus one mark saying that it was cut; nothing more once it was. Pure; may throw bad_alloc.
inline void append_plugin_text(std::string& to, std::string_view text) {
    static constexpr std::string_view kCut = " [cut: the plugin's text was longer]";
    if (text.empty()) return;
    if (to.size() >= kMaxPluginText) {
        // Full already: marked when it was cut, or now, when it was filled to the byte.
        if (!to.ends_with(kCut)) to.append(kCut);
        return;
    }
    const std::size_t room = kMaxPluginText - to.size();
    if (text.size() <= room) {
        to.append(text);
        return;
    }
    std::size_t n = room;
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
    to.append(text.substr(0, n));
    to.append(kCut);
}

// `text` as append_plugin_text keeps it.
inline std::string plugin_text(std::string_view text) {
    std::string s;
    append_plugin_text(s, text);
    return s;
}

// A failed call into a plugin: the status it returned, the key it named (may be empty) and its
// message (a generic one when the plugin reported none).
class RuntimeError : public std::runtime_error {
public:
    RuntimeError(std::int32_t code, std::string key, const std::string& message)
        : std::runtime_error(message), code_(code), key_(std::move(key)) {}
    std::int32_t code() const noexcept { return code_; }
    const std::string& key() const noexcept { return key_; }

private:
    std::int32_t code_;
    std::string key_;
};

// The name of a status code, for messages: "invalid", "refused", "unavailable", ...
inline std::string_view status_name(std::int32_t code) noexcept {
    switch (code) {
        case RADIAL_OK: return "ok";
        case RADIAL_E_INVALID: return "invalid";
        case RADIAL_E_REFUSED: return "refused";
        case RADIAL_E_UNSUPPORTED: return "unsupported";
        case RADIAL_E_NOT_FOUND: return "not found";
        case RADIAL_E_UNAVAILABLE: return "unavailable";
        case RADIAL_E_CANCELLED: return "cancelled";
        case RADIAL_E_TIMEOUT: return "timeout";
        default: return "internal error";
    }
}

// How the runtime treats one spec field, and how a run's workload ended: the types the plugin
// side answers with (radial/runtime_values.hpp).
using radial::Disposition;
using RunOutcome = radial::RunResult;

// What is wrong with a run result a plugin returned for `spec`, by the meanings
// radial/runtime_plugin.h gives RADIAL_RUN_*; empty when nothing is. A host would otherwise turn
// it into an ending it invented (a bare `failed`, "signal 0") or one the result contradicts
// itself on (`succeeded` for a box the memory bound ended). Allowed: SIGNALED or EXITED (an init
// reporting 128+N) beside OOM_KILLED, TIMED_OUT or KILLED; KILLED under a timeout; an exit code
// of any int but 0 with OOM_KILLED.
inline std::string run_result_breach(const RunOutcome& out, const ContainerSpec& spec) {
    constexpr std::uint32_t kEndings = RADIAL_RUN_EXITED | RADIAL_RUN_SIGNALED |
                                       RADIAL_RUN_TIMED_OUT | RADIAL_RUN_KILLED |
                                       RADIAL_RUN_OOM_KILLED | RADIAL_RUN_OUTPUT_ABORTED;
    auto hex = [](std::uint32_t v) {
        static const char digits[] = "0123456789abcdef";
        std::string s;
        do {
            s.insert(s.begin(), digits[v % 16]);
            v /= 16;
        } while (v != 0);
        return "0x" + s;
    };
    const std::uint32_t f = out.flags;
    if ((f & kEndings) == 0)
        return "says neither an exit, a signal, a timeout, a kill, the memory bound nor an "
               "aborted output (flags " +
               hex(f) + ")";
    if ((f & RADIAL_RUN_SIGNALED) && (out.term_signal < 1 || out.term_signal > 64))
        return "says the box was ended by signal " + std::to_string(out.term_signal) +
               ", which is no signal";
    if ((f & RADIAL_RUN_EXITED) && (f & RADIAL_RUN_SIGNALED))
        return "says the workload both exited (code " + std::to_string(out.exit_code) +
               ") and was ended by signal " + std::to_string(out.term_signal);
    if ((f & RADIAL_RUN_OOM_KILLED) && (f & RADIAL_RUN_EXITED) && out.exit_code == 0)
        return "says the memory bound ended the box (OOM_KILLED) and its workload exited 0";
    if ((f & RADIAL_RUN_TIMED_OUT) && spec.timeout_ms == 0)
        return "says the box timed out (TIMED_OUT), but its spec had no timeout";
    // Only a stop (a timeout or a kill) has a grace to end in.
    if ((f & RADIAL_RUN_STOPPED_IN_GRACE) && !(f & (RADIAL_RUN_TIMED_OUT | RADIAL_RUN_KILLED)))
        return "says the box ended within its stop grace (STOPPED_IN_GRACE) without a timeout "
               "or a kill to stop it (flags " +
               hex(f) + ")";
    return {};
}

// What a box of one label became (radial_box_state, ABI 1.1). `supported` is false when the plugin
// cannot tell (no `inspect`, or it answered RADIAL_E_UNSUPPORTED); `state` is then
// RADIAL_BOX_UNKNOWN. With RADIAL_BOX_ENDED, `flags` holds RADIAL_RUN_EXITED (exit_code valid),
// RADIAL_RUN_SIGNALED (term_signal valid) and RADIAL_RUN_OOM_KILLED; an unknown `state` value
// reads as RADIAL_BOX_UNKNOWN.
struct BoxState {
    bool supported = false;
    std::uint32_t state = RADIAL_BOX_UNKNOWN;
    std::uint32_t flags = 0;
    std::int32_t exit_code = 0;
    std::int32_t term_signal = 0;
};

// Called with each output chunk (stream id, bytes). Return false to ask the plugin to stop the
// run. Called from plugin threads, serialised per run.
using OutputFn = std::function<bool(std::uint32_t stream, std::string_view bytes)>;
// Receives plugin log lines (level, message). [thread-safe] — it may be called from any thread.
using LogFn = std::function<void(std::uint32_t level, std::string_view message)>;

namespace detail {
// The collectors below are handed to plugins as [any-thread] sinks: two plugin threads may report
// at once, so each guards its fields. Each hands out its sink through a gate of its own
// (radial/host/sink_gate.hpp), closed when the call's answer is read and when the collector goes,
// so a plugin thread that reports after its call returned is dropped, never reaches freed memory.
struct ErrorCollector {
    std::mutex mutex;
    std::int32_t code = RADIAL_OK;
    std::string key;
    std::string message;
    std::atomic<bool> lost{false};
    // The same sink each time it is asked for.
    const radial_error_sink* sink() {
        if (sink_ == nullptr)
            sink_ = gate.place(radial_error_sink{0, nullptr, &ErrorCollector::report});
        return sink_;
    }
    static void report(void* ctx, std::int32_t code, radial_str key, radial_str message) noexcept {
        SinkGate::pass(ctx, [&](void* target) {
            auto* self = static_cast<ErrorCollector*>(target);
            try {
                std::lock_guard lock(self->mutex);
                if (!self->message.empty()) append_plugin_text(self->message, "; ");
                append_plugin_text(self->message, to_view(message));
                if (self->key.empty()) self->key = plugin_text(to_view(key));
                if (self->code == RADIAL_OK) self->code = code;
            } catch (...) {
                // Out of memory in a C callback: nothing may pass; raise() says a part is missing.
                self->lost = true;
            }
        });
    }
    // Closes the sink (the call returned) and throws what it collected.
    [[noreturn]] void raise(std::int32_t status, std::string_view what) {
        gate.close();
        std::string text = message.empty() ? std::string(what) + " failed (" +
                                                 std::string(status_name(status)) + ")"
                                           : message;
        if (lost) text += " (part of the plugin's message was lost: out of memory)";
        throw RuntimeError(status, key, text);
    }
    const radial_error_sink* sink_ = nullptr;
    SinkGate gate{this}; // last: closed before the fields its sink reaches go
};

[[noreturn]] inline void throw_lost(std::string_view what) {
    throw RuntimeError(
        RADIAL_E_INTERNAL, {},
        std::string(what) + ": the host ran out of memory taking the plugin's answer");
}

struct NameCollector {
    std::mutex mutex;
    std::vector<std::string> names;
    std::atomic<bool> lost{false};
    const radial_name_sink* sink() {
        if (sink_ == nullptr) sink_ = gate.place(radial_name_sink{0, nullptr, &add});
        return sink_;
    }
    static void add(void* ctx, radial_str name) noexcept {
        SinkGate::pass(ctx, [&](void* target) {
            auto* self = static_cast<NameCollector*>(target);
            try {
                std::string copy = plugin_text(to_view(name));
                std::lock_guard lock(self->mutex);
                self->names.push_back(std::move(copy));
            } catch (...) {
                // Out of memory in a C callback: nothing may pass; check() turns it into an
                // error, since a missing name (a box to reconcile) must not look like no name.
                self->lost = true;
            }
        });
    }
    // Closes the sink (the call returned); throws RuntimeError (RADIAL_E_INTERNAL) when a name was
    // lost.
    void check(std::string_view what) {
        gate.close();
        if (lost) throw_lost(what);
    }
    const radial_name_sink* sink_ = nullptr;
    SinkGate gate{this}; // last: closed before the fields its sink reaches go
};

struct DispositionCollector {
    std::mutex mutex;
    std::vector<Disposition> reported;
    std::atomic<bool> lost{false};
    const radial_disposition_sink* sink() {
        if (sink_ == nullptr) sink_ = gate.place(radial_disposition_sink{0, nullptr, &field});
        return sink_;
    }
    static void field(void* ctx, std::uint32_t field, std::uint32_t disposition,
                      radial_str note) noexcept {
        SinkGate::pass(ctx, [&](void* target) {
            auto* self = static_cast<DispositionCollector*>(target);
            try {
                Disposition d{field, disposition, plugin_text(to_view(note))};
                std::lock_guard lock(self->mutex);
                self->reported.push_back(std::move(d));
            } catch (...) {
                // As NameCollector::add: a lost disposition must not pass for none reported.
                self->lost = true;
            }
        });
    }
    // Closes the sink (the call returned); throws RuntimeError (RADIAL_E_INTERNAL) when a
    // disposition was lost.
    void check(std::string_view what) {
        gate.close();
        if (lost) throw_lost(what);
    }
    const radial_disposition_sink* sink_ = nullptr;
    SinkGate gate{this}; // last: closed before the fields its sink reaches go
};

// One disposition per field `spec` carries, from what the plugin `reported` (the ABI's fail-safe
// rules): a carried field it did not report is REFUSED ("no disposition reported"), and so is one
// it reported more than once with different dispositions, or with a value the ABI does not define.
inline std::vector<Disposition> dispositions_of(const ContainerSpec& spec,
                                                const std::vector<Disposition>& reported) {
    std::vector<Disposition> out;
    for (auto f : carried_fields(spec)) {
        const Disposition* found = nullptr;
        bool contradicts = false;
        for (const auto& d : reported)
            if (d.field == f) {
                if (found != nullptr && found->disposition != d.disposition) contradicts = true;
                if (found == nullptr) found = &d;
            }
        // Two answers for one field: neither can be relied on, so the field is refused (fail
        // closed), whichever came last.
        if (contradicts) {
            out.push_back({f, RADIAL_DISP_REFUSED,
                           "the plugin reported more than one disposition for this field, "
                           "which the host does not guess between"});
            continue;
        }
        // A value the ABI does not define says nothing the host can rely on: refused, as an
        // unknown enum value reads as unsupported (runtime_plugin.h).
        if (found != nullptr && (found->disposition < std::uint32_t{RADIAL_DISP_HONOURED} ||
                                 found->disposition > std::uint32_t{RADIAL_DISP_REFUSED}))
            out.push_back({f, RADIAL_DISP_REFUSED,
                           "the plugin reported disposition " + std::to_string(found->disposition) +
                               ", which this host does not know"});
        else
            out.push_back(found != nullptr
                              ? *found
                              : Disposition{f, RADIAL_DISP_REFUSED, "no disposition reported"});
    }
    return out;
}

// The fields every runtime does by taking part in the seam at all: what a plugin without
// describe_spec is taken to honour. Every other carried field it is taken to refuse.
inline bool seam_field(std::uint32_t f) noexcept {
    return f == RADIAL_FIELD_LABEL || f == RADIAL_FIELD_IMAGE || f == RADIAL_FIELD_ARGV ||
           f == RADIAL_FIELD_ON_OUTPUT;
}
} // namespace detail

} // namespace radial::host
