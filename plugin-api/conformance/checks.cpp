#include "checks.h"

#include <cstdio>
#include <iostream>

#include "host_probe.h"

namespace radial::conformance {
namespace {

struct CheckInfo {
    Gate gate = Gate::none;
    std::string description;
};

struct Registry {
    std::map<std::string, CheckInfo> by_name;
    std::vector<std::string> order;
};

Registry& registry() {
    static Registry r;
    return r;
}

const char* gate_name(Gate g) {
    switch (g) {
        case Gate::none: return "nothing";
        case Gate::loaded: return "a loaded plugin";
        case Gate::usable: return "a plugin this host accepts";
        case Gate::created: return "an instance";
        case Gate::ready: return "a plugin whose preflight passes";
    }
    return "?";
}

std::string current_test_name() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return info != nullptr ? info->name() : "";
}

} // namespace

bool register_check(const char* gtest_name, Gate gate, const char* description) {
    auto& r = registry();
    r.by_name[gtest_name] = CheckInfo{gate, description};
    r.order.emplace_back(gtest_name);
    return true;
}

std::string check_description(const std::string& gtest_name) {
    auto& r = registry();
    auto it = r.by_name.find(gtest_name);
    return it == r.by_name.end() ? std::string() : it->second.description;
}

std::vector<std::pair<std::string, std::string>> all_checks() {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& name : registry().order)
        out.emplace_back(kebab(name), registry().by_name[name].description);
    return out;
}

void Conformance::SetUp() {
    Gate gate = Gate::none;
    auto it = registry().by_name.find(current_test_name());
    if (it != registry().by_name.end()) gate = it->second.gate;
    if (auto problem = Harness::get().gate_problem(gate))
        GTEST_SKIP() << "this check needs " << gate_name(gate) << ", and " << *problem;
}

void Conformance::TearDown() {
    auto& h = Harness::get();
    const bool made_labels = made_labels_; // check_prefix() below would set it
    if (instance_) {
        // Best effort, but still under the budget: the check has asserted what it wanted about
        // its boxes; this only keeps a failing plugin from leaving them running after the
        // harness.
        std::vector<std::string> labels = extra_labels_;
        try {
            for (const auto& l : instance_->list(check_prefix())) labels.push_back(l);
        } catch (...) {
            std::cerr << "radial-conformance: cleanup: listing '" << check_prefix()
                      << "' failed: " << describe_current_exception() << "\n";
        }
        for (const auto& l : labels) {
            try {
                instance_->kill(l);
            } catch (...) {
                std::cerr << "radial-conformance: cleanup: kill('" << l
                          << "') failed: " << describe_current_exception() << "\n";
            }
        }
        instance_.reset();
    }
    expect_no_marked_process();
    if (!made_labels || h.options.verify_gone.empty()) return;
    // The engine's own account, not the plugin's: a box the plugin forgot (an exited one it never
    // removed, one its list_by_label does not show) is still a box left behind.
    const std::string prefix = check_prefix();
    ProbeResult p = h.probe(prefix);
    // A label outside the check's prefix (a decoy) is probed by itself: the prefix misses it.
    for (const auto& l : extra_labels_) {
        if (l.rfind(prefix, 0) == 0) continue;
        ProbeResult q = h.probe(l);
        if (p.problem.empty()) p.problem = q.problem;
        for (auto& b : q.boxes) p.boxes.push_back(std::move(b));
    }
    if (!p.problem.empty()) {
        ADD_FAILURE() << "after the check, " << p.problem << "; it was run as: sh -c '"
                      << h.options.verify_gone << "' radial-conformance '" << prefix << "'";
        return;
    }
    if (p.boxes.empty()) return;
    std::string shown;
    for (const auto& b : p.boxes) shown += (shown.empty() ? "'" : ", '") + b + "'";
    ADD_FAILURE() << "after the check (and the harness's kill of every box the plugin's "
                  << "list_by_label('" << prefix << "') showed), the --verify-gone probe still "
                  << "shows " << shown
                  << ": the plugin left boxes behind. A box is removed whatever ends it, also "
                     "when its workload exits by itself, and list_by_label lists every box with "
                     "the prefix, running or not";
    if (!h.options.cleanup.empty())
        for (const auto& b : p.boxes) (void)run_command(h.options.cleanup, {b}, budget());
}

