// StreamRedactor and Redactor (docs/design.md §10): case C-01 and C-08, the hold-back bound, each
// encoding end to end, leftmost-longest resolution, binary passthrough, and a differential test of
// streamed output against the whole-buffer reference under random chunkings.
#include "redaction/stream_redactor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "redaction/cut_text.h"
#include "redaction/secret_patterns.h"
#include "reference_redactor.h"
#include "test_encoders.h"

namespace radial::redaction {
namespace {

using test::base64;
using test::percent_encode;
using test::reference_redact;
using ::testing::HasSubstr;
using ::testing::Not;

// Streams `chunks` through a fresh StreamRedactor, checking the hold-back bound after every
// feed, and returns everything emitted including the flush.
std::string stream_through(const Redactor& r, const std::vector<std::string_view>& chunks) {
    StreamRedactor s = r.stream();
    std::string out;
    for (auto c : chunks) {
        s.feed(c, out);
        EXPECT_LE(s.buffered_bytes(), s.max_buffered_bytes());
    }
    s.flush(out);
    EXPECT_EQ(s.buffered_bytes(), 0u);
    return out;
}

std::string stream_in_pieces(const Redactor& r, std::string_view text, std::size_t piece) {
    std::vector<std::string_view> chunks;
    for (std::size_t i = 0; i < text.size(); i += piece) chunks.push_back(text.substr(i, piece));
    return stream_through(r, chunks);
}

// --- C-01 -------------------------------------------------------------------------------------

const Secret kApiKey{"API_KEY", "Zq8-wX41-pL0k"};

// Text cut short before it was redacted (an egress receipt quotes at most 96 bytes of a target)
// shows no start of a secret the cut ended, and the rest is redacted as usual.
TEST(RedactCut, TheStartOfASecretACutEndedIsNotShown) {
    const std::string secret = "s3cr3t-Token-Value-0123456789";
    const Redactor r(SecretSet{{"TOKEN", secret}});
    const std::string target = "http://h/" + std::string(80, 'a') + secret;
    const std::string shown = target.substr(0, 96) + "...";
    ASSERT_THAT(shown, HasSubstr(secret.substr(0, 6))) << "the cut does not end the secret";
    const std::string out = redact_cut(r, shown + " and " + secret);
    EXPECT_THAT(out, Not(HasSubstr(secret.substr(0, 3)))) << out;
    EXPECT_THAT(out, ::testing::StartsWith("http://h/aaaa")) << out;
    EXPECT_THAT(out, ::testing::EndsWith("... and [REDACTED:TOKEN]")) << out;
    EXPECT_EQ(redact_cut(r, "nothing secret..."), "nothing secret...");
}

TEST(StreamRedactor, C01_SecretSplitAcrossTwoWrites) {
    StreamRedactor s(SecretSet{kApiKey});
    std::string out;
    s.feed("tok=Zq8-wX", out);
    // Nothing of the secret yet: what is out is "tok=" or a prefix of it.
    EXPECT_TRUE(std::string_view("tok=").starts_with(out)) << out;
    EXPECT_EQ(out, "tok=") << "bytes that cannot start a secret are not held";
    s.feed("41-pL0k end\n", out);
    s.flush(out);
    EXPECT_EQ(out, "tok=[REDACTED:API_KEY] end\n");
}

TEST(StreamRedactor, C01_SecretSplitAcrossTwoWritesWithItsPrefixRegisteredToo) {
    StreamRedactor s(SecretSet{kApiKey, {"SHORT", "Zq8-wX41"}});
    std::string out;
    s.feed("tok=Zq8-wX", out);
    EXPECT_TRUE(std::string_view("tok=").starts_with(out)) << out;
    s.feed("41-pL0k end\n", out);
    s.flush(out);
    EXPECT_EQ(out, "tok=[REDACTED:API_KEY] end\n");
    EXPECT_THAT(out, Not(HasSubstr("-pL0k")));
}

TEST(StreamRedactor, C01_PrefixOfASecretAtTheEndIsFlushedAsIs) {
    StreamRedactor s(SecretSet{kApiKey, {"SHORT", "Zq8-wX41"}});
    std::string out;
    s.feed("Zq8-", out);
    EXPECT_EQ(out, "");
    EXPECT_EQ(s.buffered_bytes(), 4u);
    s.flush(out);
    EXPECT_EQ(out, "Zq8-");
}

TEST(StreamRedactor, C01_EveryOneByteSplitGivesTheSameOutput) {
    const Redactor r(SecretSet{kApiKey, {"SHORT", "Zq8-wX41"}});
    const std::string text = "tok=Zq8-wX41-pL0k end\n";
    for (std::size_t cut = 0; cut <= text.size(); ++cut) {
        std::string_view t(text);
        EXPECT_EQ(stream_through(r, {t.substr(0, cut), t.substr(cut)}),
                  "tok=[REDACTED:API_KEY] end\n")
            << "cut at " << cut;
    }
    EXPECT_EQ(stream_in_pieces(r, text, 1), "tok=[REDACTED:API_KEY] end\n");
}

// --- hold-back ----------------------------------------------------------------------------------

TEST(StreamRedactor, HoldsBackAtMostTheLongestPatternMinusOne) {
    const SecretSet set{kApiKey, {"LONG", "a-much-longer-secret-value-0123456789"}};
    const Redactor r(set);
    StreamRedactor s = r.stream();
    EXPECT_EQ(s.max_buffered_bytes(), r.longest_pattern() - 1);
    std::string out;
    // Feed the longest pattern but its last byte, one byte at a time.
    std::string longest;
    for (const auto& p : derive_patterns(set))
        if (p.bytes.size() > longest.size()) longest = p.bytes;
    for (std::size_t i = 0; i + 1 < longest.size(); ++i) {
        s.feed(longest.substr(i, 1), out);
        EXPECT_LE(s.buffered_bytes(), s.max_buffered_bytes());
    }
    EXPECT_EQ(s.buffered_bytes(), longest.size() - 1);
    EXPECT_EQ(out, "");
    s.feed(longest.substr(longest.size() - 1), out);
    EXPECT_EQ(s.buffered_bytes(), 0u);
    EXPECT_EQ(out, "[REDACTED:LONG]");
}

TEST(StreamRedactor, APromptThatCannotStartASecretIsNotHeld) {
    StreamRedactor s(SecretSet{kApiKey});
    std::string out;
    s.feed("Continue? [y/N] ", out);
    EXPECT_EQ(out, "Continue? [y/N] ");
    EXPECT_EQ(s.buffered_bytes(), 0u);
}

TEST(StreamRedactor, BufferedBytesStayBoundedUnderRandomChunking) {
    const Redactor r(SecretSet{kApiKey, {"B", "bbbbbbbbbbbb"}, {"C", "Zq8-wX41-pL0k-extra"}});
    std::mt19937_64 rng(7);
    std::string text;
    for (int i = 0; i < 2000; ++i) {
        switch (rng() % 4) {
            case 0: text += "Zq8-wX41-pL0k-extra"; break;
            case 1: text += std::string(rng() % 20, 'b'); break;
            case 2: text += "Zq8-wX41-pL0k"; break;
            default: text += "Zq8-"; break;
        }
    }
    StreamRedactor s = r.stream();
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = 1 + rng() % 40;
        s.feed(std::string_view(text).substr(i, n), out);
        ASSERT_LE(s.buffered_bytes(), s.max_buffered_bytes());
        i += n;
    }
    s.flush(out);
    EXPECT_EQ(out,
              reference_redact(
                  SecretSet{kApiKey, {"B", "bbbbbbbbbbbb"}, {"C", "Zq8-wX41-pL0k-extra"}}, text));
}

// --- encodings ----------------------------------------------------------------------------------

TEST(StreamRedactor, Base64InEachAlignmentAndBothAlphabets) {
    const std::string secret = "\xfb\xef\xbe-token-\xff\xfe?>";
    const Redactor r(SecretSet{{"TOKEN", secret}});
    for (bool url_safe : {false, true}) {
        for (std::size_t prefix = 0; prefix < 6; ++prefix) {
            const std::string enc = base64(std::string("user:", prefix) + secret + "\n", url_safe);
            const std::string line = "Authorization: Basic " + enc + "\r\n";
            for (std::size_t piece : {std::size_t{1}, std::size_t{3}, line.size()}) {
                const std::string out = stream_in_pieces(r, line, piece);
                EXPECT_THAT(out, HasSubstr("[REDACTED:TOKEN]"))
                    << "alignment " << prefix % 3 << (url_safe ? " url-safe" : " standard");
                EXPECT_EQ(out, reference_redact(SecretSet{{"TOKEN", secret}}, line));
                // At most the 2 characters at each edge that mix in neighbouring bytes remain.
                EXPECT_LE(out.size(), line.size() - enc.size() + 2 * 4 + 16 + 2);
            }
        }
    }
}

TEST(StreamRedactor, UrlEncodedUpperLowerAndForm) {
    const std::string secret = "p@ss w/rd:\xc3\xbc";
    const Redactor r(SecretSet{{"PASSWORD", secret}});
    for (bool upper : {true, false}) {
        for (bool plus : {false, true}) {
            const std::string url =
                "GET /login?user=bob&pw=" + percent_encode(secret, upper, plus) + "&x=1 HTTP/1.1";
            EXPECT_EQ(stream_in_pieces(r, url, 5),
                      "GET /login?user=bob&pw=[REDACTED:PASSWORD]&x=1 "
                      "HTTP/1.1");
        }
    }
}

TEST(StreamRedactor, JsonEscapedAsEncodersWriteIt) {
    const std::string secret = "sk-\"quoted\"/path\\\xc3\xa9\n";
    const Redactor r(SecretSet{{"MODEL_KEY", secret}});
    const nlohmann::json doc = {{"key", secret}, {"n", 1}};
    for (bool ensure_ascii : {false, true}) {
        const std::string text = doc.dump(-1, ' ', ensure_ascii);
        EXPECT_EQ(stream_in_pieces(r, text, 7), R"({"key":"[REDACTED:MODEL_KEY]","n":1})")
            << "ensure_ascii " << ensure_ascii << ": " << text;
    }
    // PHP escapes '/'.
    EXPECT_EQ(r.redact(R"({"key":"sk-\"quoted\"\/path\\é\n"})"),
              R"({"key":"[REDACTED:MODEL_KEY]"})");
}

