// tests/plugins/sandbox/fuzz_driver_main.cpp — runs a libFuzzer target without libFuzzer, for a
// bounded time, so the default GCC build runs the `sbx ls` fuzz target under CTest.
//
//   sbx_list_fuzz_bounded [--seconds S] [--iterations N] [--seed X] [--max-len L]
//   sbx_list_fuzz_bounded FILE...     replays saved inputs (e.g. a libFuzzer crash file)
//
// Inputs are pseudo-random bytes from a fixed seed, so a failure reproduces; the target aborts on
// a failed check, which CTest reports as a failure.
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

int main(int argc, char** argv) {
    double seconds = 10;
    std::uint64_t iterations = 100'000, seed = 0x736278; // "sbx"
    std::size_t max_len = 512;
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
    std::mt19937_64 rng(seed);
    std::vector<std::uint8_t> buf;
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t done = 0;
    for (; done < iterations; ++done) {
        if (done % 256 == 0 &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >=
                seconds)
            break;
        // Half the inputs are mostly printable, so the raw case meets lines, braces and quotes.
        buf.resize(rng() % (max_len + 1));
        const bool printable = rng() % 2 == 0;
        static constexpr char kText[] = "{}[]\":,\n \tabcSANDBOXname0123-.";
        for (auto& b : buf)
            b = printable ? static_cast<std::uint8_t>(kText[rng() % (sizeof kText - 1)])
                          : static_cast<std::uint8_t>(rng());
        LLVMFuzzerTestOneInput(buf.data(), buf.size());
    }
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%llu inputs in %.1f s (seed %llu): all checks passed\n",
                static_cast<unsigned long long>(done), took, static_cast<unsigned long long>(seed));
    return 0;
}