void Conformance::expect_no_marked_process() {
    using namespace std::chrono_literals;
    auto& h = Harness::get();
    // The harness's own account, needing neither the plugin nor --verify-gone: a process that
    // carries this run's mark outlived the kill of every box (docs/design.md §5.11). Removing a
    // box takes a moment, hence the grace.
    auto left = h.marked_leftovers(std::min<std::chrono::milliseconds>(kill_wait(), 10s));
    if (left.empty()) return;
    std::string shown;
    for (const auto& p : left)
        shown += (shown.empty() ? "" : ", ") + std::to_string(p.pid) + " '" + p.cmdline + "'";
    ADD_FAILURE() << "after the check and the kill of every box, " << left.size()
                  << " process(es) on the host still carry this run's " << kMarkName
                  << ", which the harness put in each box's env: " << shown << ". The plugin "
                  << h.plugin_id() << " left them running (whatever --verify-gone shows); "
                  << "a box's processes end with the box. The harness kills them";
    (void)h.kill_marked();
}

Instance& Conformance::instance() {
    if (!instance_) instance_.emplace(Instance::create());
    return *instance_;
}

std::string Conformance::check_prefix() const {
    made_labels_ = true;
    std::string check = kebab(current_test_name());
    // Labels are at most 128 bytes; the check part is short enough in every check.
    return Harness::get().label_prefix + check + "-";
}

std::string Conformance::label(const std::string& suffix) {
    std::string l = check_prefix() + suffix;
    Harness::get().note_label(l);
    return l;
}

ContainerSpec Conformance::shell_spec(const std::string& label, const std::string& script) const {
    ContainerSpec s;
    s.label = label;
    s.image = Harness::get().options.image;
    s.argv = {"sh", "-c", script};
    return s;
}

std::chrono::milliseconds Conformance::budget() const { return Harness::get().options.budget_ms(); }

std::chrono::milliseconds Conformance::kill_wait() const {
    return Harness::get().options.kill_wait();
}

RunObservation Conformance::run(const ContainerSpec& spec, std::shared_ptr<OutputCapture> capture,
                                std::optional<std::chrono::milliseconds> run_budget) {
    auto call = instance().start_run(spec, std::move(capture));
    return finish(call, spec.label, run_budget.value_or(budget()));
}

RunObservation Conformance::finish(PendingCall<RunObservation>& call, const std::string& label,
                                   std::chrono::milliseconds run_budget) {
    // Every run's result, whatever the check looks at: radiald records one that contradicts
    // itself as the plugin's error.
    auto checked = [&](RunObservation o) {
        EXPECT_TRUE(o.breach.empty())
            << "run of '" << label << "' returned a result that " << o.breach
            << " (radial/runtime_plugin.h, RADIAL_RUN_*); radiald records such a run as the "
               "runtime's error";
        return o;
    };
    if (call.wait_for(run_budget)) return checked(call.get());
    ADD_FAILURE() << "run of '" << label << "' did not return within " << secs(run_budget)
                  << "; the harness calls kill('" << label << "')";
    try {
        instance().kill(label);
    } catch (...) {
        ADD_FAILURE() << "kill('" << label << "') failed: " << describe_current_exception();
    }
    // The ABI's promise: a run in flight returns within 10 s of kill (--kill-grace: sooner).
    const auto& options = Harness::get().options;
    if (!call.wait_for(options.kill_wait()))
        Harness::get().hang("run of '" + label + "' did not return within " + secs(run_budget) +
                            ", nor within " + std::to_string(options.kill_grace.count()) +
                            " s of kill('" + label + "')");
    RunObservation o = checked(call.get());
    o.needed_kill = true;
    return o;
}

bool Conformance::skip_unless_honoured(const ContainerSpec& spec, std::uint32_t field) {
    for (const auto& d : instance().describe(spec)) {
        if (d.field != field) continue;
        if (d.disposition == RADIAL_DISP_REFUSED || d.disposition == RADIAL_DISP_SUPERSEDED) {
            const char* what = d.disposition == RADIAL_DISP_REFUSED ? "REFUSED" : "SUPERSEDED";
            // GTEST_SKIP() returns from the enclosing function, which must be void; this is
            // what it expands to, minus the return. The caller returns when this is true.
            ::testing::internal::AssertHelper(::testing::TestPartResult::kSkip, __FILE__, __LINE__,
                                              "") =
                ::testing::Message() << "the plugin reports " << field_name(field) << " " << what
                                     << (d.note.empty() ? "" : " (" + d.note + ")");
            return true;
        }
    }
    return false;
}

