// The log's two formats: the text line operators grep and journald keeps (the default, unchanged),
// and one JSON object per line for log shippers, redacted the same way.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "log/log_redaction.h"
#include "log/logger.h"

namespace radial::log {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

struct LogFormat : ::testing::Test {
    std::vector<std::string> lines;
    void SetUp() override {
        set_sink([this](std::string_view l) { lines.emplace_back(l); });
    }
    void TearDown() override {
        set_format(Format::text);
        set_sink({});
        set_filter({});
    }
    nlohmann::ordered_json only_line_as_json() const {
        EXPECT_EQ(lines.size(), 1u);
        return nlohmann::ordered_json::parse(lines.at(0));
    }
};

TEST_F(LogFormat, TextIsTheDefaultAndUnchanged) {
    warn("turn", "turn {}: {}", "t-1", "multi\nline");
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0], "radiald[turn] warning: turn t-1: multi line");
}

// A check's lines, logged by the turn layer as "turn <id>: ", read as the check's while it runs
// (docs/design.md §4): component and message in text, the "check" key in json; another turn's
// lines, and the check's once it ended, are untouched.
TEST_F(LogFormat, ACheckRunningThroughTheTurnLayerIsNamedACheck) {
    {
        CheckLines named("chk-1");
        info("turn", "turn {}: starting box", "chk-1");
        info("turn", "turn {}: starting box", "t-2");
        warn("socket", "turn {}: a record was refused", "chk-1");
        set_format(Format::json);
        info("turn", "turn {}: done", "chk-1");
        set_format(Format::text);
    }
    info("turn", "turn {}: after", "chk-1");
    ASSERT_EQ(lines.size(), 5u);
    EXPECT_EQ(lines[0], "radiald[check] info: check chk-1: starting box");
    EXPECT_EQ(lines[1], "radiald[turn] info: turn t-2: starting box");
    EXPECT_EQ(lines[2], "radiald[socket] warning: check chk-1: a record was refused");
    const auto j = nlohmann::ordered_json::parse(lines[3]);
    EXPECT_EQ(j["component"], "check");
    EXPECT_EQ(j["check"], "chk-1");
    EXPECT_FALSE(j.contains("turn"));
    EXPECT_EQ(j["message"], "check chk-1: done");
    EXPECT_EQ(lines[4], "radiald[turn] info: turn chk-1: after");
}

// A name a box controls (a file name in the workspace) reaches the text log with its control
// characters escaped, never raw (docs/design.md §14.7); JSON escapes them itself.
TEST_F(LogFormat, TextEscapesControlCharactersAndBytesThatAreNotUtf8) {
    warn("turn", "file '{}'",
         "a\x1b]0;pwned\x07\x1b[31mred\x7f\xc2\x9b"
         "2J\xffz\tok é");
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0],
              "radiald[turn] warning: file "
              "'a\\x1b]0;pwned\\x07\\x1b[31mred\\x7f\\u{009b}2J\\xffz\tok é'");
    for (char c : lines[0])
        EXPECT_TRUE(c == '\t' || static_cast<unsigned char>(c) >= 0x20) << int(c);
    set_format(Format::json);
    warn("turn", "file '{}'", "a\x1b[31m");
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_THAT(lines[1], HasSubstr("a\\u001b[31m"));
}

TEST_F(LogFormat, JsonIsOneObjectPerLineWithTimeLevelComponentMessage) {
    set_format(Format::json);
    error("plugin:docker", "docker said: {}", "line one\nline two \"quoted\"");
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0].find('\n'), std::string::npos) << lines[0];
    auto j = only_line_as_json();
    std::vector<std::string> keys;
    for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
    EXPECT_EQ(keys, (std::vector<std::string>{"time", "level", "component", "message"}));
    EXPECT_EQ(j["level"], "error");
    EXPECT_EQ(j["component"], "plugin:docker");
    // A message keeps its newlines in JSON: escaped, so the object stays on one line.
    EXPECT_EQ(j["message"], "docker said: line one\nline two \"quoted\"");
    EXPECT_TRUE(std::regex_match(j["time"].get<std::string>(),
                                 std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
        << j["time"];
}

TEST_F(LogFormat, JsonNamesTheTurnALineIsAbout) {
    set_format(Format::json);
    info("daemon", "turn {}: claimed (1 running, 0 queued)", "build-42");
    info("daemon", "turn -x: not a turn id");
    info("daemon", "turn Build: not a turn id either");
    info("daemon", "serving instance 'a' from '/x'");
    ASSERT_EQ(lines.size(), 4u);
    auto first = nlohmann::ordered_json::parse(lines[0]);
    std::vector<std::string> keys;
    for (auto it = first.begin(); it != first.end(); ++it) keys.push_back(it.key());
    EXPECT_EQ(keys, (std::vector<std::string>{"time", "level", "component", "turn", "message"}));
    EXPECT_EQ(first["turn"], "build-42");
    EXPECT_EQ(first["message"], "turn build-42: claimed (1 running, 0 queued)");
    for (std::size_t i = 1; i < lines.size(); ++i)
        EXPECT_FALSE(nlohmann::json::parse(lines[i]).contains("turn")) << lines[i];
}

TEST_F(LogFormat, JsonLevelsAreNamedAsInText) {
    set_format(Format::json);
    set_min_level(Level::debug);
    debug("a", "d");
    info("a", "i");
    warn("a", "w");
    error("a", "e");
    set_min_level(Level::info);
    ASSERT_EQ(lines.size(), 4u);
    std::vector<std::string> levels;
    for (const auto& l : lines) levels.push_back(nlohmann::json::parse(l)["level"]);
    EXPECT_EQ(levels, (std::vector<std::string>{"debug", "info", "warning", "error"}));
}

TEST_F(LogFormat, JsonReplacesBytesThatAreNotUtf8InsteadOfDroppingTheLine) {
    set_format(Format::json);
    write(Level::warn, "turn", std::string("bad \xff byte"));
    auto j = only_line_as_json();
    EXPECT_EQ(j["message"], "bad \xEF\xBF\xBD byte");
}

TEST_F(LogFormat, JsonLinesAreRedactedLikeTextLines) {
    install_log_redaction();
    set_format(Format::json);
    {
        auto registration = redact_log_lines(
            redaction::Redactor(redaction::SecretSet{{"PEM", "secret-one\n\"secret\"-two"}}));
        error("plugin:docker", "env dump: PEM=secret-one\n\"secret\"-two; done");
    }
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_THAT(lines[0], Not(HasSubstr("secret-one")));
    EXPECT_THAT(lines[0], Not(HasSubstr("secret\\\"-two")));
    EXPECT_EQ(only_line_as_json()["message"], "env dump: PEM=[REDACTED:PEM]; done");
}

TEST_F(LogFormat, ParsesOnlyTheTwoFormatNames) {
    EXPECT_EQ(parse_format("text"), Format::text);
    EXPECT_EQ(parse_format("json"), Format::json);
    EXPECT_EQ(parse_format("JSON"), std::nullopt);
    EXPECT_EQ(parse_format(""), std::nullopt);
}

} // namespace
} // namespace radial::log
