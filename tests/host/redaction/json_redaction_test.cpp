// A journaled record redacted value by value stays JSON (docs/design.md §10.2): a secret made of
// digits inside a number is masked and the record still parses.
#include "redaction/json_redaction.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "redaction/secret_set.h"

namespace radial::redaction {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

Redactor redactor_for(std::string value) {
    SecretSet s;
    s.add("PIN", std::move(value));
    return Redactor(s);
}

TEST(JsonRedaction, ASecretOfDigitsInsideANumberIsMaskedAndTheRecordStillParses) {
    const Redactor r = redactor_for("4815162342");
    const std::string record =
        R"({"n": 948151623427, "f": 1.4815162342, "list": [4815162342, 7], "ok": true})";
    ASSERT_THAT(r.redact(record), Not(HasSubstr("4815162342")));
    EXPECT_FALSE(nlohmann::json::accept(r.redact(record)))
        << "the text redaction this guards against would have kept it JSON";

    const std::string stored = redact_json(r, record);
    EXPECT_THAT(stored, Not(HasSubstr("4815162342")));
    ASSERT_TRUE(nlohmann::json::accept(stored)) << stored;
    auto j = nlohmann::json::parse(stored);
    ASSERT_TRUE(j["n"].is_string()) << stored;
    EXPECT_THAT(j["n"].get<std::string>(), HasSubstr("[REDACTED"));
    EXPECT_TRUE(j["f"].is_string()) << stored;
    EXPECT_TRUE(j["list"][0].is_string()) << stored;
    EXPECT_EQ(j["list"][1], 7) << "a value without a secret keeps its type";
    EXPECT_EQ(j["ok"], true);
    // Key order is kept.
    EXPECT_LT(stored.find("\"n\""), stored.find("\"list\""));
}

// A record rewritten to mask a secret keeps a posted -0 as -0 (docs/design.md §9.5).
TEST(JsonRedaction, ANegativeZeroSurvivesARedactedRecord) {
    const Redactor r = redactor_for("hunter2-secret");
    const std::string out = redact_json(r, R"({"k":"hunter2-secret","z":-0,"n":[-0,0]})");
    EXPECT_THAT(out, Not(HasSubstr("hunter2-secret")));
    EXPECT_THAT(out, HasSubstr(R"(,"z":-0,"n":[-0,0]})")) << out;
}

TEST(JsonRedaction, StringsAndKeysAreRedactedInsideTheirQuotes) {
    const Redactor r = redactor_for("hunter2hunter2");
    const std::string stored = redact_json(
        r, R"({"pw": "x-hunter2hunter2-y", "hunter2hunter2": {"a": ["hunter2hunter2"]}})");
    EXPECT_THAT(stored, Not(HasSubstr("hunter2hunter2")));
    ASSERT_TRUE(nlohmann::json::accept(stored)) << stored;
    auto j = nlohmann::json::parse(stored);
    EXPECT_THAT(j["pw"].get<std::string>(), HasSubstr("x-[REDACTED"));
}

TEST(JsonRedaction, ASecretWrittenWithJsonEscapesIsMaskedToo) {
    const Redactor r = redactor_for("hunter2hunter2");
    // "h" written as \u0068: as text the secret is not there, decoded it is.
    const std::string stored = redact_json(r, R"({"pw": "\u0068unter2hunter2"})");
    auto j = nlohmann::json::parse(stored);
    EXPECT_THAT(j["pw"].get<std::string>(), Not(HasSubstr("hunter2hunter2")));
}

TEST(JsonRedaction, NothingSecretKeepsTheBytesExactly) {
    const Redactor r = redactor_for("4815162342");
    const std::string record = "{ \"a\" : 1.50 ,\n \"b\": [ 1, 2 ] }";
    EXPECT_EQ(redact_json(r, record), record);
}

TEST(JsonRedaction, ASecretAcrossTokensIsMaskedAndTheResultIsAJsonString) {
    const Redactor r = redactor_for("\":\"abcdef");
    const std::string stored = redact_json(r, R"({"k":"abcdefgh"})");
    EXPECT_THAT(stored, Not(HasSubstr("abcdef\"")));
    ASSERT_TRUE(nlohmann::json::accept(stored)) << stored;
    EXPECT_TRUE(nlohmann::json::parse(stored).is_string()) << stored;
}

TEST(JsonRedaction, TextThatIsNotJsonIsRedactedAsText) {
    const Redactor r = redactor_for("4815162342");
    EXPECT_EQ(redact_json(r, "not json 4815162342"), r.redact("not json 4815162342"));
}

} // namespace
} // namespace radial::redaction