std::shared_ptr<OutputCapture> Conformance::run_probe(const ContainerSpec& spec,
                                                      std::uint32_t field,
                                                      const std::string& what) {
    if (skip_unless_honoured(spec, field)) return nullptr;
    auto capture = std::make_shared<OutputCapture>();
    if (!expect_ran(run(spec, capture), what)) return nullptr;
    return capture;
}

bool Conformance::expect_ran(const RunObservation& o, const std::string& what) {
    if (o.ok) return true;
    ADD_FAILURE() << what << " failed instead of running: "
                  << (o.code != 0 ? "status " + std::to_string(o.code) + " (" +
                                        std::string(host::status_name(o.code)) + ")"
                                  : std::string("no status"))
                  << (o.key.empty() ? "" : " about '" + o.key + "'") << ": " << o.message;
    return false;
}

void Conformance::expect_clean_sink(const OutputCapture& c, const std::string& what) {
    EXPECT_EQ(c.overlaps.load(), 0)
        << "during " << what << ", the output sink was called " << c.overlaps.load()
        << " times while another call for the same run was still in progress; the ABI "
           "serialises sink calls per run";
    EXPECT_EQ(c.empty_chunks, 0u) << "during " << what << ", the output sink was called "
                                  << c.empty_chunks
                                  << " times with zero bytes; chunks are at least one byte";
    EXPECT_EQ(c.unknown_stream, 0u)
        << "during " << what << ", " << c.unknown_stream
        << " chunks carried a stream id other than RADIAL_STREAM_STDOUT or RADIAL_STREAM_STDERR";
}

std::string flags_text(std::uint32_t flags) {
    static constexpr std::pair<std::uint32_t, const char*> names[] = {
        {RADIAL_RUN_EXITED, "EXITED"},         {RADIAL_RUN_SIGNALED, "SIGNALED"},
        {RADIAL_RUN_TIMED_OUT, "TIMED_OUT"},   {RADIAL_RUN_KILLED, "KILLED"},
        {RADIAL_RUN_OOM_KILLED, "OOM_KILLED"}, {RADIAL_RUN_OUTPUT_ABORTED, "OUTPUT_ABORTED"}};
    std::string s;
    for (const auto& [bit, name] : names)
        if (flags & bit) s += (s.empty() ? "" : "|") + std::string(name);
    return s.empty() ? "none" : s;
}

bool wait_for_output(OutputCapture& c, PendingCall<RunObservation>& call, const std::string& text,
                     std::chrono::milliseconds budget) {
    // Real time: the box is a real process on a real engine.
    const auto deadline = std::chrono::steady_clock::now() + budget;
    while (std::chrono::steady_clock::now() < deadline) {
        {
            std::lock_guard lock(c.mutex);
            if (c.out.find(text) != std::string::npos) return true;
        }
        if (call.wait_for(std::chrono::milliseconds(50))) return false;
    }
    return false;
}

std::string outcome_text(const RunObservation& o) {
    if (!o.ok) return "failed (" + o.message + ")";
    const auto& r = o.outcome;
    std::string s;
    if (r.flags & RADIAL_RUN_EXITED)
        s = "exited with " + std::to_string(r.exit_code);
    else if (r.flags & RADIAL_RUN_SIGNALED)
        s = "was ended by signal " + std::to_string(r.term_signal);
    else
        s = "ended";
    return s + " (flags " + flags_text(r.flags) + ")";
}

std::string secs(double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", seconds);
    return buf;
}

std::string secs(std::chrono::milliseconds ms) { return secs(ms.count() / 1000.0); }

std::string printable(std::string_view bytes, std::size_t max) {
    std::string s;
    for (std::size_t i = 0; i < bytes.size() && i < max; ++i) {
        auto c = static_cast<unsigned char>(bytes[i]);
        if (c == '\n')
            s += "\\n";
        else if (c == '\\')
            s += "\\\\";
        else if (c >= 0x20 && c < 0x7f)
            s += static_cast<char>(c);
        else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            s += buf;
        }
    }
    if (bytes.size() > max) s += "... (" + std::to_string(bytes.size()) + " bytes)";
    return s;
}

} // namespace radial::conformance
