// The daemon's figures (docs/design.md §12.6): run.metrics' addresses, the registry's text and
// JSON forms agreeing, the journal wrapper counting failures, and the snapshot on disk.
#include "daemon/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include <filesystem>

#include "../../support/faulty_journal.h"
#include "../../support/temp_dir.h"
#include "config/host_config.h"
#include "config/metrics_endpoint.h"
#include "daemon/config_reload.h"
#include "daemon/metrics_journal.h"
#include "daemon/metrics_snapshot.h"
#include "journal/journal_sqlite.h"

namespace radial {
namespace {
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

std::optional<config::MetricsEndpoint> parse(const std::string& text, std::string* why = nullptr) {
    std::string problem;
    auto e = config::parse_metrics_endpoint(text, problem);
    if (why) *why = problem;
    EXPECT_EQ(e.has_value(), problem.empty()) << text << ": " << problem;
    return e;
}

TEST(MetricsEndpoint, TakesAUnixSocketPathOrALoopbackAddressAndPort) {
    auto u = parse("unix:/run/radial/metrics.sock");
    ASSERT_TRUE(u);
    EXPECT_EQ(u->kind, config::MetricsEndpoint::Kind::unix_socket);
    EXPECT_EQ(u->path, "/run/radial/metrics.sock");
    auto v4 = parse("127.0.0.1:9464");
    ASSERT_TRUE(v4);
    EXPECT_EQ(v4->kind, config::MetricsEndpoint::Kind::tcp);
    EXPECT_EQ(v4->host, "127.0.0.1");
    EXPECT_EQ(v4->port, 9464);
    auto v6 = parse("[::1]:9464");
    ASSERT_TRUE(v6);
    EXPECT_EQ(v6->host, "::1");
    EXPECT_EQ(config::to_string(*v6), "[::1]:9464");
    EXPECT_TRUE(parse("127.3.4.5:1")); // all of 127.0.0.0/8 is loopback
}

TEST(MetricsEndpoint, RefusesWhatWouldServeBeyondTheHostOrIsNoAddress) {
    std::string why;
    EXPECT_FALSE(parse("0.0.0.0:9464", &why));
    EXPECT_THAT(why, HasSubstr("not a loopback address"));
    EXPECT_THAT(why, HasSubstr("127.0.0.1"));
    EXPECT_FALSE(parse("192.0.2.7:9464", &why));
    EXPECT_THAT(why, HasSubstr("not a loopback address"));
    EXPECT_FALSE(parse("[::]:9464", &why));
    EXPECT_FALSE(parse("localhost:9464", &why)); // no name lookup
    EXPECT_THAT(why, HasSubstr("not an IP address"));
    EXPECT_FALSE(parse("127.0.0.1:0", &why));
    EXPECT_FALSE(parse("127.0.0.1:65536", &why));
    EXPECT_FALSE(parse("127.0.0.1", &why));
    EXPECT_FALSE(parse("unix:relative.sock", &why));
    EXPECT_THAT(why, HasSubstr("absolute"));
    EXPECT_FALSE(parse("unix:/" + std::string(107, 'a'), &why));
    EXPECT_THAT(why, HasSubstr("108 bytes"));
    EXPECT_FALSE(parse("", &why));
}

TEST(MetricsEndpoint, TheConfigRefusesANonLoopbackAddressNamingTheKeyAndTheFix) {
    test::TempDir dir("radial-metrics");
    auto file = dir.write("radiald.toml", "[run]\nmetrics = \"0.0.0.0:9464\"\n");
    try {
        config::load(file, std::nullopt, dir.path());
        FAIL() << "loaded";
    } catch (const config::ConfigError& e) {
        EXPECT_THAT(e.what(), HasSubstr("radiald.toml:2:"));
        EXPECT_THAT(e.what(), HasSubstr("run.metrics"));
        EXPECT_THAT(e.what(), HasSubstr("use 127.0.0.1 or ::1"));
    }
    file = dir.write("ok.toml", "[run]\nmetrics = \"unix:/run/radial/m.sock\"\n");
    EXPECT_EQ(config::load(file, std::nullopt, dir.path()).metrics, "unix:/run/radial/m.sock");
    EXPECT_EQ(config::load(std::nullopt, std::nullopt, dir.path()).metrics, ""); // off
}

TEST(MetricsEndpoint, AChangeOfItNeedsARestart) {
    // The endpoint's socket is bound at startup (docs/design.md §12.6, §12.3).
    EXPECT_FALSE(daemon::is_reloadable_key("run.metrics"));
    auto changes = daemon::changed_keys("[run]\n", "[run]\nmetrics = \"127.0.0.1:9464\"\n");
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].key, "run.metrics");
    EXPECT_FALSE(changes[0].reloadable);
}

// The value of the sample of `family` whose labels are exactly `labels`, from Metrics::json().
double sample(const nlohmann::ordered_json& j, const std::string& family,
              const nlohmann::ordered_json& labels, const char* field = "value") {
    for (const auto& s : j.at(family))
        if (s["labels"] == labels) return s[field].get<double>();
    ADD_FAILURE() << family << labels << " not in " << j.dump();
    return -1;
}

