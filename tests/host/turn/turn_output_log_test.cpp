// A turn's output log (docs/design.md §11.7): both streams line by line with their times, the
// exact bytes of output that is not UTF-8, the head kept at the cap, no half record after a failed
// write, a reader that waits for an incomplete last line, and retention oldest first that never
// takes a running turn's file.
#include "turn/turn_output_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <radial/runtime_plugin.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "../../support/temp_dir.h"

namespace radial::turn {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Kind = LogEntry::Kind;

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::vector<LogEntry> read_all(const std::string& path) {
    TurnLogReader reader(path);
    std::vector<LogEntry> out;
    EXPECT_TRUE(reader.read_new(out)) << path;
    return out;
}

TEST(TurnOutputLog, KeepsBothStreamsLineByLineWithTheirTimesAndEndsWithAnEndRecord) {
    test::TempDir dir{"radial-tlog"};
    const auto before = now_ms();
    {
        auto log = TurnOutputLog::open(dir.path(), "t1", 1 << 20, 0);
        ASSERT_TRUE(log);
        log->write(RADIAL_STREAM_STDOUT, "first\nsecond\npart");
        log->write(RADIAL_STREAM_STDERR, "oops\n");
        log->write(RADIAL_STREAM_STDOUT, "-rest\n");
    }
    const auto after = now_ms();
    const std::string path = turn_log_path(dir.path(), "t1");
    EXPECT_EQ(path, dir.path() + "/logs/t1.log");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat((dir.path() + "/logs").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);

    auto e = read_all(path);
    ASSERT_EQ(e.size(), 6u);
    const std::vector<std::pair<bool, std::string>> want = {{false, "first\n"},
                                                            {false, "second\n"},
                                                            {false, "part"},
                                                            {true, "oops\n"},
                                                            {false, "-rest\n"}};
    for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(e[i].kind, Kind::output) << i;
        EXPECT_EQ(e[i].is_stderr, want[i].first) << i;
        EXPECT_EQ(e[i].bytes, want[i].second) << i;
        EXPECT_GE(e[i].time_ms, before - 1) << e[i].time;
        EXPECT_LE(e[i].time_ms, after + 1) << e[i].time;
        EXPECT_THAT(e[i].time, ::testing::MatchesRegex("[0-9-]+T[0-9:]+\\.[0-9]{3}Z"));
    }
    EXPECT_EQ(e[5].kind, Kind::end);
    EXPECT_EQ(e[5].dropped_bytes, 0u);
    // The format the design documents, readable without radiald.
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    EXPECT_THAT(line, ::testing::MatchesRegex("\\{\"time\":\"[^\"]+\",\"stream\":\"stdout\","
                                              "\"log\":\"first\\\\nsecond\\\\npart\"\\}"));
}

TEST(TurnOutputLog, BytesThatAreNotUtf8ComeBackExactly) {
    test::TempDir dir{"radial-tlog"};
    const std::string bytes = std::string("ok \xff\xfe\xc3", 6) + "\n";
    {
        auto log = TurnOutputLog::open(dir.path(), "t2", 1 << 20, 0);
        ASSERT_TRUE(log);
        log->write(RADIAL_STREAM_STDERR, bytes);
    }
    const std::string text = test::read_file(turn_log_path(dir.path(), "t2"));
    EXPECT_THAT(text, HasSubstr("\"base64\":"));
    EXPECT_THAT(text, HasSubstr("\xef\xbf\xbd")); // U+FFFD in "log"
    auto e = read_all(turn_log_path(dir.path(), "t2"));
    ASSERT_GE(e.size(), 1u);
    EXPECT_TRUE(e[0].is_stderr);
    EXPECT_EQ(e[0].bytes, bytes);
}

TEST(TurnOutputLog, TheCapKeepsTheHeadSaysSoOnceAndCountsWhatWasDropped) {
    test::TempDir dir{"radial-tlog"};
    {
        auto log = TurnOutputLog::open(dir.path(), "t3", 10, 0);
        ASSERT_TRUE(log);
        log->write(RADIAL_STREAM_STDOUT, "causal\n");     // 7 bytes
        log->write(RADIAL_STREAM_STDERR, "abcd\nefgh\n"); // 3 of them fit
        log->write(RADIAL_STREAM_STDOUT, "later\n");      // dropped
        EXPECT_EQ(log->kept_bytes(), 10u);
        EXPECT_EQ(log->dropped_bytes(), 7u + 6u);
    }
    auto e = read_all(turn_log_path(dir.path(), "t3"));
    ASSERT_EQ(e.size(), 4u);
    EXPECT_EQ(e[0].bytes, "causal\n");
    EXPECT_EQ(e[1].bytes, "abc");
    EXPECT_TRUE(e[1].is_stderr);
    EXPECT_EQ(e[2].kind, Kind::truncated);
    EXPECT_THAT(e[2].reason, HasSubstr("run.turnLogMaxBytes (10)"));
    EXPECT_EQ(e[3].kind, Kind::end);
    EXPECT_EQ(e[3].dropped_bytes, 13u);
}

