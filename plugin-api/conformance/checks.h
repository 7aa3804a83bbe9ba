// plugin-api/conformance/checks.h — how a conformance check is written: a GoogleTest case in the
// `Conformance` suite, named in snake_case (reported in kebab-case), with a one-sentence
// description that the harness prints when the check fails, and the gate it needs (docs/design.md
// §5.11).
//
//     CONFORMANCE_CHECK(run_exit_codes, Gate::ready,
//                       "run reports exit codes 0, 1 and 3, and a box killed by SIGKILL") {
//         ...
//     }
//
// Failure messages read as sentences: what was done, what happened, what was expected.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness.h"
#include "plugin_calls.h"

namespace radial::conformance {

// Registers a check's description and gate; returns true (used to run at static-init time).
bool register_check(const char* gtest_name, Gate gate, const char* description);
// The description of a check by its gtest name, or empty.
std::string check_description(const std::string& gtest_name);
// Every registered check: (kebab-case name, description), in registration order.
std::vector<std::pair<std::string, std::string>> all_checks();

// The fixture every check runs in: opens the check's gate (skipping with the reason when it is
// closed), hands out labels unique to this harness run, and on tear-down kills every box the
// check may have left (the check has already asserted what it wanted about them).
class Conformance : public ::testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;

    // This check's instance, created on first use (Gate::created is open when this is called).
    Instance& instance();
    // Destroys this check's instance now (settling its runs first); instance() makes a new one.
    void destroy_instance() { instance_.reset(); }

    // A label unique to this harness run and check: "<prefix><check>-<suffix>".
    std::string label(const std::string& suffix);
    // The label prefix of this check: "<prefix><check>-".
    std::string check_prefix() const;
    // Remembers a label outside check_prefix() for the tear-down to kill.
    void also_clean(const std::string& label) {
        extra_labels_.push_back(label);
        Harness::get().note_label(label);
    }

    // A spec running `script` with `sh -c` in the harness's image, under `label`.
    ContainerSpec shell_spec(const std::string& label, const std::string& script) const;

    // Runs `spec` to its end, waiting at most `budget` (default: the harness budget). A run that
    // does not return in time fails the check, is killed, and the observation says so.
    RunObservation run(const ContainerSpec& spec, std::shared_ptr<OutputCapture> capture,
                       std::optional<std::chrono::milliseconds> budget = std::nullopt);
    // Waits for a run started with instance().start_run() (same rules as run()).
    RunObservation finish(PendingCall<RunObservation>& call, const std::string& label,
                          std::chrono::milliseconds budget);

    // Skips (GTEST_SKIP) when the plugin reports `field` of `spec` as REFUSED or SUPERSEDED:
    // the check needs the field honoured (or bridged). Returns true when skipped.
    bool skip_unless_honoured(const ContainerSpec& spec, std::uint32_t field);

    // The start of every confinement probe: skip_unless_honoured(spec, field), then run(spec)
    // and expect_ran(what). The box's output, or nullptr when the check was skipped or the run
    // failed (already reported).
    std::shared_ptr<OutputCapture> run_probe(const ContainerSpec& spec, std::uint32_t field,
                                             const std::string& what);

    // Fails when the run did not return RADIAL_OK, naming what was run. True when it did.
    static bool expect_ran(const RunObservation& o, const std::string& what);
    // Fails on sink-contract breaches seen during the run (overlapping calls, empty chunks,
    // unknown stream ids).
    static void expect_clean_sink(const OutputCapture& c, const std::string& what);

    // Fails naming every process on the host that still carries this run's mark (after a short
    // grace), and kills them. Called by TearDown after every check.
    void expect_no_marked_process();

    std::chrono::milliseconds budget() const;
    // How long a run may take to return after kill: --kill-grace and a quarter of the budget.
    std::chrono::milliseconds kill_wait() const;

private:
    std::optional<Instance> instance_;
    std::vector<std::string> extra_labels_;
    mutable bool made_labels_ = false; // a label under check_prefix() was handed out
};

// Text of RADIAL_RUN_* flags: "EXITED|TIMED_OUT".
std::string flags_text(std::uint32_t flags);
// How a run ended, as a phrase: "exited with 3", "was killed by signal 9 (flags SIGNALED)".
std::string outcome_text(const RunObservation& o);

// Waits until the run's stdout contains `text`, the run returns or `budget` passes. True when
// seen.
bool wait_for_output(OutputCapture& c, PendingCall<RunObservation>& call, const std::string& text,
                     std::chrono::milliseconds budget);
// A duration in seconds for messages: "2.5 s".
std::string secs(double seconds);
// A duration for messages: "2.5 s".
std::string secs(std::chrono::milliseconds ms);
// A byte string with non-printable bytes escaped, cut to `max` bytes, for messages.
std::string printable(std::string_view bytes, std::size_t max = 200);

} // namespace radial::conformance

#define CONFORMANCE_CHECK(name, gate, description)                       \
    static const bool name##_registered =                                \
        ::radial::conformance::register_check(#name, gate, description); \
    TEST_F(Conformance, name)
