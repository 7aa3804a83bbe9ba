// The character rules of names, each defined once (docs/design.md §14.7): the plugin API's
// (radial/names.hpp, radial::plugin::valid_label) and the tree's own (radial/internal/names.h).
// Per rule: accepted, refused, and the edges (empty, one too long, non-ASCII bytes).
#include <gtest/gtest.h>
#include <radial/internal/names.h>

#include <radial/names.hpp>
#include <radial/plugin/runtime.hpp>
#include <string>

namespace radial {
namespace {

// UTF-8 "é" and a lone high byte: never a letter or a digit in any rule.
const std::string kNonAscii[] = {"\xc3\xa9", "\xff"};

TEST(Names, EnvName) {
    for (const char* ok : {"A", "_", "PATH", "_x9", "a_B_1"}) EXPECT_TRUE(is_env_name(ok)) << ok;
    for (const char* bad : {"", "9A", "A-B", "A B", "A=B", "A.B"})
        EXPECT_FALSE(is_env_name(bad)) << bad;
    EXPECT_TRUE(is_env_name(std::string(4096, 'A'))); // no length limit of its own
    for (const auto& n : kNonAscii) EXPECT_FALSE(is_env_name("A" + n));
}

TEST(Names, RuntimeId) {
    for (const char* ok : {"docker", "sandbox", "a", "0", "-", "my-runtime-2"})
        EXPECT_TRUE(is_runtime_id(ok)) << ok;
    for (const char* bad : {"", "Docker", "dock_er", "dock.er", "dock er"})
        EXPECT_FALSE(is_runtime_id(bad)) << bad;
    EXPECT_TRUE(is_runtime_id(std::string(32, 'a')));
    EXPECT_FALSE(is_runtime_id(std::string(33, 'a')));
    for (const auto& n : kNonAscii) EXPECT_FALSE(is_runtime_id("a" + n));
}

TEST(Names, CapabilityId) {
    for (const char* ok : {"radial.cap.unix-socket-mounts", "a.b", "x/y.z_W-9", "."})
        EXPECT_TRUE(is_capability_id(ok)) << ok;
    for (const char* bad : {"", "nodot", "a.b c", "a.b:c", "a.b;"})
        EXPECT_FALSE(is_capability_id(bad)) << bad;
    for (const auto& n : kNonAscii) EXPECT_FALSE(is_capability_id("a.b" + n));
}

TEST(Names, BoxLabelNonAscii) {
    for (const auto& n : kNonAscii) EXPECT_FALSE(plugin::valid_label("radial-" + n));
}

TEST(Names, InstanceId) {
    for (const char* ok : {"inst1", "a", "0", "abc123"}) EXPECT_TRUE(internal::is_instance_id(ok));
    for (const char* bad : {"", "inst-1", "Inst1", "in_st", "in st"})
        EXPECT_FALSE(internal::is_instance_id(bad)) << bad;
    EXPECT_TRUE(internal::is_instance_id(std::string(32, 'a')));
    EXPECT_FALSE(internal::is_instance_id(std::string(33, 'a')));
    for (const auto& n : kNonAscii) EXPECT_FALSE(internal::is_instance_id("a" + n));
}

TEST(Names, TurnId) {
    for (const char* ok : {"t", "20261129t131500-3f2a9c01d4e5", "a-", "0-0"})
        EXPECT_TRUE(internal::is_turn_id(ok)) << ok;
    for (const char* bad : {"", "-t", "T1", "t_1", "t.1", "t 1", "t/1"})
        EXPECT_FALSE(internal::is_turn_id(bad)) << bad;
    EXPECT_TRUE(internal::is_turn_id(std::string(internal::kMaxTurnIdBytes, 'a')));
    EXPECT_FALSE(internal::is_turn_id(std::string(internal::kMaxTurnIdBytes + 1, 'a')));
    for (const auto& n : kNonAscii) EXPECT_FALSE(internal::is_turn_id("t" + n));
}

TEST(Names, RecordType) {
    for (const char* ok : {"turn.result", "a", "x:y/z_W-9.v1"})
        EXPECT_TRUE(internal::is_record_type(ok)) << ok;
    // The turn socket used to accept any printable ASCII but '"' and '\'; now it applies this
    // rule too, so these are refused everywhere.
    for (const char* bad : {"", "turn result", "a\"b", "a\\b", "a;b", "a@b", "a\tb"})
        EXPECT_FALSE(internal::is_record_type(bad)) << bad;
    EXPECT_TRUE(internal::is_record_type(std::string(internal::kMaxRecordTypeBytes, 'a')));
    EXPECT_FALSE(internal::is_record_type(std::string(internal::kMaxRecordTypeBytes + 1, 'a')));
    for (const auto& n : kNonAscii) EXPECT_FALSE(internal::is_record_type("a" + n));
}

TEST(Names, Decimal) {
    for (const char* ok : {"0", "7", "0123456789", "2147483647"})
        EXPECT_TRUE(internal::is_decimal(ok)) << ok;
    for (const char* bad : {"", "-1", "+1", "1.0", "1 ", " 1", "0x1", "1e3"})
        EXPECT_FALSE(internal::is_decimal(bad)) << bad;
    EXPECT_TRUE(internal::is_decimal(std::string(100, '9'))); // unbounded unless asked
    EXPECT_TRUE(internal::is_decimal(std::string(10, '9'), 10));
    EXPECT_FALSE(internal::is_decimal(std::string(11, '9'), 10));
    for (const auto& n : kNonAscii) EXPECT_FALSE(internal::is_decimal("1" + n));
    // Arabic-Indic digit one (U+0661) is not an ASCII digit.
    EXPECT_FALSE(internal::is_decimal("\xd9\xa1"));
}

TEST(Names, SpaceOrControl) {
    for (const char* plain : {"", "word", "a-b_c.d", "image:tag@sha256:ab"})
        EXPECT_FALSE(internal::has_space_or_control(plain)) << plain;
    for (const char* bad : {" ", "a b", "a\tb", "a\nb", "a\x7f", "\x01"})
        EXPECT_TRUE(internal::has_space_or_control(bad));
    EXPECT_TRUE(internal::has_space_or_control(std::string("a\0b", 3)));
    // UTF-8 is allowed: only ASCII whitespace and controls split a word.
    for (const auto& n : kNonAscii) EXPECT_FALSE(internal::has_space_or_control("a" + n));
}

} // namespace
} // namespace radial