// --- leftmost-longest ---------------------------------------------------------------------------

TEST(StreamRedactor, AtOneStartTheLongestSecretWins) {
    const Redactor r(SecretSet{{"SHORT", "secret-token"}, {"LONG", "secret-token-extended"}});
    EXPECT_EQ(r.redact("a secret-token-extended b"), "a [REDACTED:LONG] b");
    EXPECT_EQ(r.redact("a secret-token-ext b"), "a [REDACTED:SHORT]-ext b");
    EXPECT_EQ(stream_in_pieces(r, "a secret-token-extended b", 1), "a [REDACTED:LONG] b");
}

// Every byte of every occurrence is masked (docs/design.md §10.3): an occurrence that starts
// earlier names the region, and one that overlaps it extends it, so no part of either is shown.
TEST(StreamRedactor, TheLeftmostStartNamesTheRegionAndALongerLaterOneExtendsIt) {
    const Redactor r(SecretSet{{"LONGER", "123456789abc"}, {"EARLIER", "0123456"}});
    EXPECT_EQ(r.redact("0123456789abc"), "[REDACTED:EARLIER]");
    EXPECT_EQ(r.redact("0123456789abcd"), "[REDACTED:EARLIER]d");
}

TEST(StreamRedactor, OverlappingSecretsAreMaskedWhole) {
    const Redactor r(SecretSet{{"A", "abcdefgh"}, {"B", "cdefghij"}});
    EXPECT_EQ(r.redact("xabcdefghijx"), "x[REDACTED:A]x");
    EXPECT_EQ(r.redact("xcdefghijx"), "x[REDACTED:B]x");
    // A chain: each occurrence overlaps the next.
    const Redactor chain(SecretSet{{"C", "aaaaaa"}});
    EXPECT_EQ(chain.redact("x" + std::string(100, 'a') + "y"), "x[REDACTED:C]y");
    // Touching is not overlapping: one marker each.
    EXPECT_EQ(chain.redact("aaaaaabaaaaaa"), "[REDACTED:C]b[REDACTED:C]");
    for (std::size_t piece = 1; piece <= 13; ++piece) {
        EXPECT_EQ(stream_in_pieces(r, "xabcdefghijx", piece), "x[REDACTED:A]x") << piece;
        EXPECT_EQ(stream_in_pieces(chain, "x" + std::string(100, 'a') + "y", piece),
                  "x[REDACTED:C]y")
            << piece;
    }
}

