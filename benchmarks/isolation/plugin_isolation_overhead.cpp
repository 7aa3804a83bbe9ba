// benchmarks/isolation/plugin_isolation_overhead.cpp — what run.pluginIsolation = "process" costs a
// turn (docs/design.md §5.13; the goal: at most 2 ms added per turn) and the memory it adds.
//
// One RuntimeClient over the plugin loaded into this process (in-process, as radiald does by
// default) and one over the same .so in a radial-plugin-host process (as radiald does under
// "process"), side by side: each round makes a turn's plugin calls — run of `echo`, then the
// daemon's list_by_label of the turn's label — `--turns` times through each, in alternating order,
// and times them. A second measure runs `flood` to carry `--mib` of output across. Prints the
// medians per turn, the time added, the ratio, and the resident memory of the plugin host
// process. Not a test: a measurement (docs/performance.md).
//
//   plugin_isolation_overhead [--plugin fake.so] [--helper radial-plugin-host] [--rounds 9]
//                             [--turns 200] [--mib 64]
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <radial/host/runtime_client.hpp>
#include <string>
#include <vector>

#include "isolation/isolated_runtime.h"
#include "loader/plugin_loader.h"

namespace {

using namespace radial;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Seconds for `turns` turns' calls through `client`.
double turns_through(const host::RuntimeClient& client, int turns, const std::string& cmd,
                     const std::string& arg) {
    ContainerSpec spec;
    spec.image = "img";
    spec.argv = {cmd, arg};
    const auto t0 = Clock::now();
    for (int i = 0; i < turns; ++i) {
        spec.label = "radial-turn-bench-" + std::to_string(i);
        client.run(spec, [](std::uint32_t, std::string_view) { return true; });
        client.list_by_label(spec.label);
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The resident set of the radial-plugin-host processes whose parent is this process, in KiB.
long plugin_host_rss_kib() {
    long total = 0;
    std::ifstream children("/proc/self/task/" + std::to_string(::getpid()) + "/children");
    for (long pid; children >> pid;) {
        std::ifstream status("/proc/" + std::to_string(pid) + "/status");
        for (std::string line; std::getline(status, line);)
            if (line.rfind("VmRSS:", 0) == 0) total += std::stol(line.substr(6));
    }
    return total;
}

long self_rss_kib() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"What run.pluginIsolation = \"process\" costs a turn"};
    std::string plugin = RADIAL_BENCH_FAKE_PLUGIN, helper = RADIAL_BENCH_PLUGIN_HOST;
    int rounds = 9, turns = 200, mib = 64;
    app.add_option("--plugin", plugin, "the runtime plugin (.so) to call");
    app.add_option("--helper", helper, "the radial-plugin-host executable");
    app.add_option("--rounds", rounds, "rounds, each timing both modes")->check(CLI::Range(1, 99));
    app.add_option("--turns", turns, "turns per round and mode")->check(CLI::Range(1, 100000));
    app.add_option("--mib", mib, "MiB of output for the throughput measure")
        ->check(CLI::Range(1, 4096));
    CLI11_PARSE(app, argc, argv);

    const loader::LoadedPlugin loaded = loader::load_plugin(plugin);
    host::ConfigSection section{"run." + loaded.info.id, {}};
    auto no_log = [](std::uint32_t, std::string_view) {};
    const long rss_before = self_rss_kib();
    auto in_process = host::RuntimeClient::create(loaded.library, loaded.descriptor, section,
                                                  loaded.path, "bench", no_log);
    auto isolated_plugin = isolation::IsolatedPlugin::make(*loaded.descriptor, loaded.path, helper);
    auto isolated = host::RuntimeClient::create(isolated_plugin, isolated_plugin->descriptor(),
                                                section, loaded.path, "bench", no_log);
    std::vector<double> a, b, fa, fb;
    const std::string bytes = std::to_string(static_cast<long long>(mib) << 20);
    for (int r = 0; r < rounds; ++r) {
        const bool in_first = r % 2 == 0;
        for (int k = 0; k < 2; ++k) {
            const bool in = (k == 0) == in_first;
            const auto& client = in ? in_process : isolated;
            (in ? a : b).push_back(turns_through(client, turns, "echo", "hi") / turns);
            (in ? fa : fb).push_back(turns_through(client, 1, "flood", bytes));
        }
        fmt::print(
            "round {}: per turn {:.3f} ms in-process, {:.3f} ms isolated; {} MiB in "
            "{:.3f} s / {:.3f} s\n",
            r + 1, a.back() * 1e3, b.back() * 1e3, mib, fa.back(), fb.back());
    }
    const double ma = median(a), mb = median(b), mfa = median(fa), mfb = median(fb);
    fmt::print(
        "median per turn: in-process {:.3f} ms, isolated {:.3f} ms: {:.3f} ms added "
        "(ratio {:.2f})\n",
        ma * 1e3, mb * 1e3, (mb - ma) * 1e3, mb / ma);
    fmt::print(
        "median output throughput: in-process {:.0f} MiB/s, isolated {:.0f} MiB/s "
        "(ratio {:.2f})\n",
        mib / mfa, mib / mfb, mfa / mfb);
    fmt::print(
        "memory: the plugin host process {} KiB resident; this process {} KiB before the "
        "clients, {} KiB after\n",
        plugin_host_rss_kib(), rss_before, self_rss_kib());
    return 0;
}
