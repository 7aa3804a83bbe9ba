// The patterns derived from a secret (docs/design.md §10): literal vectors for each encoding, and
// for base64 a proof that each alignment's pattern sits inside real encodings of surrounding data.
#include "redaction/secret_patterns.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "redaction/stream_redactor.h"
#include "test_encoders.h"

namespace radial::redaction {
namespace {

using test::base64;
using ::testing::Contains;
using ::testing::Not;

std::vector<std::string> patterns_of(std::string_view value, Encoding enc) {
    SecretSet set{{"S", std::string(value)}};
    std::vector<std::string> out;
    for (const auto& p : derive_patterns(set))
        if (p.encoding == enc && p.form == Form::exact) out.push_back(p.bytes);
    return out;
}

std::vector<std::string> forms_of(const std::string& value, Form form) {
    std::vector<std::string> out;
    for (const auto& [f, kind] : derive_forms(value))
        if (kind == form) out.push_back(f);
    return out;
}

// Every pattern's bytes for one secret, whatever the form and encoding.
std::vector<std::string> all_patterns(const std::string& value) {
    SecretSet set{{"S", value}};
    std::vector<std::string> out;
    for (const auto& p : derive_patterns(set)) out.push_back(p.bytes);
    return out;
}

// A value written as hex (`xxd -p`, a digest tool's encoding of its bytes) was no pattern: a
// session's box wrote it into a file, its snapshot kept it, and a later session decoded it
//. Both cases, whole; output masked alike.
TEST(SecretPatterns, HexInBothCasesIsAPattern) {
    const std::string value = "abcdefghijklmnop-secret-1234";
    const std::string lower = "6162636465666768696a6b6c6d6e6f702d7365637265742d31323334";
    std::string upper = lower;
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(patterns_of(value, Encoding::hex), (std::vector<std::string>{lower, upper}));
    const Redactor r(SecretSet{{"SEC1", value}});
    EXPECT_EQ(r.redact("dump: " + lower + "\n"), "dump: [REDACTED:SEC1]\n");
    EXPECT_EQ(r.redact(upper), "[REDACTED:SEC1]");
}

// C-20: the forms of the case's three secrets that a shell prints.
// A value a box chose (a Codex token it rotated in) gets no decoded form: as the base64 of text of
// its choice, it would make radiald mask that text everywhere, other turns' log lines included
// (docs/design.md §8.7). Its own forms and encodings stay patterns.
TEST(SecretPatterns, AValueABoxChoseHasNoDecodedForm) {
    const std::string text = "turn vic: starting box";
    const std::string token = base64(text, false);
    const Redactor ordinary(SecretSet{{"codexAuth.1", token}});
    EXPECT_EQ(ordinary.redact(text), "[REDACTED:codexAuth.1]") << "the decoded form, as before";
    SecretSet chosen;
    chosen.add("codexAuth.1", token, /*chosen_by_box=*/true);
    const Redactor by_box(chosen);
    EXPECT_EQ(by_box.redact(text), text);
    EXPECT_EQ(by_box.redact("x " + token + " y"), "x [REDACTED:codexAuth.1] y");
    for (const auto& p : derive_patterns(chosen)) EXPECT_NE(p.form, Form::decoded) << p.bytes;
    // The flag travels with the set (a copy, a growing redactor's next set).
    const SecretSet copy = chosen;
    EXPECT_TRUE(copy.secrets().front().chosen_by_box);
}

TEST(SecretPatterns, C20_TrimmedAndUnquotedFormsOfTheCase) {
    EXPECT_THAT(all_patterns("Zq8-wX41-pL0k\n"), Contains("Zq8-wX41-pL0k"));
    EXPECT_THAT(all_patterns("  Hh5-kK31-zZ8w  "), Contains("Hh5-kK31-zZ8w"));
    EXPECT_THAT(all_patterns("\"Qw3-rT55-yU7i\""), Contains("Qw3-rT55-yU7i"));
}

TEST(SecretPatterns, TrimmedFormsOfWhitespaceAndLineEndings) {
    EXPECT_THAT(forms_of(" \tabc def\r\n", Form::trimmed),
                ::testing::ElementsAre("abc def", " \tabc def", "abc def\r\n"));
    EXPECT_THAT(forms_of("abcdef\r\n", Form::trimmed), ::testing::ElementsAre("abcdef"));
    EXPECT_TRUE(forms_of("abcdef", Form::trimmed).empty()) << "nothing to trim: no new form";
}

TEST(SecretPatterns, UnquotedFormsOfEachQuoteAndInsideWhitespace) {
    EXPECT_THAT(forms_of("'single'", Form::unquoted), ::testing::ElementsAre("single"));
    EXPECT_THAT(forms_of("`tick`", Form::unquoted), ::testing::ElementsAre("tick"));
    EXPECT_THAT(forms_of("  \" spaced \"\n", Form::unquoted),
                ::testing::ElementsAre(" spaced ", "spaced"));
    EXPECT_THAT(forms_of("\"a\\\"b\"", Form::unquoted), ::testing::ElementsAre("a\\\"b", "a\"b"));
    EXPECT_TRUE(forms_of("\"unbalanced'", Form::unquoted).empty());
}

TEST(SecretPatterns, RequotedAsShellsPrintIt) {
    const auto forms = forms_of("it's a $x", Form::requoted);
    EXPECT_THAT(forms, Contains("it'\\''s a $x"));     // set -x, shlex.quote
    EXPECT_THAT(forms, Contains("it\\'s\\ a\\ \\$x")); // printf %q
    EXPECT_THAT(forms, Contains("it's a \\$x"));       // inside "…"
}

TEST(SecretPatterns, EscapedAsLanguagesPrintIt) {
    const auto forms = forms_of("l1\nl2\t\"q\" 'a' \x01", Form::escaped);
    EXPECT_THAT(forms, Contains("l1\\nl2\\t\\\"q\\\" 'a' \\x01")); // C, Go, Rust
    EXPECT_THAT(forms, Contains("l1\\nl2\\t\"q\" \\'a\\' \\x01")); // Python's repr
}

TEST(SecretPatterns, FormsShorterThanTheMinimumAreNotPatterns) {
    // "  abc  " is 7 bytes; its trimmed form "abc" would redact every "abc" in the output.
    EXPECT_THAT(all_patterns("  abc  "), Not(Contains("abc")));
    EXPECT_THAT(all_patterns("\"abcd\""), Not(Contains("abcd")));
}

TEST(SecretPatterns, DerivedFormsAreEncodedToo) {
    const auto ps = all_patterns("Zq8-wX41-pL0k\n");
    // Alignment 0: the 17 characters of the 18 that depend only on its 13 bytes.
    EXPECT_THAT(ps, Contains(test::base64("Zq8-wX41-pL0k").substr(0, 17)));
    EXPECT_THAT(ps, Contains("Zq8-wX41-pL0k")); // url and json of it are the same bytes
    const auto quoted = all_patterns("\"p@ss w/rd\"");
    EXPECT_THAT(quoted, Contains("p%40ss%20w%2Frd"));
}

// Beside its folded cases (Form::cased), which only letters give.
TEST(SecretPatterns, APlainTokenHasNoExtraForms) {
    EXPECT_EQ(derive_forms("Zq8-wX41_pL0k.9").size(), 3u);
    EXPECT_EQ(derive_forms("8-41_0.9-2024").size(), 1u);
}

// A host folds the case of what it reads case-insensitively — the egress broker a host name the
// box asks for (docs/design.md §9.7) — so the value lower- and upper-cased is masked as the value
// is; raw only (its encodings are the value's own, never of the folded form).
TEST(SecretPatterns, TheValueFoldedToEitherCaseIsMasked) {
    SecretSet set{{"MYSEC", "Zq8wX41pL0kSECRETvalue77"}};
    Redactor r(set);
    EXPECT_EQ(r.redact("http://zq8wx41pl0ksecretvalue77.example.test/"),
              "http://[REDACTED:MYSEC].example.test/");
    EXPECT_EQ(r.redact("ZQ8WX41PL0KSECRETVALUE77"), "[REDACTED:MYSEC]");
    EXPECT_EQ(r.redact("zq8wx41pl0ksecretvalue7"), "zq8wx41pl0ksecretvalue7");
    const auto ps = derive_patterns(set);
    std::size_t cased = 0;
    for (const auto& p : ps) {
        if (p.form != Form::cased) continue;
        ++cased;
        EXPECT_EQ(p.encoding, Encoding::raw) << p.bytes;
    }
    EXPECT_EQ(cased, 2u);
}

// The egress broker quotes what a box sent with each byte outside printable ASCII as '?'
// (egress/http_head.h): a value with non-ASCII letters or a tab is masked in that form too, the
// folded cases with it; raw only.
TEST(SecretPatterns, TheValueAsTheBrokerQuotesItIsMasked) {
    SecretSet set{{"UML", "p\xc3\xa4sswOrd-geheim\t99"}};
    Redactor r(set);
    EXPECT_EQ(r.redact("GET /p??sswOrd-geheim?99 x"), "GET /[REDACTED:UML] x");
    EXPECT_EQ(r.redact("'p??ssword-geheim?99.test'"), "'[REDACTED:UML].test'");
    EXPECT_EQ(r.redact("P??SSWORD-GEHEIM?99"), "[REDACTED:UML]");
    EXPECT_EQ(r.redact("p??sswOrd-geheim?9"), "p??sswOrd-geheim?9");
    std::size_t shown = 0;
    for (const auto& p : derive_patterns(set)) {
        if (p.form != Form::shown) continue;
        ++shown;
        EXPECT_EQ(p.encoding, Encoding::raw) << p.bytes;
    }
    EXPECT_EQ(shown, 3u);
    EXPECT_EQ(derive_forms("Zq8-wX41_pL0k.9").size(), 3u) << "a printable value has no shown form";
    // A value of non-ASCII letters alone would be question marks shown: no pattern of it then.
    SecretSet cjk{{"CJK", "\xe5\xaf\x86\xe7\xa0\x81\xe5\xaf\x86\xe7\xa0\x81"}};
    EXPECT_EQ(Redactor(cjk).redact("what????????????????"), "what????????????????");
}

TEST(SecretPatterns, RawValueComesFirst) {
    SecretSet set{{"API_KEY", "Zq8-wX41-pL0k"}};
    const auto ps = derive_patterns(set);
    ASSERT_FALSE(ps.empty());
    EXPECT_EQ(ps[0].bytes, "Zq8-wX41-pL0k");
    EXPECT_EQ(ps[0].encoding, Encoding::raw);
    EXPECT_EQ(ps[0].secret, 0u);
}

TEST(SecretPatterns, Base64StableInnerPartForEachAlignment) {
    // "secret" = 73 65 63 72 65 74. Alignment 0: base64("secret") = "c2VjcmV0", all stable.
    // Alignment 1: base64("\0secret") = "AHNlY3JldA" without padding; 'A' and the 'H' (bits
    // 6..11 mix the prefix byte) are dropped, as is the final 'A' (mixes the next byte).
    // Alignment 2: base64("\0\0secret") = "AABzZWNyZXQ"; drop "AAB" and the last char.
    const auto ps = patterns_of("secret", Encoding::base64);
    EXPECT_THAT(ps, Contains("c2VjcmV0"));
    EXPECT_THAT(ps, Contains("NlY3JldA").Times(0)); // ends with a char that mixes the next byte
    EXPECT_THAT(ps, Contains("NlY3Jld"));
    EXPECT_THAT(ps, Contains("zZWNyZX"));
    EXPECT_EQ(ps.size(), 3u);
}

TEST(SecretPatterns, EachBase64PatternIsFoundInsideEveryEncodingWithItsAlignment) {
    const std::string secret = "\xfb\xef\xbe-token-\xff\xfe?>";
    const auto std_ps = patterns_of(secret, Encoding::base64);
    const auto url_ps = patterns_of(secret, Encoding::base64url);
    ASSERT_EQ(std_ps.size(), 3u);
    ASSERT_EQ(url_ps.size(), 3u) << "the value was chosen so that '+' or '/' occur";
    for (std::size_t prefix = 0; prefix < 9; ++prefix) {
        for (std::size_t suffix = 0; suffix < 4; ++suffix) {
            const std::string data =
                std::string("user:pass", prefix) + secret + std::string("\x01\x02\x03", suffix);
            const std::string enc = base64(data);
            const std::string enc_url = base64(data, /*url_safe=*/true);
            const auto found = [](const std::string& hay, const std::vector<std::string>& ps) {
                return std::any_of(ps.begin(), ps.end(), [&](const std::string& p) {
                    return hay.find(p) != std::string::npos;
                });
            };
            EXPECT_TRUE(found(enc, std_ps)) << "prefix " << prefix << " suffix " << suffix;
            EXPECT_TRUE(found(enc_url, url_ps)) << "prefix " << prefix << " suffix " << suffix;
            // The alignment-(prefix mod 3) pattern specifically.
            EXPECT_NE(enc.find(std_ps[prefix % 3]), std::string::npos);
        }
    }
}

TEST(SecretPatterns, UrlEncodingUpperLowerAndForm) {
    const auto ps = patterns_of("p@ss w/rd:\xc3\xbc~", Encoding::url);
    EXPECT_THAT(ps, Contains("p%40ss%20w%2Frd%3A%C3%BC~"));
    EXPECT_THAT(ps, Contains("p%40ss%20w%2frd%3a%c3%bc~"));
    EXPECT_THAT(ps, Contains("p%40ss+w%2Frd%3A%C3%BC~"));
    EXPECT_THAT(ps, Contains("p%40ss+w%2frd%3a%c3%bc~"));
    EXPECT_EQ(ps.size(), 4u);
}

TEST(SecretPatterns, UnreservedOnlyValueHasNoSeparateUrlOrJsonPattern) {
    EXPECT_TRUE(patterns_of("Zq8-wX41-pL0k", Encoding::url).empty());
    EXPECT_TRUE(patterns_of("Zq8-wX41-pL0k", Encoding::json).empty());
}

TEST(SecretPatterns, JsonEscapingVariants) {
    const auto ps = patterns_of("a\"b\\c/d\n\x01\xc3\xa9<\xf0\x9f\x94\x91", Encoding::json);
    EXPECT_THAT(ps, Contains("a\\\"b\\\\c/d\\n\\u0001\xc3\xa9<\xf0\x9f\x94\x91"));       // JS
    EXPECT_THAT(ps, Contains("a\\\"b\\\\c\\/d\\n\\u0001\xc3\xa9<\xf0\x9f\x94\x91"));     // PHP
    EXPECT_THAT(ps, Contains("a\\\"b\\\\c/d\\n\\u0001\\u00e9<\\ud83d\\udd11"));          // Python
    EXPECT_THAT(ps, Contains("a\\\"b\\\\c/d\\n\\u0001\\u00E9<\\uD83D\\uDD11"));          // upper
    EXPECT_THAT(ps, Contains("a\\\"b\\\\c/d\\n\\u0001\xc3\xa9\\u003c\xf0\x9f\x94\x91")); // Go
}

TEST(SecretPatterns, InvalidUtf8ValueGetsNoCodePointEscapes) {
    const auto ps = patterns_of("tok\"en\xff\xfe", Encoding::json);
    EXPECT_THAT(ps, Contains("tok\\\"en\xff\xfe"));
    for (const auto& p : ps) EXPECT_EQ(p.find("\\u00ff"), std::string::npos);
}

TEST(SecretPatterns, DuplicateValuesMapToTheFirstSecret) {
    SecretSet set{{"FIRST", "same-value-1"}, {"SECOND", "same-value-1"}};
    for (const auto& p : derive_patterns(set)) EXPECT_EQ(p.secret, 0u);
}

TEST(SecretPatterns, NoDerivedPatternIsShorterThanTheMinimum) {
    SecretSet set(2);
    set.add("TINY", "ab");
    for (const auto& p : derive_patterns(set)) EXPECT_GE(p.bytes.size(), 2u) << p.bytes;
    EXPECT_THAT(patterns_of("abcdef", Encoding::base64), Not(Contains("")));
}

} // namespace
} // namespace radial::redaction
