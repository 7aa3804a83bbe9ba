// tests/plugins/sandbox/sbx_list_test.cpp — the `sbx ls` parser (plugins/sandbox/sbx_list.cpp):
// the text form and the --json form, golden, with the noise real versions print.
#include "sbx_list.h"

#include <gtest/gtest.h>

namespace radial::sandbox {
namespace {

std::vector<std::string> names(const std::vector<ListedSandbox>& listed) {
    std::vector<std::string> out;
    for (const auto& s : listed) out.push_back(s.name);
    return out;
}

using Names = std::vector<std::string>;

TEST(sbx_list, TextSkipsTheHeaderAndTakesTheFirstColumn) {
    EXPECT_EQ(names(parse_sandbox_list_text(
                  "SANDBOX               AGENT    STATUS    PORTS   WORKSPACE\n"
                  "radial-turn-local-7   claude   running           /srv/ws/7\n"
                  "claude-myproj         claude   stopped   8080    /home/me/myproj\n")),
              (Names{"radial-turn-local-7", "claude-myproj"}));
}

TEST(sbx_list, TextToleratesAddedColumnsBlankLinesAndOddSpacing) {
    EXPECT_EQ(names(parse_sandbox_list_text("\n  NAME\tAGENT\tSTATUS\tPORTS\tWORKSPACE\tLAST USED\n"
                                            "\n"
                                            "\tradial-turn-a-1\tclaude\trunning\t\t/w\t1m ago\r\n"
                                            "   radial-turn-a-2      \n"
                                            "\n\n")),
              (Names{"radial-turn-a-1", "radial-turn-a-2"}));
}

TEST(sbx_list, TextHeaderInAnyCaseAndNoHeaderAtAll) {
    EXPECT_EQ(names(parse_sandbox_list_text("Name Status\nx running\n")), (Names{"x"}));
    EXPECT_EQ(names(parse_sandbox_list_text("ID STATUS\nx running\n")), (Names{"x"}));
    EXPECT_EQ(names(parse_sandbox_list_text("a\nb c\n")), (Names{"a", "b"})) << "-q style";
    EXPECT_TRUE(parse_sandbox_list_text("").empty());
    EXPECT_TRUE(parse_sandbox_list_text("SANDBOX AGENT STATUS\n").empty());
}

TEST(sbx_list, TextDropsDaemonStartUpLinesAndWhateverPrecedesTheHeader) {
    EXPECT_EQ(
        names(parse_sandbox_list_text(
            "Starting sandboxd daemon...\n"
            "Daemon started (PID: 4242, socket: /home/u/.local/state/sandboxes/sandboxd.sock)\n"
            "Logs: /home/u/.local/state/sandboxes/daemon.log\n"
            "some-other-banner line\n"
            "SANDBOX AGENT STATUS\n"
            "radial-turn-a-1 claude running\n")),
        (Names{"radial-turn-a-1"}));
}

TEST(sbx_list, TextAfterTheHeaderAHeaderWordIsAName) {
    EXPECT_EQ(names(parse_sandbox_list_text("NAME\nname\nID\n")), (Names{"name", "ID"}));
}

TEST(sbx_list, JsonGolden) {
    auto listed = parse_sandbox_list_json(
        R"({"sandboxes":[{"name":"copilot-test","agent":"copilot","status":"stopped",)"
        R"("workspaces":["C:\\Users\\user\\Git\\copilot-test"]},)"
        R"({"name":"radial-turn-a-1","agent":"claude","status":"running","workspaces":[],)"
        R"("last_used_at":"2026-08-01T10:00:00Z","extra":{"nested":[1,2]}}]})"
        "\n");
    ASSERT_TRUE(listed);
    EXPECT_EQ(*listed, (std::vector<ListedSandbox>{{"copilot-test", "stopped"},
                                                   {"radial-turn-a-1", "running"}}));
}

TEST(sbx_list, JsonAfterDaemonStartUpLines) {
    // sbx-releases#201: without a running daemon, `sbx ls --json` prints these on stdout first.
    auto listed = parse_sandbox_list_json(
        "Starting sandboxd daemon...\n"
        "Daemon started (PID: 4242, socket: /home/u/.local/state/sandboxes/sandboxd.sock)\n"
        "Logs: /home/u/.local/state/sandboxes/daemon.log\n"
        "{\"sandboxes\":[{\"name\":\"radial-turn-a-1\",\"status\":\"running\"}]}\n");
    ASSERT_TRUE(listed);
    EXPECT_EQ(names(*listed), (Names{"radial-turn-a-1"}));
}

TEST(sbx_list, JsonPrettyPrintedOrFollowedByText) {
    auto listed = parse_sandbox_list_json(
        "[info] a log line that opens a bracket\n"
        "  {\n    \"sandboxes\": [\n      { \"name\": \"a\" },\n      {\"name\": \"b\"}\n    ]\n  "
        "}\n"
        "trailing words\n");
    ASSERT_TRUE(listed);
    EXPECT_EQ(names(*listed), (Names{"a", "b"}));
}

TEST(sbx_list, JsonEmptyForms) {
    EXPECT_EQ(parse_sandbox_list_json("{\"sandboxes\":[]}"), std::vector<ListedSandbox>{});
    EXPECT_EQ(parse_sandbox_list_json("{\"sandboxes\":null}\n"), std::vector<ListedSandbox>{});
    EXPECT_EQ(parse_sandbox_list_json("[]\n"), std::vector<ListedSandbox>{});
    EXPECT_EQ(parse_sandbox_list_json("null\n"), std::vector<ListedSandbox>{});
    // Nothing at all is no listing: a removal must not take its sandbox for gone.
    EXPECT_EQ(parse_sandbox_list_json(""), std::nullopt);
    EXPECT_EQ(parse_sandbox_list_json(" \n\t\n"), std::nullopt);
}

TEST(sbx_list, JsonBareArray) {
    auto listed = parse_sandbox_list_json("[{\"name\":\"a\",\"status\":\"stopped\"}]");
    ASSERT_TRUE(listed);
    EXPECT_EQ(*listed, (std::vector<ListedSandbox>{{"a", "stopped"}}));
}

TEST(sbx_list, JsonSkipsEntriesWhoseNameCannotBeRadials) {
    auto listed = parse_sandbox_list_json(
        R"({"sandboxes":[{"name":"a b"},{"name":"tab\there"},{"name":"ok","status":3}]})");
    ASSERT_TRUE(listed);
    EXPECT_EQ(*listed, (std::vector<ListedSandbox>{{"ok", ""}}));
}

// An entry that names no sandbox is a format this parser does not know: an error, never a list
// without it (a removal would take its sandbox for gone). Each member of the class, alone.
TEST(sbx_list, JsonWithAnEntryThatNamesNoSandboxIsNotAList) {
    for (const char* entry :
         {R"({"name":""})", R"({"name":7})", R"({"name":null})", R"({"status":"running"})",
          R"({"Name":"radial-turn-a-1"})", R"("x")", R"(["radial-turn-a-1"])", "3", "null"}) {
        SCOPED_TRACE(entry);
        const std::string doc = std::string(R"({"sandboxes":[{"name":"ok"},)") + entry + "]}";
        EXPECT_EQ(parse_sandbox_list_json(doc), std::nullopt);
        EXPECT_EQ(parse_sandbox_list_json(std::string("[") + entry + "]"), std::nullopt);
    }
    // A log line that is a JSON array of another shape is passed over for the document after it.
    auto listed = parse_sandbox_list_json("[\"starting\"]\n{\"sandboxes\":[{\"name\":\"a\"}]}\n");
    ASSERT_TRUE(listed);
    EXPECT_EQ(names(*listed), (Names{"a"}));
}

TEST(sbx_list, JsonWithoutADocumentIsNotAnEmptyList) {
    EXPECT_EQ(parse_sandbox_list_json("Error: not signed in\n"), std::nullopt);
    EXPECT_EQ(parse_sandbox_list_json("{\"sandboxes\":[{\"name\":\"a\"}"), std::nullopt)
        << "truncated";
    EXPECT_EQ(parse_sandbox_list_json("{\"other\":[]}"), std::nullopt) << "wrong shape";
    EXPECT_EQ(parse_sandbox_list_json("{\"sandboxes\":{}}"), std::nullopt);
    EXPECT_EQ(parse_sandbox_list_json("SANDBOX AGENT\nx claude\n"), std::nullopt)
        << "a text table is not JSON";
}

} // namespace
} // namespace radial::sandbox
