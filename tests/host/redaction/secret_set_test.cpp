// Refusals of SecretSet (docs/design.md §10): one test per refusal, asserting the message names the
// secret and never shows its value.
#include "redaction/secret_set.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace radial::redaction {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The what() of the std::invalid_argument `fn` throws; fails the test if it throws nothing.
template <class Fn>
std::string refusal(Fn&& fn) {
    try {
        fn();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected std::invalid_argument";
    return {};
}

TEST(SecretSet, AcceptsSecretsAtTheMinimumLength) {
    SecretSet set{{"API_KEY", "Zq8-wX41-pL0k"}, {"SIX", "abcdef"}};
    ASSERT_EQ(set.size(), 2u);
    EXPECT_EQ(set.secrets()[0].name, "API_KEY");
    EXPECT_EQ(set.secrets()[1].value, "abcdef");
    EXPECT_EQ(set.min_length(), SecretSet::kDefaultMinLength);
}

TEST(SecretSet, RefusesAValueShorterThanTheMinimumNamingTheSecretNotTheValue) {
    const std::string msg = refusal([] { SecretSet set{{"API_KEY", "Zq8w"}}; });
    EXPECT_EQ(msg,
              "registering secret 'API_KEY': the value is shorter than the minimum of 6 bytes; a "
              "short secret would redact ordinary text, register the whole secret rather than a "
              "fragment");
    EXPECT_THAT(msg, Not(HasSubstr("Zq8w")));
}

TEST(SecretSet, RefusesASingleCharacterSecretRatherThanRedactingEveryA) {
    SecretSet set;
    EXPECT_THAT(refusal([&] { set.add("TOKEN", "a"); }), HasSubstr("'TOKEN'"));
    EXPECT_TRUE(set.empty());
}

TEST(SecretSet, HonoursACustomMinimumLength) {
    SecretSet set(10);
    EXPECT_THAT(refusal([&] { set.add("PIN", "123456789"); }),
                HasSubstr("shorter than the minimum of 10 bytes"));
    set.add("PIN", "1234567890");
    EXPECT_EQ(set.size(), 1u);
}

TEST(SecretSet, RefusesAMinimumLengthOfZero) {
    EXPECT_THAT(refusal([] { SecretSet set(0); }), HasSubstr("minimum secret length is 0"));
}

TEST(SecretSet, RefusesAnEmptyName) {
    const std::string msg = refusal([] { SecretSet set{{"", "Zq8-wX41-pL0k"}}; });
    EXPECT_THAT(msg, HasSubstr("registering secret '': the name is empty"));
    EXPECT_THAT(msg, Not(HasSubstr("Zq8-wX41-pL0k")));
}

TEST(SecretSet, RefusesANameWithBytesThatCannotBePrintedPlainly) {
    const std::string msg = refusal([] { SecretSet set{{"BAD]\nNAME", "Zq8-wX41-pL0k"}}; });
    EXPECT_EQ(msg,
              "registering secret 'BAD]\\x0aNAME': the name has a byte other than A-Z a-z 0-9 '_' "
              "'.' '-'; rename it, it is printed in markers and logs");
}

TEST(SecretSet, RefusesAValueThatItsOwnMarkerWouldPrint) {
    const std::string msg = refusal([] { SecretSet set{{"MY_PASSWORD", "PASSWORD"}}; });
    EXPECT_EQ(msg,
              "registering secret 'MY_PASSWORD': the value occurs inside its own marker "
              "'[REDACTED:MY_PASSWORD]', so every redaction would print it; rename the secret");
}

// A marker holding the value upper-cased gives it away but for its case (names are upper case by
// habit): refused, saying so rather than that the value itself occurs.
TEST(SecretSet, RefusesAValueAMarkerWouldPrintUpperCased) {
    SecretSet set{{"DB_PASSWORD", "Zq8-wX41-pL0k"}};
    EXPECT_EQ(refusal([&] { set.add("redact.values.0", "password"); }),
              "registering secret 'redact.values.0': the value, upper- or lower-cased, occurs "
              "inside the marker '[REDACTED:DB_PASSWORD]' of secret 'DB_PASSWORD', so every "
              "redaction would print it; rename 'DB_PASSWORD'");
}

TEST(SecretSet, RefusesAValueThatAnotherSecretsMarkerWouldPrint) {
    SecretSet set{{"GH_TOKEN", "ghp_FAKE0123456789abcdef"}};
    EXPECT_THAT(refusal([&] { set.add("OTHER", "GH_TOKEN]"); }),
                HasSubstr("inside the marker '[REDACTED:GH_TOKEN]' of secret 'GH_TOKEN'"));
    EXPECT_EQ(set.size(), 1u);
}

TEST(SecretSet, RefusesANameWhoseMarkerWouldPrintAnEarlierValue) {
    SecretSet set{{"FIRST", "DACTED:SE"}};
    const std::string msg = refusal([&] { set.add("SECOND", "Zq8-wX41-pL0k"); });
    EXPECT_THAT(msg, HasSubstr("the value of secret 'FIRST' occurs inside this secret's marker"));
    EXPECT_THAT(msg, Not(HasSubstr("Zq8-wX41-pL0k")));
}

TEST(SecretSet, RefusalNamesTheFirstOffendingSecretOfAList) {
    const std::string msg = refusal([] {
        SecretSet set{{"GOOD", "Zq8-wX41-pL0k"}, {"SHORT_ONE", "abc"}, {"", "x"}};
    });
    EXPECT_THAT(msg, HasSubstr("'SHORT_ONE'"));
}

TEST(SecretSet, AcceptsDuplicateValuesAndDuplicateNames) {
    SecretSet set{{"A", "same-value-1"}, {"B", "same-value-1"}, {"A", "other-value-2"}};
    EXPECT_EQ(set.size(), 3u);
}

TEST(SecretSet, MarkerFormat) { EXPECT_EQ(marker_for("API_KEY"), "[REDACTED:API_KEY]"); }

} // namespace
} // namespace radial::redaction
