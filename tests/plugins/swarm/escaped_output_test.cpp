// The swarm runtime's output encoding (docs/design.md §13.11): radial-init's --escape-output
// (plugins/box-init/), run for real in a pid namespace of its own, and the runtime's decoder
// (plugins/swarm/escaped_output.h), which must give back every byte the command wrote while the
// log holds a record per piece read, not per line. No engine.
#include "escaped_output.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "../../support/process_runner.h"

namespace radial::swarm {
namespace {

std::string decode(std::string_view log, std::size_t piece = 0) {
    EscapedOutputDecoder d;
    std::string out;
    if (piece == 0) {
        d.feed(log, out);
    } else {
        for (std::size_t i = 0; i < log.size(); i += piece) d.feed(log.substr(i, piece), out);
    }
    d.finish(out);
    return out;
}

TEST(EscapedOutputDecoder, EscapesBecomeTheirBytesAndPieceEndsVanish) {
    EXPECT_EQ(decode("a%25b%0Ac%0A\n"), "a%b\nc\n");
    EXPECT_EQ(decode("one\ntwo\n\n"), "onetwo");
    EXPECT_EQ(decode(""), "");
}

TEST(EscapedOutputDecoder, EveryCutOfTheInputGivesTheSameBytes) {
    const std::string log = "x%25%0A%0A\ny%25\n%0Az%";
    const std::string whole = decode(log);
    EXPECT_EQ(whole, "x%\n\ny%\nz%");
    for (std::size_t piece = 1; piece <= log.size(); ++piece)
        EXPECT_EQ(decode(log, piece), whole) << "fed in pieces of " << piece;
}

TEST(EscapedOutputDecoder, WhatRadialInitNeverWritesIsKeptAsItWas) {
    // Only another writer of the log (the box writing to PID 1's stdout) puts these there.
    EXPECT_EQ(decode("100%"), "100%");
    EXPECT_EQ(decode("%zz"), "%zz");
    EXPECT_EQ(decode("%2x"), "%2x");
    EXPECT_EQ(decode("%0B"), "%0B");
    EXPECT_EQ(decode("%%25"), "%%");
    EXPECT_EQ(decode("%2%25"), "%2%");
    for (std::size_t piece = 1; piece <= 5; ++piece)
        EXPECT_EQ(decode("%2%25%0", piece), "%2%%0") << "fed in pieces of " << piece;
}

// radial-init as PID 1 of a pid namespace of its own (it ends every process it can signal when
// its command ends, so never outside one).
test::ProcessResult run_init(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {
        "unshare", "--user", "--map-root-user",
        "--pid",   "--fork", RADIAL_BINARY_DIR "/lib/radial/radial-init"};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_process(argv);
}

std::size_t lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

TEST(RadialInitEscapedOutput, EveryByteComesBackAndALongLineKeepsItsNewline) {
    // Every byte value, literal escape-like text, and a 1 MiB line ending in a newline on stdout;
    // another pattern on stderr at the same time.
    const std::string script =
        "i=0; while [ $i -lt 256 ]; do printf \"\\\\$(printf %o $i)\"; i=$((i+1)); done; "
        "printf '%%0A%%25%%\\n'; head -c 1048576 /dev/zero | tr '\\0' x; echo; "
        "printf 'to stderr%%0A\\n' >&2; exit 7";
    auto r = run_init({"--escape-output", "0", "0", "--", "sh", "-c", script});
    ASSERT_EQ(r.exit_code, 7) << r.err;
    std::string expected;
    for (int i = 0; i < 256; ++i) expected.push_back(static_cast<char>(i));
    expected += "%0A%25%\n" + std::string(1 << 20, 'x') + "\n";
    const std::string out = decode(r.out);
    ASSERT_EQ(out.size(), expected.size());
    EXPECT_TRUE(out == expected) << "stdout differs from what the command wrote";
    EXPECT_EQ(decode(r.err), "to stderr%0A\n");
    // Each piece is one log record: none may exceed what a log driver keeps as one (16 KiB).
    std::size_t start = 0, longest = 0;
    for (std::size_t nl = r.out.find('\n'); nl != std::string::npos; nl = r.out.find('\n', start)) {
        longest = std::max(longest, nl - start);
        start = nl + 1;
    }
    EXPECT_EQ(start, r.out.size()) << "the log does not end at a piece end";
    EXPECT_LT(longest, 16u * 1024) << "a piece longer than one log record";
}

TEST(RadialInitEscapedOutput, ShortLinesTravelInFewPieces) {
    // 8 MiB of 8-byte lines: one log record each would be a million of them.
    auto r = run_init({"--escape-output", "0", "0", "--", "seq", "-w", "0", "1048575"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string out = decode(r.out);
    EXPECT_EQ(lines(out), 1048576u);
    EXPECT_EQ(out.substr(0, 16), "0000000\n0000001\n");
    EXPECT_EQ(out.substr(out.size() - 8), "1048575\n");
    EXPECT_LT(lines(r.out), 1048576u / 100) << "the log holds nearly a record per line";
}

TEST(RadialInitEscapedOutput, WhatTheCommandLeftBehindEndsAndItsOutputIsCopied) {
    // The command exits while a child holds the pipes open: radial-init ends the child and exits
    // with the command's status at once, its output all copied.
    auto r = run_init({"--escape-output", "0", "0", "--", "sh", "-c",
                       "(echo child; exec sleep 600) & sleep 0.2; echo parent; exit 5"});
    EXPECT_EQ(r.exit_code, 5) << r.err;
    EXPECT_FALSE(r.timed_out);
    const std::string out = decode(r.out);
    EXPECT_NE(out.find("child\n"), std::string::npos) << out;
    EXPECT_NE(out.find("parent\n"), std::string::npos) << out;
}

TEST(RadialInitEscapedOutput, TheDeadlineStillEndsTheBoxAndSaysSoEscaped) {
    auto r =
        run_init({"--escape-output", "300", "100", "--", "sh", "-c", "echo before; sleep 600"});
    EXPECT_EQ(r.exit_code, 124);
    EXPECT_EQ(decode(r.out), "before\n");
    EXPECT_EQ(decode(r.err), "radial-init: the turn's timeout passed; ending the box\n");
    EXPECT_EQ(lines(r.err), 1u) << "radial-init's own message went out unescaped: " << r.err;
}

TEST(RadialInitEscapedOutput, WithoutTheFlagOutputIsUntouched) {
    auto r = run_init({"0", "0", "--", "sh", "-c", "printf 'a%%b\\nc\\n'; printf e >&2"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, "a%b\nc\n");
    EXPECT_EQ(r.err, "e");
}

TEST(RadialInitEscapedOutput, AMissingCommandIs127AndSaidEscaped) {
    auto r = run_init({"--escape-output", "0", "0", "--", "/nonexistent/command"});
    EXPECT_EQ(r.exit_code, 127);
    EXPECT_EQ(decode(r.err),
              "radial-init: cannot run '/nonexistent/command': No such file or directory\n");
}

} // namespace
} // namespace radial::swarm