TEST(TurnOutputLog, TheCapCutsOnACharacterBoundary) {
    test::TempDir dir{"radial-tlog"};
    {
        auto log = TurnOutputLog::open(dir.path(), "t4", 5, 0);
        ASSERT_TRUE(log);
        log->write(RADIAL_STREAM_STDOUT, "abcd\xe2\x82\xac"); // "abcd€": € would straddle the cap
    }
    auto e = read_all(turn_log_path(dir.path(), "t4"));
    ASSERT_EQ(e.size(), 3u);
    EXPECT_EQ(e[0].bytes, "abcd");
    EXPECT_EQ(e[2].dropped_bytes, 3u);
}

TEST(TurnOutputLog, ACapOfZeroLeavesOneRecordSayingTheLogIsOff) {
    test::TempDir dir{"radial-tlog"};
    EXPECT_FALSE(TurnOutputLog::open(dir.path(), "t5", 0, 0));
    auto e = read_all(turn_log_path(dir.path(), "t5"));
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].kind, Kind::off);
    EXPECT_THAT(e[0].reason, HasSubstr("run.turnLogMaxBytes"));
}

// A write that fails halfway (here: the process's file size limit, as a full disk would) leaves
// whole records only, and the log writes nothing after it — not even an end record.
TEST(TurnOutputLog, AFailedWriteLeavesNoHalfRecordAndStopsTheLog) {
    test::TempDir dir{"radial-tlog"};
    auto log = TurnOutputLog::open(dir.path(), "t6", 1 << 20, 0);
    ASSERT_TRUE(log);
    log->write(RADIAL_STREAM_STDOUT, "kept\n");
    const auto size = fs::file_size(turn_log_path(dir.path(), "t6"));
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = old;
    small.rlim_cur = size + 100; // part of the next chunk's records fits
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    log->write(RADIAL_STREAM_STDOUT, std::string(300, 'x') + "\n" + std::string(300, 'y') + "\n");
    log->write(RADIAL_STREAM_STDOUT, "after\n");
    log.reset();
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    const std::string text = test::read_file(turn_log_path(dir.path(), "t6"));
    EXPECT_EQ(text.size(), size) << text;
    EXPECT_EQ(text.back(), '\n');
    auto e = read_all(turn_log_path(dir.path(), "t6"));
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].bytes, "kept\n");
}

TEST(TurnLogReader, AnIncompleteLastLineWaitsForTheRestAndABrokenLineIsSkipped) {
    test::TempDir dir{"radial-tlog"};
    const std::string path = dir / "t7.log";
    const std::string a = R"({"time":"2024-05-01T12:00:00.000Z","stream":"stdout","log":"a\n"})";
    const std::string b = R"({"time":"2024-05-01T12:00:00.001Z","stream":"stderr","log":"b\n"})";
    TurnLogReader reader(path);
    std::vector<LogEntry> out;
    EXPECT_FALSE(reader.read_new(out)); // no file yet
    {
        std::ofstream f(path, std::ios::binary);
        f << a << "\n"
          << "{not json\n"
          << b.substr(0, 20);
    }
    ASSERT_TRUE(reader.read_new(out));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].bytes, "a\n");
    {
        std::ofstream f(path, std::ios::binary | std::ios::app);
        f << b.substr(20) << "\n";
    }
    ASSERT_TRUE(reader.read_new(out));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_TRUE(out[1].is_stderr);
    EXPECT_EQ(out[1].bytes, "b\n");
    EXPECT_EQ(out[1].time_ms, *parse_rfc3339_ms("2024-05-01T12:00:00.001Z"));
}

