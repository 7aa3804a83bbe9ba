// Secret fingerprints (host/session/secret_fingerprints.h): what a session keeps of its turns'
// secrets finds them later, in every encoding, across chunks, and only with the session's key.
#include "session/secret_fingerprints.h"

#include <gtest/gtest.h>

#include <random>

namespace radial::session {
namespace {

const redaction::SecretSet& secrets() {
    static const redaction::SecretSet s{{"API_KEY", "sk-live-0123456789abcdef"}};
    return s;
}

std::optional<std::string> find_in(const std::vector<SecretFingerprint>& fps,
                                   const std::string& key, const std::string& text,
                                   std::size_t chunk) {
    FingerprintMatcher m(fps, key);
    for (std::size_t at = 0; at < text.size(); at += chunk)
        if (auto hit = m.feed(std::string_view(text).substr(at, chunk))) return hit;
    return std::nullopt;
}

TEST(SecretFingerprintsTest, AFingerprintFindsTheValueAndItsEncodingsAcrossChunks) {
    const std::string key = new_fingerprint_key();
    std::vector<SecretFingerprint> fps;
    add_fingerprints(secrets(), key, fps);
    EXPECT_GT(fps.size(), 3u) << "the value and its encodings";
    for (const auto& f : fps) {
        EXPECT_EQ(f.secret, "API_KEY");
        EXPECT_EQ(f.mac.size(), 32u);
    }
    const std::size_t before = fps.size();
    add_fingerprints(secrets(), key, fps);
    EXPECT_EQ(fps.size(), before) << "the same secret twice was kept twice";
    for (std::size_t chunk : {1u, 3u, 64u, 4096u}) {
        EXPECT_EQ(find_in(fps, key, "x=sk-live-0123456789abcdef;", chunk), "API_KEY") << chunk;
        // base64 of the value, as `printf %s "$API_KEY" | base64` writes it
        EXPECT_EQ(find_in(fps, key, "c2stbGl2ZS0wMTIzNDU2Nzg5YWJjZGVm\n", chunk), "API_KEY");
        EXPECT_FALSE(find_in(fps, key, "sk-live-0123456789abcdeX and sk-live-0123", chunk));
    }
}

TEST(SecretFingerprintsTest, OnlyTheSessionsKeyMatchesAndRandomBytesDoNot) {
    const std::string key = new_fingerprint_key(), other = new_fingerprint_key();
    EXPECT_NE(key, other);
    std::vector<SecretFingerprint> fps;
    add_fingerprints(secrets(), key, fps);
    EXPECT_FALSE(find_in(fps, other, "sk-live-0123456789abcdef", 7));
    std::mt19937 rng(42);
    std::string noise(1 << 20, '\0');
    for (auto& c : noise) c = static_cast<char>(rng());
    EXPECT_FALSE(find_in(fps, key, noise, 65536));
    EXPECT_EQ(find_in(fps, key, noise + "sk-live-0123456789abcdef", 65536), "API_KEY");
    EXPECT_THROW(FingerprintMatcher(fps, "not-a-key"), std::invalid_argument);
}

TEST(SecretFingerprintsTest, FingerprintsRoundTripAndHoldNoValue) {
    const std::string key = new_fingerprint_key();
    std::vector<SecretFingerprint> fps;
    add_fingerprints(secrets(), key, fps);
    const auto j = fingerprints_json(fps);
    EXPECT_EQ(j.dump().find("sk-live"), std::string::npos);
    EXPECT_EQ(fingerprints_from_json(j), fps);
}

// Fingerprints written before tails were kept (a session record of an older radiald) are found
// as before, beside new ones; a tail seen without the rest of its pattern is no match, however
// often it comes (a tail may be public), and patterns sharing a tail are told apart by their
// whole hashes and MACs.
TEST(SecretFingerprintsTest, TailsFindEveryLengthAndOlderFingerprintsStillMatch) {
    const std::string key = new_fingerprint_key();
    std::vector<SecretFingerprint> fps;
    add_fingerprints(redaction::SecretSet{{"SHORT_ONE", "zz-suffix-0123"},
                                          {"LONG_ONE", "abcdefghijklmnop-suffix-0123"},
                                          {"TINY", "x7q9z2"}},
                     key, fps);
    for (const auto& f : fps)
        EXPECT_EQ(f.tail.has_value(), f.length >= kTailBytes) << f.secret << " " << f.length;
    std::vector<SecretFingerprint> older = fps;
    for (auto& f : older) f.tail.reset();
    std::string tails;
    for (int i = 0; i < 5000; ++i) tails += "-suffix-0123";
    for (const auto* set : {&fps, &older})
        for (std::size_t chunk : {1u, 5u, 4096u}) {
            EXPECT_EQ(find_in(*set, key, "..abcdefghijklmnop-suffix-0123..", chunk), "LONG_ONE");
            EXPECT_EQ(find_in(*set, key, "..zz-suffix-0123..", chunk), "SHORT_ONE");
            EXPECT_EQ(find_in(*set, key, "..x7q9z2..", chunk), "TINY");
            EXPECT_FALSE(find_in(*set, key, "X-suffix-0123 -suffix-0123", chunk)) << chunk;
            EXPECT_FALSE(find_in(*set, key, tails, chunk)) << chunk;
            EXPECT_EQ(find_in(*set, key, tails + "zz-suffix-0123", chunk), "SHORT_ONE") << chunk;
        }
    // An older record (no "tail") reads back without tails, and a tail on a short pattern is
    // ignored.
    auto j = fingerprints_json(fps);
    for (auto& f : j) f.erase("tail");
    for (const auto& f : fingerprints_from_json(j)) EXPECT_FALSE(f.tail.has_value());
}

} // namespace
} // namespace radial::session