// Whoever controls one secret's value (a request's own, a token a box rotated) cannot choose one
// that begins before another turn's secret and ends inside it to leave that secret's rest in the
// clear: the region covers both.
TEST(StreamRedactor, APlantedSecretOverlappingTheStartOfAnotherLeavesNoneOfItInClear) {
    const Redactor r(
        SecretSet{{"PLANTED", "KEY=sk-"}, {"OPENAI_API_KEY", "sk-proj-REALSECRET0123"}});
    const std::string line = "OPENAI_API_KEY=sk-proj-REALSECRET0123 rest";
    EXPECT_EQ(r.redact(line), "OPENAI_API_[REDACTED:PLANTED] rest");
    for (std::size_t piece = 1; piece <= line.size(); ++piece)
        EXPECT_EQ(stream_in_pieces(r, line, piece), "OPENAI_API_[REDACTED:PLANTED] rest") << piece;
}

TEST(StreamRedactor, NestedSecretsResolveToTheOuterOne) {
    const Redactor r(SecretSet{{"INNER", "345678"}, {"OUTER", "0123456789"}});
    EXPECT_EQ(r.redact("0123456789"), "[REDACTED:OUTER]");
    EXPECT_EQ(r.redact("xx345678xx"), "xx[REDACTED:INNER]xx");
    EXPECT_EQ(stream_in_pieces(r, "012345678 0123456789", 1),
              "012[REDACTED:INNER] [REDACTED:OUTER]");
}

