// The daemon's metrics against the real engine (docs/design.md §12.6): a `radiald run` serving
// run.metrics on a unix socket in the test's own directory runs a turn that succeeds and one that
// fails; the scrape counts one of each, two durations, two plugin `run` calls and nothing
// running, and `radiald status --json` shows the same figures from the daemon's snapshot. A box a
// SIGKILLed daemon left is counted reclaimed by the next start's reconciliation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "daemon_harness.h"
#include "docker_boxes.h"

namespace radial {
namespace {
using namespace std::chrono_literals;
using test::DaemonProcess;
using test::DaemonSetup;

// GET /metrics over the unix socket `path`; "" when it did not answer 200.
std::string scrape(const std::string& path) {
    auto r = test::run_process(
        {"curl", "-sf", "--max-time", "20", "--unix-socket", path, "http://localhost/metrics"}, {},
        30s);
    return r.exit_code == 0 ? r.out : std::string();
}

// The value of the sample `series` (name and labels, as the text format writes them); -1 when
// the text has no such line.
double value_of(const std::string& text, const std::string& series) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    return -1;
}

// The sample of `family` whose labels are exactly `labels` in a status --json "metrics" object.
double snapshot_value(const nlohmann::json& metrics, const std::string& family,
                      const nlohmann::json& labels, const char* field = "value") {
    if (!metrics.contains(family)) return -1;
    for (const auto& s : metrics[family])
        if (s["labels"] == labels) return s[field].get<double>();
    return -1;
}

TEST(MetricsLive, TheEndpointAndStatusCountASucceededAndAFailedTurnAlike) {
    const std::string inst = test::unique_instance_id("m");
    test::BoxCleanup cleanup{"radial-turn-" + inst + "-"};
    test::TempDir sock_dir("radial-msock");
    const std::string sock = sock_dir / "metrics.sock";
    DaemonSetup s("instanceId = \"" + inst + "\"\nmetrics = \"unix:" + sock + "\"\n");
    DaemonProcess d(s);
    ASSERT_TRUE(test::wait_until([&] { return !scrape(sock).empty(); }, 120s)) << d.log();
    const std::string before = scrape(sock);
    EXPECT_EQ(value_of(before, "radiald_turns_running"), 0) << before;
    EXPECT_EQ(value_of(before, "radiald_turn_duration_seconds_count{kind=\"turn\"}"), 0);

    const std::string ok = s.submit(test::shell_turn("echo fine"));
    const std::string bad = s.submit(test::shell_turn("echo broken >&2; exit 3"));
    ASSERT_TRUE(s.wait_terminal({ok, bad}, 240s)) << d.log();
    EXPECT_EQ(s.terminal(ok)["status"], "succeeded");
    EXPECT_EQ(s.terminal(bad)["status"], "failed");

    // The daemon counts a turn once its terminal record is journaled: await the figures.
    std::string text;
    ASSERT_TRUE(test::wait_until(
        [&] {
            text = scrape(sock);
            return value_of(text, "radiald_turn_duration_seconds_count{kind=\"turn\"}") == 2 &&
                   value_of(text, "radiald_turns_running") == 0;
        },
        120s))
        << text << d.log();
    EXPECT_EQ(value_of(text, "radiald_turns_ended_total{kind=\"turn\",status=\"succeeded\"}"), 1)
        << text;
    EXPECT_EQ(value_of(text, "radiald_turns_ended_total{kind=\"turn\",status=\"failed\"}"), 1);
    EXPECT_EQ(value_of(text, "radiald_turn_duration_seconds_count{kind=\"check\"}"), 0);
    EXPECT_GT(value_of(text, "radiald_turn_duration_seconds_sum{kind=\"turn\"}"), 0);
    EXPECT_EQ(value_of(text, "radiald_plugin_call_duration_seconds_count{call=\"run\"}"), 2);
    EXPECT_GT(value_of(text, "radiald_plugin_call_duration_seconds_sum{call=\"run\"}"), 0);
    EXPECT_EQ(value_of(text, "radiald_plugin_call_errors_total{call=\"run\"}"), -1); // none
    EXPECT_EQ(value_of(text, "radiald_turns_queued"), 0);
    EXPECT_EQ(value_of(text, "radiald_turns_refused_total"), 0);

    // The same figures through status, from the daemon's snapshot.
    nlohmann::json st;
    ASSERT_TRUE(test::wait_until(
        [&] {
            st = s.status();
            return st["metrics"].is_object() &&
                   snapshot_value(st["metrics"]["metrics"], "radiald_turn_duration_seconds",
                                  {{"kind", "turn"}}, "count") == 2;
        },
        120s))
        << st.dump(2);
    const auto& m = st["metrics"]["metrics"];
    EXPECT_EQ(st["daemon"]["running"], true);
    EXPECT_EQ(st["metrics"]["pid"], d.pid());
    EXPECT_GE(st["metrics"]["ageSeconds"].get<double>(), 0);
    EXPECT_EQ(
        snapshot_value(m, "radiald_turns_ended_total", {{"kind", "turn"}, {"status", "succeeded"}}),
        1);
    EXPECT_EQ(
        snapshot_value(m, "radiald_turns_ended_total", {{"kind", "turn"}, {"status", "failed"}}),
        1);
    EXPECT_EQ(snapshot_value(m, "radiald_turns_running", nlohmann::json::object()), 0);
    EXPECT_EQ(snapshot_value(m, "radiald_plugin_call_duration_seconds", {{"call", "run"}}, "count"),
              2);
    auto human = test::run_process({RADIALD_PATH, "status", "--config", s.config()}, {}, 30s);
    EXPECT_THAT(human.out, testing::HasSubstr("turn succeeded 1"));
    EXPECT_THAT(human.out, testing::HasSubstr("turn failed 1"));

    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(120s), 0) << d.log();
    EXPECT_FALSE(std::filesystem::exists(sock)); // the endpoint's socket goes with the daemon
    // No daemon: status says so and shows no figures of the one that stopped.
    st = s.status();
    EXPECT_EQ(st["daemon"]["running"], false);
    EXPECT_TRUE(st["metrics"].is_null()) << st.dump(2);
}

