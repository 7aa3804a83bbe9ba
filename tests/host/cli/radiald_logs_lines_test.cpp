// `radiald logs` counts and stamps lines, not the chunks the runtime delivered (docs/design.md
// §11.7): a line printed in pieces is one line for --tail and has one time for -t, the time of its
// start; a last line without its '\n' is a line too. The log is written by hand, as a box's
// output chunked the way the review saw it: `printf '{"seq":1}'; echo; echo secret=x`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "../../support/process_runner.h"
#include "../../support/temp_dir.h"
#include "journal/journal_sqlite.h"

namespace radial {
namespace {

struct LogState {
    test::TempDir dir{"radial-logs-lines"};
    std::string state = dir.path() + "/state";
    std::string config;
    LogState() {
        std::filesystem::create_directories(state + "/logs");
        config = dir.write("radiald.toml", "[run]\nstateDir = \"" + state + "\"\n");
        journal::open_sqlite_journal(state + "/journal.sqlite3");
    }
    void write_log(const std::string& id, const std::string& records) {
        dir.write("state/logs/" + id + ".log", records);
    }
    test::ProcessResult logs(std::vector<std::string> flags) {
        std::vector<std::string> argv{RADIALD_PATH, "logs", "--config", config};
        argv.insert(argv.end(), flags.begin(), flags.end());
        return test::run_process(argv);
    }
};

std::string chunk_record(int ms, const std::string& stream, const std::string& json_text) {
    return "{\"time\":\"2024-05-01T12:00:00." + std::string(ms < 10 ? "00" : "0") +
           std::to_string(ms) + "Z\",\"stream\":\"" + stream + "\",\"log\":\"" + json_text +
           "\"}\n";
}
const std::string kEndRecord =
    "{\"time\":\"2024-05-01T12:00:01.000Z\",\"event\":\"end\",\"keptBytes\":1,\"droppedBytes\":0}"
    "\n";

TEST(RadialdLogsLines, TailCountsLinesPrintedInPiecesOnceAndTimestampsStampTheirStart) {
    LogState s;
    s.write_log("t1", chunk_record(1, "stdout", R"({\"seq\":1})") +
                          chunk_record(2, "stdout", "\\n") +
                          chunk_record(3, "stdout", "secret=x\\n") + kEndRecord);
    auto tail = s.logs({"--tail", "2", "t1"});
    ASSERT_EQ(tail.exit_code, 0) << tail.err;
    EXPECT_EQ(tail.out, "{\"seq\":1}\nsecret=x\n");
    EXPECT_EQ(tail.err, "");

    auto stamped = s.logs({"-t", "t1"});
    ASSERT_EQ(stamped.exit_code, 0) << stamped.err;
    EXPECT_EQ(stamped.out,
              "2024-05-01T12:00:00.001Z {\"seq\":1}\n"
              "2024-05-01T12:00:00.003Z secret=x\n");

    // --since judges a line by its start.
    auto since = s.logs({"--since", "2024-05-01T12:00:00.002Z", "t1"});
    ASSERT_EQ(since.exit_code, 0) << since.err;
    EXPECT_EQ(since.out, "secret=x\n");
}

TEST(RadialdLogsLines, TheOtherStreamBetweenAPiecesLineAndALastLineWithoutNewlineCount) {
    LogState s;
    // No end record: the turn may still run; its last line, still open, is printed as it is.
    s.write_log("t2", chunk_record(1, "stdout", "par") + chunk_record(2, "stderr", "e\\n") +
                          chunk_record(3, "stdout", "t\\nlast") +
                          chunk_record(4, "stderr", "open"));
    auto all = s.logs({"-t", "t2"});
    ASSERT_EQ(all.exit_code, 0) << all.err;
    EXPECT_EQ(all.out, "2024-05-01T12:00:00.001Z part\n2024-05-01T12:00:00.003Z last");
    EXPECT_EQ(all.err, "2024-05-01T12:00:00.002Z e\n2024-05-01T12:00:00.004Z open");

    auto tail = s.logs({"--tail", "1", "t2"});
    ASSERT_EQ(tail.exit_code, 0) << tail.err;
    EXPECT_EQ(tail.out, "");
    EXPECT_EQ(tail.err, "open");
    auto tail2 = s.logs({"--tail", "2", "t2"});
    EXPECT_EQ(tail2.out, "last");
    EXPECT_EQ(tail2.err, "open");
}

} // namespace
} // namespace radial
