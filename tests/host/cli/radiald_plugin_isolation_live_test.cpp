// run.pluginIsolation = "process" with the real docker.so, the real engine and the real radiald
// (docs/design.md §5.13): a turn, its socket, its timeout and a session's execs all go through
// the plugin host process as they go in-process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "session_fixture.h"

namespace radial {
namespace {
using test::Session;
using ::testing::HasSubstr;

const char* const kIsolated = "pluginIsolation = \"process\"\n";

TEST(PluginIsolationLive, ADockerTurnPostsARecordThroughItsSocket) {
    test::RadialdSetup setup(kIsolated);
    auto t = setup.turn(
        {}, {"sh", "-c",
             "echo out; " + test::box_post_record_sh(R"({"type":"result","payload":{"n":7}})") +
                 "; exit 3"});
    EXPECT_EQ(t.result.exit_code, 3) << t.result.err;
    EXPECT_EQ(t.result.out, "out\n201\n") << t.result.err;
    auto j = setup.records(t.record["turnId"]);
    ASSERT_TRUE(j.is_object()) << t.record.dump();
    ASSERT_EQ(j["records"].size(), 1u) << j.dump();
    EXPECT_EQ(j["records"][0]["payload"]["n"], 7);
}

TEST(PluginIsolationLive, ATimeoutEndsTheBoxThroughThePluginHost) {
    test::RadialdSetup setup(kIsolated + std::string("stopGrace = \"0s\"\n"));
    auto t = setup.turn({"--timeout", "2s"}, {"sleep", "120"});
    EXPECT_EQ(t.result.exit_code, 124) << t.result.err;
    EXPECT_EQ(t.record["status"], "timed_out") << t.record.dump();
    auto left = test::run_process(
        {"docker", "ps", "-aq", "--filter", "name=" + t.record.value("label", "none")});
    EXPECT_EQ(left.out, "") << "the timed-out box is still there";
}

TEST(PluginIsolationLive, ASessionsExecsGoThroughThePluginHost) {
    test::RadialdSetup setup(kIsolated);
    Session s(setup, {});
    ASSERT_EQ(s.created.exit_code, 0) << s.created.err;
    auto first = setup.turn({"--session", s.id}, {"sh", "-c", "echo v1 > /tmp/kept"});
    ASSERT_EQ(first.result.exit_code, 0) << first.result.err;
    auto second = setup.turn({"--session", s.id}, {"cat", "/tmp/kept"});
    EXPECT_EQ(second.result.exit_code, 0) << second.result.err;
    EXPECT_EQ(second.result.out, "v1\n");
    EXPECT_EQ(second.record["session"], s.id);
}

} // namespace
} // namespace radial
