// `radiald records` prints what a box posted (docs/design.md §14.7): a payload may hold C1 control
// characters (U+009B is CSI: a terminal acts on it as on ESC [), which JSON writers leave raw. They
// reach the operator's terminal as \u escapes, in the text and the --json output alike.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "../../support/process_runner.h"
#include "../../support/temp_dir.h"
#include "journal/journal_sqlite.h"

namespace radial {
namespace {

TEST(RadialdRecordsOutput, ABoxsControlCharactersReachTheTerminalEscaped) {
    test::TempDir dir("radial-records-out");
    const std::string state = dir.path() + "/state";
    std::filesystem::create_directories(state);
    const std::string config = dir.write("radiald.toml", "[run]\nstateDir = \"" + state + "\"\n");
    {
        auto journal = journal::open_sqlite_journal(state + "/journal.sqlite3");
        journal->add_turn({"t1", "radial-turn-x-t1", "docker", "img", "result", "{}", "turn"},
                          journal::TurnState::claimed);
        // U+009B CSI "8m" (conceal), U+009D OSC, DEL: as a box posted them, raw UTF-8.
        journal->append_record("t1", "result",
                               "{\"x\":\"\xc2\x9b"
                               "8m hidden \xc2\x9d\x7f end\"}");
    }
    for (const bool json : {false, true}) {
        std::vector<std::string> argv = {RADIALD_PATH, "records", "--config", config, "t1"};
        if (json) argv.push_back("--json");
        const auto r = test::run_process(argv);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(r.out.find("\xc2\x9b"), std::string::npos) << json;
        EXPECT_EQ(r.out.find("\xc2\x9d"), std::string::npos) << json;
        EXPECT_EQ(r.out.find('\x7f'), std::string::npos) << json;
        EXPECT_NE(r.out.find("\\u009b8m hidden \\u009d\\u007f end"), std::string::npos) << r.out;
    }
}

} // namespace
} // namespace radial
