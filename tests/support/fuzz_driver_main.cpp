// tests/support/fuzz_driver_main.cpp — runs a libFuzzer target without libFuzzer, for a bounded
// time, so the default GCC build runs each fuzz target under CTest. Linked into every
// `<target>_fuzz_bounded` executable beside the target's LLVMFuzzerTestOneInput.
//
//   <target>_fuzz_bounded [--seconds S] [--iterations N] [--seed X] [--max-len L]
//   <target>_fuzz_bounded FILE...     replays saved inputs (e.g. a libFuzzer crash file)
//
// Inputs are pseudo-random bytes from a fixed seed, so a failure reproduces (the seed is printed
// first); the target aborts on a failed check, which CTest reports as a failure. A target that
// defines RadialFuzzAlphabet() gets half its inputs drawn from that alphabet (so a parser meets its
// own punctuation often), the other half from all 256 byte values.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Optional, defined by a target: a NUL-terminated, non-empty alphabet for half of the inputs.
extern "C" [[gnu::weak]] const char* RadialFuzzAlphabet();

int main(int argc, char** argv) {
    double seconds = 10;
    std::uint64_t iterations = 100'000, seed = 0x72616469616c; // "radial"
    std::size_t max_len = 1024;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--seconds" && has_value)
            seconds = std::strtod(argv[++i], nullptr);
        else if (a == "--iterations" && has_value)
            iterations = std::strtoull(argv[++i], nullptr, 0);
        else if (a == "--seed" && has_value)
            seed = std::strtoull(argv[++i], nullptr, 0);
        else if (a == "--max-len" && has_value)
            max_len = std::strtoull(argv[++i], nullptr, 0);
        else if (a.starts_with("--")) {
            std::fprintf(stderr,
                         "usage: %s [--seconds S] [--iterations N] [--seed X] [--max-len L] "
                         "| FILE...\n",
                         argv[0]);
            return 2;
        } else {
            files.push_back(a);
        }
    }
    if (!files.empty()) {
        for (const auto& f : files) {
            std::ifstream in(f, std::ios::binary);
            if (!in) {
                std::fprintf(stderr, "replaying '%s': cannot open it\n", f.c_str());
                return 2;
            }
            const std::string bytes{std::istreambuf_iterator<char>(in), {}};
            LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                   bytes.size());
        }
        std::printf("replayed %zu input(s): all checks passed\n", files.size());
        return 0;
    }
    const std::string alphabet = RadialFuzzAlphabet != nullptr ? RadialFuzzAlphabet() : "";
    // Before any input, so that an aborting run still says how to reproduce it.
    std::printf("fuzzing: --seed %llu --max-len %zu (at most %llu inputs, %.1f s)\n",
                static_cast<unsigned long long>(seed), max_len,
                static_cast<unsigned long long>(iterations), seconds);
    std::fflush(stdout);
    std::mt19937_64 rng(seed);
    std::vector<std::uint8_t> buf;
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t done = 0;
    for (; done < iterations; ++done) {
        if (done % 256 == 0 &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >=
                seconds)
            break;
        buf.resize(rng() % (max_len + 1));
        const bool from_alphabet = !alphabet.empty() && rng() % 2 == 0;
        for (auto& b : buf)
            b = from_alphabet ? static_cast<std::uint8_t>(alphabet[rng() % alphabet.size()])
                              : static_cast<std::uint8_t>(rng());
        LLVMFuzzerTestOneInput(buf.data(), buf.size());
    }
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "%llu inputs in %.1f s (seed %llu, %s): all checks passed\n",
        static_cast<unsigned long long>(done), took, static_cast<unsigned long long>(seed),
        alphabet.empty()
            ? "random bytes"
            : ("half from a " + std::to_string(alphabet.size()) + "-byte alphabet").c_str());
    return 0;
}
