// A spooled request (docs/design.md §12.1): its JSON round trip, its journal entry (secret names
// only) and the box it becomes, mounts and workdir included.
#include "daemon/spooled_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../../support/temp_dir.h"

namespace radial::daemon {
namespace {
using ::testing::HasSubstr;

// A directory of this test program's own: not /tmp itself, which holds the build tree of a
// checkout kept under /tmp, and with it the program's own file, which no request may mount.
std::string own_dir(const std::string& name) {
    static const test::TempDir dir("radial-spooled");
    std::filesystem::create_directories(dir / name);
    return dir / name;
}

SpooledRequest full() {
    SpooledRequest r;
    r.turn_id = "t-1";
    r.image = "img";
    r.argv = {"sh", "-c", "it's \"quoted\" $X \\ ✓"};
    r.workdir = "/src";
    r.workspace = own_dir("ws");
    r.env = {{"A", "1", false}, {"B", "two words", false}};
    r.secrets = {"GH_TOKEN"};
    r.mounts = {{own_dir("cache"), "/cache", true}, {own_dir("scratch"), "/scratch", false}};
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
    EXPECT_EQ(turn::request_from_json(turn::request_to_json(full())), full());
    SpooledRequest minimal;
    minimal.turn_id = "m";
    minimal.image = "img";
    minimal.argv = {"true"};
    EXPECT_EQ(turn::request_from_json(turn::request_to_json(minimal)), minimal);
}

TEST(SpooledRequest, JsonThatIsNotARequestIsRefusedNamingTheField) {
    try {
        turn::request_from_json(R"({"turnId":"t","image":"i","recordType":"r","argv":[1]})");
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
    EXPECT_EQ(e.kind, "turn");
    // The journal keeps the spool's shape (one serialised shape, docs/design.md §3.1).
    auto j = nlohmann::json::parse(e.request_json);
    EXPECT_EQ(j["version"], turn::kRequestJsonVersion);
    EXPECT_EQ(j["kind"], "turn");
    EXPECT_EQ(j["env"], nlohmann::json::parse(R"({"A":"1","B":"two words"})"));
    EXPECT_EQ(j["secrets"], nlohmann::json::parse(R"(["GH_TOKEN"])"));
    EXPECT_EQ(j["mounts"][0]["target"], "/cache");
    EXPECT_EQ(j["workdir"], "/src");
}

TEST(SpooledRequest, AResolvedSecretIsWrittenByNameOnly) {
    auto t = to_turn_request(
        full(), [](const std::string&) { return std::optional<std::string>("tok-abcdef"); });
    ASSERT_EQ(t.env.back(), (EnvVar{"GH_TOKEN", "tok-abcdef", true}));
    for (const auto& text : {turn::request_to_json(t), turn::request_journal_json(t)}) {
        EXPECT_THAT(text, ::testing::Not(HasSubstr("tok-abcdef")));
        EXPECT_EQ(nlohmann::json::parse(text)["secrets"], nlohmann::json::parse(R"(["GH_TOKEN"])"));
    }
}

// A spool file exactly as the previous release wrote it (no "version", no "kind"): still read,
// as a turn.
TEST(SpooledRequest, AVersionOneSpoolFileIsReadAsATurn) {
    const char* v1 = R"({
  "turnId": "old-1",
  "image": "radial/busybox:latest",
  "argv": ["sh", "-c", "echo hi"],
  "workspace": "/tmp",
  "env": {"CI": "1"},
  "secrets": ["GH_TOKEN"],
  "mounts": [{"source": "/var/tmp", "target": "/cache", "readOnly": true}],
  "timeoutMs": 5000,
  "recordType": "result"
}
)";
    auto r = turn::request_from_json(v1);
    EXPECT_EQ(r.kind, turn::RequestKind::turn);
    EXPECT_EQ(r.turn_id, "old-1");
    EXPECT_EQ(r.argv, (std::vector<std::string>{"sh", "-c", "echo hi"}));
    EXPECT_EQ(r.env, (std::vector<EnvVar>{{"CI", "1", false}}));
    EXPECT_EQ(r.secrets, (std::vector<std::string>{"GH_TOKEN"}));
    EXPECT_EQ(r.mounts, (std::vector<Mount>{{"/var/tmp", "/cache", true}}));
    EXPECT_EQ(r.timeout_ms, 5000u);
    EXPECT_EQ(queued_entry(r, cfg()).label, "radial-turn-inst1-old-1");
}

TEST(SpooledRequest, ACheckRoundTripsWithItsKindAndLabel) {
    SpooledRequest r;
    r.turn_id = "c-1";
    r.image = "img";
    r.argv = {"make", "test"};
    r.kind = turn::RequestKind::check;
    auto text = turn::request_to_json(r);
    EXPECT_EQ(nlohmann::json::parse(text)["kind"], "check");
    EXPECT_EQ(turn::request_from_json(text), r);
    auto e = queued_entry(r, cfg());
    EXPECT_EQ(e.kind, "check");
    EXPECT_EQ(e.label, "radial-check-inst1-c-1");
    EXPECT_EQ(turn::build_container_spec(r, cfg()).label, "radial-check-inst1-c-1");
}

TEST(SpooledRequest, ANewerVersionOrAnUnknownKindIsRefusedNamingTheField) {
    auto refused = [](const std::string& text) {
        try {
            turn::request_from_json(text);
        } catch (const turn::RequestError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_THAT(refused(R"({"version":3,"kind":"turn","turnId":"t","image":"i","recordType":"r"})"),
                HasSubstr("field 'version' is 3, but this radiald reads request versions up to 2"));
    EXPECT_EQ(refused(R"({"version":2,"kind":"lint","turnId":"t","image":"i","recordType":"r"})"),
              "field 'kind' must be \"turn\" or \"check\"");
}

TEST(SpooledRequest, ACheckThatNamesASecretIsRefusedWhenTheBoxIsBuilt) {
    SpooledRequest r = full();
    r.kind = turn::RequestKind::check;
    try {
        turn::build_container_spec(r, cfg());
        FAIL() << "no error";
    } catch (const turn::RequestError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "a check carries no secrets, but this one names 'GH_TOKEN'; remove it from the "
                  "check's secrets (a command that needs a secret is a turn, not a check)");
    }
}

TEST(SpooledRequest, TheBoxGetsMountsWorkdirAndSecretsMarked) {
    auto t = to_turn_request(
        full(), [](const std::string&) { return std::optional<std::string>("tok-abcdef"); });
    auto spec = turn::build_container_spec(t, cfg());
    EXPECT_EQ(spec.label, "radial-turn-inst1-t-1");
    EXPECT_EQ(spec.workdir, "/src"); // the request's workdir wins over the workspace's /work
    ASSERT_EQ(spec.mounts.size(), 3u);
    // mode read-only and workspaceMount same-path reach the box (docs/design.md §7.6).
    EXPECT_EQ(spec.mounts[0], (Mount{own_dir("ws"), own_dir("ws"), true}));
    EXPECT_EQ(spec.read_only_rootfs, Tristate::yes);
    EXPECT_EQ(spec.mounts[1], (Mount{own_dir("cache"), "/cache", true}));
    EXPECT_EQ(spec.mounts[2], (Mount{own_dir("scratch"), "/scratch", false}));
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
