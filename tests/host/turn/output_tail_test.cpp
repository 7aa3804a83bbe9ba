// The output tail of the terminal record (host/turn/output_tail.h) and the UTF-8 helpers it cuts
// with (host/text/utf8.h): cut on a character boundary, never invent a character, keep bytes that
// are not UTF-8 exactly.
#include "turn/output_tail.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "text/utf8.h"
#include "turn/terminal_record.h"

namespace radial::turn {
namespace {

const std::string kE = "\xc3\xa9"; // é, 2 bytes

std::string repeat(const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

// C-24: 3000 × é fed in chunks of every size that can split a character: the tail is valid
// UTF-8, at most 4096 bytes, and starts with é.
TEST(OutputTail, C24_CutsOnACharacterBoundaryWhateverTheChunks) {
    for (std::size_t chunk : {1u, 2u, 3u, 7u, 4096u, 6000u}) {
        const std::string all = repeat(kE, 3000);
        std::string tail;
        for (std::size_t at = 0; at < all.size(); at += chunk)
            append_output_tail(tail, std::string_view(all).substr(at, chunk), kOutputTailBytes);
        EXPECT_LE(tail.size(), kOutputTailBytes) << chunk;
        EXPECT_TRUE(text::is_valid_utf8(tail)) << chunk;
        EXPECT_EQ(tail.substr(0, 2), kE) << chunk;
        EXPECT_GE(tail.size(), kOutputTailBytes - 3) << "at most one cut character is dropped";
        EXPECT_TRUE(std::string_view(all).ends_with(tail)) << chunk;
    }
}

TEST(OutputTail, FourByteCharactersLoseTheWholeCutCharacter) {
    const std::string key = "\xf0\x9f\x94\x91"; // U+1F511
    std::string tail;
    append_output_tail(tail, "x" + repeat(key, 3), 10); // 13 bytes; the last 10 start mid-key
    EXPECT_EQ(tail, repeat(key, 2));
}

TEST(OutputTail, NothingDroppedNothingCut) {
    std::string tail;
    append_output_tail(tail, "\x80\x80 abc", 100); // not UTF-8, but nothing was cut: kept
    EXPECT_EQ(tail, "\x80\x80 abc");
    std::string exact;
    append_output_tail(exact, "\x80" + std::string(9, 'a'), 10); // exactly the capacity
    EXPECT_EQ(exact.size(), 10u);
}

TEST(OutputTail, ARunOfMoreThanThreeContinuationBytesIsNotACutCharacter) {
    std::string tail;
    append_output_tail(tail, "ab" + std::string(5, '\x80') + "z", 6);
    EXPECT_EQ(tail, std::string(5, '\x80') + "z");
}

TEST(Utf8, ValidityIsStrict) {
    EXPECT_TRUE(text::is_valid_utf8("plain \xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x94\x91"));
    EXPECT_FALSE(text::is_valid_utf8("\xa9"));             // stray continuation
    EXPECT_FALSE(text::is_valid_utf8("\xc3"));             // cut short
    EXPECT_FALSE(text::is_valid_utf8("\xc0\xaf"));         // overlong '/'
    EXPECT_FALSE(text::is_valid_utf8("\xed\xa0\x80"));     // surrogate
    EXPECT_FALSE(text::is_valid_utf8("\xf4\x90\x80\x80")); // above U+10FFFF
}

TEST(Utf8, PrefixNeverEndsInsideACharacter) {
    const std::string s = "ab" + kE + "cd";
    EXPECT_EQ(text::utf8_prefix(s, 3), "ab");
    EXPECT_EQ(text::utf8_prefix(s, 4), "ab" + kE);
    EXPECT_EQ(text::utf8_prefix(s, 100), s);
    EXPECT_EQ(text::utf8_prefix(std::string(6, '\x80'), 4), std::string(4, '\x80'));
}

TEST(TerminalRecordTail, BytesThatAreNotUtf8AreShownAndKeptExactly) {
    TerminalRecord r;
    r.stdout_tail = "ok \xff\xfe end";
    r.stderr_tail = "fine " + kE;
    auto j = nlohmann::json::parse(r.to_json());
    EXPECT_EQ(j["outputTail"]["stdout"], "ok \xef\xbf\xbd\xef\xbf\xbd end");
    EXPECT_EQ(j["outputTail"]["stdoutBase64"], "b2sg//4gZW5k");
    EXPECT_EQ(j["outputTail"]["stderr"], "fine " + kE);
    EXPECT_FALSE(j["outputTail"].contains("stderrBase64")) << "valid UTF-8 needs no copy";
}

} // namespace
} // namespace radial::turn
