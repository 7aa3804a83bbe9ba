// The character rules of names, each defined once (docs/design.md §14.7): the plugin API's
// (radial/names.hpp, radial::plugin::valid_label) and the tree's own (radial/internal/names.h).
// Per rule: accepted, refused, and the edges (empty, longest, one too long, non-ASCII bytes).
#include <gtest/gtest.h>
#include <radial/internal/names.h>

#include <functional>
#include <radial/names.hpp>
#include <radial/plugin/runtime.hpp>
#include <string>
#include <vector>

namespace radial {
namespace {

using Rule = std::function<bool(std::string_view)>;

// What every rule is tested for. `max` is the longest name it takes (0: no limit of its own),
// `fill` a byte it takes anywhere; `stem` a short accepted name to which non-ASCII bytes are
// appended (UTF-8 "é" and a lone 0xff: never a letter or a digit in any rule).
struct Expect {
    std::vector<std::string> accepted, refused;
    std::size_t max = 0;
    char fill = 'a';
    std::string stem = "a";
};

void check(const Rule& rule, const Expect& e) {
    for (const auto& s : e.accepted) EXPECT_TRUE(rule(s)) << "'" << s << "' was refused";
    for (const auto& s : e.refused) EXPECT_FALSE(rule(s)) << "'" << s << "' was accepted";
    EXPECT_FALSE(rule("")) << "the empty name was accepted";
    if (e.max != 0) {
        EXPECT_TRUE(rule(std::string(e.max, e.fill))) << e.max << " bytes were refused";
        EXPECT_FALSE(rule(std::string(e.max + 1, e.fill))) << e.max + 1 << " bytes were accepted";
    } else {
        EXPECT_TRUE(rule(std::string(4096, e.fill))) << "a long name was refused";
    }
    for (const char* high : {"\xc3\xa9", "\xff"})
        EXPECT_FALSE(rule(e.stem + high)) << "a non-ASCII byte was accepted";
}

TEST(Names, EnvName) {
    check(is_env_name, {{"A", "_", "PATH", "_x9", "a_B_1"}, {"9A", "A-B", "A B", "A=B", "A.B"}});
}

TEST(Names, RuntimeId) {
    check(
        is_runtime_id,
        {{"docker", "sandbox", "0", "-", "my-runtime-2"}, {"Docker", "dock_er", "d.r", "d r"}, 32});
}

TEST(Names, CapabilityId) {
    check(is_capability_id, {{"radial.cap.unix-socket-mounts", "a.b", "x/y.z_W-9", "."},
                             {"nodot", "a.b c", "a.b:c", "a.b;"},
                             0,
                             '.',
                             "a.b"});
}

TEST(Names, BoxLabel) {
    check(plugin::valid_label, {{"radial-turn-inst1-7", "a.b_c-D9"}, {"-x", "a b", "a;b"}, 128});
}

TEST(Names, InstanceId) {
    check(internal::is_instance_id,
          {{"inst1", "a", "0"}, {"inst-1", "Inst1", "in_st", "in st"}, 32});
}

TEST(Names, TurnId) {
    check(internal::is_turn_id, {{"t", "20261129t131500-3f2a9c01d4e5", "a-", "0-0"},
                                 {"-t", "T1", "t_1", "t.1", "t 1", "t/1"},
                                 internal::kMaxTurnIdBytes});
}

TEST(Names, RecordType) {
    // The turn socket used to accept any printable ASCII but '"' and '\'; it applies this rule
    // now too, so these are refused everywhere.
    check(internal::is_record_type, {{"turn.result", "a", "x:y/z_W-9.v1"},
                                     {"turn result", "a\"b", "a\\b", "a;b", "a@b", "a\tb"},
                                     internal::kMaxRecordTypeBytes});
}

TEST(Names, Decimal) {
    const std::vector<std::string> refused = {
        "-1", "+1", "1.0", "1 ", " 1", "0x1", "1e3", "\xd9\xa1"}; // U+0661, an Arabic-Indic one
    check([](std::string_view s) { return internal::is_decimal(s); },
          {{"0", "7", "0123456789", "2147483647"}, refused, 0, '9', "1"});
    check([](std::string_view s) { return internal::is_decimal(s, 10); },
          {{"0", "2147483647"}, refused, 10, '9', "1"});
}

TEST(Names, SpaceOrControl) {
    for (const char* plain : {"", "word", "a-b_c.d", "image:tag@sha256:ab"})
        EXPECT_FALSE(internal::has_space_or_control(plain)) << plain;
    for (const char* bad : {" ", "a b", "a\tb", "a\nb", "a\x7f", "\x01"})
        EXPECT_TRUE(internal::has_space_or_control(bad));
    EXPECT_TRUE(internal::has_space_or_control(std::string("a\0b", 3)));
    // UTF-8 is allowed: only ASCII whitespace and controls split a word.
    EXPECT_FALSE(internal::has_space_or_control("a\xc3\xa9\xff"));
}

} // namespace
} // namespace radial
