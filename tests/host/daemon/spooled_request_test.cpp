// A spooled request (docs/design.md §12.1): its JSON round trip, its journal entry (secret names
// only) and the box it becomes, mounts and workdir included.
#include "daemon/spooled_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../support/temp_dir.h"

namespace radial::daemon {
namespace {
using ::testing::HasSubstr;

SpooledRequest full() {
    SpooledRequest r;
    r.turn_id = "t-1";
    r.image = "img";
    r.argv = {"sh", "-c", "it's \"quoted\" $X \\ ✓"};
    r.workdir = "/src";
    r.workspace = "/tmp";
    r.env = {{"A", "1", false}, {"B", "two words", false}};
    r.secrets = {"GH_TOKEN"};
    r.mounts = {{"/tmp", "/cache", true}, {"/var/tmp", "/scratch", false}};
    r.timeout_ms = 90'000;
    r.record_type = "review";
    r.mode = "read-only";
    r.workspace_mount = "same-path";
    return r;
}

config::HostConfig cfg() {
    config::HostConfig c;
    c.instance_id = "inst1";
    c.container_runtime = "docker";
    return c;
}

TEST(SpooledRequest, JsonRoundTripsEveryField) {
    EXPECT_EQ(spooled_request_from_json(to_json(full())), full());
    SpooledRequest minimal;
    minimal.turn_id = "m";
    minimal.image = "img";
    minimal.argv = {"true"};
    EXPECT_EQ(spooled_request_from_json(to_json(minimal)), minimal);
}

TEST(SpooledRequest, JsonThatIsNotARequestIsRefusedNamingTheField) {
    try {
        spooled_request_from_json(R"({"turnId":"t","image":"i","recordType":"r","argv":[1]})");
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), "field 'argv' must be an array of strings");
    }
}

TEST(SpooledRequest, TheJournalEntryCarriesSecretNamesAndNoValues) {
    auto e = queued_entry(full(), cfg());
    EXPECT_EQ(e.turn_id, "t-1");
    EXPECT_EQ(e.label, "radial-turn-inst1-t-1");
    EXPECT_EQ(e.runtime, "docker");
    EXPECT_EQ(e.record_type, "review");
    auto j = nlohmann::json::parse(e.request_json);
    EXPECT_EQ(j["env"],
              nlohmann::json::parse(R"([{"name":"A","value":"1"},{"name":"B","value":"two words"},
                                                   {"name":"GH_TOKEN","secret":true}])"));
    EXPECT_EQ(j["mounts"][0]["target"], "/cache");
    EXPECT_EQ(j["workdir"], "/src");
}

TEST(SpooledRequest, TheBoxGetsMountsWorkdirAndSecretsMarked) {
    auto t = to_turn_request(
        full(), [](const std::string&) { return std::optional<std::string>("tok-abcdef"); });
    auto spec = turn::build_container_spec(t, cfg());
    EXPECT_EQ(spec.label, "radial-turn-inst1-t-1");
    EXPECT_EQ(spec.workdir, "/src"); // the request's workdir wins over the workspace's /work
    ASSERT_EQ(spec.mounts.size(), 3u);
    // mode read-only and workspaceMount same-path reach the box (docs/design.md §7.6).
    EXPECT_EQ(spec.mounts[0], (Mount{"/tmp", "/tmp", true}));
    EXPECT_EQ(spec.read_only_rootfs, Tristate::yes);
    EXPECT_EQ(spec.mounts[1], (Mount{"/tmp", "/cache", true}));
    EXPECT_EQ(spec.mounts[2], (Mount{"/var/tmp", "/scratch", false}));
    EXPECT_EQ(spec.env.back(), (EnvVar{"GH_TOKEN", "tok-abcdef", true}));
    EXPECT_EQ(spec.timeout_ms, 90'000u);
}

TEST(SpooledRequest, AMountWhoseSourceVanishedIsRefusedWhenTheBoxIsBuilt) {
    SpooledRequest r = full();
    r.mounts = {{"/nonexistent-radial-src", "/x", false}};
    auto t = to_turn_request(
        r, [](const std::string&) { return std::optional<std::string>("tok-abcdef"); });
    try {
        turn::build_container_spec(t, cfg());
        FAIL() << "no error";
    } catch (const turn::RequestError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "mounts[0]: source '/nonexistent-radial-src' does not exist; "
                  "create it before the turn runs");
    }
}

} // namespace
} // namespace radial::daemon
