// Checks of control over a run: the sink after return, aborting through the sink, timeouts,
// kill, list_by_label's prefix rule, and concurrent runs on one instance (docs/design.md §5.11).
#include <algorithm>
#include <set>
#include <thread>

#include "checks.h"
#include "host_probe.h"

namespace radial::conformance {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "'" : ", '") + x + "'";
    return s.empty() ? "nothing" : s;
}

double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

} // namespace

CONFORMANCE_CHECK(no_output_after_return, Gate::ready,
                  "The output sink is never called after run returns (watched for 1 s).") {
    std::string l = label("late");
    auto capture = std::make_shared<OutputCapture>();
    RunObservation o = run(shell_spec(l, "echo a; echo b >&2; echo c"), capture);
    if (!expect_ran(o, "run of `echo a; echo b >&2; echo c`")) return;
    std::this_thread::sleep_for(1s);
    EXPECT_EQ(capture->late_calls.load(), 0)
        << "the output sink was called " << capture->late_calls.load()
        << " time(s) within 1 s after run returned; the sink (and its context) is gone by then, so "
           "the host would read freed memory";
    EXPECT_EQ(capture->out, "a\nc\n");
    EXPECT_EQ(capture->err, "b\n");
}

CONFORMANCE_CHECK(output_abort_ends_run, Gate::ready,
                  "A non-zero return from the output sink ends the run within 10 s with "
                  "OUTPUT_ABORTED, and no box is left.") {
    std::string l = label("abort");
    auto capture = std::make_shared<OutputCapture>();
    auto aborted_at = std::make_shared<std::atomic<std::int64_t>>(0);
    capture->hook = [aborted_at](std::uint32_t, std::string_view) {
        std::int64_t zero = 0;
        aborted_at->compare_exchange_strong(zero, Clock::now().time_since_epoch().count());
        return false;
    };
    RunObservation o = run(shell_spec(l, "echo started; sleep 600"), capture, budget());
    if (!expect_ran(o, "run of `echo started; sleep 600` whose sink asks to stop")) return;
    ASSERT_NE(aborted_at->load(), 0) << "the run produced no output to abort on";
    double after = std::chrono::duration<double>(
                       o.returned - Clock::time_point(Clock::duration(aborted_at->load())))
                       .count();
    EXPECT_FALSE(o.needed_kill) << "run did not end when its sink returned non-zero";
    EXPECT_LT(after, 10.0) << "run returned " << secs(after)
                           << " after its sink returned non-zero; the ABI allows 10 s";
    EXPECT_TRUE(o.outcome.flags & RADIAL_RUN_OUTPUT_ABORTED)
        << "the run " << outcome_text(o) << "; expected OUTPUT_ABORTED";
    EXPECT_FALSE(contains(instance().list(l), l))
        << "list_by_label still shows '" << l << "' after the aborted run returned";
}

CONFORMANCE_CHECK(run_timeout, Gate::ready,
                  "timeout_ms ends a run that would last 600 s with TIMED_OUT, and no box is "
                  "left.") {
    std::string l = label("timeout");
    ContainerSpec spec = shell_spec(l, "echo started; sleep 600");
    spec.timeout_ms = 2000;
    if (skip_unless_honoured(spec, RADIAL_FIELD_TIMEOUT_MS)) return;
    auto capture = std::make_shared<OutputCapture>();
    RunObservation o = run(spec, capture, 2s + std::min<std::chrono::milliseconds>(budget(), 20s));
    if (!expect_ran(o, "run of `sleep 600` with timeoutMs 2000")) return;
    EXPECT_FALSE(o.needed_kill) << "timeoutMs 2000 did not end the run; the harness had to kill it";
    EXPECT_TRUE(o.outcome.flags & RADIAL_RUN_TIMED_OUT)
        << "the run with timeoutMs 2000 " << outcome_text(o) << " after " << secs(o.seconds())
        << "; expected TIMED_OUT";
    auto listed = instance().list(l);
    EXPECT_FALSE(contains(listed, l))
        << "list_by_label('" << l
        << "') still shows the box after its run timed out: " << joined(listed);
}

