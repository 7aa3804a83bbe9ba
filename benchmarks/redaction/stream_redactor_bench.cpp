// benchmarks/redaction/stream_redactor_bench.cpp — throughput of the streaming redactor
// (docs/design.md §10: it must never be what limits a turn; target >= 1 GB/s single-core at 16
// secrets on 64 KiB chunks of ordinary text), beside a naive find-and-replace per secret in the
// same run.
//
// Text: 1 MiB of generated log-like lines (fixed seed), fed as 64 KiB chunks in a cycle.
// Secrets: realistic tokens, 20-40 bytes ("ghp_…", "sk-…"), random per index with a fixed seed.
// Bytes/s counts input bytes. Build with -O2 (RelWithDebInfo); figures go in docs/redaction.md.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "redaction/stream_redactor.h"

namespace {

using radial::redaction::marker_for;
using radial::redaction::Redactor;
using radial::redaction::Secret;
using radial::redaction::SecretSet;
using radial::redaction::StreamRedactor;

constexpr std::size_t kChunk = 64 * 1024;
constexpr std::size_t kTextBytes = 1 << 20;

std::string ordinary_text() {
    static const char* const kWords[] = {
        "the",     "turn",    "started", "container", "image",  "pulling", "layer",   "done",
        "error",   "warning", "info",    "request",   "GET",    "POST",    "/api/v1", "status",
        "200",     "404",     "took",    "ms",        "user",   "build",   "test",    "passed",
        "failed",  "make",    "cc",      "-O2",       "main.c", "linking", "object",  "file",
        "of",      "and",     "to",      "in",        "is",     "for",     "with",    "on",
        "compile", "module",  "package", "version",   "1.2.3",  "retry",   "socket",  "timeout",
    };
    std::mt19937_64 rng(42);
    std::string t;
    t.reserve(kTextBytes + 256);
    unsigned line = 0;
    while (t.size() < kTextBytes) {
        t += "2026-01-15T10:";
        t += std::to_string(10 + line % 50);
        t += ":";
        t += std::to_string(10 + (line * 7) % 50);
        t += "Z ";
        const std::size_t words = 6 + rng() % 14;
        for (std::size_t w = 0; w < words; ++w) {
            t += kWords[rng() % std::size(kWords)];
            t += (rng() % 9 == 0) ? "=" + std::to_string(rng() % 100000) + " " : " ";
        }
        t += '\n';
        ++line;
    }
    t.resize(kTextBytes);
    return t;
}

SecretSet make_secrets(std::size_t count, std::size_t min_len = 20, std::size_t max_len = 40) {
    static const char* const kPrefixes[] = {"ghp_", "sk-", "glpat-", "xoxb-", "AKIA", ""};
    static constexpr std::string_view kAlnum =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    std::mt19937_64 rng(1234 + count);
    std::vector<Secret> secrets;
    for (std::size_t i = 0; i < count; ++i) {
        std::string v = max_len >= 20 ? kPrefixes[rng() % std::size(kPrefixes)] : "";
        const std::size_t len = min_len + rng() % (max_len - min_len + 1);
        while (v.size() < len) v += kAlnum[rng() % kAlnum.size()];
        v.resize(len);
        secrets.push_back({"SECRET_" + std::to_string(i), std::move(v)});
    }
    return SecretSet(std::move(secrets));
}

const std::string& text() {
    static const std::string t = ordinary_text();
    return t;
}

void run_stream(benchmark::State& state, const SecretSet& secrets, const std::string& input) {
    const Redactor redactor(secrets);
    StreamRedactor stream = redactor.stream();
    std::string out;
    out.reserve(2 * kChunk);
    std::size_t offset = 0;
    for (auto _ : state) {
        out.clear();
        stream.feed(std::string_view(input).substr(offset, kChunk), out);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
        offset = (offset + kChunk) % input.size();
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kChunk);
    state.counters["patterns"] = static_cast<double>(redactor.pattern_count());
}

// The redactor: all patterns (values and their encodings), streaming, leftmost-longest.
void BM_StreamRedactor(benchmark::State& state) {
    run_stream(state, make_secrets(static_cast<std::size_t>(state.range(0))), text());
}
BENCHMARK(BM_StreamRedactor)->ArgName("secrets")->Arg(1)->Arg(16)->Arg(256);

// Worst case for the skip distance: every secret at the 6-byte minimum.
void BM_StreamRedactorShortSecrets(benchmark::State& state) {
    run_stream(state, make_secrets(static_cast<std::size_t>(state.range(0)), 6, 6), text());
}
BENCHMARK(BM_StreamRedactorShortSecrets)->ArgName("secrets")->Arg(16);

// Output that does leak: one of the secrets every 4 KiB.
void BM_StreamRedactorWithMatches(benchmark::State& state) {
    const SecretSet secrets = make_secrets(static_cast<std::size_t>(state.range(0)));
    std::string leaky = text();
    for (std::size_t at = 1000, i = 0; at + 64 < leaky.size(); at += 4096, ++i) {
        const std::string& v = secrets.secrets()[i % secrets.size()].value;
        leaky.replace(at, v.size(), v);
    }
    run_stream(state, secrets, leaky);
}
BENCHMARK(BM_StreamRedactorWithMatches)->ArgName("secrets")->Arg(16);

// Hostile output: nothing but near-misses (each secret with its last byte changed), so every
// secret-sized window stops the skip and is verified. A box knows its secrets and could do this.
void BM_StreamRedactorNearMisses(benchmark::State& state) {
    const SecretSet secrets = make_secrets(static_cast<std::size_t>(state.range(0)));
    std::string hostile;
    for (std::size_t i = 0; hostile.size() < kTextBytes; ++i) {
        std::string v = secrets.secrets()[i % secrets.size()].value;
        v.back() = v.back() == '#' ? '%' : '#';
        hostile += v;
        hostile += ' ';
    }
    hostile.resize(kTextBytes);
    run_stream(state, secrets, hostile);
}
BENCHMARK(BM_StreamRedactorNearMisses)->ArgName("secrets")->Arg(16);

// Baseline: copy the chunk, then std::string::find + replace for each secret's raw value.
// Catches neither encodings nor a secret split across chunks.
void BM_NaiveFindReplace(benchmark::State& state) {
    const SecretSet secrets = make_secrets(static_cast<std::size_t>(state.range(0)));
    std::vector<std::string> markers;
    for (const auto& s : secrets.secrets()) markers.push_back(marker_for(s.name));
    const std::string& input = text();
    std::string out;
    std::size_t offset = 0;
    for (auto _ : state) {
        out.assign(input, offset, kChunk);
        for (std::size_t k = 0; k < secrets.size(); ++k) {
            const std::string& v = secrets.secrets()[k].value;
            for (std::size_t p = 0; (p = out.find(v, p)) != std::string::npos;
                 p += markers[k].size())
                out.replace(p, v.size(), markers[k]);
        }
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
        offset = (offset + kChunk) % input.size();
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kChunk);
}
BENCHMARK(BM_NaiveFindReplace)->ArgName("secrets")->Arg(1)->Arg(16)->Arg(256);

// The log path: one-shot redact() of ~100-byte lines.
void BM_RedactLogLine(benchmark::State& state) {
    const Redactor redactor(make_secrets(static_cast<std::size_t>(state.range(0))));
    const std::string line =
        "radiald[turn] info: turn 20261129t131500-3f2a9c01d4e5 finished: exit 0 after 1234 ms";
    for (auto _ : state) {
        std::string out = redactor.redact(line);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * line.size()));
}
BENCHMARK(BM_RedactLogLine)->ArgName("secrets")->Arg(16);

} // namespace

BENCHMARK_MAIN();
