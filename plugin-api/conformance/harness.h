// plugin-api/conformance/harness.h — the state one conformance run shares between its checks: the
// options, the loaded plugin, its config section, the label prefix, the gates, the verdict, and
// the way out when a plugin hangs or crashes the harness (docs/design.md §5.11).
//
// Thread-safety: everything here is set up by main() before the checks run and read afterwards,
// except the verdict and the log, which are guarded by their own mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <radial/host/runtime_client.hpp>
#include <string>
#include <vector>

#include "host_probe.h"
#include "plugin_library.h"

namespace radial::conformance {

// What the command line asked for.
struct Options {
    std::string plugin;                // --plugin PATH.so
    std::optional<std::string> config; // --config FILE.toml
    std::string image;                 // --image IMAGE (empty: the spec carries no image)
    std::chrono::seconds budget{60};   // --budget SECONDS: longest wait for a call to return
    // --kill-grace SECONDS (1-10): how soon after kill a run must return. The ABI's bound is 10 s
    // (docs/design.md §5.3); less only makes the kill checks stricter and a hung run end sooner.
    std::chrono::seconds kill_grace{10};
    // The budget in milliseconds, as every wait takes it.
    std::chrono::milliseconds budget_ms() const {
        return std::chrono::duration_cast<std::chrono::milliseconds>(budget);
    }
    // How long the harness waits for a run to return after kill: the grace and a quarter of the
    // budget for the call's own return path.
    std::chrono::milliseconds kill_wait() const {
        return std::chrono::duration_cast<std::chrono::milliseconds>(kill_grace) + budget_ms() / 4;
    }
    bool list_checks = false; // --list-checks
    // --verify-gone COMMAND: a shell command, run with the label prefix as $1, that prints the
    // label of every box whose label starts with it (running, exited or being created), one a
    // line, by asking the engine itself rather than the plugin. Empty: none given.
    std::string verify_gone;
    // --cleanup COMMAND: a shell command, run with one label as $1, that removes that box by
    // asking the engine itself; used when the plugin did not remove a box. Empty: none given.
    std::string cleanup;
    // --allow-no-describe-spec: a plugin without describe_spec passes dispositions-complete
    // (radiald then refuses every field but label, image, argv and onOutput).
    bool allow_no_describe_spec = false;
};

// What the --verify-gone probe showed for a prefix.
struct ProbeResult {
    std::vector<std::string> boxes; // every non-empty line it printed
    std::string problem;            // why it did not answer (non-zero exit, timeout), or empty
};

// The gates a check may need, in order: each implies the ones before it. A gate that does not
// open is reported as a failure by its own check and makes the checks behind it skip.
enum class Gate {
    none,    // nothing: the check runs even when the library did not load
    loaded,  // the library loaded and its entry returned a descriptor
    usable,  // the descriptor passes this host's negotiation (descriptor_problem)
    created, // `create` succeeds with the config section
    ready,   // `preflight` succeeds: runs can be attempted
};

// How one check ended, for the verdict.
enum class CheckStatus { passed, failed, skipped };

class Harness {
public:
    static Harness& get();

    Options options;
    PluginLibrary library;
    host::ConfigSection config;
    std::string label_prefix; // "rcf<pid>-<random>-": unique to this run of the harness
    // Every box the harness starts carries kMarkName=<label_prefix><label> in its env, unless the
    // plugin refuses env (then nothing marks them). Set when Gate::ready opens.
    std::atomic<bool> mark_boxes{false};

    // The plugin's id and version for the verdict ("?" when the descriptor cannot be read).
    std::string plugin_id() const;
    std::string plugin_version() const;

    // Opens `gate` once (memoised) and returns why it is closed, or nullopt when it is open.
    // Runs create/preflight under the budget; may call hang().
    std::optional<std::string> gate_problem(Gate gate);

    // A new instance of the plugin with `section` (default: the config section), through
    // RuntimeClient, the code path radiald uses. Throws host::RuntimeError (or whatever create
    // let escape) on failure. Blocking.
    host::RuntimeClient create_instance(const host::ConfigSection* section = nullptr) const;