CONFORMANCE_CHECK(kill_during_run, Gate::ready,
                  "kill from another thread while run blocks makes run return within 10 s with "
                  "KILLED, and no box is left.") {
    std::string l = label("kill");
    auto capture = std::make_shared<OutputCapture>();
    auto call = instance().start_run(shell_spec(l, "echo started; sleep 600"), capture);
    if (!wait_for_output(*capture, call, "started", budget())) {
        RunObservation o = finish(call, l, budget());
        FAIL() << "the box never printed 'started' (the run " << outcome_text(o) << ")";
    }
    auto killed_at = Clock::now();
    try {
        instance().kill(l);
    } catch (...) {
        ADD_FAILURE() << "kill('" << l
                      << "') of a running box failed: " << describe_current_exception();
    }
    double kill_seconds = since(killed_at);
    RunObservation o = finish(call, l, kill_wait());
    double after = std::chrono::duration<double>(o.returned - killed_at).count();
    EXPECT_LT(after, 10.0) << "run returned " << secs(after) << " after kill('" << l
                           << "'); the ABI allows 10 s";
    if (o.ok) {
        EXPECT_TRUE(o.outcome.flags & RADIAL_RUN_KILLED)
            << "the killed run " << outcome_text(o) << "; expected KILLED";
    }
    auto listed = instance().list(l);
    EXPECT_FALSE(contains(listed, l)) << "list_by_label('" << l
                                      << "') still shows the box after kill returned and run "
                                         "returned: "
                                      << joined(listed);
    std::cout << "  kill returned after " << secs(kill_seconds) << ", run after " << secs(after)
              << "\n";
}

CONFORMANCE_CHECK(kill_from_output_callback, Gate::ready,
                  "kill called from inside the output sink returns, and the run then ends "
                  "within 10 s with KILLED: the sink is not a lock kill waits on.") {
    std::string l = label("kill-in-sink");
    auto capture = std::make_shared<OutputCapture>();
    struct KillState {
        std::mutex mutex;
        bool called = false;
        std::string error;
        Clock::time_point at{}, returned{};
    };
    auto state = std::make_shared<KillState>();
    // The check's instance outlives the run (finish() below waits for it).
    Instance* inst = &instance();
    capture->hook = [state, inst, l](std::uint32_t, std::string_view) {
        {
            std::lock_guard lock(state->mutex);
            if (state->called) return true;
            state->called = true;
            state->at = Clock::now();
        }
        std::string error;
        try {
            // On the plugin's own thread, inside the sink, as a host that decides to stop a run
            // while handling its output does. The watchdog keeps the budget.
            Watchdog watchdog("kill('" + l + "') called from inside the output sink",
                              std::chrono::duration_cast<std::chrono::milliseconds>(
                                  Harness::get().options.budget));
            inst->kill_on_this_thread(l);
        } catch (...) {
            error = describe_current_exception();
        }
        std::lock_guard lock(state->mutex);
        state->error = error;
        state->returned = Clock::now();
        return true;
    };
    RunObservation o = run(shell_spec(l, "echo started; sleep 600"), capture, kill_wait());
    std::lock_guard lock(state->mutex);
    ASSERT_TRUE(state->called) << "the box printed nothing to call kill on (the run "
                               << outcome_text(o) << ")";
    EXPECT_TRUE(state->error.empty())
        << "kill('" << l << "') called from inside the output sink failed: " << state->error;
    double kill_took = std::chrono::duration<double>(state->returned - state->at).count();
    EXPECT_LT(kill_took, 10.0) << "kill('" << l << "') called from inside the output sink took "
                               << secs(kill_took)
                               << " to return; it must not wait for the sink call to end";
    EXPECT_FALSE(o.needed_kill) << "the run did not end after kill from inside the output sink";
    if (o.ok) {
        EXPECT_TRUE(o.outcome.flags & RADIAL_RUN_KILLED)
            << "the run killed from inside its sink " << outcome_text(o) << "; expected KILLED";
    }
    auto listed = instance().list(l);
    EXPECT_FALSE(contains(listed, l)) << "list_by_label('" << l << "') still shows the box after "
                                      << "kill from inside the sink: " << joined(listed);
}