TEST(MetricsLive, ABoxLeftByAKilledDaemonCountsAsReclaimedAtTheNextStart) {
    const std::string inst = test::unique_instance_id("m");
    const std::string prefix = "radial-turn-" + inst + "-";
    test::BoxCleanup cleanup{prefix};
    test::TempDir sock_dir("radial-msock");
    const std::string sock = sock_dir / "metrics.sock";
    DaemonSetup s("instanceId = \"" + inst + "\"\nmetrics = \"unix:" + sock + "\"\n");
    const std::string id = s.submit(test::shell_turn("sleep 600"));
    {
        DaemonProcess d(s);
        ASSERT_TRUE(
            test::wait_until([&] { return test::box_state(prefix + id) == "running"; }, 120s))
            << d.log();
        std::string text;
        ASSERT_TRUE(test::wait_until(
            [&] {
                text = scrape(sock);
                return value_of(text, "radiald_turns_running") == 1;
            },
            60s))
            << text;
        d.crash();
    }
    ASSERT_EQ(test::box_state(prefix + id), "running");
    // The killed daemon's socket is still there, stale: the next daemon replaces it.
    DaemonProcess again(s);
    std::string text;
    ASSERT_TRUE(test::wait_until(
        [&] {
            text = scrape(sock);
            return value_of(text, "radiald_boxes_reclaimed_total{by=\"startup\"}") == 1;
        },
        120s))
        << text << again.log();
    EXPECT_EQ(value_of(text, "radiald_boxes_reclaimed_total{by=\"sweep\"}"), 0);
    EXPECT_EQ(value_of(text, "radiald_turns_running"), 0);
    EXPECT_EQ(test::box_state(prefix + id), "gone");
}

} // namespace
} // namespace radial
