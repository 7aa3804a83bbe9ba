// tests/host/redaction/stream_redactor_fuzz.cpp — libFuzzer target for the streaming redactor
// (docs/design.md §10). Built as a real libFuzzer binary with clang, and into a bounded driver
// (tests/support/fuzz_driver_main.cpp) that CTest runs in every build.
//
// The input is read as a small program, so that random bytes plant secrets often:
//   byte 0          number of secrets (low 2 bits + 1) and the chunking seed
//   per secret      a length byte (6..24, high bit: start with part of the previous value)
//                   then that many value bytes
//   then, repeated  an op byte and its operands:
//                   raw value | a derived pattern | a prefix of a value | real base64 of a value
//                   inside context bytes | literal bytes
// Checks: the streamed output under a chunking derived from the input equals the whole-buffer
// reference and the one-shot redact(); the hold-back bound holds after every feed; no secret
// value appears in the output.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "redaction/secret_patterns.h"
#include "redaction/stream_redactor.h"
#include "reference_redactor.h"
#include "test_encoders.h"

namespace {

using radial::redaction::Redactor;
using radial::redaction::Secret;
using radial::redaction::SecretSet;
using radial::redaction::StreamRedactor;

class Reader {
public:
    Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    bool done() const { return pos_ >= size_; }
    std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
    std::string bytes(std::size_t n) {
        n = std::min(n, size_ - std::min(pos_, size_));
        std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
        pos_ += n;
        return s;
    }

private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

[[noreturn]] void fail(const char* what, std::string_view text) {
    std::fprintf(stderr, "stream_redactor_fuzz: %s (input text %zu bytes)\n", what, text.size());
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Reader in(data, size);
    const std::uint8_t head = in.byte();
    std::vector<Secret> secrets;
    for (unsigned k = 0, n = (head & 3u) + 1; k < n; ++k) {
        const std::uint8_t len = in.byte();
        std::string v = in.bytes(6 + len % 19);
        // Half the time a value shares its start with the previous one (a prefix, an
        // extension): the cases where leftmost-longest has to choose.
        if (k > 0 && (len & 0x80)) v = secrets[k - 1].value.substr(0, 3 + len % 8) + v;
        // Or starts with its end: occurrences that overlap, which must be masked whole.
        else if (k > 0 && (len & 0x40)) {
            const std::string& prev = secrets[k - 1].value;
            v = prev.substr(prev.size() - (3 + len % 4)) + v;
        }
        // '[' and ']' could straddle a marker and form the value from marker bytes plus
        // unredacted text; see docs/redaction.md. They are kept out of fuzzed values.
        for (auto& c : v)
            if (c == '[' || c == ']') c = 'q';
        secrets.push_back({"S" + std::to_string(k), std::move(v)});
    }
    SecretSet set;
    try {
        set = SecretSet(secrets);
    } catch (const std::invalid_argument&) {
        return 0; // too short (input ran out) or inside a marker: refused, nothing to check
    }
    const auto patterns = radial::redaction::derive_patterns(set);

    std::string text;
    while (!in.done()) {
        const std::uint8_t op = in.byte();
        const std::string& v = secrets[in.byte() % secrets.size()].value;
        switch (op % 8) {
            case 0:
            case 1: text += v; break;
            case 2: text += patterns[in.byte() % patterns.size()].bytes; break;
            case 3: text += v.substr(0, in.byte() % v.size()); break;
            case 4: {
                const std::string before = in.bytes(in.byte() % 6);
                const std::string after = in.bytes(in.byte() % 4);
                text += radial::redaction::test::base64(before + v + after, op & 8);
                break;
            }
            case 5: {
                // Two values overlapping as much as they can: the first's end is the second's
                // start.
                const std::string& a = secrets[in.byte() % secrets.size()].value;
                std::size_t k = std::min(a.size(), v.size()) - 1;
                while (k > 0 && a.compare(a.size() - k, k, v, 0, k) != 0) --k;
                text += a + v.substr(k);
                break;
            }
            default: text += in.bytes(in.byte() % 32);
        }
    }

    const Redactor redactor(set);
    const std::string expected = radial::redaction::test::reference_redact(set, text);
    if (redactor.redact(text) != expected)
        fail("one-shot redact() differs from the reference", text);

    // Chunk sizes from a small LCG: 1-byte writes, tiny writes, medium writes or one write.
    std::uint32_t lcg = head * 2654435761u + static_cast<std::uint32_t>(size);
    const unsigned mode = (head >> 2) & 3u;
    StreamRedactor stream = redactor.stream();
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        lcg = lcg * 1664525u + 1013904223u;
        const std::size_t r = lcg >> 8;
        const std::size_t n = mode == 0   ? 1
                              : mode == 1 ? 1 + r % 8
                              : mode == 2 ? r % 300
                                          : text.size();
        stream.feed(std::string_view(text).substr(i, n), out);
        if (stream.buffered_bytes() > stream.max_buffered_bytes())
            fail("hold-back bound broken", text);
        i += n;
    }
    stream.flush(out);
    if (out != expected) fail("streamed output differs from the reference", text);
    for (const auto& s : secrets)
        if (out.find(s.value) != std::string::npos) fail("a secret value is in the output", text);
    return 0;
}