CONFORMANCE_CHECK(no_box_left, Gate::ready,
                  "The engine itself (the --verify-gone probe) shows a box while it runs, and no "
                  "box once its run returned: neither one whose workload exited by itself (with "
                  "0 and with 3) nor one that was killed; list_by_label agrees.") {
    auto& h = Harness::get();
    if (h.options.verify_gone.empty())
        GTEST_SKIP() << "no --verify-gone probe was given, so boxes left behind were looked for "
                        "only through the plugin's own list_by_label; give a command that asks "
                        "the engine, e.g. --verify-gone 'docker ps -a --filter \"name=^$1\" "
                        "--format {{.Names}}'";
    std::string running = label("running");
    auto capture = std::make_shared<OutputCapture>();
    auto call = instance().start_run(shell_spec(running, "echo started; sleep 600"), capture);
    if (wait_for_output(*capture, call, "started", budget())) {
        ProbeResult p = h.probe(running);
        EXPECT_TRUE(p.problem.empty()) << p.problem;
        EXPECT_TRUE(contains(p.boxes, running))
            << "the --verify-gone probe, run with '" << running << "' while that box ran, printed "
            << joined(p.boxes)
            << "; it must print the label of every box whose label starts with $1, or it proves "
               "nothing when it prints nothing";
    } else {
        ADD_FAILURE() << "the box '" << running << "' never printed 'started'";
    }
    try {
        instance().kill(running);
    } catch (...) {
        ADD_FAILURE() << "kill('" << running << "') failed: " << describe_current_exception();
    }
    (void)finish(call, running, kill_wait());
    ProbeResult killed = h.probe(running);
    EXPECT_TRUE(killed.boxes.empty())
        << "after kill('" << running << "') and its run returned, the --verify-gone probe still "
        << "shows " << joined(killed.boxes);
    for (int code : {0, 3}) {
        std::string l = label("exited" + std::to_string(code));
        std::string what = "run of `sh -c 'echo bye; exit " + std::to_string(code) + "'`";
        RunObservation o = run(shell_spec(l, "echo bye; exit " + std::to_string(code)),
                               std::make_shared<OutputCapture>());
        if (!expect_ran(o, what)) continue;
        ProbeResult p = h.probe(l);
        EXPECT_TRUE(p.problem.empty()) << p.problem;
        auto listed = instance().list(l);
        EXPECT_TRUE(p.boxes.empty())
            << "after the " << what << " returned, the --verify-gone probe still shows "
            << joined(p.boxes) << " (the plugin's list_by_label shows " << joined(listed)
            << "): a box is removed when its workload exits by itself too, not only when it is "
               "killed";
        EXPECT_TRUE(listed.empty() || !p.boxes.empty())
            << "after the " << what << " returned, list_by_label('" << l << "') shows "
            << joined(listed) << ", which the engine does not have";
    }
}

CONFORMANCE_CHECK(kill_cross_instance, Gate::ready,
                  "A second instance, as a radiald restarted after a crash would be, lists a box "
                  "the first instance started and kills it: the box is gone when kill returns "
                  "and the first instance's run returns within 10 s.") {
    std::string l = label("orphan");
    auto capture = std::make_shared<OutputCapture>();
    auto call = instance().start_run(shell_spec(l, "echo started; sleep 600"), capture);
    if (!wait_for_output(*capture, call, "started", budget())) {
        RunObservation o = finish(call, l, budget());
        FAIL() << "the box never printed 'started' (the run " << outcome_text(o) << ")";
    }
    {
        Instance second = Instance::create();
        auto listed = second.list(l);
        EXPECT_TRUE(contains(listed, l))
            << "a second instance's list_by_label('" << l << "') returned " << joined(listed)
            << " while the first instance's box '" << l << "' ran; a restarted host must find "
            << "the boxes its crashed predecessor left";
        auto killed_at = Clock::now();
        try {
            second.kill(l);
        } catch (...) {
            ADD_FAILURE() << "the second instance's kill('" << l
                          << "') failed: " << describe_current_exception();
        }
        std::cout << "  the second instance's kill returned after " << secs(since(killed_at))
                  << "\n";
        auto after = second.list(l);
        EXPECT_FALSE(contains(after, l))
            << "after the second instance's kill('" << l << "') returned, its list_by_label still "
            << "shows the box; kill acts on every box with the label, not only on boxes this "
            << "instance started";
        if (!Harness::get().options.verify_gone.empty()) {
            ProbeResult p = Harness::get().probe(l);
            EXPECT_TRUE(p.boxes.empty())
                << "after the second instance's kill('" << l << "') returned, the --verify-gone "
                << "probe still shows " << joined(p.boxes)
                << "; kill's postcondition is that no box with that label exists";
        }
    }
    RunObservation o = finish(call, l, kill_wait());
    EXPECT_FALSE(o.needed_kill)
        << "the first instance's run of '" << l << "' did not return after the second instance "
        << "killed its box; the harness had to kill it through the first instance (does kill act "
        << "only on boxes this instance started?)";
}

CONFORMANCE_CHECK(kill_unknown_label, Gate::ready,
                  "kill of a label that never existed, and a second kill of a finished box, "
                  "both succeed.") {
    std::string never = label("never-existed");
    try {
        instance().kill(never);
    } catch (...) {
        ADD_FAILURE() << "kill('" << never
                      << "') of a label that never existed failed: " << describe_current_exception()
                      << "; an unknown label is RADIAL_OK";
    }
    std::string l = label("twice");
    auto capture = std::make_shared<OutputCapture>();
    RunObservation o = run(shell_spec(l, "true"), capture);
    expect_ran(o, "run of `true`");
    for (int i = 1; i <= 2; ++i) {
        try {
            instance().kill(l);
        } catch (...) {
            ADD_FAILURE() << "kill('" << l << "') number " << i
                          << " after its run ended failed: " << describe_current_exception();
        }
    }
}

