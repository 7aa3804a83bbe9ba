// tests/plugins/support/cli_text_test.cpp — a CLI's output as one message line, and an argv as
// one log line (plugins/support/cli_text.cpp).
#include "support/cli_text.h"

#include <gtest/gtest.h>

namespace radial::plugin_support {
namespace {

TEST(plugin_support_cli_text, UsageHintsAndBlankLinesAreDropped) {
    EXPECT_EQ(cli_message("docker: Error response from daemon: x\n\nRun 'docker run --help' for "
                          "more information\n"),
              "docker: Error response from daemon: x");
    EXPECT_EQ(cli_message("Error: unknown flag: --json\nRun 'sbx ls --help' for usage.\n"),
              "Error: unknown flag: --json");
    EXPECT_EQ(cli_message("  first  \r\n\n second\n"), "first / second");
    EXPECT_EQ(cli_message("Run 'this' now\n"), "Run 'this' now") << "not a usage hint";
}

TEST(plugin_support_cli_text, LongMessagesKeepTheirTail) {
    std::string text(100, 'a');
    text += "\ncause";
    std::string m = cli_message(text, 10);
    EXPECT_EQ(m, "...aa / cause");
}

TEST(plugin_support_cli_text, FirstLineOrFallback) {
    EXPECT_EQ(first_cli_line("\n  \nsecond\nthird\n", "none"), "second");
    EXPECT_EQ(first_cli_line("\n\n", "none"), "none");
}

TEST(plugin_support_cli_text, ArgvForLogQuotesWhatAShellWouldRead) {
    EXPECT_EQ(argv_for_log({"sbx", "rm", "--force", "radial-turn-a-1"}),
              "sbx rm --force radial-turn-a-1");
    EXPECT_EQ(argv_for_log({"a b", "it's", ""}), "'a b' 'it'\\''s' ''");
    EXPECT_EQ(argv_for_log({"x\ny", "t\tab'\\"}), "$'x\\ny' $'t\\tab\\'\\\\'");
    EXPECT_EQ(argv_for_log({std::string("\x01", 1)}), "$'\\x01'");
}

} // namespace
} // namespace radial::plugin_support
