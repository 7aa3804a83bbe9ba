// tests/host/socket/turn_token_test.cpp — the per-turn bearer token (docs/design.md §9.4).
#include "socket/turn_token.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace radial::socket {
namespace {

TEST(TurnToken, IsSixtyFourLowercaseHexCharacters) {
    const std::string token = mint_turn_token();
    ASSERT_EQ(token.size(), 64u);
    for (char c : token)
        EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << "byte '" << c << "'";
}

TEST(TurnToken, TwoMintsDiffer) {
    std::set<std::string> seen;
    for (int i = 0; i < 64; ++i) seen.insert(mint_turn_token());
    EXPECT_EQ(seen.size(), 64u);
}

TEST(TurnToken, UsesEveryHexDigitAcrossMints) {
    // A broken encoder (e.g. only the low nibble) would leave digits unused.
    std::set<char> digits;
    for (int i = 0; i < 16; ++i)
        for (char c : mint_turn_token()) digits.insert(c);
    EXPECT_EQ(digits.size(), 16u);
}

TEST(TokenEquals, EqualContentsCompareEqual) {
    const std::string a = mint_turn_token();
    const std::string b = a; // a distinct buffer with the same bytes
    EXPECT_TRUE(token_equals(a, b));
    EXPECT_TRUE(token_equals("", ""));
}

TEST(TokenEquals, AnyDifferingByteCompareUnequal) {
    const std::string a = mint_turn_token();
    for (std::size_t i = 0; i < a.size(); ++i) {
        std::string b = a;
        b[i] = b[i] == '0' ? '1' : '0';
        EXPECT_FALSE(token_equals(a, b)) << "differing at byte " << i;
    }
}

TEST(TokenEquals, DifferentLengthsCompareUnequal) {
    const std::string a = mint_turn_token();
    EXPECT_FALSE(token_equals(a, a.substr(0, 63)));
    EXPECT_FALSE(token_equals(a, a + "0"));
    EXPECT_FALSE(token_equals(a, ""));
    EXPECT_FALSE(token_equals("", a));
}

} // namespace
} // namespace radial::socket