TEST(StreamRedactor, BackToBackAndRepeatedSecrets) {
    const Redactor r(SecretSet{kApiKey});
    EXPECT_EQ(stream_in_pieces(r, "Zq8-wX41-pL0kZq8-wX41-pL0kZq8-wX41-pL0", 2),
              "[REDACTED:API_KEY][REDACTED:API_KEY]Zq8-wX41-pL0");
}

TEST(StreamRedactor, DuplicateValuesUseTheFirstName) {
    const Redactor r(SecretSet{{"FIRST", "same-value-1"}, {"SECOND", "same-value-1"}});
    EXPECT_EQ(r.redact("<same-value-1>"), "<[REDACTED:FIRST]>");
}

// --- bytes
// ----------------------------------------------------------------------------------------

TEST(StreamRedactor, BinaryAndInvalidUtf8PassThroughUntouched) {
    std::string bytes;
    for (int i = 0; i < 4096; ++i) bytes += static_cast<char>((i * 131 + 7) & 0xff);
    bytes += std::string("\xc0\x80\xff\xfe\xed\xa0\x80\x80 \0\0", 11);
    const Redactor r(SecretSet{kApiKey});
    for (std::size_t piece : {std::size_t{1}, std::size_t{13}, bytes.size()})
        EXPECT_EQ(stream_in_pieces(r, bytes, piece), bytes);
    EXPECT_EQ(r.redact(bytes), bytes);
}

TEST(StreamRedactor, ABinarySecretAmongBinaryBytesIsMasked) {
    const std::string secret("\x00\xff\xc0secret\x80\x00", 11);
    const Redactor r(SecretSet{{"BIN", secret}});
    const std::string text = std::string("\xff\xff\x00", 3) + secret + std::string("\x00", 1);
    EXPECT_EQ(stream_in_pieces(r, text, 1),
              std::string("\xff\xff\x00", 3) + "[REDACTED:BIN]" + std::string("\x00", 1));
}

TEST(StreamRedactor, AnEmptySetCopiesThrough) {
    const Redactor r(SecretSet{});
    EXPECT_EQ(r.longest_pattern(), 0u);
    StreamRedactor s = r.stream();
    std::string out;
    s.feed("anything at all", out);
    EXPECT_EQ(s.buffered_bytes(), 0u);
    s.flush(out);
    EXPECT_EQ(out, "anything at all");
}

TEST(StreamRedactor, AfterFlushTheObjectIsAFreshStream) {
    StreamRedactor s(SecretSet{kApiKey});
    std::string first, second;
    s.feed("Zq8-wX", first);
    s.flush(first);
    s.feed("41-pL0k", second);
    s.flush(second);
    EXPECT_EQ(first, "Zq8-wX");
    EXPECT_EQ(second, "41-pL0k");
}

