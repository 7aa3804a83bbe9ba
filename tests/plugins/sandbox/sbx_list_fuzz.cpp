// tests/plugins/sandbox/sbx_list_fuzz.cpp — libFuzzer target for the `sbx ls` parser
// (plugins/sandbox/sbx_list.cpp). Built as a real libFuzzer binary with clang, and into a bounded
// driver (tests/support/fuzz_driver_main.cpp) that CTest runs in every build.
//
// The input is read as a small program, so random bytes exercise the documented shapes often:
//   byte 0 & 3 == 0   the rest is raw output: both parsers must not crash, every name they return
//                     is non-empty with no whitespace or control byte
//   byte 0 & 3 == 1   a JSON listing of names taken from the input, preceded by noise lines that
//                     do not open a document: the parser returns exactly those names
//   byte 0 & 3 == 2   a text table of such names with random spacing and added columns, after a
//                     header and start-up noise: the parser returns exactly those names
//   byte 0 & 3 == 3   a valid document cut or corrupted at an input-chosen byte: no crash
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sbx_list.h"

namespace {

using radial::sandbox::ListedSandbox;

[[noreturn]] void fail(const char* what, std::string_view input) {
    std::fprintf(stderr, "sbx_list_fuzz: %s\ninput (%zu bytes): ", what, input.size());
    for (unsigned char c : input) std::fprintf(stderr, "%02x", c);
    std::fprintf(stderr, "\n");
    std::abort();
}

void check_names(const std::vector<ListedSandbox>& listed, std::string_view input) {
    for (const auto& s : listed) {
        if (s.name.empty()) fail("an empty name", input);
        for (unsigned char c : s.name)
            if (c <= ' ' || c == 0x7f) fail("a name with whitespace or a control byte", input);
    }
}

// Reads bytes from the input, cycling; zero when there is none.
struct Reader {
    std::string_view in;
    std::size_t at = 0;
    unsigned char byte() {
        return in.empty() ? 0 : static_cast<unsigned char>(in[at++ % in.size()]);
    }
    std::string name() {
        static constexpr char kChars[] = "abcxyzABC0129-._+";
        std::string n;
        std::size_t len = 1 + byte() % 12;
        for (std::size_t i = 0; i < len; ++i) n += kChars[byte() % (sizeof kChars - 1)];
        return n;
    }
    std::string noise_line() {
        static const char* kNoise[] = {"Starting sandboxd daemon...",
                                       "Daemon started (PID: 1)",
                                       "Logs: /x/daemon.log",
                                       "warning: something",
                                       "",
                                       "  \t  ",
                                       "ready."};
        return kNoise[byte() % 7];
    }
    std::string spaces() { return std::string(1 + byte() % 4, byte() % 2 ? ' ' : '\t'); }
};

std::vector<std::string> names_of(const std::vector<ListedSandbox>& listed) {
    std::vector<std::string> out;
    for (const auto& s : listed) out.push_back(s.name);
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    if (size == 0) return 0;
    Reader r{input.substr(1)};
    switch (data[0] & 3) {
        case 0: {
            check_names(radial::sandbox::parse_sandbox_list_text(input.substr(1)), input);
            if (auto listed = radial::sandbox::parse_sandbox_list_json(input.substr(1)))
                check_names(*listed, input);
            break;
        }
        case 1: {
            std::vector<std::string> expected;
            nlohmann::json doc = {{"sandboxes", nlohmann::json::array()}};
            std::size_t n = r.byte() % 6;
            for (std::size_t i = 0; i < n; ++i) {
                expected.push_back(r.name());
                doc["sandboxes"].push_back({{"name", expected.back()}, {"status", "running"}});
            }
            std::string out;
            for (std::size_t i = r.byte() % 4; i > 0; --i) out += r.noise_line() + "\n";
            out += doc.dump(r.byte() % 2 ? 2 : -1) + "\n";
            auto listed = radial::sandbox::parse_sandbox_list_json(out);
            if (!listed || names_of(*listed) != expected) fail("a JSON listing misread", input);
            break;
        }
        case 2: {
            std::vector<std::string> expected;
            std::string out;
            for (std::size_t i = r.byte() % 4; i > 0; --i) out += r.noise_line() + "\n";
            out += r.spaces() + "SANDBOX" + r.spaces() + "AGENT" + r.spaces() + "STATUS\n";
            std::size_t n = r.byte() % 6;
            for (std::size_t i = 0; i < n; ++i) {
                if (r.byte() % 3 == 0) out += "\n";
                expected.push_back(r.name());
                out += (r.byte() % 2 ? r.spaces() : "") + expected.back();
                for (std::size_t c = r.byte() % 4; c > 0; --c) out += r.spaces() + r.name();
                out += r.byte() % 2 ? "\r\n" : "\n";
            }
            if (names_of(radial::sandbox::parse_sandbox_list_text(out)) != expected)
                fail("a text listing misread", input);
            break;
        }
        case 3: {
            std::string doc = "Starting sandboxd daemon...\n{\"sandboxes\":[{\"name\":\"" +
                              r.name() + "\",\"status\":\"running\"},{\"name\":\"" + r.name() +
                              "\"}]}\n";
            std::size_t cut = r.byte() % (doc.size() + 1);
            std::string broken = doc.substr(0, cut);
            if (r.byte() % 2 && cut < doc.size()) broken += static_cast<char>(r.byte());
            broken += std::string(input.substr(std::min<std::size_t>(input.size(), 8)));
            if (auto listed = radial::sandbox::parse_sandbox_list_json(broken))
                check_names(*listed, input);
            check_names(radial::sandbox::parse_sandbox_list_text(broken), input);
            break;
        }
    }
    return 0;
}

// For the bounded driver (tests/support/fuzz_driver_main.cpp): half the inputs are drawn from the
// bytes a listing is made of, so the raw case meets lines, braces and quotes often.
extern "C" const char* RadialFuzzAlphabet() { return "{}[]\":,\n \tabcSANDBOXname0123-."; }
