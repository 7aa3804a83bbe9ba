// A box that prints the bytes whose encoding in radiald's own stores is a secret: the base64 that
// the terminal record and the output log write for output that is not UTF-8, and the escapes they
// write for control bytes in JSON. The turn's redactor masks those bytes before anything stores
// them, so neither the record nor the log holds the value (docs/design.md §10.2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <radial/runtime_plugin.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../../support/temp_dir.h"
#include "redaction/stream_redactor.h"
#include "turn/output_tail.h"
#include "turn/terminal_record.h"
#include "turn/turn_output_log.h"

namespace radial::turn {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Standard base64 text (a multiple of 4 characters, no padding) back to its bytes.
std::string decode(const std::string& text) {
    std::string out;
    std::uint32_t bits = 0;
    int have = 0;
    for (char c : text) {
        bits = (bits << 6) | static_cast<std::uint32_t>(std::string_view(kAlphabet).find(c));
        have += 6;
        if (have >= 8) {
            have -= 8;
            out += static_cast<char>((bits >> have) & 0xff);
        }
    }
    return out;
}

// What `redactor` leaves of `output`, as the terminal record and the output log store it.
std::string stored(const std::string& secret, const std::string& output) {
    const redaction::Redactor redactor(redaction::SecretSet{{"KEY", secret}});
    const std::string kept = redactor.redact(output);
    TerminalRecord rec;
    rec.stdout_tail = kept;
    test::TempDir dir{"radial-enc"};
    {
        auto log = TurnOutputLog::open(dir.path(), "t1", 1 << 20, 0);
        EXPECT_TRUE(log);
        if (log) log->write(RADIAL_STREAM_STDOUT, kept);
    }
    std::ifstream in(turn_log_path(dir.path(), "t1"));
    const std::string logged((std::istreambuf_iterator<char>(in)), {});
    return rec.to_json() + "\n" + logged;
}

// The bytes that put base64 text inside the encoding, at each of the four places in a
// 4-character group it can start, after 0 and after 3 bytes of other output.
TEST(StoredEncodings, BytesWhoseBase64IsASecretAreMaskedBeforeTheRecordOrTheLogEncodesThem) {
    for (const std::string secret :
         {"q7Lw2Zr9Xk4Vb8Np3Ty6Hc1Mf5Jd0Gs+/Ae", "3f9a1c7e5b2d8f4a6c0e9b1d7f3a5c8e2b4d6f0a"}) {
        for (std::size_t offset = 0; offset < 4; ++offset) {
            for (const std::string before : {"", "ab\xff"}) {
                std::string text = std::string(offset, 'A') + secret;
                while (text.size() % 4 != 0) text += 'A';
                const std::string output = before + decode(text) + "\xfe\n";
                SCOPED_TRACE(secret + " at offset " + std::to_string(offset) + " after " +
                             std::to_string(before.size()) + " bytes");
                ASSERT_THAT(base64_encode(output), HasSubstr(secret))
                    << "the test's leak is not one";
                EXPECT_THAT(stored(secret, output), Not(HasSubstr(secret)));
            }
        }
    }
}

// A value stored with its escapes written out (a PEM key in an env file, "\n" for each line
// break), printed by the box with them read: the JSON of the record and the log would write the
// escapes back.
TEST(StoredEncodings, BytesWhoseJsonEscapesAreASecretAreMasked) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"-----BEGIN KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END KEY-----",
         "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----"},
        {"tok\\tZq8wX41pL0k\\r\\n", "tok\tZq8wX41pL0k\r\n"},
        {"Zq8wX41pL0k\\u001b[0m\\u0007", "Zq8wX41pL0k\x1b[0m\x07"},
        {"Zq8wX41pL0k\\\\path\\\"q\\\"", "Zq8wX41pL0k\\path\"q\""},
    };
    for (const auto& [secret, printed] : cases) {
        SCOPED_TRACE(secret);
        const std::string out = stored(secret, "before " + printed + " after\n");
        EXPECT_THAT(out, Not(HasSubstr(secret)));
        EXPECT_THAT(out, HasSubstr("[REDACTED:KEY]"));
    }
}

} // namespace
} // namespace radial::turn
