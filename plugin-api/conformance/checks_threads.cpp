// plugin-api/conformance/checks_threads.cpp — no plugin thread outlives destroy (the ABI header:
// destroy "joins every plugin thread"). A thread left running reaches freed memory or an unloaded
// library later, and the crash then lands in whatever runs at that moment (docs/design.md §5.11,
// "What the harness sees for itself").
#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <thread>

#include "call_trace.h"
#include "checks.h"
#include "host_probe.h"

namespace radial::conformance {
namespace {

using namespace std::chrono_literals;

// How long the threads get to finish after destroy returned. destroy should have joined the
// plugin's own, so this only absorbs the threads of the harness and of the host's ABI client
// (detached call and watchdog threads) winding down; on a loaded machine that took more than 2 s,
// and one of them was counted as the plugin's. The poll ends as soon as none is left.
constexpr auto kThreadGrace = 10s;

// The threads that are not in `before`, once they are all gone or kThreadGrace after `since`:
// a bounded poll that ends as soon as none is left.
std::vector<long> threads_left(const std::set<long>& before,
                               std::chrono::steady_clock::time_point since) {
    std::vector<long> extra;
    for (;;) {
        extra.clear();
        for (long t : own_threads())
            if (!before.count(t)) extra.push_back(t);
        if (extra.empty() || std::chrono::steady_clock::now() - since >= kThreadGrace) break;
        std::this_thread::sleep_for(20ms);
    }
    return extra;
}

std::string threads_text(const std::vector<long>& threads) {
    std::string shown;
    for (long t : threads)
        shown += (shown.empty() ? "" : ", ") + std::to_string(t) + " '" + thread_name(t) + "'";
    return shown;
}

std::set<long> thread_set() {
    auto list = own_threads();
    return {list.begin(), list.end()};
}

} // namespace

CONFORMANCE_CHECK(no_thread_after_destroy, Gate::ready,
                  "Every thread started during create, run, list_by_label and destroy has ended "
                  "soon after destroy returned: destroy joins every plugin thread.") {
    const std::set<long> before = thread_set();
    std::string l = label("run");
    auto capture = std::make_shared<OutputCapture>();
    expect_ran(run(shell_spec(l, "echo ok"), capture), "run of `echo ok`");
    (void)instance().list(check_prefix());
    destroy_instance();
    std::vector<long> extra = threads_left(before, std::chrono::steady_clock::now());
    EXPECT_TRUE(extra.empty())
        << extra.size() << " thread(s) that were not running before create are still running "
        << secs(std::chrono::duration_cast<std::chrono::milliseconds>(kThreadGrace))
        << " after the destroy of plugin " << Harness::get().plugin_id() << " ('"
        << Harness::get().library.path << "') returned: " << threads_text(extra)
        << "; destroy joins every thread the instance started (radial/runtime_plugin.h)";
}

CONFORMANCE_CHECK(no_thread_after_dlclose, Gate::ready,
                  "A private copy of the library, loaded, created, destroyed and unloaded with "
                  "dlclose, leaves no thread running: a thread its constructors started would "
                  "run code that is no longer mapped.") {
    const std::set<long> before = thread_set();
    TempDir dir("rcf-dlclose");
    // A copy: dlopen of the same path would only count up the loaded library's references.
    const std::string copy = dir.path() + "/plugin.so";
    std::error_code ec;
    std::filesystem::copy_file(Harness::get().library.path, copy, ec);
    ASSERT_FALSE(ec) << "copying the plugin to '" << copy << "' failed: " << ec.message();
    auto call = PendingCall<std::string>::start([copy]() -> std::string {
        TracedCall traced("dlopen, create, destroy and dlclose of a copy of the plugin");
        void* handle = ::dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) return std::string("dlopen failed: ") + ::dlerror();
        std::string problem;
        auto entry = reinterpret_cast<radial_runtime_plugin_entry_fn>(
            ::dlsym(handle, RADIAL_RT_ENTRY_SYMBOL));
        const radial_runtime_descriptor* d = entry != nullptr ? entry() : nullptr;
        if (d == nullptr) {
            problem = "the copy's entry returned no descriptor";
        } else {
            try {
                auto client = host::RuntimeClient::create(
                    std::shared_ptr<void>(handle, [](void*) {}), d, Harness::get().config, copy,
                    "radial-conformance",
                    [](std::uint32_t level, std::string_view m) { Harness::get().log(level, m); });
                (void)client; // destroyed here, before dlclose
            } catch (...) {
                problem = "create on the copy failed: " + describe_current_exception();
            }
        }
        ::dlclose(handle);
        return problem;
    });
    if (!call.wait_for(budget()))
        Harness::get().hang(
            "dlopen, create, destroy and dlclose of a copy of the plugin did not "
            "return within " +
            secs(budget()));
    std::string problem = call.get();
    EXPECT_EQ(problem, "") << "loading a copy of the plugin to unload it again failed";
    std::vector<long> extra = threads_left(before, std::chrono::steady_clock::now());
    EXPECT_TRUE(extra.empty())
        << extra.size() << " thread(s) that were not running before a copy of plugin "
        << Harness::get().plugin_id() << " was loaded are still running "
        << secs(std::chrono::duration_cast<std::chrono::milliseconds>(kThreadGrace))
        << " after it was destroyed and unloaded (dlclose): " << threads_text(extra)
        << "; no thread of the plugin outlives destroy, a library-wide one included "
           "(radial/runtime_plugin.h)";
}

} // namespace radial::conformance
