// radial-conformance — checks that a runtime plugin keeps the promises of the runtime ABI
// (radial/runtime_plugin.h). (docs/design.md §5.11).
//
//   radial-conformance --plugin PATH.so [--config FILE.toml] [--image IMAGE] [--budget SECONDS]
//                      [--verify-gone COMMAND] [--cleanup COMMAND] [--list-checks]
//                      [--gtest_filter=Conformance.run_*] [other --gtest_ flags]
//
// Output: GoogleTest's, then one verdict line:
//   radial-conformance: PASS <id> <version> (<n> checks, <k> skipped: a, b)
//   radial-conformance: FAIL <id> <version> (failed: a, b)
// Exit status: 0 when every check passed or skipped, 1 when one failed, 2 for a usage or config
// error, 3 when a plugin call hung (the harness ends itself rather than hang too), or the signal
// the plugin crashed the process with.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>

#include "call_trace.h"
#include "checks.h"
#include "config_file.h"
#include "harness.h"
#include "pending_call.h"
#include "plugin_calls.h"

namespace radial::conformance {
namespace {

constexpr const char* kUsage =
    "usage: radial-conformance --plugin PATH.so [--config FILE.toml] [--image IMAGE]\n"
    "                          [--budget SECONDS] [--kill-grace SECONDS]\n"
    "                          [--verify-gone COMMAND] [--cleanup COMMAND]\n"
    "                          [--allow-no-describe-spec] [--list-checks] [--gtest_* flags]\n"
    "\n"
    "  --plugin PATH.so    the runtime plugin to check\n"
    "  --config FILE.toml  a config file; its [run.<id>] table is passed to create, flattened\n"
    "                      as radiald does\n"
    "  --image IMAGE       the image boxes run (needs a POSIX sh with printf, seq, head, tr, cat,\n"
    "                      pwd and sleep); empty: the spec carries none\n"
    "  --budget SECONDS    the longest the harness waits for one plugin call (default 60)\n"
    "  --kill-grace SECONDS  how soon after kill a run must return, 1 to 10 (default 10, the\n"
    "                      ABI's bound); less is stricter, and a run that never returns is\n"
    "                      given up on sooner\n"
    "  --verify-gone CMD   a shell command, run with a label prefix as $1, that prints the\n"
    "                      label of every box (running, exited or being created) whose label\n"
    "                      starts with it, one a line, asking the engine rather than the plugin;\n"
    "                      e.g. docker ps -a --filter \"name=^$1\" --format '{{.Names}}'.\n"
    "                      After every check and at the end, a box it shows is a failure\n"
    "  --cleanup CMD       a shell command, run with one label as $1, that removes that box\n"
    "                      (e.g. docker rm -f \"$1\"); used on boxes the plugin left behind\n"
    "  --allow-no-describe-spec  pass a plugin without describe_spec (radiald then refuses\n"
    "                      every field but label, image, argv and onOutput)\n"
    "  --list-checks       print every check with its description and exit\n";

// Prints each failed check's description and the plugin's log, and records every result.
class VerdictListener : public ::testing::EmptyTestEventListener {
    void OnTestStart(const ::testing::TestInfo& info) override {
        Harness::get().set_current_check(kebab(info.name()));
        (void)Harness::get().take_log();
    }
    void OnTestEnd(const ::testing::TestInfo& info) override {
        const auto* result = info.result();
        std::string name = kebab(info.name());
        auto& h = Harness::get();
        if (result->Skipped()) {
            std::string reason;
            for (int i = 0; i < result->total_part_count(); ++i)
                if (result->GetTestPartResult(i).skipped())
                    reason = result->GetTestPartResult(i).message();
            h.record(name, CheckStatus::skipped, reason);
        } else if (result->Failed()) {
            std::cout << "[  CHECK   ] " << name << ": " << check_description(info.name()) << "\n";
            for (const auto& line : h.take_log()) std::cout << "[  PLUGIN  ] " << line << "\n";
            h.record(name, CheckStatus::failed);
        } else {
            h.record(name, CheckStatus::passed);
        }
        h.set_current_check("");
    }
};

// Parses the harness's own flags and removes them from argv, leaving GoogleTest's. Exits 2 on
// a usage error.
Options parse(int& argc, char** argv) {
    Options o;
    int out = 1;
    auto value = [&](int& i, const char* flag) -> std::string {
        std::string a = argv[i];
        std::string eq = std::string(flag) + "=";
        if (a.rfind(eq, 0) == 0) return a.substr(eq.size());
        if (i + 1 >= argc) {
            std::cerr << "radial-conformance: " << flag << " needs a value\n" << kUsage;
            std::exit(2);
        }
        return argv[++i];
    };
    auto is = [&](const std::string& a, const char* flag) {
        return a == flag || a.rfind(std::string(flag) + "=", 0) == 0;
    };
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (is(a, "--plugin"))
            o.plugin = value(i, "--plugin");
        else if (is(a, "--config"))
            o.config = value(i, "--config");
        else if (is(a, "--image"))
            o.image = value(i, "--image");
        else if (is(a, "--budget")) {
            std::string v = value(i, "--budget");
            char* end = nullptr;
            long s = std::strtol(v.c_str(), &end, 10);
            if (end == v.c_str() || *end != 0 || s <= 0) {
                std::cerr << "radial-conformance: --budget must be a positive number of seconds, "
                             "not '"
                          << v << "'\n";
                std::exit(2);
            }
            o.budget = std::chrono::seconds(s);
        } else if (is(a, "--kill-grace")) {
            std::string v = value(i, "--kill-grace");
            char* end = nullptr;
            long s = std::strtol(v.c_str(), &end, 10);
            if (end == v.c_str() || *end != 0 || s < 1 || s > 10) {
                std::cerr << "radial-conformance: --kill-grace must be a whole number of seconds "
                             "from 1 to 10 (the ABI lets a run take 10 s to return after kill), "
                             "not '"
                          << v << "'\n";
                std::exit(2);
            }
            o.kill_grace = std::chrono::seconds(s);
        } else if (is(a, "--verify-gone"))
            o.verify_gone = value(i, "--verify-gone");
        else if (is(a, "--cleanup"))
            o.cleanup = value(i, "--cleanup");
        else if (a == "--allow-no-describe-spec")
            o.allow_no_describe_spec = true;
        else if (a == "--list-checks")
            o.list_checks = true;
        else if (a == "--help" || a == "-h") {
            std::cout << kUsage;
            std::exit(0);
        } else if (a.rfind("--gtest_", 0) == 0)
            argv[out++] = argv[i];
        else {
            std::cerr << "radial-conformance: unknown argument '" << a << "'\n" << kUsage;
            std::exit(2);
        }
    }
    argc = out;
    argv[argc] = nullptr;
    if (o.plugin.empty() && !o.list_checks) {
        std::cerr << "radial-conformance: --plugin is required\n" << kUsage;
        std::exit(2);
    }
    return o;
}

// The last check, outside GoogleTest because it covers every other: no box labelled with this
// run's prefix is left, by the plugin's own list_by_label from a fresh instance and by the
// --verify-gone probe. Runs only when some check handed out a label.
void check_boxes_gone_at_end() {
    auto& h = Harness::get();
    const std::string name = "boxes-gone-at-end";
    if (!h.made_labels() || h.gate_problem(Gate::created)) return;
    h.set_current_check(name);
    std::vector<std::string> problems;
    // The run's prefix, and every label outside it (a decoy), which a sweep of the prefix misses.
    for (const auto& prefix : h.box_prefixes()) {
        try {
            Instance fresh = Instance::create();
            for (const auto& l : fresh.list(prefix))
                problems.push_back("the plugin's list_by_label('" + prefix + "') shows '" + l +
                                   "'");
        } catch (...) {
            problems.push_back("list_by_label('" + prefix +
                               "') from a fresh instance failed: " + describe_current_exception());
        }
    }
    if (!h.options.verify_gone.empty()) {
        ProbeResult p = h.probe_all();
        if (!p.problem.empty()) problems.push_back(p.problem);
        for (const auto& b : p.boxes)
            problems.push_back("the --verify-gone probe shows '" + b + "'");
    }
    for (const auto& p : h.marked_leftovers(std::chrono::milliseconds(0)))
        problems.push_back("process " + std::to_string(p.pid) + " ('" + p.cmdline +
                           "') carries this run's " + kMarkName);
    if (problems.empty()) {
        h.record(name, CheckStatus::passed);
        h.set_current_check("");
        return;
    }
    std::cout << "[  FAILED  ] " << name << ": after every check ran, boxes labelled '"
              << h.label_prefix << "*' are still there:\n";
    for (const auto& p : problems) std::cout << "[  FAILED  ] " << name << ": " << p << "\n";
    std::cout << "[  CHECK   ] " << name
              << ": every box the harness started is gone when it ends, whatever ended it (an "
                 "exit, a signal, a timeout, a kill), by the plugin's list_by_label and by the "
                 "engine's own account (--verify-gone).\n";
    h.record(name, CheckStatus::failed);
    (void)h.kill_marked();
    for (const auto& l : h.remove_leftovers())
        std::cout << "[  LEFT    ] the box '" << l
                  << "' is still there; remove it by hand (--cleanup COMMAND does it)\n";
    h.set_current_check("");
}

std::string make_label_prefix() {
    std::random_device rd;
    static const char* digits = "0123456789abcdef";
    std::string r;
    for (int i = 0; i < 6; ++i) r.push_back(digits[rd() % 16]);
    return "rcf" + std::to_string(::getpid()) + "-" + r + "-";
}

int run(int argc, char** argv) {
    auto& h = Harness::get();
    h.options = parse(argc, argv);
    if (h.options.list_checks) {
        for (const auto& [name, description] : all_checks())
            std::cout << name << "\n    " << description << "\n";
        return 0;
    }
    ::testing::InitGoogleTest(&argc, argv);
    h.label_prefix = make_label_prefix();

    // Loading runs the library's constructors and its entry: budgeted like any plugin call.
    std::string path = h.options.plugin;
    auto load = PendingCall<PluginLibrary>::start([path] {
        TracedCall traced("the load (dlopen and the entry point)");
        return PluginLibrary::load(path);
    });
    if (!load.wait_for(std::chrono::duration_cast<std::chrono::milliseconds>(h.options.budget)))
        h.hang("loading '" + path + "' (dlopen and the entry point) did not return");
    h.library = load.get();

    h.config = empty_config_section(h.plugin_id());
    if (h.options.config) {
        try {
            h.config = load_config_section(*h.options.config, h.plugin_id());
        } catch (const ConfigFileError& e) {
            std::cerr << "radial-conformance: reading the config: " << e.what() << "\n";
            return 2;
        }
    }
    h.install_crash_handlers();
    std::cout << "radial-conformance: checking '" << h.library.path << "' (" << h.plugin_id() << " "
              << h.plugin_version() << "), config [" << h.config.section << "] with "
              << h.config.entries.size() << " keys, image '" << h.options.image << "', labels '"
              << h.label_prefix << "*'\n";

    // GoogleTest's listener list takes ownership of a raw pointer; this is its only API.
    ::testing::UnitTest::GetInstance()->listeners().Append(new VerdictListener);
    int rc = RUN_ALL_TESTS();
    check_boxes_gone_at_end();
    std::cout << h.verdict_line() << std::endl;
    return (rc != 0 || h.any_failed()) ? 1 : 0;
}

} // namespace
} // namespace radial::conformance

int main(int argc, char** argv) {
    int rc = radial::conformance::run(argc, argv);
    // Skip static destructors and library unloading: a broken plugin's stray thread may still be
    // running plugin code, and this process is done.
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(rc);
}
