// Secrets in the forms real programs print them (docs/redaction.md, "Derived forms"): each
// shell's xtrace (bash, dash, busybox ash, zsh, mksh), Python's shlex.quote, repr and
// html.escape, a multi-line key printed line by line, and markup and \u{…} escapes. The shells
// and Python run for real; the redactor must leave no distinctive piece of the value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../support/process_runner.h"
#include "redaction/secret_patterns.h"
#include "redaction/stream_redactor.h"

namespace radial::redaction {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Values with the bytes shells and languages re-quote: ' \ newline $ " tab ESC, and non-ASCII.
// Each holds the distinctive run "Zq8wX41pL0k" split by such bytes, which the redacted output
// must not show in any piece of 5 or more of its characters.
const std::vector<std::string> kValues = {
    "Zq8w'X41\\pL0k",     "Zq8w\nX41$pL0k",          "Zq8w\"X41\tpL0k",
    "Zq8w\x1bX41'pL0k\n", "Zq8w\xc3\xa9X41\\\npL0k",
};

// Pieces of the distinctive run that no redacted output may hold.
std::vector<std::string> pieces() {
    const std::string run = "Zq8wX41pL0k";
    std::vector<std::string> out;
    for (std::size_t i = 0; i + 5 <= run.size(); ++i) out.push_back(run.substr(i, 5));
    return out;
}

std::string redacted(const std::string& value, const std::string& output) {
    Redactor r(SecretSet{{"S", value}});
    return r.redact(output);
}

void expect_masked(const std::string& program, const std::string& value,
                   const std::string& output) {
    SCOPED_TRACE(program + " printing " + ::testing::PrintToString(value) + " as " +
                 ::testing::PrintToString(output));
    const std::string out = redacted(value, output);
    EXPECT_THAT(out, HasSubstr("[REDACTED:S]"));
    for (const auto& p : pieces())
        EXPECT_THAT(out, Not(HasSubstr(p))) << "redacted: " << ::testing::PrintToString(out);
}

TEST(LeakForms, EveryShellsXtraceOfTheValueIsMasked) {
    const std::vector<std::vector<std::string>> shells = {
        {"bash", "-c"}, {"dash", "-c"}, {"busybox", "sh", "-c"}, {"zsh", "-c"}, {"mksh", "-c"}};
    for (const auto& shell : shells) {
        for (const auto& value : kValues) {
            std::vector<std::string> argv = shell;
            argv.push_back("set -x; : \"$S\"");
            auto r = radial::test::run_process(argv, {{"S", value}});
            ASSERT_EQ(r.exit_code, 0) << shell[0] << ": " << r.err;
            expect_masked(shell[0] + " set -x", value, r.err);
        }
    }
}

TEST(LeakForms, PythonsQuotingAndEscapingAreMasked) {
    const std::string script =
        "import html, json, os, shlex, sys\n"
        "v = os.environ['S']\n"
        "for f in (shlex.quote(v), repr(v), html.escape(v), html.escape(v, quote=False),\n"
        "          json.dumps(v), json.dumps(v, ensure_ascii=False),\n"
        "          ''.join('&#%d;' % ord(c) for c in v), ''.join('&#x%x;' % ord(c) for c in v)):\n"
        "    sys.stdout.write(f + '\\n---\\n')\n";
    for (const auto& value : kValues) {
        auto r = radial::test::run_process({"python3", "-c", script}, {{"S", value}});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        std::size_t start = 0, sep;
        int n = 0;
        while ((sep = r.out.find("\n---\n", start)) != std::string::npos) {
            expect_masked("python form " + std::to_string(n++), value,
                          r.out.substr(start, sep - start));
            start = sep + 5;
        }
        EXPECT_EQ(n, 8);
    }
}

// A PEM key printed one line at a time (a tool that logs each line, `while read l`): every body
// line is masked, the public armor is not.
TEST(LeakForms, EachLineOfAMultiLineKeyIsMasked) {
    const std::string pem =
        "-----BEGIN PRIVATE KEY-----\n"
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n"
        "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu\n"
        "NMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ\n"
        "AB==\n"
        "-----END PRIVATE KEY-----\n";
    auto r = radial::test::run_process(
        {"sh", "-c", "printf '%s' \"$S\" | while read -r l; do echo \"line: $l\"; done"},
        {{"S", pem}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string out = redacted(pem, r.out);
    EXPECT_EQ(out,
              "line: -----BEGIN PRIVATE KEY-----\n"
              "line: [REDACTED:S]\n"
              "line: [REDACTED:S]\n"
              "line: [REDACTED:S]\n"
              "line: AB==\n"
              "line: -----END PRIVATE KEY-----\n");
}

TEST(LeakForms, LinesShorterThanTheLineMinimumAreNoFormOfTheirOwn) {
    std::vector<std::string> lines;
    for (const auto& [f, kind] :
         derive_forms("short-line-1\n0123456789abcdef\n-----ARMOR LINE HERE-----"))
        if (kind == Form::line) lines.push_back(f);
    EXPECT_THAT(lines, ::testing::ElementsAre("0123456789abcdef"));
}

// Rust's Debug and escape_unicode, JavaScript's \u{…}, and markup references of every character:
// literal vectors (no Rust or JavaScript toolchain here).
TEST(LeakForms, BracedAndMarkupEscapesAreMasked) {
    const std::string value = "Zq8w\x1bX41\xc3\xa9pL0k";
    expect_masked("Rust Debug", value, "Some(\"Zq8w\\u{1b}X41\xc3\xa9pL0k\")");
    expect_masked("JavaScript \\u{}", value, "'Zq8w\\u{1b}X41\\u{e9}pL0k'");
    const auto each = [](const char* format) {
        std::string out;
        for (unsigned cp :
             {0x5a, 0x71, 0x38, 0x77, 0x1b, 0x58, 0x34, 0x31, 0xe9, 0x70, 0x4c, 0x30, 0x6b}) {
            char buf[16];
            std::snprintf(buf, sizeof buf, format, cp);
            out += buf;
        }
        return out;
    };
    expect_masked("escape_unicode", value, "x=" + each("\\u{%x}") + ";");
    const std::string refs = each("&#x%X;");
    expect_masked("upper-case hex references", value, "<p>" + refs + "</p>");
    expect_masked("XML's &apos;", "Zq8w'X41<pL0k", "<v a='Zq8w&apos;X41&lt;pL0k'/>");
}

} // namespace
} // namespace radial::redaction
