// benchmarks/redaction/turn_redaction_overhead.cpp — what redaction costs a real turn
// (docs/design.md §10 §4: "streaming 256 MiB of container output through a turn with 16 secrets
// takes no more than 1.05x the time of the same container's output with no redaction").
//
// Each repeat runs the same box twice through the same path `radiald turn` uses — the configured
// runtime plugin (loaded by the real loader), the spec from build_container_spec, TurnRunner —
// once with every chunk written straight to /dev/null (no redaction), once with every chunk fed
// through a StreamRedactor holding N secrets plus a turn token, as TurnSession does, and the
// redacted bytes written to /dev/null. The order alternates between repeats. Prints each run,
// the medians and their ratio. Not a test: a measurement (docs/performance.md).
//
//   turn_redaction_overhead [--config radiald.toml] [--image radial/busybox:latest]
//                           [--mib 256] [--secrets 16] [--repeats 5]
#include <fcntl.h>
#include <fmt/core.h>
#include <radial/internal/unique_fd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/runtime_setup.h"
#include "config/host_config.h"
#include "config/instance_id.h"
#include "redaction/stream_redactor.h"
#include "turn/turn_request.h"
#include "turn/turn_runner.h"

namespace {

using namespace radial;
using Clock = std::chrono::steady_clock;

void write_all(int fd, std::string_view s) {
    while (!s.empty()) {
        ssize_t n = ::write(fd, s.data(), s.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error(std::string("write: ") + std::strerror(errno));
        s.remove_prefix(static_cast<std::size_t>(n));
    }
}

// Token-like values ("sk-…", 32 bytes), none of which occurs in the box's output.
redaction::SecretSet make_secrets(unsigned count) {
    std::mt19937_64 rng(7);
    redaction::SecretSet set;
    auto token = [&](std::string prefix) {
        static const char kAlnum[] =
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        while (prefix.size() < 32) prefix += kAlnum[rng() % (sizeof kAlnum - 1)];
        return prefix;
    };
    set.add("RADIAL_TURN_TOKEN", token("rt-"));
    for (unsigned i = 0; i < count; ++i)
        set.add(fmt::format("BENCH_SECRET_{}", i + 1), token("sk-"));
    return set;
}

struct Run {
    double seconds = 0;     // wall clock, start of the run to its terminal record
    double cpu_seconds = 0; // user + system CPU of this process (host side + plugin threads)
    std::uint64_t bytes = 0;
};

double process_cpu_seconds() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    return s(u.ru_utime) + s(u.ru_stime);
}

Run run_once(const host::RuntimeClient& client, const config::HostConfig& cfg,
             const turn::TurnRequest& base, const redaction::Redactor* redactor, int sink) {
    turn::TurnRequest req = base;
    req.turn_id = turn::new_turn_id();
    ContainerSpec spec = turn::build_container_spec(req, cfg);
    turn::TurnRunner runner(client, spec, req.turn_id);
    std::optional<redaction::StreamRedactor> out, err;
    if (redactor != nullptr) {
        out.emplace(redactor->stream());
        err.emplace(redactor->stream());
    }
    std::string buffer;
    Run r;
    double cpu0 = process_cpu_seconds();
    auto t0 = Clock::now();
    turn::TerminalRecord rec = runner.run([&](std::uint32_t stream, std::string_view bytes) {
        r.bytes += bytes.size();
        if (redactor == nullptr) {
            write_all(sink, bytes);
        } else {
            buffer.clear();
            (stream == RADIAL_STREAM_STDERR ? *err : *out).feed(bytes, buffer);
            write_all(sink, buffer);
        }
        return true;
    });
    if (redactor != nullptr) {
        buffer.clear();
        out->flush(buffer);
        err->flush(buffer);
        write_all(sink, buffer);
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.cpu_seconds = process_cpu_seconds() - cpu0;
    if (rec.status != turn::TurnStatus::succeeded)
        throw std::runtime_error(fmt::format("the box did not succeed ({}): {}",
                                             turn::to_string(rec.status), rec.error));
    return r;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app(
        "What redaction costs a real turn: the same box's output through the runtime "
        "plugin, with and without a StreamRedactor (docs/design.md §10.4)");
    std::optional<std::string> config_file;
    std::string image = "radial/busybox:latest";
    unsigned mib = 256, secrets = 16, repeats = 5;
    app.add_option("--config", config_file,
                   "radiald.toml to take the runtime from (default: built-in defaults)");
    app.add_option("--image", image, "Image of the box (must print with sh, yes and head)");
    app.add_option("--mib", mib, "MiB of output the box prints")->check(CLI::Range(1u, 65536u));
    app.add_option("--secrets", secrets, "Secrets besides the turn token")
        ->check(CLI::Range(0u, 4096u));
    app.add_option("--repeats", repeats, "Runs of each kind; medians are reported")
        ->check(CLI::Range(1u, 99u));
    CLI11_PARSE(app, argc, argv);

    try {
        config::HostConfig cfg = config::load(config_file, std::nullopt, cli::executable_dir());
        config::settle_instance_id(cfg);
        host::RuntimeClient client = cli::open_runtime(cfg);
        redaction::Redactor redactor(make_secrets(secrets));

        turn::TurnRequest req;
        req.image = image;
        std::uint64_t bytes = std::uint64_t{mib} << 20;
        // Ordinary log-like text; none of the secrets occurs in it, as in a normal turn.
        req.argv = {"sh", "-c",
                    fmt::format("yes 'INFO 2026-11-29T13:15:00Z worker-3 compiled src/module_42.cc "
                                "in 183 ms (cache miss)' | head -c {}",
                                bytes)};
        // Where output goes: the terminal of `radiald turn` with its cost taken out.
        internal::UniqueFd dev_null(::open("/dev/null", O_WRONLY | O_CLOEXEC));
        if (!dev_null)
            throw std::runtime_error(std::string("opening /dev/null: ") + std::strerror(errno));
        const int sink = dev_null.get();

        fmt::print("runtime {}, image {}, {} MiB per run, {} secrets + turn token, {} repeats\n",
                   client.info().id, image, mib, secrets, repeats);
        std::vector<double> plain, redacted, plain_cpu, redacted_cpu;
        for (unsigned i = 0; i < repeats; ++i) {
            for (int k = 0; k < 2; ++k) {
                bool with_redaction = (k + i) % 2 == 1; // ABBA: neither kind always goes first
                Run r = run_once(client, cfg, req, with_redaction ? &redactor : nullptr, sink);
                if (r.bytes != bytes)
                    throw std::runtime_error(
                        fmt::format("the box printed {} bytes, expected {}", r.bytes, bytes));
                (with_redaction ? redacted : plain).push_back(r.seconds);
                (with_redaction ? redacted_cpu : plain_cpu).push_back(r.cpu_seconds);
                fmt::print("  run {} {:<13} {:7.3f} s wall {:7.1f} MiB/s  {:6.3f} s host CPU\n",
                           i + 1, with_redaction ? "redacted" : "no redaction", r.seconds,
                           static_cast<double>(r.bytes) / (1 << 20) / r.seconds, r.cpu_seconds);
                std::fflush(stdout);
            }
        }
        double p = median(plain), s = median(redacted);
        double pc = median(plain_cpu), sc = median(redacted_cpu);
        fmt::print("median, no redaction          : {:7.3f} s wall  {:6.3f} s host CPU\n", p, pc);
        fmt::print("median, {:>4} secrets + token : {:7.3f} s wall  {:6.3f} s host CPU\n", secrets,
                   s, sc);
        fmt::print(
            "ratio redacted / no redaction : {:7.3f} wall (target <= 1.05)  {:6.3f} host CPU\n",
            s / p, sc / pc);
        return 0;
    } catch (const std::exception& e) {
        fmt::print(stderr, "turn_redaction_overhead: {}\n", e.what());
        return 1;
    }
}
