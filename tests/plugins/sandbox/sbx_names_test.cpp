// tests/plugins/sandbox/sbx_names_test.cpp — box labels as sandbox names and back
// (plugins/sandbox/sbx_names.cpp): golden names, the name alphabet, and that two distinct labels
// never map to one name (property tests over random labels).
#include "sbx_names.h"

#include <gtest/gtest.h>

#include <map>
#include <radial/plugin/runtime.hpp>
#include <random>

namespace radial::sandbox {
namespace {

bool in_name_alphabet(const std::string& name) {
    for (unsigned char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.'))
            return false;
    return true;
}

TEST(sbx_names, GoldenNames) {
    EXPECT_EQ(sandbox_name("radial-turn-local-7"), "radial-turn-local-7");
    EXPECT_EQ(sandbox_name("radial-turn-my_host-7"), "radial-turn-my.5fhost-7");
    EXPECT_EQ(sandbox_name("a.b"), "a.2eb");
    EXPECT_EQ(sandbox_name("Box_1.x"), "Box.5f1.2ex");
    EXPECT_EQ(sandbox_name(std::string("\x00\xff/", 3)), ".00.ff.2f");
}

TEST(sbx_names, GoldenDecoding) {
    EXPECT_EQ(label_of_sandbox("radial-turn-my.5fhost-7"), "radial-turn-my_host-7");
    EXPECT_EQ(label_of_sandbox("claude-myproject"), "claude-myproject");
    EXPECT_EQ(label_of_sandbox("a.2eb"), "a.b");
    // Names radiald never writes decode to nothing, so they are never claimed as boxes.
    EXPECT_EQ(label_of_sandbox("a.b"), std::nullopt) << "'.' must start an escape";
    EXPECT_EQ(label_of_sandbox("a.5"), std::nullopt) << "truncated escape";
    EXPECT_EQ(label_of_sandbox("a.5F"), std::nullopt) << "upper-case hex is not canonical";
    EXPECT_EQ(label_of_sandbox("a.41"), std::nullopt) << "'A' is written as itself";
    EXPECT_EQ(label_of_sandbox("a.2d"), std::nullopt) << "'-' is written as itself";
    EXPECT_EQ(label_of_sandbox("a_b"), std::nullopt) << "'_' is not in the name alphabet";
    EXPECT_EQ(label_of_sandbox("a+b"), std::nullopt);
}

TEST(sbx_names, UnderscoreAndItsEscapeNeverCollide) {
    // The pairs a naive scheme confuses: '_' → '-', '_' → '.', or an unescaped escape char.
    const std::vector<std::string> labels = {"a_b",  "a-b",  "a.b",  "a.5fb", "a-5f-b", "a--b",
                                             "a__b", "a._b", "a_.b", "a.2eb", "a5fb",   "a_5fb"};
    std::map<std::string, std::string> seen;
    for (const auto& l : labels) {
        auto [it, fresh] = seen.emplace(sandbox_name(l), l);
        EXPECT_TRUE(fresh) << "'" << l << "' and '" << it->second << "' share '" << it->first
                           << "'";
    }
}

TEST(sbx_names, ValidLabelsGiveValidNamesStartingWithALetterOrDigit) {
    for (std::string l : {"a", "Z9", "0_", "x.y-z_w", "radial-turn-inst1-70"}) {
        ASSERT_TRUE(radial::plugin::valid_label(l)) << l;
        std::string n = sandbox_name(l);
        EXPECT_TRUE(in_name_alphabet(n)) << n;
        EXPECT_NE(n.front(), '.') << n;
        EXPECT_NE(n.front(), '-') << n;
    }
}

// Property: for random byte strings and random valid labels, decoding inverts encoding, every
// name is in the alphabet, and no two distinct labels share a name.
TEST(sbx_names, PropertyEncodingIsInjectiveAndInvertible) {
    std::mt19937_64 rng(0x5b7);
    const std::string label_chars =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";
    std::map<std::string, std::string> by_name;
    for (int i = 0; i < 20000; ++i) {
        std::string label;
        std::size_t len = 1 + rng() % 12;
        for (std::size_t k = 0; k < len; ++k)
            label += (i % 2 == 0) ? label_chars[rng() % label_chars.size()]
                                  : static_cast<char>(rng() % 256);
        std::string name = sandbox_name(label);
        ASSERT_TRUE(in_name_alphabet(name)) << name;
        ASSERT_EQ(label_of_sandbox(name), label);
        auto [it, fresh] = by_name.emplace(name, label);
        ASSERT_TRUE(fresh || it->second == label)
            << "'" << label << "' and '" << it->second << "' share '" << name << "'";
    }
    EXPECT_GT(by_name.size(), 15000u) << "the generator must produce many distinct labels";
}

// Property: every name that decodes re-encodes to itself, so a foreign sandbox can never be
// taken for one of radiald's under a second spelling.
TEST(sbx_names, PropertyDecodableNamesAreCanonical) {
    std::mt19937_64 rng(0x1d);
    const std::string name_chars = "ab-.2e5f0Z";
    int decoded = 0;
    for (int i = 0; i < 50000; ++i) {
        std::string name;
        std::size_t len = 1 + rng() % 10;
        for (std::size_t k = 0; k < len; ++k) name += name_chars[rng() % name_chars.size()];
        if (auto label = label_of_sandbox(name)) {
            ++decoded;
            ASSERT_EQ(sandbox_name(*label), name);
        }
    }
    EXPECT_GT(decoded, 1000);
}

} // namespace
} // namespace radial::sandbox
