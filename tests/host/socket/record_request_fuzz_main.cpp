// tests/host/socket/record_request_fuzz_main.cpp — runs the record-request fuzz target without
// libFuzzer, for a bounded time, so the default GCC build exercises it under CTest (docs/design.md
// §9).
//
//   record_request_fuzz_bounded [--seconds S] [--iterations N] [--seed X]
//   record_request_fuzz_bounded --write-seeds DIR   writes the seed requests (a libFuzzer corpus)
//   record_request_fuzz_bounded FILE...              replays saved inputs (libFuzzer crash files)
//
// First every seed runs once and must get its expected status (so the target is known to reach
// 201 and each refusal); then mutated seeds and pure noise run until the time or input budget is
// spent. Inputs derive from a fixed seed, so a failure reproduces; a failed check aborts.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "record_request_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

using radial::socket::fuzz::kMaxBodyBytes;
using radial::socket::fuzz::kToken;
using radial::socket::fuzz::stats;

struct Seed {
    const char* name;
    std::string bytes;
    int status; // expected; 0 = incomplete
};

std::string request(const std::string& head, const std::string& body) {
    return head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string chunked(const std::string& head, const std::string& body) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx", body.size());
    return head + "Transfer-Encoding: chunked\r\n\r\n" + size + "\r\n" + body + "\r\n0\r\n\r\n";
}

std::vector<Seed> seeds() {
    const std::string token(kToken);
    const std::string auth = "Authorization: Bearer " + token + "\r\n";
    const std::string post = "POST /v1/records HTTP/1.1\r\nHost: turn\r\n";
    const std::string good = R"({"type":"turn.result","payload":{"ok":true,"n":[1,2,3]}})";
    const std::string big =
        R"({"type":"turn.result","payload":")" + std::string(kMaxBodyBytes, 'x') + "\"}";
    return {
        {"accepted", request(post + auth, good), 201},
        {"accepted-chunked", chunked(post + auth, good), 201},
        {"accepted-expect-continue", request(post + auth + "Expect: 100-continue\r\n", good), 201},
        {"accepted-pipelined", request(post + auth, good) + request(post + auth, good), 201},
        {"accepted-http10", request("POST /v1/records HTTP/1.0\r\n" + auth, good), 201},
        {"wrong-token",
         request(post + "Authorization: Bearer " + std::string(64, 'f') + "\r\n", good), 401},
        {"no-token", request(post, good), 401},
        {"get", "GET /v1/records HTTP/1.1\r\nHost: turn\r\n" + auth + "\r\n", 405},
        {"other-path", request("POST /v1/other HTTP/1.1\r\n" + auth, good), 404},
        {"wrong-type", request(post + auth, R"({"type":"turn.other","payload":1})"), 403},
        {"oversize", request(post + auth, big), 413},
        {"oversize-chunked", chunked(post + auth, big), 413},
        {"malformed-json", request(post + auth, R"({"type":"turn.result",)"), 400},
        {"missing-payload", request(post + auth, R"({"type":"turn.result"})"), 400},
        {"too-deep", request(post + auth, std::string(100, '[') + std::string(100, ']')), 400},
        {"sink-throws", request(post + auth, R"({"type":"turn.result","payload":"sink-throws"})"),
         500},
        {"garbage", "\x16\x03\x01 hello\r\n\r\n", 400},
        {"header-too-large", post + "X-Pad: " + std::string(9000, 'p') + "\r\n" + auth + "\r\n",
         431},
        {"incomplete-header", post + "Authorization: Bearer", 0},
        {"incomplete-body", post + auth + "Content-Length: 40\r\n\r\n{\"type\"", 0},
    };
}

// Byte strings that matter to the parser or the handler, spliced in by the mutator.
const std::vector<std::string>& dictionary() {
    static const std::vector<std::string> words = {"\r\n",
                                                   "\r\n\r\n",
                                                   ": ",
                                                   "POST ",
                                                   "GET ",
                                                   "/v1/records",
                                                   " HTTP/1.1",
                                                   " HTTP/1.0",
                                                   "Authorization: Bearer ",
                                                   std::string(kToken),
                                                   "bearer ",
                                                   "Content-Length: ",
                                                   "Transfer-Encoding: chunked\r\n",
                                                   "Expect: 100-continue\r\n",
                                                   "Connection: close\r\n",
                                                   "0\r\n\r\n",
                                                   "ffffffffffffffff",
                                                   "18446744073709551616",
                                                   "{",
                                                   "}",
                                                   "[",
                                                   "]",
                                                   "\"type\"",
                                                   "\"payload\"",
                                                   "\"turn.result\"",
                                                   "\"sink-throws\"",
                                                   ":",
                                                   ",",
                                                   "null",
                                                   "\\u0000",
                                                   "\\ud800",
                                                   "\xc3\x28",
                                                   "\xff",
                                                   "-1",
                                                   "1e999"};
    return words;
}

