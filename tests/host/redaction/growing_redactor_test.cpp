// A turn's secrets may grow while it runs (docs/design.md §8.7): every reader after the growth
// masks the new secret, and a stream rebased onto it keeps the bytes it held back.
#include "redaction/growing_redactor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace radial::redaction {
namespace {
using ::testing::ElementsAre;

TEST(GrowingRedactor, ASecretAddedLaterIsMaskedByEveryLaterReader) {
    GrowingRedactor r(SecretSet{{"first", "first-secret-value"}});
    EXPECT_EQ(r.current().redact("x second-secret-value y"), "x second-secret-value y");
    EXPECT_EQ(r.generation(), 0u);
    EXPECT_TRUE(r.grow({{"second", "second-secret-value"}}));
    EXPECT_EQ(r.generation(), 1u);
    EXPECT_EQ(r.current().redact("x second-secret-value y first-secret-value"),
              "x [REDACTED:second] y [REDACTED:first]");
    EXPECT_EQ(r.secrets().size(), 2u);
    // A value held already, under any name, changes nothing.
    EXPECT_FALSE(r.grow({{"again", "second-secret-value"}}));
    EXPECT_EQ(r.generation(), 1u);
}

TEST(GrowingRedactor, AValueTheSetRefusesIsLeftOutByName) {
    GrowingRedactor r(SecretSet{{"first", "first-secret-value"}});
    std::vector<std::string> refused;
    EXPECT_TRUE(r.grow({{"short", "abc"}, {"fine", "a-fine-secret-value"}}, &refused));
    EXPECT_THAT(refused, ElementsAre("short"));
    EXPECT_EQ(r.current().redact("abc a-fine-secret-value"), "abc [REDACTED:fine]");
}

TEST(StreamRedactor, ARebasedStreamKeepsTheBytesItHeldBackAndMasksTheNewSecret) {
    GrowingRedactor r(SecretSet{{"first", "first-secret-value"}});
    StreamRedactor s = r.current().stream();
    std::string out;
    s.feed("a first-secr", out); // a prefix of the first secret: held back
    EXPECT_EQ(out, "a ");
    ASSERT_TRUE(r.grow({{"second", "second-secret-value"}}));
    s.rebase(r.current());
    s.feed("et-value then second-secret-value", out);
    s.flush(out);
    EXPECT_EQ(out, "a [REDACTED:first] then [REDACTED:second]");
}

TEST(GrowingRedactor, ReadersAndGrowthMayRunAtOnce) {
    GrowingRedactor r(SecretSet{{"first", "first-secret-value"}});
    std::thread grower([&] {
        for (int i = 0; i < 50; ++i)
            r.grow({{"s" + std::to_string(i), "grown-secret-" + std::to_string(1000 + i)}});
    });
    for (int i = 0; i < 200; ++i)
        EXPECT_EQ(r.current().redact("first-secret-value"), "[REDACTED:first]");
    grower.join();
    EXPECT_EQ(r.generation(), 50u);
    EXPECT_EQ(r.current().redact("grown-secret-1049"), "[REDACTED:s49]");
}

} // namespace
} // namespace radial::redaction
