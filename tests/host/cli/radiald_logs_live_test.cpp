// `radiald logs` after `radiald turn` (docs/design.md §11.7): the real binary, the docker plugin
// and the engine. A turn that prints more than the terminal record's 4 KiB tail keeps all of it,
// the causal first line included, both streams with their times, its secret masked; --tail and
// --since choose what is printed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
using ::testing::HasSubstr;

test::ProcessResult logs(const test::RadialdSetup& setup, std::vector<std::string> flags) {
    std::vector<std::string> argv{RADIALD_PATH, "logs", "--config", setup.config()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return test::run_process(argv, {}, std::chrono::seconds(60));
}

TEST(RadialdLogsLive, ATurnKeepsItsWholeOutputBothStreamsTheFirstLineAndNoSecret) {
    const std::string secret = "sk-logs-" + test::unique_instance_id("v");
    test::RadialdSetup setup;
    const std::string script =
        "echo \"causal-first-line $LOG_SECRET\" >&2; i=0; while [ $i -lt 200 ]; do "
        "echo \"out-$i ................................................\"; "
        "echo \"err-$i ,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,\" >&2; "
        "i=$((i+1)); done; echo last-out";
    auto t = setup.turn({"--turn-id", "big", "--secret", "LOG_SECRET"}, {"sh", "-c", script},
                        {{"LOG_SECRET", secret}});
    ASSERT_EQ(t.result.exit_code, 0) << t.result.err;
    std::string want_out, want_err = "causal-first-line [REDACTED:LOG_SECRET]\n";
    for (int i = 0; i < 200; ++i) {
        want_out += "out-" + std::to_string(i) + " " + std::string(48, '.') + "\n";
        want_err += "err-" + std::to_string(i) + " " + std::string(52, ',') + "\n";
    }
    want_out += "last-out\n";
    ASSERT_GT(want_err.size(), 4096u);
    // The record's tail lost the first line; the log did not.
    EXPECT_THAT(t.record["outputTail"]["stderr"].get<std::string>(),
                ::testing::Not(HasSubstr("causal-first-line")));

    auto all = logs(setup, {"big"});
    EXPECT_EQ(all.exit_code, 0) << all.err;
    EXPECT_EQ(all.out, want_out);
    EXPECT_EQ(all.err, want_err);

    // On disk: no secret, every line a record with its time, both streams, an end record last.
    const std::string file = test::read_file(t.state_dir + "/logs/big.log");
    EXPECT_EQ(file.find(secret), std::string::npos);
    EXPECT_THAT(file, HasSubstr("[REDACTED:LOG_SECRET]"));
    std::istringstream lines(file);
    std::string line, last;
    std::map<std::string, std::string> streams; // each stream's records, one after the other
    while (std::getline(lines, line)) {
        auto j = nlohmann::json::parse(line);
        EXPECT_THAT(j["time"].get<std::string>(),
                    ::testing::MatchesRegex("[0-9]{4}-[0-9-]+T[0-9:]+\\.[0-9]{3}Z"));
        if (j.contains("stream")) streams[j["stream"].get<std::string>()] += j["log"];
        last = line;
    }
    EXPECT_EQ(streams["stdout"], want_out);
    EXPECT_EQ(streams["stderr"], want_err);
    EXPECT_THAT(last, HasSubstr("\"event\":\"end\""));

    // Nothing since a time still to come.
    auto none = logs(setup, {"--since", "2999-01-01T00:00:00Z", "big"});
    EXPECT_EQ(none.exit_code, 0) << none.err;
    EXPECT_EQ(none.out, "");
    EXPECT_EQ(none.err, "");
}

TEST(RadialdLogsLive, TailPrintsTheLastLinesWithTheirTimesOnRequest) {
    test::RadialdSetup setup;
    auto t = setup.turn({"--turn-id", "ten"},
                        {"sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do echo line-$i; done"});
    ASSERT_EQ(t.result.exit_code, 0) << t.result.err;
    auto tail = logs(setup, {"--tail", "3", "ten"});
    EXPECT_EQ(tail.exit_code, 0) << tail.err;
    EXPECT_EQ(tail.out, "line-8\nline-9\nline-10\n");
    auto stamped = logs(setup, {"-n", "2", "--timestamps", "ten"});
    EXPECT_EQ(stamped.exit_code, 0) << stamped.err;
    EXPECT_THAT(stamped.out, ::testing::MatchesRegex("[0-9]{4}-[0-9-]+T[0-9:.]+Z line-9\n"
                                                     "[0-9]{4}-[0-9-]+T[0-9:.]+Z line-10\n"));
    // A turn this state directory never ran: named, and exit 1.
    auto unknown = logs(setup, {"nosuchturn"});
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_THAT(unknown.err, HasSubstr("no turn 'nosuchturn'"));
}

TEST(RadialdLogsLive, ATurnRunWithTheLogOffSaysSo) {
    test::RadialdSetup setup("turnLogMaxBytes = 0\n");
    auto t = setup.turn({"--turn-id", "quiet"}, {"echo", "not-kept"});
    ASSERT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "not-kept\n"); // the turn's own output is unchanged
    auto r = logs(setup, {"quiet"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(r.err, HasSubstr("run.turnLogMaxBytes = 0"));
}

} // namespace
} // namespace radial