TEST(StreamRedactor, StdoutAndStderrKeepSeparateState) {
    const Redactor r(SecretSet{kApiKey});
    StreamRedactor out_stream = r.stream(), err_stream = r.stream();
    std::string out, err;
    out_stream.feed("Zq8-wX", out);
    err_stream.feed("41-pL0k", err); // not the continuation of stdout's bytes
    out_stream.feed("41-pL0k\n", out);
    out_stream.flush(out);
    err_stream.flush(err);
    EXPECT_EQ(out, "[REDACTED:API_KEY]\n");
    EXPECT_EQ(err, "41-pL0k");
}

// --- differential -----------------------------------------------------------------------------

// Random secrets (raw bytes of every kind but '[' and ']', which could straddle a marker), random
// text with planted values and real encodings of them, random chunkings: streamed == reference.
TEST(StreamRedactor, DifferentialAgainstTheWholeBufferReference) {
    std::mt19937_64 rng(0x5eed);
    const auto uniform = [&](std::size_t lo, std::size_t hi) { return lo + rng() % (hi - lo + 1); };
    const std::string alphabet =
        "abcXYZ0189-_.~+/=:@ %\"\\\n\t\x01\x7f<>&?"
        "\xc3\xa9\xe2\x9c\x93\xf0\x9f\x94\x91";
    const auto random_value = [&] {
        std::string v;
        const std::size_t n = uniform(6, 24);
        while (v.size() < n) {
            if (rng() % 8 == 0) {
                v += static_cast<char>(uniform(0, 255));
                if (v.back() == '[' || v.back() == ']') v.back() = 'q';
            } else {
                v += alphabet[uniform(0, alphabet.size() - 1)];
            }
        }
        return v;
    };
    const auto start = std::chrono::steady_clock::now();
    const int kIterations = 2000;
    std::size_t total_bytes = 0, total_markers = 0;
    for (int iter = 0; iter < kIterations; ++iter) {
        std::vector<Secret> secrets;
        const std::size_t nsecrets = uniform(1, 4);
        for (std::size_t k = 0; k < nsecrets; ++k) {
            std::string v = random_value();
            if (k > 0 && rng() % 3 == 0) { // related to an earlier one: prefix, extension, inner
                const std::string& e = secrets[uniform(0, k - 1)].value;
                switch (rng() % 3) {
                    case 0: v = e.substr(0, std::max<std::size_t>(6, e.size() - 2)); break;
                    case 1: v = e + v.substr(0, uniform(1, 5)); break;
                    default: v = v.substr(0, 3) + e.substr(0, 6); break;
                }
            }
            secrets.push_back({"S" + std::to_string(k), v});
        }
        SecretSet set;
        try {
            set = SecretSet(secrets);
        } catch (const std::invalid_argument&) {
            continue; // a value inside a marker; vanishingly rare with this alphabet
        }
        const Redactor r(set);

        std::string text;
        const std::size_t items = uniform(0, 40);
        for (std::size_t it = 0; it < items; ++it) {
            const std::string& v = secrets[uniform(0, secrets.size() - 1)].value;
            switch (rng() % 9) {
                case 0:
                case 1: text += v; break;
                case 2: text += v.substr(0, uniform(1, v.size() - 1)); break;
                case 3: {
                    std::string ctx = random_value().substr(0, uniform(0, 5));
                    text += base64(ctx + v + random_value().substr(0, uniform(0, 3)), rng() % 2);
                    break;
                }
                case 4: text += percent_encode(v, rng() % 2, rng() % 2); break;
                case 5:
                    text += nlohmann::json(v).dump(-1, ' ', rng() % 2,
                                                   nlohmann::json::error_handler_t::replace);
                    break;
                default:
                    for (std::size_t b = uniform(0, 30); b > 0; --b)
                        text += rng() % 4 ? alphabet[uniform(0, alphabet.size() - 1)]
                                          : static_cast<char>(uniform(0, 255));
            }
        }

        std::vector<std::string_view> chunks;
        const std::size_t mode = rng() % 4;
        for (std::size_t i = 0; i < text.size();) {
            std::size_t n = mode == 0   ? 1
                            : mode == 1 ? uniform(1, 8)
                            : mode == 2 ? uniform(1, 300)
                                        : text.size();
            if (rng() % 16 == 0) chunks.push_back({}); // empty writes happen too
            chunks.push_back(std::string_view(text).substr(i, n));
            i += n;
        }

        const std::string expected = reference_redact(set, text);
        const std::string streamed = stream_through(r, chunks);
        ASSERT_EQ(streamed, expected) << "iteration " << iter;
        ASSERT_EQ(r.redact(text), expected) << "iteration " << iter;
        for (const auto& s : secrets)
            ASSERT_EQ(streamed.find(s.value), std::string::npos) << "iteration " << iter;
        total_bytes += text.size();
        for (std::size_t p = 0; (p = streamed.find("[REDACTED:", p)) != std::string::npos; ++p)
            ++total_markers;
    }
    EXPECT_GT(total_markers, std::size_t{kIterations}) << "the plants must actually be found";
    const auto secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    RecordProperty("bytes", static_cast<int>(total_bytes));
    EXPECT_LT(secs, 30.0);
}

