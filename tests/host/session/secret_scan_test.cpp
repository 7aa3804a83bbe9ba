// SecretScan (host/session/secret_scan.h): a secret in a box's changes is found whatever the
// chunking, in the encodings the redactor knows, in an entry's name, and nothing else is.
#include "session/secret_scan.h"

#include <gtest/gtest.h>

#include <string>

#include "redaction/secret_set.h"
#include "redaction/stream_redactor.h"

namespace radial::session {
namespace {

const redaction::Redactor& redactor() {
    static const redaction::Redactor r(redaction::SecretSet{
        {"API_KEY", "sk-live-0123456789abcdef"}, {"RADIAL_TURN_TOKEN", "tok-ABCDEFGHIJ"}});
    return r;
}

// Feeds `content` as the bytes of one entry at `path`, `chunk` bytes at a time.
std::optional<SecretFound> scan_one(const std::string& path, const std::string& content,
                                    std::size_t chunk) {
    SecretScan scan(redactor());
    EXPECT_TRUE(scan.entry("/opt/before"));
    EXPECT_TRUE(scan.data("harmless bytes"));
    scan.entry(path);
    for (std::size_t at = 0; at < content.size(); at += chunk)
        if (!scan.data(std::string_view(content).substr(at, chunk))) break;
    scan.entry("/opt/after");
    scan.data("more harmless bytes");
    return scan.finish();
}

TEST(SecretScanTest, ASecretIsFoundInAnEntryWhateverTheChunkBoundaries) {
    const std::string content = "config: key=sk-live-0123456789abcdef; end";
    for (std::size_t chunk : {1u, 2u, 3u, 7u, 16u, 1000u}) {
        auto found = scan_one("/opt/cache/conf", content, chunk);
        ASSERT_TRUE(found) << "chunk " << chunk;
        EXPECT_EQ(found->secret, "API_KEY");
        EXPECT_EQ(found->path, "/opt/cache/conf");
    }
}

TEST(SecretScanTest, AnEncodedSecretIsFoundAsTheRedactorKnowsIt) {
    // base64 of the token, as `printf %s "$RADIAL_TURN_TOKEN" | base64` writes it
    auto found = scan_one("/opt/cache/enc", "dG9rLUFCQ0RFRkdISUo=\n", 5);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->secret, "RADIAL_TURN_TOKEN");
}

TEST(SecretScanTest, ASecretInAnEntrysNameIsFound) {
    SecretScan scan(redactor());
    EXPECT_FALSE(scan.entry("/opt/cache/tok-ABCDEFGHIJ.txt"));
    auto found = scan.finish();
    ASSERT_TRUE(found);
    EXPECT_EQ(found->secret, "RADIAL_TURN_TOKEN");
    EXPECT_EQ(found->path, "/opt/cache/[REDACTED:RADIAL_TURN_TOKEN].txt (its name)");
}

TEST(SecretScanTest, ASecretSplitAcrossTwoEntriesIsNotJoinedAndCleanBytesPass) {
    SecretScan scan(redactor());
    EXPECT_TRUE(scan.entry("/a"));
    EXPECT_TRUE(scan.data("sk-live-01234"));
    EXPECT_TRUE(scan.entry("/b"));
    EXPECT_TRUE(scan.data("56789abcdef"));
    // A marker's own text in a file is no secret.
    EXPECT_TRUE(scan.entry("/c"));
    EXPECT_TRUE(scan.data("[REDACTED:API_KEY] and a prefix sk-live-0123"));
    EXPECT_FALSE(scan.finish());
    EXPECT_EQ(scan.entries(), 3u);
    EXPECT_EQ(scan.bytes(), 13u + 11u + 44u);
}

TEST(SecretScanTest, ASecretAtTheVeryEndOfAnEntryIsFoundWhenTheEntryEnds) {
    SecretScan scan(redactor());
    EXPECT_TRUE(scan.entry("/tail"));
    scan.data("x sk-live-0123456789abcde");
    scan.data("f"); // the match may still grow until the entry ends
    auto found = scan.finish();
    ASSERT_TRUE(found);
    EXPECT_EQ(found->path, "/tail");
}

} // namespace
} // namespace radial::session