TEST(Metrics, TheTextFormatAndTheJsonCarryTheSameFigures) {
    daemon::Metrics m("9.9.9");
    m.turn_ended("turn", "succeeded", 2s);
    m.turn_ended("turn", "failed", 500ms);
    m.turn_ended("check", "succeeded", 20s);
    m.turn_refused();
    m.set_turns(3, 7);
    m.boxes_reclaimed("startup", 2);
    m.boxes_reclaimed("sweep", 1);
    m.plugin_call("run", 1500ms, true);
    m.plugin_call("kill", 20ms, false);
    m.journal_error("storage");

    const std::string text = m.text();
    EXPECT_THAT(text, HasSubstr("# TYPE radiald_turns_ended_total counter"));
    EXPECT_THAT(text,
                HasSubstr("radiald_turns_ended_total{kind=\"turn\",status=\"succeeded\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("radiald_turns_ended_total{kind=\"turn\",status=\"failed\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("# TYPE radiald_turn_duration_seconds histogram"));
    EXPECT_THAT(text, HasSubstr("radiald_turn_duration_seconds_count{kind=\"turn\"} 2\n"));
    EXPECT_THAT(text, HasSubstr("radiald_turn_duration_seconds_sum{kind=\"turn\"} 2.5\n"));
    EXPECT_THAT(text,
                HasSubstr("radiald_turn_duration_seconds_bucket{kind=\"turn\",le=\"1\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("radiald_turns_running 3\n"));
    EXPECT_THAT(text, HasSubstr("radiald_turns_queued 7\n"));
    EXPECT_THAT(text, HasSubstr("radiald_turns_refused_total 1\n"));
    EXPECT_THAT(text, HasSubstr("radiald_boxes_reclaimed_total{by=\"startup\"} 2\n"));
    EXPECT_THAT(text, HasSubstr("radiald_plugin_call_duration_seconds_count{call=\"run\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("radiald_plugin_call_errors_total{call=\"kill\"} 1\n"));
    EXPECT_THAT(text, Not(HasSubstr("radiald_plugin_call_errors_total{call=\"run\"}")));
    EXPECT_THAT(text, HasSubstr("radiald_journal_errors_total{code=\"storage\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("radiald_build_info{version=\"9.9.9\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("radiald_start_time_seconds "));

    const auto j = m.json();
    EXPECT_EQ(sample(j, "radiald_turns_ended_total", {{"kind", "turn"}, {"status", "succeeded"}}),
              1);
    EXPECT_EQ(sample(j, "radiald_turns_ended_total", {{"kind", "check"}, {"status", "succeeded"}}),
              1);
    EXPECT_EQ(sample(j, "radiald_turn_duration_seconds", {{"kind", "turn"}}, "count"), 2);
    EXPECT_DOUBLE_EQ(sample(j, "radiald_turn_duration_seconds", {{"kind", "turn"}}, "sum"), 2.5);
    EXPECT_EQ(sample(j, "radiald_turn_duration_seconds", {{"kind", "check"}}, "count"), 1);
    EXPECT_EQ(sample(j, "radiald_turns_running", nlohmann::ordered_json::object()), 3);
    EXPECT_EQ(sample(j, "radiald_turns_queued", nlohmann::ordered_json::object()), 7);
    EXPECT_EQ(sample(j, "radiald_boxes_reclaimed_total", {{"by", "sweep"}}), 1);
    EXPECT_EQ(sample(j, "radiald_plugin_call_duration_seconds", {{"call", "run"}}, "count"), 1);
    EXPECT_DOUBLE_EQ(sample(j, "radiald_plugin_call_duration_seconds", {{"call", "run"}}, "sum"),
                     1.5);
    EXPECT_EQ(sample(j, "radiald_plugin_call_errors_total", {{"call", "kill"}}), 1);
    EXPECT_EQ(sample(j, "radiald_journal_errors_total", {{"code", "storage"}}), 1);
}

TEST(Metrics, AFreshRegistryHasItsZerosAndItsGenerationMovesOnlyWhenAFigureDoes) {
    daemon::Metrics m("1");
    const auto j = m.json();
    EXPECT_EQ(sample(j, "radiald_turn_duration_seconds", {{"kind", "check"}}, "count"), 0);
    EXPECT_EQ(sample(j, "radiald_boxes_reclaimed_total", {{"by", "startup"}}), 0);
    EXPECT_EQ(sample(j, "radiald_turns_running", nlohmann::ordered_json::object()), 0);
    const auto g0 = m.generation();
    m.set_turns(0, 0); // unchanged
    m.boxes_reclaimed("sweep", 0);
    EXPECT_EQ(m.generation(), g0);
    m.set_turns(1, 0);
    EXPECT_GT(m.generation(), g0);
    const auto g1 = m.generation();
    m.plugin_call("list_by_label", 1ms, true);
    EXPECT_GT(m.generation(), g1);
}

TEST(MetricsJournal, CountsEveryJournalErrorByItsCodeAndRethrowsIt) {
    test::TempDir dir("radial-metrics");
    test::FaultyJournal faulty(journal::open_sqlite_journal(dir / "journal.sqlite3"));
    daemon::Metrics m("1");
    daemon::MetricsJournal j(faulty, m);
    journal::TurnEntry e{"t1", "radial-turn-x-t1", "docker", "img", "turn.result", "{}"};
    j.add_turn(e, journal::TurnState::queued);
    EXPECT_THROW(j.add_turn(e, journal::TurnState::claimed), journal::JournalError); // duplicate
    faulty.refuse("set_terminal");
    try {
        j.set_terminal("t1", "succeeded", "{}");
        ADD_FAILURE() << "set_terminal passed";
    } catch (const journal::JournalError& err) {
        EXPECT_EQ(err.code(), journal::JournalErrc::storage);
    }
    EXPECT_EQ(j.queued().size(), 1u); // passed through
    const auto text = m.text();
    EXPECT_THAT(text, HasSubstr("radiald_journal_errors_total{code=\"storage\"} 1\n"));
    EXPECT_THAT(text, HasSubstr("radiald_journal_errors_total{code=\"duplicate_turn\"} 1\n"));
}

// submit and the daemon's spool scan both add a queued turn, whichever comes first: the loser's
// duplicate is rethrown (each caller takes it as "already queued") but is no journal error.
TEST(MetricsJournal, AQueuedTurnAddedTwiceIsNoJournalError) {
    test::TempDir dir("radial-metrics");
    auto sqlite = journal::open_sqlite_journal(dir / "journal.sqlite3");
    daemon::Metrics m("1");
    daemon::MetricsJournal j(*sqlite, m);
    journal::TurnEntry e{"t1", "radial-turn-x-t1", "docker", "img", "turn.result", "{}"};
    j.add_turn(e, journal::TurnState::queued);
    try {
        j.add_turn(e, journal::TurnState::queued);
        ADD_FAILURE() << "the second add passed";
    } catch (const journal::JournalError& err) {
        EXPECT_EQ(err.code(), journal::JournalErrc::duplicate_turn);
    }
    EXPECT_THAT(m.text(), Not(HasSubstr("radiald_journal_errors_total{code=\"duplicate_turn\"}")));
}

TEST(MetricsSnapshot, IsWrittenWhenAFigureChangesAndReadsBackAsTheRegistrysJson) {
    test::TempDir dir("radial-metrics");
    daemon::Metrics m("1");
    EXPECT_FALSE(daemon::read_metrics_snapshot(dir.path())); // none yet
    daemon::MetricsSnapshotWriter w(dir.path(), m, std::chrono::hours(1));
    w.tick();
    auto snap = daemon::read_metrics_snapshot(dir.path());
    ASSERT_TRUE(snap);
    EXPECT_EQ((*snap)["pid"], ::getpid());
    EXPECT_TRUE((*snap)["writtenAt"].is_string());
    EXPECT_EQ((*snap)["metrics"], m.json());

    // Nothing changed and the period has not passed: not written again.
    std::filesystem::remove(daemon::metrics_snapshot_path(dir.path()));
    w.tick();
    EXPECT_FALSE(daemon::read_metrics_snapshot(dir.path()));
    m.turn_ended("check", "failed", 1s);
    w.tick();
    snap = daemon::read_metrics_snapshot(dir.path());
    ASSERT_TRUE(snap);
    EXPECT_EQ((*snap)["metrics"], m.json());
    EXPECT_EQ(sample((*snap)["metrics"], "radiald_turns_ended_total",
                     {{"kind", "check"}, {"status", "failed"}}),
              1);
    // No temporary file is left beside it.
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path()))
        ++files;
    EXPECT_EQ(files, 1u);
}

// The journal's outcomes come first on a nearly full disk: below the reserve no snapshot is
// written, not even its temporary file (docs/design.md §12.6).
TEST(MetricsSnapshot, IsNotWrittenWhileTheStateFileSystemHasLessThanTheReserveFree) {
    test::TempDir dir("radial-metrics");
    daemon::Metrics m("1");
    struct statvfs fs {};
    ASSERT_EQ(::statvfs(dir.path().c_str(), &fs), 0);
    const std::uint64_t free_bytes = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
    daemon::MetricsSnapshotWriter over(dir.path(), m, std::chrono::hours(1),
                                       free_bytes + (1u << 30));
    over.tick(true);
    EXPECT_FALSE(daemon::read_metrics_snapshot(dir.path()));
    EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "no temporary file either";
    daemon::MetricsSnapshotWriter under(dir.path(), m, std::chrono::hours(1), 0);
    under.tick(true);
    EXPECT_TRUE(daemon::read_metrics_snapshot(dir.path()));
}

} // namespace
} // namespace radial
