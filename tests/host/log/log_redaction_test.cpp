// The host's own log lines go through the redactor of every live turn (docs/design.md §10.2): an
// error message that echoes a secret — a CLI dumping its environment, say — is masked like output.
#include "log/log_redaction.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <optional>
#include <vector>

#include "log/logger.h"

namespace radial::log {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

struct Captured : ::testing::Test {
    std::vector<std::string> lines;
    void SetUp() override {
        install_log_redaction();
        set_sink([this](std::string_view l) { lines.emplace_back(l); });
    }
    void TearDown() override {
        set_sink({});
        set_filter({});
    }
};

TEST_F(Captured, ALogLineEchoingATurnsSecretIsMasked) {
    {
        auto registration = redact_log_lines(
            redaction::Redactor(redaction::SecretSet{{"MODEL_KEY", "sk-live-123456"}}));
        error("plugin:docker", "docker failed: env MODEL_KEY=sk-live-123456 PATH=/bin");
    }
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0],
              "radiald[plugin:docker] error: docker failed: env MODEL_KEY=[REDACTED:MODEL_KEY] "
              "PATH=/bin");
}

TEST_F(Captured, ASecretWithANewlineIsMaskedBeforeTheLineIsFolded) {
    auto registration =
        redact_log_lines(redaction::Redactor(redaction::SecretSet{{"PEM", "line-one\nline-two"}}));
    warn("turn", "leaked: line-one\nline-two end");
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0], "radiald[turn] warning: leaked: [REDACTED:PEM] end");
}

// Two live turns, one's secret a part of the other's: the line is masked as one redactor over
// both would mask it (leftmost-longest), whichever turn registered first. One after another, the
// shorter secret's turn would mask its part and leave the rest of the longer secret in clear.
TEST_F(Captured, ASecretThatIsPartOfAnotherTurnsIsNoWayToTheRestOfIt) {
    for (const bool short_first : {true, false}) {
        std::optional<RedactionRegistration> first, second;
        const redaction::Redactor part(redaction::SecretSet{{"PART", "0123456789ab"}});
        const redaction::Redactor whole(
            redaction::SecretSet{{"WHOLE", "prefix-0123456789ab-suffix-xyz"}});
        first.emplace(redact_log_lines(short_first ? part : whole));
        second.emplace(redact_log_lines(short_first ? whole : part));
        EXPECT_EQ(redact_registered("a prefix-0123456789ab-suffix-xyz b 0123456789ab"),
                  "a [REDACTED:WHOLE] b [REDACTED:PART]")
            << short_first;
        second.reset();
        EXPECT_EQ(redact_registered("prefix-0123456789ab-suffix-xyz"),
                  short_first ? "prefix-[REDACTED:PART]-suffix-xyz" : "[REDACTED:WHOLE]")
            << "the turn that ended no longer masks: " << short_first;
    }
}

// A box chooses the Codex tokens it rotates in (docs/design.md §8.7): one equal to another turn's
// secret's name cannot join the union (it is inside that secret's marker), and another that
// overlaps the start of that turn's secret must not, applied before it, leave its rest in clear.
// Whatever order the turns registered in, the box's values go last.
TEST_F(Captured, ABoxsTokensCannotBreakTheUnionToUnmaskAnotherTurnsSecret) {
    const redaction::Redactor victim(
        redaction::SecretSet{{"OPENAI_API_KEY_PROD", "sk-proj-REALSECRET0123"}});
    const redaction::Redactor box(redaction::SecretSet{{"codexAuth.1", "OPENAI_API_KEY_PROD"},
                                                       {"codexAuth.2", "KEY_PROD=sk-proj-REA"}});
    for (const bool box_first : {true, false}) {
        std::optional<RedactionRegistration> first, second;
        first.emplace(redact_log_lines(box_first ? box : victim));
        second.emplace(redact_log_lines(box_first ? victim : box));
        const std::string out =
            redact_registered("turn b: env OPENAI_API_KEY_PROD=sk-proj-REALSECRET0123 refused");
        EXPECT_EQ(out.find("LSECRET0123"), std::string::npos) << box_first << ": " << out;
        EXPECT_EQ(out.find("REALSECRET"), std::string::npos) << box_first << ": " << out;
    }
}

TEST_F(Captured, EveryLiveTurnsSecretsApplyAndEndWithTheTurn) {
    auto a = std::make_unique<RedactionRegistration>(
        redact_log_lines(redaction::Redactor(redaction::SecretSet{{"A_KEY", "alpha-secret"}})));
    auto b = redact_log_lines(redaction::Redactor(redaction::SecretSet{{"B_KEY", "bravo-secret"}}));
    info("daemon", "alpha-secret bravo-secret");
    a.reset(); // turn A is over: its secret is no longer registered
    info("daemon", "alpha-secret bravo-secret");
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0], "radiald[daemon] info: [REDACTED:A_KEY] [REDACTED:B_KEY]");
    EXPECT_EQ(lines[1], "radiald[daemon] info: alpha-secret [REDACTED:B_KEY]");
    EXPECT_EQ(redact_registered("x bravo-secret"), "x [REDACTED:B_KEY]");
}

} // namespace
} // namespace radial::log