    // Remembers a label the harness handed out, so that a forced exit can remove its box.
    // [thread-safe]
    void note_label(const std::string& label);
    // True when some check handed out a label.
    bool made_labels() const {
        std::lock_guard lock(mutex_);
        return !labels_.empty();
    }

    // Runs the --verify-gone probe for `prefix` under a budget of min(budget, 30 s). Only call
    // when options.verify_gone is set. [thread-safe]
    ProbeResult probe(const std::string& prefix) const;

    // Every prefix the harness's boxes live under: the run's label prefix, then each label handed
    // out outside it (a decoy that must not match the prefix), which the sweeps of the prefix
    // never reach. [thread-safe]
    std::vector<std::string> box_prefixes() const;
    // probe() of every box_prefixes() entry, merged; the first problem wins. [thread-safe]
    ProbeResult probe_all() const;

    // Removes what the harness may have left: kills every noted label through a fresh instance
    // (each call under a short budget, given up when one hangs), runs --cleanup on every box the
    // probe still shows, and returns what is still there (the probe's view, or the noted labels
    // the plugin could not be asked about). Blocking, at most a few budgets long.
    std::vector<std::string> remove_leftovers();

    // The processes on the host that carry this run's mark (kMarkName), after waiting up to
    // `grace` for them to go (a box being removed takes a moment). Empty when boxes are not
    // marked. Blocking.
    std::vector<MarkedProcess> marked_leftovers(std::chrono::milliseconds grace) const;
    // SIGKILLs every process that carries this run's mark and waits (up to 10 s) until none is
    // left: a killed process on a loaded machine can take a while to end, and a later check
    // would find it still there. Returns how many it signalled. Blocking.
    std::size_t kill_marked() const;

    // Records how a check ended. `reason`: the skip reason.
    void record(const std::string& check, CheckStatus status, const std::string& reason = {});
    // The one-line verdict: "radial-conformance: PASS <id> <version> (<n> checks, ...)".
    std::string verdict_line(const std::string& hung_check = {}) const;
    bool any_failed() const;
    // The optional descriptor functions the plugin does not have, in descriptor order: named in
    // a PASS verdict, since their checks pass or skip without probing anything.
    std::vector<std::string> absent_optional_calls() const;

    // Plugin log lines (through radial_host.log) since the last call; printed with a failure.
    void log(std::uint32_t level, std::string_view message);
    std::vector<std::string> take_log();

    // The current check (its kebab-case name), for hang and crash reports.
    void set_current_check(const std::string& check);

    // Points the process's stdout and stderr (fds 1 and 2) at `fd` until restore_stdio(), so a
    // check can see what the plugin writes there; hang() restores them before it reports, and a
    // crash report goes to the saved stdout meanwhile.
    // Flushes C and C++ stdio first. Call from the check's thread.
    void divert_stdio(int fd);
    // Undoes divert_stdio (no-op when not diverted), flushing what was written meanwhile.
    // [thread-safe]
    void restore_stdio();

    // A plugin call did not come back even after its box was killed: prints the failure of the
    // current check and the verdict, then ends the process with status 3. A hung harness is the
    // worst outcome a conformance run can have; this is the way out. Never returns.
    [[noreturn]] void hang(const std::string& what);

    // Prints the verdict and a crash line if the plugin crashes the process (SIGSEGV, SIGABRT,
    // ...). Call once, after the options are known.
    void install_crash_handlers();

private:
    Harness() = default;

    mutable std::mutex mutex_;
    std::vector<std::pair<std::string, CheckStatus>> results_;
    std::map<std::string, std::string> skip_reasons_;
    std::vector<std::string> log_;
    std::map<Gate, std::optional<std::string>> gates_;
    std::string current_check_;
    std::vector<std::string> labels_; // every label handed out, in order
    std::mutex stdio_mutex_;
    int saved_stdout_ = -1, saved_stderr_ = -1; // while diverted
};

// The kebab-case name of a check from its gtest name: "run_exit_codes" -> "run-exit-codes".
std::string kebab(std::string gtest_name);

// "a, b, c": the first `max` items of `items`, then ", ... (N in all)" when there are more.
std::string join(const std::vector<std::string>& items,
                 std::size_t max = std::numeric_limits<std::size_t>::max());

} // namespace radial::conformance
