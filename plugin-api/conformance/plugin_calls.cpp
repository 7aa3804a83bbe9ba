#include "plugin_calls.h"

#include <iostream>

#include "call_trace.h"
#include "harness.h"

namespace radial::conformance {
namespace {

using std::chrono::milliseconds;

std::string seconds_text(milliseconds ms) { return std::to_string(ms.count() / 1000) + " s"; }

// Every OutputFn handed to a plugin, kept until the process ends (see OutputCapture).
std::mutex g_graveyard_mutex;
std::vector<std::shared_ptr<host::OutputFn>> g_graveyard;

// `spec` as the plugin gets it: with the run's mark in its env (Harness::mark_boxes), so that a
// process the box leaves on the host can be found whatever the --verify-gone probe sees.
ContainerSpec marked(const ContainerSpec& spec) {
    const auto& h = Harness::get();
    if (!h.mark_boxes) return spec;
    for (const auto& e : spec.env)
        if (e.name == kMarkName) return spec;
    ContainerSpec s = spec;
    s.env.push_back({kMarkName, h.label_prefix + spec.label, false});
    return s;
}

} // namespace

std::string describe_current_exception() {
    try {
        throw;
    } catch (const host::RuntimeError& e) {
        std::string s = "status " + std::to_string(e.code()) + " (" +
                        std::string(host::status_name(e.code())) + ")";
        if (!e.key().empty()) s += " about '" + e.key() + "'";
        return s + ": " + e.what();
    } catch (const std::exception& e) {
        return std::string(
                   "a C++ exception crossed the C ABI instead of a status and a message (") +
               e.what() + "); catch everything at the boundary, as radial/plugin/runtime.hpp does";
    } catch (...) {
        return "a C++ exception of unknown type crossed the C ABI instead of a status and a "
               "message; catch everything at the boundary, as radial/plugin/runtime.hpp does";
    }
}

template <class F>
auto Instance::budgeted(const std::string& what, F fn) const {
    using R = std::invoke_result_t<F&, host::RuntimeClient&>;
    using T = std::conditional_t<std::is_void_v<R>, Unit, R>;
    auto call = PendingCall<T>::start([client = client_, fn = std::move(fn), what]() mutable {
        TracedCall traced(what);
        try {
            return fn(*client);
        } catch (const host::RuntimeError& e) {
            // Name the call, so that an error surfacing in a check reads as a sentence.
            throw host::RuntimeError(e.code(), e.key(), what + ": " + e.what());
        }
    });
    if (const auto budget = Harness::get().options.budget_ms(); !call.wait_for(budget))
        Harness::get().hang(what + " did not return within " + seconds_text(budget));
    if constexpr (std::is_void_v<R>) {
        call.get();
    } else {
        return call.get();
    }
}

Instance Instance::create(const host::ConfigSection* section) {
    std::optional<host::ConfigSection> copy;
    if (section != nullptr) copy = *section;
    auto call = PendingCall<std::shared_ptr<host::RuntimeClient>>::start([copy] {
        TracedCall traced("create");
        return std::make_shared<host::RuntimeClient>(
            Harness::get().create_instance(copy ? &*copy : nullptr));
    });
    if (const auto budget = Harness::get().options.budget_ms(); !call.wait_for(budget))
        Harness::get().hang("create did not return within " + seconds_text(budget));
    Instance inst;
    inst.client_ = call.get();
    return inst;
}

Instance::~Instance() {
    if (!client_) return;
    // The ABI forbids destroy while a run is in flight: end every run a check left behind
    // (it failed or threw before waiting for it).
    for (auto& [label, call] : runs_) {
        if (call.done()) continue;
        try {
            kill(label);
        } catch (...) {
            // The wait below reports a run that does not end; this says why it may not.
            std::cerr << "radial-conformance: cleanup: kill('" << label
                      << "') failed: " << describe_current_exception() << "\n";
        }
        if (!call.wait_for(Harness::get().options.kill_wait()))
            Harness::get().hang("run of '" + label + "' did not return after kill('" + label +
                                "'), so the instance cannot be destroyed");
    }
    // The plugin's destroy joins its threads; run it where a hang can be noticed. The thread
    // holds the last reference, so destroy runs there.
    auto call = PendingCall<Unit>::start([client = std::move(client_)]() mutable {
        TracedCall traced("destroy");
        client.reset();
    });
    if (const auto budget = Harness::get().options.budget_ms(); !call.wait_for(budget))
        Harness::get().hang("destroy did not return within " + seconds_text(budget));
}

void Instance::preflight() const {
    budgeted("preflight", [](host::RuntimeClient& c) { c.preflight(); });
}

std::vector<std::string> Instance::capabilities() const {
    return budgeted("capabilities", [](host::RuntimeClient& c) { return c.capabilities(); });
}

std::vector<host::Disposition> Instance::describe(const ContainerSpec& spec) const {
    return budgeted("describe_spec", [spec](host::RuntimeClient& c) { return c.describe(spec); });
}

std::vector<std::string> Instance::list(const std::string& prefix) const {
    return budgeted("list_by_label('" + prefix + "')",
                    [prefix](host::RuntimeClient& c) { return c.list_by_label(prefix); });
}

void Instance::kill(const std::string& label) const {
    budgeted("kill('" + label + "')", [label](host::RuntimeClient& c) { c.kill(label); });
}

host::BoxState Instance::inspect(const std::string& label) const {
    return budgeted("inspect('" + label + "')",
                    [label](host::RuntimeClient& c) { return c.inspect(label); });
}

void Instance::kill_on_this_thread(const std::string& label) const { client_->kill(label); }

Watchdog::Watchdog(std::string what, std::chrono::milliseconds limit)
    : state_(std::make_shared<State>()) {
    std::thread([state = state_, what = std::move(what), limit] {
        std::unique_lock lock(state->mutex);
        if (!state->cv.wait_for(lock, limit, [&] { return state->disarmed; }))
            Harness::get().hang(what + " did not return within " + seconds_text(limit));
    }).detach();
}

Watchdog::~Watchdog() {
    std::lock_guard lock(state_->mutex);
    state_->disarmed = true;
    state_->cv.notify_all();
}

namespace {

// The output sink of one run or exec, recording into `capture`; kept alive until the process
// ends (g_graveyard). A call after run returned is dropped by the host's sink gate
// (radial/host/sink_gate.hpp), which counts it into capture->late_calls instead.
std::shared_ptr<host::OutputFn> capturing_sink(std::shared_ptr<OutputCapture> capture) {
    auto fn = std::make_shared<host::OutputFn>(
        [capture](std::uint32_t stream, std::string_view bytes) -> bool {
            if (capture->returned.load()) {
                ++capture->late_calls;
                return false;
            }
            if (capture->inside.fetch_add(1) != 0) ++capture->overlaps;
            bool go_on = true;
            {
                std::lock_guard lock(capture->mutex);
                if (capture->chunks++ == 0) capture->first_chunk = std::chrono::steady_clock::now();
                if (bytes.empty()) ++capture->empty_chunks;
                if (stream == RADIAL_STREAM_STDOUT) {
                    capture->out_bytes += bytes.size();
                    if (capture->keep) capture->out.append(bytes);
                } else if (stream == RADIAL_STREAM_STDERR) {
                    capture->err_bytes += bytes.size();
                    if (capture->keep) capture->err.append(bytes);
                } else {
                    ++capture->unknown_stream;
                }
            }
            if (capture->hook) go_on = capture->hook(stream, bytes);
            capture->inside.fetch_sub(1);
            return go_on;
        });
    {
        std::lock_guard lock(g_graveyard_mutex);
        g_graveyard.push_back(fn);
    }
    return fn;
}

} // namespace

PendingCall<RunObservation> Instance::start_run(const ContainerSpec& spec,
                                                std::shared_ptr<OutputCapture> capture) const {
    auto fn = capturing_sink(capture);
    auto call =
        PendingCall<RunObservation>::start([client = client_, spec = marked(spec), capture, fn] {
            TracedCall traced("run('" + spec.label + "')");
            RunObservation o;
            o.started = std::chrono::steady_clock::now();
            try {
                o.outcome = client->run(spec, *fn, [capture] { ++capture->late_calls; });
                o.ok = true;
                o.breach = host::run_result_breach(o.outcome, spec);
            } catch (const host::RuntimeError& e) {
                o.code = e.code();
                o.key = e.key();
                o.message = e.what();
            } catch (...) {
                o.message = describe_current_exception();
            }
            capture->returned = true;
            o.returned = std::chrono::steady_clock::now();
            return o;
        });
    runs_.emplace_back(spec.label, call);
    return call;
}

bool Instance::has_sessions() const {
    try {
        host::SessionClient::of(*client_);
        return true;
    } catch (const host::RuntimeError&) {
        return false;
    }
}

void Instance::session_create(const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                              std::uint64_t max_lifetime_ms) const {
    budgeted("session create('" + spec.label + "')",
             [=, spec = marked(spec)](host::RuntimeClient& c) {
                 host::SessionClient::of(c).create(spec, idle_timeout_ms, max_lifetime_ms);
             });
}

RunObservation Instance::session_exec(const ContainerSpec& exec,
                                      std::shared_ptr<OutputCapture> capture) const {
    auto fn = capturing_sink(capture);
    return budgeted("session exec('" + exec.label + "')", [=](host::RuntimeClient& c) {
        RunObservation o;
        o.started = std::chrono::steady_clock::now();
        try {
            o.outcome =
                host::SessionClient::of(c).exec(exec, *fn, [capture] { ++capture->late_calls; });
            o.ok = true;
        } catch (const host::RuntimeError& e) {
            o.code = e.code();
            o.key = e.key();
            o.message = e.what();
        }
        capture->returned = true;
        o.returned = std::chrono::steady_clock::now();
        return o;
    });
}

void Instance::session_destroy(const std::string& label) const {
    budgeted("session destroy('" + label + "')",
             [=](host::RuntimeClient& c) { host::SessionClient::of(c).destroy(label); });
}

std::optional<std::string> try_create_and_destroy() {
    try {
        Instance inst = Instance::create();
    } catch (...) {
        return describe_current_exception();
    }
    return std::nullopt;
}

std::optional<std::string> try_preflight() {
    try {
        Instance inst = Instance::create();
        inst.preflight();
        // Mark every box (Harness::mark_boxes) unless the plugin refuses env: a marked spec must
        // not be refused for the mark alone. A describe_spec that fails here is
        // dispositions-complete's to report, not the gate's: the boxes then go unmarked.
        ContainerSpec probe;
        probe.label = Harness::get().label_prefix + "mark";
        probe.image = Harness::get().options.image;
        probe.argv = {"sh", "-c", "true"};
        probe.env = {{kMarkName, probe.label, false}};
        bool refused = true;
        try {
            refused = false;
            for (const auto& d : inst.describe(probe))
                refused = refused ||
                          (d.field == RADIAL_FIELD_ENV && d.disposition == RADIAL_DISP_REFUSED);
        } catch (...) {
            refused = true;
        }
        Harness::get().mark_boxes = !refused;
    } catch (...) {
        return describe_current_exception();
    }
    return std::nullopt;
}

} // namespace radial::conformance