// A log cut short under a follower (logrotate's copytruncate): the reader stayed past the new end
// and `logs -f` lost everything written after, silently. It now says so and
// reads what is written since from the start.
TEST(TurnLogReader, ALogCutShortUnderTheReaderIsSaidAndReadAgainFromItsStart) {
    test::TempDir dir{"radial-tlog"};
    const std::string path = dir / "t8.log";
    const std::string a = R"({"time":"2024-05-01T12:00:00.000Z","stream":"stdout","log":"a\n"})";
    const std::string b = R"({"time":"2024-05-01T12:00:01.000Z","stream":"stdout","log":"b\n"})";
    std::ofstream(path, std::ios::binary) << a << "\n" << a << "\n";
    TurnLogReader reader(path);
    std::vector<LogEntry> out;
    ASSERT_TRUE(reader.read_new(out));
    ASSERT_EQ(out.size(), 2u);
    fs::resize_file(path, 0);
    std::ofstream(path, std::ios::binary | std::ios::app) << b << "\n";
    out.clear();
    ASSERT_TRUE(reader.read_new(out));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].kind, Kind::truncated);
    EXPECT_THAT(out[0].reason, HasSubstr("was cut from " + std::to_string(2 * (a.size() + 1)) +
                                         " to " + std::to_string(b.size() + 1) + " byte(s)"));
    EXPECT_EQ(out[1].kind, Kind::output);
    EXPECT_EQ(out[1].bytes, "b\n");
    EXPECT_TRUE(reader.caught_up());
    out.clear();
    ASSERT_TRUE(reader.read_new(out));
    EXPECT_TRUE(out.empty()) << "said once, not at every read";
}

TEST(TurnOutputLog, Rfc3339TimesParseToUnixMilliseconds) {
    EXPECT_EQ(parse_rfc3339_ms("1970-01-01T00:00:01.5Z"), 1500);
    EXPECT_EQ(parse_rfc3339_ms("1970-01-01T00:00:00Z"), 0);
    EXPECT_EQ(parse_rfc3339_ms("2024-05-01T12:00:00+02:00"),
              parse_rfc3339_ms("2024-05-01T10:00:00Z"));
    EXPECT_EQ(parse_rfc3339_ms("2024-05-01T10:00:00.123456789Z"),
              *parse_rfc3339_ms("2024-05-01T10:00:00Z") + 123);
    for (const char* bad : {"", "2024-05-01", "2024-05-01T10:00:00", "2024-13-01T10:00:00Z",
                            "2024-05-01T10:00:00Zjunk", "2024-05-01T10:00:00.Z", "10m"})
        EXPECT_FALSE(parse_rfc3339_ms(bad)) << bad;
}

// A log of `bytes` bytes for `id`, last modified `age` ago.
void make_log(const std::string& state, const std::string& id, std::size_t bytes,
              std::chrono::seconds age) {
    fs::create_directories(turn_log_dir(state));
    const std::string path = turn_log_path(state, id);
    std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
    fs::last_write_time(path, fs::file_time_type::clock::now() - age);
}

TEST(PruneTurnLogs, RemovesPrunedTurnsLogsThenTheOldestEndedOnesButNeverARunningTurns) {
    test::TempDir dir{"radial-tlog"};
    const std::string s = dir.path();
    make_log(s, "oldest", 100, std::chrono::seconds(400)); // running: never removed
    make_log(s, "old", 100, std::chrono::seconds(300));
    make_log(s, "mid", 100, std::chrono::seconds(200));
    make_log(s, "new", 100, std::chrono::seconds(100));
    make_log(s, "gone", 100, std::chrono::seconds(50)); // its turn left the journal
    std::ofstream(turn_log_dir(s) + "/notes.txt") << std::string(10000, 'n'); // not a log
    std::vector<std::string> asked;
    auto running = [&](const std::string& id) {
        asked.push_back(id);
        return id == "oldest";
    };
    // 400 bytes of logs after "gone", bound 250: "oldest" is skipped, "old" and "mid" go.
    EXPECT_EQ(prune_turn_logs(s, {"gone"}, 250, running), 3u);
    EXPECT_TRUE(fs::exists(turn_log_path(s, "oldest")));
    EXPECT_FALSE(fs::exists(turn_log_path(s, "old")));
    EXPECT_FALSE(fs::exists(turn_log_path(s, "mid")));
    EXPECT_TRUE(fs::exists(turn_log_path(s, "new")));
    EXPECT_FALSE(fs::exists(turn_log_path(s, "gone")));
    EXPECT_TRUE(fs::exists(turn_log_dir(s) + "/notes.txt"));
    EXPECT_EQ(asked, (std::vector<std::string>{"oldest", "old", "mid"}));
    // Under the bound: nothing more goes, and 0 is no bound at all.
    EXPECT_EQ(prune_turn_logs(s, {}, 250, running), 0u);
    EXPECT_EQ(prune_turn_logs(s, {}, 0, running), 0u);
    EXPECT_TRUE(fs::exists(turn_log_path(s, "new")));
    // No logs directory yet: nothing to do, no error.
    test::TempDir empty{"radial-tlog"};
    EXPECT_EQ(prune_turn_logs(empty.path(), {"x"}, 1, running), 0u);
}

} // namespace
} // namespace radial::turn