CONFORMANCE_CHECK(list_by_label_prefix, Gate::ready,
                  "list_by_label returns exactly the boxes whose label starts with the prefix, "
                  "also to another instance, and not a box whose label merely contains it.") {
    const std::string p = check_prefix();
    const std::string a1 = p + "a-1", a2 = p + "a-2", b1 = p + "b-1", inner = "x" + p + "a-3";
    also_clean(inner);
    struct Box {
        std::string label;
        std::shared_ptr<OutputCapture> capture;
        PendingCall<RunObservation> call;
    };
    std::vector<Box> boxes;
    for (const auto& l : {a1, a2, b1, inner}) {
        auto capture = std::make_shared<OutputCapture>();
        boxes.push_back(
            {l, capture, instance().start_run(shell_spec(l, "echo started; sleep 600"), capture)});
    }
    bool all_started = true;
    for (auto& b : boxes)
        all_started = wait_for_output(*b.capture, b.call, "started", budget()) && all_started;
    EXPECT_TRUE(all_started) << "not every box printed 'started'";
    if (all_started) {
        auto listed = instance().list(p + "a-");
        std::set<std::string> got(listed.begin(), listed.end());
        EXPECT_EQ(got, (std::set<std::string>{a1, a2}))
            << "list_by_label('" << p << "a-') with boxes '" << a1 << "', '" << a2 << "', '" << b1
            << "' and '" << inner << "' running returned " << joined(listed)
            << "; expected exactly the first two";
        EXPECT_EQ(listed.size(), got.size())
            << "list_by_label returned a label twice: " << joined(listed);
        auto all = instance().list(p);
        EXPECT_TRUE(contains(all, a1) && contains(all, a2) && contains(all, b1) &&
                    !contains(all, inner))
            << "list_by_label('" << p << "') returned " << joined(all) << "; expected '" << a1
            << "', '" << a2 << "' and '" << b1 << "' and not '" << inner << "'";
        Instance other = Instance::create();
        auto other_listed = other.list(p + "a-");
        std::set<std::string> other_got(other_listed.begin(), other_listed.end());
        EXPECT_EQ(other_got, (std::set<std::string>{a1, a2}))
            << "a second instance's list_by_label('" << p << "a-') returned "
            << joined(other_listed) << "; it must see boxes it did not create (reconciliation)";
    }
    for (auto& b : boxes) {
        try {
            instance().kill(b.label);
        } catch (...) {
            ADD_FAILURE() << "kill('" << b.label
                          << "') of a running box failed: " << describe_current_exception();
        }
    }
    for (auto& b : boxes) finish(b.call, b.label, kill_wait());
    auto left = instance().list(p);
    EXPECT_TRUE(left.empty()) << "after every box was killed and every run returned, "
                              << "list_by_label('" << p << "') still returned " << joined(left);
}

CONFORMANCE_CHECK(concurrent_runs, Gate::ready,
                  "Four runs on one instance at once, with list_by_label and describe_spec "
                  "called meanwhile, each get exactly their own output.") {
    const int runs = 4, lines = 300;
    struct Run {
        std::string label;
        std::shared_ptr<OutputCapture> capture;
        PendingCall<RunObservation> call;
    };
    std::vector<Run> all;
    for (int k = 0; k < runs; ++k) {
        std::string l = label("r" + std::to_string(k));
        auto capture = std::make_shared<OutputCapture>();
        std::string script = "i=0; while [ $i -lt " + std::to_string(lines) + " ]; do echo \"" +
                             std::to_string(k) + " $i\"; echo \"" + std::to_string(k) +
                             " err $i\" >&2; i=$((i+1)); done";
        all.push_back({l, capture, instance().start_run(shell_spec(l, script), capture)});
    }
    // The other [thread-safe] calls, while the runs are in flight.
    for (int i = 0; i < 3; ++i) {
        (void)instance().list(check_prefix());
        (void)instance().describe(shell_spec(label("d"), "true"));
    }
    for (int k = 0; k < runs; ++k) {
        RunObservation o = finish(all[k].call, all[k].label, budget());
        if (!expect_ran(o, "concurrent run " + std::to_string(k))) continue;
        std::string want_out, want_err;
        for (int i = 0; i < lines; ++i) {
            want_out += std::to_string(k) + " " + std::to_string(i) + "\n";
            want_err += std::to_string(k) + " err " + std::to_string(i) + "\n";
        }
        EXPECT_TRUE(all[k].capture->out == want_out)
            << "concurrent run " << k << "'s stdout was not exactly its own lines: '"
            << printable(all[k].capture->out) << "'";
        EXPECT_TRUE(all[k].capture->err == want_err)
            << "concurrent run " << k << "'s stderr was not exactly its own lines: '"
            << printable(all[k].capture->err) << "'";
        expect_clean_sink(*all[k].capture, "concurrent run " + std::to_string(k));
    }
}

} // namespace radial::conformance