std::string mutate(std::string s, std::mt19937_64& rng) {
    const int ops = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < ops; ++i) {
        const std::size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
        switch (rng() % 7) {
            case 0: // flip a byte
                if (!s.empty()) s[rng() % s.size()] ^= static_cast<char>(1u << (rng() % 8));
                break;
            case 1: // set a byte
                if (!s.empty()) s[rng() % s.size()] = static_cast<char>(rng());
                break;
            case 2: // insert random bytes
                s.insert(pos, std::string(1 + rng() % 4, static_cast<char>(rng())));
                break;
            case 3: { // delete a range
                if (s.empty()) break;
                const std::size_t at = rng() % s.size();
                s.erase(at, 1 + rng() % std::min<std::size_t>(16, s.size() - at));
                break;
            }
            case 4: { // duplicate a range
                if (s.empty()) break;
                const std::size_t at = rng() % s.size();
                s.insert(pos, s.substr(at, 1 + rng() % 32));
                break;
            }
            case 5: // splice a dictionary word
                s.insert(pos, dictionary()[rng() % dictionary().size()]);
                break;
            case 6: // truncate
                s.resize(pos);
                break;
        }
    }
    return s;
}

void run(const std::string& bytes) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

std::uint64_t outcome_count(int status) {
    return status == 0 ? stats().incomplete : stats().by_status[status];
}

} // namespace

int main(int argc, char** argv) {
    double seconds = 15;
    std::uint64_t iterations = 2'000'000, seed = 0x72616469616c; // "radial"
    std::vector<std::string> files;
    std::string seeds_dir;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--seconds" && has_value)
            seconds = std::strtod(argv[++i], nullptr);
        else if (a == "--iterations" && has_value)
            iterations = std::strtoull(argv[++i], nullptr, 0);
        else if (a == "--seed" && has_value)
            seed = std::strtoull(argv[++i], nullptr, 0);
        else if (a == "--write-seeds" && has_value)
            seeds_dir = argv[++i];
        else if (a.starts_with("--")) {
            std::fprintf(stderr,
                         "usage: %s [--seconds S] [--iterations N] [--seed X] | --write-seeds DIR "
                         "| FILE...\n",
                         argv[0]);
            return 2;
        } else
            files.push_back(a);
    }

    if (!seeds_dir.empty()) {
        std::filesystem::create_directories(seeds_dir);
        for (const auto& s : seeds())
            std::ofstream(seeds_dir + "/" + s.name, std::ios::binary) << s.bytes;
        std::printf("wrote %zu seeds to '%s'\n", seeds().size(), seeds_dir.c_str());
        return 0;
    }

    if (!files.empty()) {
        for (const auto& f : files) {
            std::ifstream in(f, std::ios::binary);
            if (!in) {
                std::fprintf(stderr, "replaying '%s': cannot open it\n", f.c_str());
                return 2;
            }
            run(std::string{std::istreambuf_iterator<char>(in), {}});
        }
        std::printf("replayed %zu input(s): all checks passed\n", files.size());
        return 0;
    }

    const auto corpus = seeds();
    for (const auto& s : corpus) {
        const std::uint64_t before = outcome_count(s.status);
        run(s.bytes);
        if (outcome_count(s.status) != before + 1) {
            std::fprintf(stderr, "seed '%s': expected outcome %d did not happen\n", s.name,
                         s.status);
            return 1;
        }
    }

    std::mt19937_64 rng(seed);
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t done = 0;
    for (; done < iterations; ++done) {
        // Checking the clock every 256 inputs keeps it out of the profile.
        if (done % 256 == 0 &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >=
                seconds)
            break;
        if (rng() % 8 == 0) {
            std::string noise(rng() % 512, '\0');
            for (auto& b : noise) b = static_cast<char>(rng());
            run(noise);
        } else {
            run(mutate(corpus[rng() % corpus.size()].bytes, rng));
        }
    }
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%llu inputs in %.1f s (seed %llu): all checks passed\noutcomes:",
                static_cast<unsigned long long>(done), took, static_cast<unsigned long long>(seed));
    std::printf(" incomplete=%llu", static_cast<unsigned long long>(stats().incomplete));
    for (int status = 0; status < 600; ++status)
        if (stats().by_status[status] != 0)
            std::printf(" %d=%llu", status,
                        static_cast<unsigned long long>(stats().by_status[status]));
    std::printf("\n");
    // Mutation must keep reaching acceptance, or the run proved little about the 201 check.
    if (stats().by_status[201] < 100) {
        std::fprintf(stderr, "only %llu inputs reached 201; the mutator is not exploring\n",
                     static_cast<unsigned long long>(stats().by_status[201]));
        return 1;
    }
    return 0;
}
