// plugin-api/conformance/checks_threads.cpp — no plugin thread outlives destroy (the ABI header:
// destroy "joins every plugin thread"). A thread left running reaches freed memory or an unloaded
// library later, and the crash then lands in whatever runs at that moment (docs/design.md §5.11,
// "What the harness does not see").
#include <algorithm>
#include <set>
#include <thread>

#include "checks.h"
#include "host_probe.h"

namespace radial::conformance {
namespace {

using namespace std::chrono_literals;

// How long the plugin's threads get to finish after destroy returned: destroy should have joined
// them, so this only absorbs the harness's own call threads winding down.
constexpr auto kThreadGrace = 2s;

} // namespace

CONFORMANCE_CHECK(no_thread_after_destroy, Gate::ready,
                  "every thread started during create, run, list_by_label and destroy has ended "
                  "soon after destroy returned: destroy joins every plugin thread.") {
    const std::vector<long> before_list = own_threads();
    const std::set<long> before(before_list.begin(), before_list.end());
    std::string l = label("run");
    auto capture = std::make_shared<OutputCapture>();
    expect_ran(run(shell_spec(l, "echo ok"), capture), "run of `echo ok`");
    (void)instance().list(check_prefix());
    destroy_instance();
    const auto destroyed = std::chrono::steady_clock::now();
    // A bounded poll: it ends as soon as every new thread is gone, or at the grace.
    std::vector<long> extra;
    for (;;) {
        extra.clear();
        for (long t : own_threads())
            if (!before.count(t)) extra.push_back(t);
        if (extra.empty() || std::chrono::steady_clock::now() - destroyed >= kThreadGrace) break;
        std::this_thread::sleep_for(20ms);
    }
    if (extra.empty()) return;
    std::string shown;
    for (long t : extra)
        shown += (shown.empty() ? "" : ", ") + std::to_string(t) + " '" + thread_name(t) + "'";
    ADD_FAILURE() << extra.size() << " thread(s) that were not running before create are still "
                  << "running "
                  << secs(std::chrono::duration_cast<std::chrono::milliseconds>(kThreadGrace))
                  << " after the destroy of plugin " << Harness::get().plugin_id() << " ('"
                  << Harness::get().library.path << "') returned: " << shown
                  << "; destroy joins every thread the instance started (radial/runtime_plugin.h)";
}

} // namespace radial::conformance