// --- C-08
// -----------------------------------------------------------------------------------------

// One 200 MB line of 'x' (as `yes x | tr -d '\n' | head -c 200000000`), generated chunk by chunk,
// with the secret straddling two 64 KiB cuts and a prefix of it at the very end.
TEST(StreamRedactor, C08_OneLineOf200MegabytesWithSecretsStraddlingChunkBoundaries) {
    const std::string secret = "S3cr3t-T0k3n-Value-42";
    const Redactor r(SecretSet{{"TOKEN", secret}});
    constexpr std::size_t kTotal = 200'000'000;
    constexpr std::size_t kChunk = 64 * 1024;
    const std::size_t at1 = 100 * kChunk - 7;
    const std::size_t at2 = 2000 * kChunk - secret.size() + 1;
    const std::size_t tail_prefix = 9; // the stream ends with secret[0, 9)
    const std::size_t at3 = kTotal - tail_prefix;
    const auto byte_at = [&](std::size_t pos) {
        if (pos >= at1 && pos < at1 + secret.size()) return secret[pos - at1];
        if (pos >= at2 && pos < at2 + secret.size()) return secret[pos - at2];
        if (pos >= at3) return secret[pos - at3];
        return 'x';
    };

    const std::string marker = "[REDACTED:TOKEN]";
    StreamRedactor s = r.stream();
    std::string chunk, out;
    std::size_t emitted = 0, markers = 0, not_x = 0, max_held = 0;
    // Counts markers and the bytes between them that are not 'x' (memchr/memcmp-based, so the
    // check stays fast in Debug and sanitizer builds too).
    const std::string all_x(kChunk + marker.size(), 'x');
    const auto count_not_x = [&](std::string_view seg) {
        std::size_t bad = 0;
        if (std::memcmp(seg.data(), all_x.data(), seg.size()) != 0)
            for (char c : seg) bad += c != 'x';
        return bad;
    };
    const auto take_output = [&] {
        emitted += out.size();
        std::size_t from = 0;
        for (std::size_t p; (p = out.find(marker, from)) != std::string::npos;
             from = p + marker.size()) {
            ++markers;
            not_x += count_not_x(std::string_view(out).substr(from, p - from));
        }
        not_x += count_not_x(std::string_view(out).substr(from));
    };
    for (std::size_t pos = 0; pos < kTotal; pos += kChunk) {
        const std::size_t n = std::min(kChunk, kTotal - pos);
        chunk.assign(n, 'x');
        for (std::size_t at : {at1, at2, at3})
            if (pos < at + secret.size() && at < pos + n)
                for (std::size_t i = 0; i < n; ++i) chunk[i] = byte_at(pos + i);
        out.clear();
        s.feed(chunk, out);
        ASSERT_LE(out.size(), n + s.max_buffered_bytes() + marker.size())
            << "output is passed on, not accumulated";
        ASSERT_LE(s.buffered_bytes(), s.max_buffered_bytes());
        max_held = std::max(max_held, s.buffered_bytes());
        take_output();
    }
    out.clear();
    s.flush(out);
    take_output();

    EXPECT_EQ(markers, 2u);
    EXPECT_EQ(emitted, kTotal - 2 * secret.size() + 2 * marker.size());
    EXPECT_EQ(out, secret.substr(0, tail_prefix)) << "the held prefix is flushed at the end";
    EXPECT_EQ(not_x, tail_prefix) << "nothing but 'x' outside the markers";
    EXPECT_LT(max_held, secret.size());
    // The longest pattern is a form of the value with every character a markup reference
    // ("&#NNN;", up to 6 bytes each): the bound grows with the secret, never with the output.
    EXPECT_LE(s.max_buffered_bytes(), 6 * secret.size()) << "bytes per secret byte, not megabytes";
}

} // namespace
} // namespace radial::redaction
