// Unit tests of the swarm runtime's spec mapping and dispositions (plugins/swarm/service_spec.h):
// what each ContainerSpec field becomes in the service spec, that a secret value appears nowhere in
// it, and that what swarm cannot express is said, never dropped. No engine.
#include "service_spec.h"

#include <gtest/gtest.h>
#include <radial/support/cli_capture.h>

#include <chrono>
#include <map>

#include "../../support/temp_dir.h"

namespace radial::swarm {
namespace {

using nlohmann::json;

ContainerSpec base_spec() {
    ContainerSpec s;
    s.label = "radial-turn-abc-1";
    s.image = "radial/busybox:latest";
    s.argv = {"sh", "-c", "echo hi"};
    return s;
}

std::map<std::uint32_t, radial::plugin::Disposition> by_field(
    const std::vector<radial::plugin::Disposition>& ds) {
    std::map<std::uint32_t, radial::plugin::Disposition> m;
    for (const auto& d : ds)
        EXPECT_TRUE(m.emplace(d.field, d).second) << "two dispositions for " << d.field;
    return m;
}

TEST(ServiceSpec, AOneTaskJobWithTheHardenedDefaults) {
    SwarmSettings settings;
    settings.cpus_milli = 1500;
    json j = service_spec(base_spec(), settings, "sha256:abc", {}, {}, false);
    EXPECT_EQ(j["Labels"]["radial.label"], "radial-turn-abc-1");
    EXPECT_EQ(j["Mode"],
              json::parse(R"({"ReplicatedJob":{"MaxConcurrent":1,"TotalCompletions":1}})"));
    const json& t = j["TaskTemplate"];
    EXPECT_EQ(t["RestartPolicy"]["Condition"], "none");
    EXPECT_EQ(t["LogDriver"]["Name"], "local");
    EXPECT_EQ(t["LogDriver"]["Options"]["max-size"], std::to_string(256u << 20));
    EXPECT_EQ(t["LogDriver"]["Options"]["compress"], "false");
    EXPECT_FALSE(t.contains("Networks")) << "no network asked: the task gets loopback only";
    const json& c = t["ContainerSpec"];
    EXPECT_EQ(c["Image"], "sha256:abc");
    EXPECT_EQ(c["Args"], json::array({"sh", "-c", "echo hi"}));
    EXPECT_FALSE(c.contains("Command")) << "without secrets the image's entrypoint stays";
    EXPECT_EQ(c["User"], "65534:65534");
    EXPECT_EQ(c["ReadOnly"], true);
    EXPECT_EQ(c["Init"], true);
    EXPECT_EQ(c["CapabilityDrop"], json::array({"ALL"}));
    EXPECT_EQ(c["Labels"]["radial.label"], "radial-turn-abc-1");
    EXPECT_EQ(c["HealthCheck"]["Test"], json::array({"NONE"})) << "no image health check runs";
    EXPECT_EQ(t["Resources"]["Limits"]["MemoryBytes"], 2ull << 30);
    EXPECT_EQ(t["Resources"]["Limits"]["NanoCPUs"], 1'500'000'000);
    EXPECT_EQ(t["Resources"]["Limits"]["Pids"], 256);
    EXPECT_FALSE(t["Resources"].contains("Reservations"));
    // A read-only root gets a writable /tmp, as under the docker runtime.
    ASSERT_EQ(c["Mounts"].size(), 1u);
    EXPECT_EQ(c["Mounts"][0]["Type"], "tmpfs");
    EXPECT_EQ(c["Mounts"][0]["Target"], "/tmp");
}

TEST(ServiceSpec, SpecFieldsOverrideTheDefaults) {
    ContainerSpec s = base_spec();
    s.user = "1000:1000";
    s.memory_bytes = 64u << 20;
    s.cpus_milli = 500;
    s.pids_limit = 32;
    s.read_only_rootfs = Tristate::no;
    s.workdir = "/work";
    s.mounts = {{"/srv/ws", "/work", false}, {"/srv/ro", "/ro", true}};
    s.tmpfs = {{"/scratch", 1u << 20}, {"/cache", 0}};
    s.extra_hosts = {"db.internal:10.0.0.7"};
    s.network = "turns-overlay";
    json j = service_spec(s, SwarmSettings{}, "sha256:abc", {}, {}, false);
    const json& t = j["TaskTemplate"];
    const json& c = t["ContainerSpec"];
    EXPECT_EQ(c["User"], "1000:1000");
    EXPECT_EQ(c["ReadOnly"], false);
    EXPECT_EQ(c["Dir"], "/work");
    EXPECT_EQ(c["Hosts"], json::array({"10.0.0.7 db.internal"}));
    EXPECT_EQ(t["Resources"]["Limits"]["MemoryBytes"], 64u << 20);
    EXPECT_EQ(t["Resources"]["Limits"]["NanoCPUs"], 500'000'000);
    EXPECT_EQ(t["Resources"]["Limits"]["Pids"], 32);
    EXPECT_EQ(t["Networks"], json::parse(R"([{"Target":"turns-overlay"}])"));
    ASSERT_EQ(c["Mounts"].size(), 4u)
        << c["Mounts"].dump() << ": no default /tmp on a writable root";
    EXPECT_EQ(
        c["Mounts"][0],
        json::parse(R"({"Type":"bind","Source":"/srv/ws","Target":"/work","ReadOnly":false})"));
    EXPECT_EQ(c["Mounts"][1]["ReadOnly"], true);
    EXPECT_EQ(c["Mounts"][2]["TmpfsOptions"]["SizeBytes"], 1u << 20);
    EXPECT_EQ(c["Mounts"][3]["TmpfsOptions"]["SizeBytes"], SwarmSettings{}.tmpfs_size_bytes);
}

TEST(ServiceSpec, PlacementConstraintsAndReservationsPassThrough) {
    SwarmSettings settings;
    settings.constraints = {"node.role==worker", "node.labels.turns==yes"};
    settings.reserve_memory_bytes = 128u << 20;
    settings.reserve_cpus_milli = 250;
    json t = service_spec(base_spec(), settings, "img", {}, {}, false)["TaskTemplate"];
    EXPECT_EQ(t["Placement"]["Constraints"], json(settings.constraints));
    EXPECT_EQ(t["Resources"]["Reservations"]["MemoryBytes"], 128u << 20);
    EXPECT_EQ(t["Resources"]["Reservations"]["NanoCPUs"], 250'000'000);
}

// Named by the runtime: the engine's random names collided among services created at once.
TEST(ServiceSpec, TheServiceIsNamedAfterItsLabel) {
    EXPECT_EQ(service_spec(base_spec(), SwarmSettings{}, "img", {}, {}, false)["Name"],
              "radial-turn-abc-1");
    const std::string a =
        service_name("radial-turn-" + std::string(40, 'x') + "-a-" + std::string(40, 'y'));
    const std::string b =
        service_name("radial-turn-" + std::string(40, 'x') + "-b-" + std::string(40, 'y'));
    EXPECT_NE(a, b) << "two long labels alike but for one character";
    for (const auto& n : {a, b}) {
        EXPECT_LE(n.size(), 63u) << n;
        EXPECT_TRUE(n.starts_with("radial-turn-xxx")) << n;
    }
    EXPECT_EQ(service_name("r_c.1"), "r_c.1");
    EXPECT_TRUE(service_name("-starts-with-dash").starts_with("r-starts-with-dash"))
        << service_name("-starts-with-dash");
}

TEST(ServiceSpec, SecretsAreSwarmSecretsNeverPlainEnv) {
    ContainerSpec s = base_spec();
    const std::string value = "s3cr3t-value-unique-42\n";
    s.env = {{"PLAIN", "visible", false}, {"API_KEY", value, true}};
    std::vector<SecretRef> secrets = {{"API_KEY", "secretid1", "radial-x-0", secret_file_name(0)}};
    json j = service_spec(s, SwarmSettings{}, "sha256:abc", {"/entry"}, secrets, false);
    EXPECT_EQ(j.dump().find("s3cr3t"), std::string::npos)
        << "a secret value is in the service spec";
    const json& c = j["TaskTemplate"]["ContainerSpec"];
    EXPECT_EQ(c["Env"], json::array({"PLAIN=visible"}));
    ASSERT_EQ(c["Secrets"].size(), 1u);
    EXPECT_EQ(c["Secrets"][0]["SecretID"], "secretid1");
    EXPECT_EQ(c["Secrets"][0]["File"]["Name"], "radial-env-0");
    EXPECT_EQ(c["Secrets"][0]["File"]["UID"], "65534");
    EXPECT_EQ(c["Secrets"][0]["File"]["Mode"], 0400);
    // The entry step, then the image's entrypoint, then argv.
    ASSERT_GE(c["Command"].size(), 8u);
    EXPECT_EQ(c["Command"][0], "/bin/sh");
    EXPECT_EQ(c["Command"][3], "radial-entry");
    EXPECT_EQ(c["Command"][4], "/entry");
    EXPECT_EQ(c["Command"][5], "sh");
    EXPECT_FALSE(c.contains("Args"));
}

// Under radial-init (docs/design.md §13.11): it is PID 1, mounted read-only from the node, with
// the turn's deadline and the stop grace, escaping the output; the image's entrypoint goes in
// front of argv, and docker's own init is not asked for on top of it.
TEST(ServiceSpec, UnderRadialInitTheTaskEscapesItsOutputAndKeepsItsDeadline) {
    SwarmSettings settings;
    settings.init_path = "/usr/lib/radial/radial-init";
    settings.stop_grace_ms = 1500;
    ContainerSpec s = base_spec();
    s.timeout_ms = 42'000;
    const json c = service_spec(s, settings, "sha256:abc", {"/entry", "-x"}, {},
                                true)["TaskTemplate"]["ContainerSpec"];
    EXPECT_EQ(c["Command"], json::array({"/.radial/init", "--escape-output", "42000", "1500", "--",
                                         "/entry", "-x", "sh", "-c", "echo hi"}));
    EXPECT_FALSE(c.contains("Args"));
    EXPECT_FALSE(c.contains("Init")) << "docker's init would be PID 1 instead of radial-init";
    ASSERT_TRUE(c["Mounts"].is_array());
    EXPECT_EQ(c["Mounts"][0], json::parse(R"({"Type":"bind","Source":"/usr/lib/radial/radial-init",
                                              "Target":"/.radial/init","ReadOnly":true})"));
    // Without it: docker's init, argv after the image's own entrypoint.
    const json plain = service_spec(s, settings, "sha256:abc", {"/entry"}, {},
                                    false)["TaskTemplate"]["ContainerSpec"];
    EXPECT_EQ(plain["Init"], true);
    EXPECT_EQ(plain["Args"], json(s.argv));
    EXPECT_FALSE(plain.contains("Command"));
    for (const auto& m : plain.value("Mounts", json::array()))
        EXPECT_NE(m["Target"], "/.radial/init") << m.dump();
}

TEST(ServiceSpec, UnderRadialInitTheSecretEntryStepRunsBelowIt) {
    SwarmSettings settings;
    settings.init_path = "/opt/radial-init";
    ContainerSpec s = base_spec();
    s.env = {{"API_KEY", "s3cr3t", true}};
    std::vector<SecretRef> secrets = {{"API_KEY", "secretid1", "radial-x-0", secret_file_name(0)}};
    const json c =
        service_spec(s, settings, "sha256:abc", {}, secrets, true)["TaskTemplate"]["ContainerSpec"];
    ASSERT_GE(c["Command"].size(), 9u);
    EXPECT_EQ(c["Command"][0], "/.radial/init");
    EXPECT_EQ(c["Command"][4], "--");
    EXPECT_EQ(c["Command"][5], "/bin/sh");
    EXPECT_EQ(c["Command"][8], "radial-entry");
    EXPECT_EQ(c["Command"][9], "sh");
    EXPECT_EQ(c.dump().find("s3cr3t"), std::string::npos);
}

TEST(ServiceSpec, TheEntryStepKeepsTrailingNewlinesAndNamesNoValue) {
    std::string script = entry_script({{"API_KEY", "id", "n", "radial-env-0"}});
    EXPECT_NE(script.find("$(cat /run/secrets/radial-env-0 && printf x)"), std::string::npos)
        << script;
    EXPECT_NE(script.find("API_KEY=\"${API_KEY%x}\"; export API_KEY;"), std::string::npos)
        << script;
    EXPECT_NE(script.find("exit 126"), std::string::npos)
        << "an unreadable secret must not run the workload";
    EXPECT_TRUE(script.ends_with("exec \"$@\""));
}

// The entry step run by /bin/sh as the task runs it, its secret files in a directory of the test's
// own instead of /run/secrets; `env` is the task's environment (the plain variables).
plugin_support::CliOutput run_entry_step(
    const std::vector<std::pair<std::string, std::string>>& secrets,
    plugin_support::ChildProcess::Env env) {
    radial::test::TempDir dir("radial-entry");
    std::vector<SecretRef> refs;
    for (std::size_t i = 0; i < secrets.size(); ++i) {
        refs.push_back({secrets[i].first, "id", "n", secret_file_name(i)});
        dir.write(secret_file_name(i), secrets[i].second);
    }
    std::string script = entry_script(refs);
    for (std::size_t at; (at = script.find("/run/secrets/")) != std::string::npos;)
        script.replace(at, std::string("/run/secrets/").size(), dir.path() + "/");
    env["PATH"] = "/usr/bin:/bin";
    // Every short name the step could use as scratch, and the shell's own, as the box sees them.
    std::string format, words;
    for (const char* n : {"v", "i", "f", "n", "s", "x", "p", "API_KEY"}) {
        format += std::string(n) + "=[%s]";
        words += std::string(" \"${") + n + "-UNSET}\"";
    }
    return plugin_support::capture_cli(
        "/bin/sh", {"-c", script, "radial-entry", "sh", "-c", "printf '" + format + "'" + words},
        env, std::chrono::seconds(20));
}

// A box variable may have any name the host accepts, `v` too: the step keeps no scratch variable
// that could replace or unset one (docs/design.md §13.7).
TEST(ServiceSpec, TheEntryStepLeavesEveryOtherVariableAlone) {
    auto r = run_entry_step({{"API_KEY", "k\n"}}, {{"v", "plainvalue"},
                                                   {"i", "I"},
                                                   {"f", "F"},
                                                   {"n", "N"},
                                                   {"s", "S"},
                                                   {"x", "X"},
                                                   {"p", "P"}});
    ASSERT_TRUE(r.ok()) << r.err;
    EXPECT_EQ(r.out, "v=[plainvalue]i=[I]f=[F]n=[N]s=[S]x=[X]p=[P]API_KEY=[k\n]");

    r = run_entry_step({{"v", "secret-v\n\n"}, {"i", "secret-i"}, {"x", "x"}}, {{"f", "F"}});
    ASSERT_TRUE(r.ok()) << r.err;
    EXPECT_EQ(r.out,
              "v=[secret-v\n\n]i=[secret-i]f=[F]n=[UNSET]s=[UNSET]x=[x]p=[UNSET]"
              "API_KEY=[UNSET]");
}

TEST(ServiceSpec, HostNetworkOnlyWhenTheOperatorAllowsIt) {
    ContainerSpec s = base_spec();
    s.host_ports = {40123};
    SwarmSettings settings;
    EXPECT_FALSE(
        service_spec(s, settings, "img", {}, {}, false)["TaskTemplate"].contains("Networks"));
    settings.host_network = true;
    EXPECT_EQ(service_spec(s, settings, "img", {}, {}, false)["TaskTemplate"]["Networks"],
              json::parse(R"([{"Target":"host"}])"));
}

// Swarm has no network "none": the task gets no attachment, which is loopback only, and a host
// port is then as unreachable as without a network (confine-no-network probes it, §13.7).
TEST(ServiceSpec, NetworkNoneIsNoAttachment) {
    ContainerSpec s = base_spec();
    s.network = "none";
    EXPECT_FALSE(service_spec(s, SwarmSettings{}, "img", {}, {}, false)["TaskTemplate"].contains(
        "Networks"));
    auto m = by_field(describe_for_swarm(s, SwarmSettings{}));
    EXPECT_EQ(m.at(RADIAL_FIELD_NETWORK).disposition, RADIAL_DISP_HONOURED);
    EXPECT_NE(m.at(RADIAL_FIELD_NETWORK).note.find("loopback only"), std::string::npos);
    s.host_ports = {40123};
    EXPECT_EQ(
        by_field(describe_for_swarm(s, SwarmSettings{})).at(RADIAL_FIELD_HOST_PORTS).disposition,
        RADIAL_DISP_REFUSED);
}

TEST(Dispositions, OneForEveryCarriedFieldAndNoneForTheRest) {
    auto m = by_field(describe_for_swarm(base_spec(), SwarmSettings{}));
    EXPECT_EQ(m.size(), carried_fields(base_spec()).size());
    EXPECT_EQ(m.count(RADIAL_FIELD_NETWORK), 0u);
    EXPECT_EQ(m.at(RADIAL_FIELD_ARGV).disposition, RADIAL_DISP_HONOURED);
}

TEST(Dispositions, HostPortsAreRefusedUntilTheOperatorChoosesHowToReachThem) {
    ContainerSpec s = base_spec();
    s.host_ports = {40123};
    auto refused = by_field(describe_for_swarm(s, SwarmSettings{})).at(RADIAL_FIELD_HOST_PORTS);
    EXPECT_EQ(refused.disposition, RADIAL_DISP_REFUSED);
    EXPECT_NE(refused.note.find("run.swarm.hostNetwork"), std::string::npos) << refused.note;
    SwarmSettings allowed;
    allowed.host_network = true;
    auto bridged = by_field(describe_for_swarm(s, allowed)).at(RADIAL_FIELD_HOST_PORTS);
    EXPECT_EQ(bridged.disposition, RADIAL_DISP_BRIDGED);
    EXPECT_NE(bridged.note.find("every other address"), std::string::npos) << bridged.note;
    s.network = "turns-overlay";
    EXPECT_EQ(
        by_field(describe_for_swarm(s, SwarmSettings{})).at(RADIAL_FIELD_HOST_PORTS).disposition,
        RADIAL_DISP_HONOURED);
}

TEST(Dispositions, SecretEnvIsBridgedAndSaysTheImageNeedsAShell) {
    ContainerSpec s = base_spec();
    s.env = {{"A", "1", false}};
    EXPECT_EQ(by_field(describe_for_swarm(s, SwarmSettings{})).at(RADIAL_FIELD_ENV).disposition,
              RADIAL_DISP_HONOURED);
    s.env.push_back({"K", "v", true});
    auto d = by_field(describe_for_swarm(s, SwarmSettings{})).at(RADIAL_FIELD_ENV);
    EXPECT_EQ(d.disposition, RADIAL_DISP_BRIDGED);
    EXPECT_NE(d.note.find("/bin/sh"), std::string::npos) << d.note;
}

// A uid without a gid too: docker would take the group from the image, or root's group 0.
TEST(Dispositions, RootOrANameIsRefused) {
    for (const char* user : {"0", "0:0", "1000:0", "root", "00:1", "1000"}) {
        ContainerSpec s = base_spec();
        s.user = user;
        EXPECT_EQ(
            by_field(describe_for_swarm(s, SwarmSettings{})).at(RADIAL_FIELD_USER).disposition,
            RADIAL_DISP_REFUSED)
            << user;
    }
    ContainerSpec s = base_spec();
    s.user = "1000:1000";
    EXPECT_EQ(by_field(describe_for_swarm(s, SwarmSettings{})).at(RADIAL_FIELD_USER).disposition,
              RADIAL_DISP_HONOURED);
}

} // namespace
} // namespace radial::swarm
