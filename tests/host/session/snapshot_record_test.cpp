// Snapshot names and policy generations (host/session/snapshot_record.h): the same inputs give the
// same content address; a change in any one gives another; records round-trip.
#include "session/snapshot_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../support/temp_dir.h"
#include "turn/turn_request.h"

namespace radial::session {
namespace {

std::vector<ManifestStep> steps(const std::string& turn) {
    return {{turn, {"sh", "-c", "echo v1 > /opt/cache/tool"}, "/work", 0, {}, {}}};
}

TEST(SnapshotRecordTest, TheSameInputsNameOneSnapshotAndTheTurnIdsDoNotCount) {
    const auto a = snapshot_tag("sha256:aa", steps("t1"), "sha256:p1");
    EXPECT_EQ(a.size(), 64u);
    EXPECT_EQ(a, snapshot_tag("sha256:aa", steps("t1"), "sha256:p1"));
    EXPECT_EQ(a, snapshot_tag("sha256:aa", steps("another-turn"), "sha256:p1"));
}

TEST(SnapshotRecordTest, EachInputChangesTheName) {
    const auto a = snapshot_tag("sha256:aa", steps("t"), "sha256:p1");
    EXPECT_NE(a, snapshot_tag("sha256:ab", steps("t"), "sha256:p1"));
    EXPECT_NE(a, snapshot_tag("sha256:aa", steps("t"), "sha256:p2"));
    auto more = steps("t");
    more.push_back({"t2", {"true"}, "/work", 0, {}, {}});
    EXPECT_NE(a, snapshot_tag("sha256:aa", more, "sha256:p1"));
    auto failed = steps("t");
    failed[0].exit_code = 1;
    EXPECT_NE(a, snapshot_tag("sha256:aa", failed, "sha256:p1"));
    auto with_env = steps("t");
    with_env[0].env = {"V=two"};
    EXPECT_NE(a, snapshot_tag("sha256:aa", with_env, "sha256:p1"));
    auto elsewhere = steps("t");
    elsewhere[0].workdir = "/";
    EXPECT_NE(a, snapshot_tag("sha256:aa", elsewhere, "sha256:p1"));
    // argv words are kept apart: ["a b"] is not ["a", "b"]
    EXPECT_NE(snapshot_tag("b", {{"t", {"a b"}, "", 0, {}, {}}}, "p"),
              snapshot_tag("b", {{"t", {"a", "b"}, "", 0, {}, {}}}, "p"));
}

// Two sessions whose turns ran one argv fetching one name, with the ceiling mapping that name to
// two servers, made two environments: neither may be served the other's snapshot.
TEST(SnapshotRecordTest, WhatAStepCouldReachThroughItsBrokerChangesTheName) {
    egress::EgressCeiling a;
    a.allow = {egress::parse_allow_rule("pkg.test:8099")};
    a.allow_ranges = {egress::parse_range("127.0.0.1/32")};
    a.hosts = {{"pkg.test", "127.0.0.1"}};
    auto b = a;
    b.allow_ranges = {egress::parse_range("127.0.0.2/32")};
    b.hosts = {{"pkg.test", "127.0.0.2"}};

    const auto from_a = manifest_egress({"pkg.test:8099"}, a);
    const auto from_b = manifest_egress({"pkg.test:8099"}, b);
    ASSERT_EQ(from_a.size(), 2u);
    EXPECT_EQ(from_a[0], "pkg.test:8099");
    EXPECT_THAT(from_a[1], ::testing::StartsWith("ceiling sha256:"));
    EXPECT_NE(from_a, from_b);
    auto step_a = steps("t"), step_b = steps("t");
    step_a[0].egress = from_a;
    step_b[0].egress = from_b;
    EXPECT_NE(snapshot_tag("sha256:aa", step_a, "sha256:p1"),
              snapshot_tag("sha256:aa", step_b, "sha256:p1"));
    // Another destination, or none, is another environment too.
    auto other = steps("t");
    other[0].egress = manifest_egress({"mirror.test:8099"}, a);
    EXPECT_NE(snapshot_tag("sha256:aa", step_a, "sha256:p1"),
              snapshot_tag("sha256:aa", other, "sha256:p1"));
    EXPECT_NE(snapshot_tag("sha256:aa", step_a, "sha256:p1"),
              snapshot_tag("sha256:aa", steps("t"), "sha256:p1"));

    // One spelling, one order: the same rules name the same environment.
    EXPECT_EQ(manifest_egress({"PKG.test:8099", "pkg.test.:8099"}, a), from_a);
    // What cannot redirect a name (quotas, the allow patterns) does not count.
    auto bigger = a;
    bigger.max_bytes_in *= 2;
    bigger.allow.push_back(egress::parse_allow_rule("other.test:443"));
    EXPECT_EQ(manifest_egress({"pkg.test:8099"}, bigger), from_a);
    EXPECT_TRUE(manifest_egress({}, a).empty());
}

// A step that had no egress is digested as before egress was kept: the snapshots sessions took
// then keep their names. (The digest of this step, computed by hand from the canonical JSON.)
TEST(SnapshotRecordTest, AStepWithoutEgressKeepsTheNameItHadBeforeEgressCounted) {
    EXPECT_EQ(snapshot_tag("sha256:aa", steps("t"), "sha256:p1"),
              "78bc5eb07524cca888e00467022ed7e902e6940e0698161444a76c6c5af0a9f2");
}

TEST(SnapshotRecordTest, APolicyGenerationCountsThePolicyNotWhatNamesOrFeedsTheBox) {
    ContainerSpec s;
    s.label = "radial-session-x-1";
    s.image = "sha256:aa";
    s.user = "2000000001:2000000001";
    s.env = {{"A", "1", false}};
    s.mounts = {{"/srv/ws1", "/work", false}};
    s.memory_bytes = 1 << 30;
    config::HostConfig cfg;
    cfg.runtime_section = {"run.docker", {{"pull", RADIAL_CONFIG_STRING, "never", 0, 0, {}}}};
    const auto p = policy_generation(s, cfg, "docker", "/srv/ws", "workspace-write");
    EXPECT_EQ(p.rfind("sha256:", 0), 0u);
    ContainerSpec other = s;
    other.label = "radial-session-x-2";
    other.image = "sha256:bb";
    other.user = "2000000002:2000000002";
    other.env = {{"A", "2", false}};
    other.mounts = {{"/srv/ws2", "/work", false}};
    EXPECT_EQ(p, policy_generation(other, cfg, "docker", "/srv/ws", "workspace-write"));
    EXPECT_NE(p, policy_generation(s, cfg, "docker", "/srv/ws", "read-only"));
    EXPECT_NE(p, policy_generation(s, cfg, "sandbox", "/srv/ws", "workspace-write"));
    ContainerSpec bigger = s;
    bigger.memory_bytes = 2u << 30;
    EXPECT_NE(p, policy_generation(bigger, cfg, "docker", "/srv/ws", "workspace-write"));
    ContainerSpec networked = s;
    networked.network = "host";
    EXPECT_NE(p, policy_generation(networked, cfg, "docker", "/srv/ws", "workspace-write"));
    ContainerSpec read_only_ws = s;
    read_only_ws.mounts[0].read_only = true;
    EXPECT_NE(p, policy_generation(read_only_ws, cfg, "docker", "/srv/ws", "workspace-write"));
    EXPECT_NE(p, policy_generation(s, cfg, "docker", "/srv/other-ws", "workspace-write"));
    // What shapes the box beyond the spec: its user, its home, its OCI runtime (the runtime's own
    // table, every key of it), a namespaced root's ids.
    auto changed = [&](auto&& change) {
        config::HostConfig c = cfg;
        change(c);
        return policy_generation(s, c, "docker", "/srv/ws", "workspace-write");
    };
    EXPECT_EQ(p, changed([](config::HostConfig&) {}));
    EXPECT_NE(p, changed([](config::HostConfig& c) { c.user = "workspace-owner"; }));
    EXPECT_NE(p, changed([](config::HostConfig& c) { c.home_size_bytes = 64u << 20; }));
    EXPECT_NE(p, changed([](config::HostConfig& c) { c.codex_auth = true; }));
    EXPECT_NE(p, changed([](config::HostConfig& c) { c.box_root = {{100000, 65536}}; }));
    EXPECT_NE(p, changed([](config::HostConfig& c) {
                  c.runtime_section.entries.push_back(
                      {"ociRuntime", RADIAL_CONFIG_STRING, "runsc", 0, 0, {}});
              }));
    EXPECT_NE(p, changed([](config::HostConfig& c) {
                  c.runtime_section.entries[0].string_value = "missing";
              }));
    EXPECT_NE(p, changed([](config::HostConfig& c) { c.runtime_section.section = "run.other"; }));
}

TEST(SnapshotRecordTest, ARecordRoundTripsAndIsFoundByTagOrImageOnly) {
    test::TempDir dir("radial-snap");
    config::HostConfig cfg;
    cfg.instance_id = "Ab_C-9";
    SnapshotRecord r;
    r.tag = snapshot_tag("sha256:aa", steps("t"), "sha256:p");
    r.image = snapshot_image(cfg, r.tag);
    EXPECT_EQ(r.image, "radial-snapshot-ab-c-9:" + r.tag);
    r.digest = "sha256:dd";
    r.base = "sha256:aa";
    r.policy = "sha256:p";
    r.manifest = steps("t");
    r.manifest[0].egress = {"pkg.test:8099", "ceiling sha256:00"};
    r.session = "s1";
    r.created_at_ms = 42;
    save_snapshot(dir.path(), r);
    for (const auto& name : {r.tag, r.image}) {
        auto got = find_snapshot(dir.path(), name);
        ASSERT_TRUE(got) << name;
        EXPECT_EQ(got->digest, "sha256:dd");
        EXPECT_EQ(got->manifest, r.manifest);
        EXPECT_EQ(got->created_at_ms, 42);
    }
    EXPECT_FALSE(find_snapshot(dir.path(), "radial-snapshot-other:" + r.tag));
    EXPECT_FALSE(find_snapshot(dir.path(), std::string(64, '0')));
    EXPECT_THROW(find_snapshot(dir.path(), "../../etc/passwd"), turn::RequestError);
    EXPECT_EQ(list_snapshots(dir.path()).size(), 1u);
    forget_snapshot(dir.path(), r.tag);
    EXPECT_TRUE(list_snapshots(dir.path()).empty());
}

} // namespace
} // namespace radial::session
