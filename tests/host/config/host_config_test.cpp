// Config refusals are asserted verbatim, with file:line:column (docs/design.md §14.3).
#include "config/host_config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../../support/temp_dir.h"

namespace radial::config {
namespace {

std::string error_of(const std::string& file, std::optional<std::string> runtime = std::nullopt) {
    try {
        load(file, runtime, "/opt/radial/bin");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(HostConfig, DefaultsWithoutAFile) {
    auto c = load(std::nullopt, std::nullopt, "/opt/radial/bin");
    EXPECT_EQ(c.container_runtime, "docker");
    ASSERT_EQ(c.plugin_dirs.size(), 1u);
    EXPECT_EQ(c.plugin_dirs[0], "/opt/radial/lib/radial/runtimes");
    EXPECT_EQ(c.runtime_section.section, "run.docker");
    EXPECT_TRUE(c.runtime_section.entries.empty());
    EXPECT_EQ(c.instance_id,
              ""); // docs/design.md §8.6: generated and persisted (config/instance_id.h)
    EXPECT_EQ(c.max_concurrent_turns, 4u);
    EXPECT_EQ(c.shutdown_grace_ms, 30'000u);
}

TEST(HostConfig, ReadsRunKeysAndFlattensTheSelectedRuntimesSection) {
    test::TempDir d;
    auto f = d.write("radiald.toml", R"(
[run]
containerRuntime = "docker"
pluginDir = ["plugins", "/usr/lib/radial/runtimes"]
network = "host"
user = "1000:1000"
instanceId = "inst1"

[run.docker]
binary = "/usr/bin/docker"
pidsLimit = 128
cpus = 1.5
createArgs = ["--a", "--b"]
[run.docker.defaults]
memory = "1g"
)");
    auto c = load(f, std::nullopt, "/x/bin");
    EXPECT_EQ(c.network, "host");
    EXPECT_EQ(c.user, "1000:1000");
    EXPECT_EQ(c.instance_id, "inst1");
    ASSERT_EQ(c.plugin_dirs.size(), 2u);
    EXPECT_EQ(c.plugin_dirs[0], d.path() + "/plugins");
    EXPECT_EQ(c.plugin_dirs[1], "/usr/lib/radial/runtimes");
    EXPECT_EQ(c.runtime_section.section, "run.docker");
    std::map<std::string, host::ConfigEntry> by_key;
    for (const auto& e : c.runtime_section.entries) by_key[e.key] = e;
    EXPECT_EQ(by_key.at("binary").string_value, "/usr/bin/docker");
    EXPECT_EQ(by_key.at("pidsLimit").kind, static_cast<std::uint32_t>(RADIAL_CONFIG_INT));
    EXPECT_EQ(by_key.at("pidsLimit").int_value, 128);
    EXPECT_EQ(by_key.at("cpus").kind, static_cast<std::uint32_t>(RADIAL_CONFIG_FLOAT));
    EXPECT_DOUBLE_EQ(by_key.at("cpus").float_value, 1.5);
    EXPECT_EQ(by_key.at("createArgs").items, (std::vector<std::string>{"--a", "--b"}));
    EXPECT_EQ(by_key.at("defaults.memory").string_value, "1g");
    EXPECT_EQ(c.where("run.docker.pidsLimit"), f + ":11:13: ");
}

// run.defaultTimeout and run.maxTimeout are durations, read in milliseconds; a bad one names the
// key.
TEST(HostConfig, TheTimeoutBoundsAreDurations) {
    test::TempDir d;
    auto cfg = load(d.write("t.toml", "[run]\ndefaultTimeout = \"10m\"\nmaxTimeout = \"2h\"\n"),
                    std::nullopt, "/x/bin");
    EXPECT_EQ(cfg.default_timeout_ms, 600'000u);
    EXPECT_EQ(cfg.max_timeout_ms, 7'200'000u);
    auto f = d.write("bad.toml", "[run]\nmaxTimeout = \"soon\"\n");
    EXPECT_EQ(error_of(f).find(f + ":2:14: run.maxTimeout: must be a duration"), 0u) << error_of(f);
}

// A box never joins another container's network namespace (and with it that box's loopback,
// where its egress endpoint listens): run.network = "container:..." is refused, naming the key.
TEST(HostConfig, ANetworkOfAnotherContainerIsRefused) {
    test::TempDir d;
    auto f = d.write("n.toml", "[run]\nnetwork = \"container:radial-turn-x-y\"\n");
    EXPECT_EQ(error_of(f).find(f + ":2:11: run.network: 'container:radial-turn-x-y' joins another "
                                   "container's network namespace"),
              0u)
        << error_of(f);
}

TEST(HostConfig, RefusesASectionForARuntimeThatIsNotSelected) {
    test::TempDir d;
    auto f = d.write("r.toml",
                     "[run]\ncontainerRuntime = \"docker\"\n\n[run.sandbox]\ntemplate = \"t\"\n");
    EXPECT_EQ(error_of(f),
              f + ":4:1: run.sandbox: configures runtime 'sandbox' but run.containerRuntime "
                  "is 'docker'; remove [run.sandbox] or select that runtime (a settings "
                  "block that does nothing is refused)");
}

TEST(HostConfig, TheRuntimeFlagDecidesWhichSectionIsRefused) {
    test::TempDir d;
    auto f = d.write("r.toml", "[run.docker]\nbinary = \"docker\"\n");
    EXPECT_NE(error_of(f, "sandbox")
                  .find("run.docker: configures runtime 'docker' but "
                        "--runtime selects 'sandbox'"),
              std::string::npos);
}

// The flag chose the runtime, so the message names the flag, even when the file also sets
// run.containerRuntime (docs/design.md §7.2).
TEST(HostConfig, ARefusedSectionUnderTheRuntimeFlagNamesTheFlag) {
    test::TempDir d;
    auto f = d.write("r.toml",
                     "[run]\ncontainerRuntime = \"docker\"\n\n[run.docker]\nbinary = \"docker\"\n");
    EXPECT_EQ(error_of(f, "sandbox"),
              f + ":4:1: run.docker: configures runtime 'docker' but --runtime selects "
                  "'sandbox'; remove [run.docker] or select that runtime (a settings block that "
                  "does nothing is refused)");
    EXPECT_EQ(error_of(f, "Bad_Id"), "--runtime: 'Bad_Id' is not a runtime id ([a-z0-9-]{1,32})");
}

TEST(HostConfig, RefusesAnUnknownRunKeyWithItsPosition) {
    test::TempDir d;
    auto f = d.write("r.toml", "[run]\ncontainerRuntim = \"docker\"\n");
    EXPECT_EQ(error_of(f), f + ":2:19: run.containerRuntim: unknown key; did you mean "
                               "'containerRuntime'? (see the configuration reference in "
                               "docs/configuration.md)");
    // Nothing near: only the reference.
    auto g = d.write("g.toml", "[run]\nzzz = 1\n");
    EXPECT_EQ(error_of(g), g + ":2:7: run.zzz: unknown key; see the configuration reference in "
                               "docs/configuration.md");
}

TEST(HostConfig, RefusesAnUnknownTopLevelTable) {
    test::TempDir d;
    auto f = d.write("r.toml", "[runn]\nx = 1\n");
    EXPECT_EQ(error_of(f),
              f + ":1:1: runn: unknown table or key; radiald reads only [run] and [redact]");
}

TEST(HostConfig, RefusesAWrongType) {
    test::TempDir d;
    auto f = d.write("r.toml", "[run]\ncontainerRuntime = 3\n");
    EXPECT_EQ(error_of(f), f + ":2:20: run.containerRuntime: must be a string");
}

TEST(HostConfig, RefusesABadInstanceId) {
    test::TempDir d;
    auto f = d.write("r.toml", "[run]\ninstanceId = \"Inst_1\"\n");
    EXPECT_EQ(error_of(f),
              f + ":2:14: run.instanceId: must match [a-z0-9]{1,32} (no '-'): it becomes "
                  "part of every box label");
    // C-04: "inst1-a" would put its boxes under instance "inst1"'s reconcile prefix.
    auto g = d.write("g.toml", "[run]\ninstanceId = \"inst1-a\"\n");
    EXPECT_NE(error_of(g).find("(no '-')"), std::string::npos);
}

TEST(HostConfig, C12_ReadsTheBoxIdRangeAndRefusesABadOne) {
    test::TempDir d;
    auto dflt = load(std::nullopt, std::nullopt, "/opt/radial/bin");
    EXPECT_EQ(dflt.box_id_first, 2000000000u);
    EXPECT_EQ(dflt.box_id_last, 2000065535u);
    auto ok = load(d.write("ok.toml", "[run]\nboxIdRange = \"300000-300009\"\n"), std::nullopt,
                   "/opt/radial/bin");
    EXPECT_EQ(ok.box_id_first, 300000u);
    EXPECT_EQ(ok.box_id_last, 300009u);
    for (const char* bad : {"5-1", "0-5", "7", "a-b", "1-2147483648", "-1-5", "1 - 5"}) {
        auto f = d.write("bad.toml", std::string("[run]\nboxIdRange = \"") + bad + "\"\n");
        EXPECT_EQ(error_of(f), f + ":2:14: run.boxIdRange: must be \"FIRST-LAST\", decimal ids "
                                   "with 0 < FIRST <= LAST <= 2147483647, e.g. "
                                   "\"2000000000-2000065535\"")
            << bad;
    }
}

TEST(HostConfig, ReadsTheDaemonKeys) {
    test::TempDir d;
    auto c = load(d.write("r.toml", "[run]\nmaxConcurrentTurns = 2\nshutdownGrace = \"1m\"\n"),
                  std::nullopt, "/x/bin");
    EXPECT_EQ(c.max_concurrent_turns, 2u);
    EXPECT_EQ(c.shutdown_grace_ms, 60'000u);
    auto zero = load(d.write("z.toml", "[run]\nshutdownGrace = \"0s\"\n"), std::nullopt, "/x/bin");
    EXPECT_EQ(zero.shutdown_grace_ms, 0u);
}

TEST(HostConfig, ReadsTheHostsBoundsAndRefusesBadOnes) {
    test::TempDir d;
    auto c = load(d.write("b.toml", "[run]\nmemory = \"1g\"\ncpus = \"1\"\npidsLimit = 0\n"),
                  std::nullopt, "/x/bin");
    EXPECT_EQ(c.memory_bytes, 1ull << 30);
    EXPECT_EQ(c.cpus_milli, 1000u);
    EXPECT_EQ(c.pids_limit, 0) << "0 leaves the bound to the runtime";
    auto f = d.write("m.toml", "[run]\nmemory = \"1m\"\n");
    EXPECT_EQ(error_of(f), f + ":2:10: run.memory: must be a size of at least \"6m\", such as "
                               "\"2g\" (0: the runtime's own)");
    f = d.write("p.toml", "[run]\npidsLimit = -1\n");
    EXPECT_EQ(error_of(f), f + ":2:13: run.pidsLimit: must be a whole number of processes, such as "
                               "256 (0: the runtime's own)");
    f = d.write("c.toml", "[run]\ncpus = 100000\n");
    const std::uint64_t host = online_cpus_milli();
    ASSERT_NE(host, 0u);
    EXPECT_EQ(error_of(f), fmt::format("{}:2:8: run.cpus: 100000 CPUs is more than this host's {} "
                                       "online CPUs; give at most {}",
                                       f, host / 1000, host / 1000));
    // A count too small to bound anything is refused, never rounded to 0 ("the runtime's own,"
    // no bound from radiald); only a written zero means that.
    for (const std::string tiny : {"0.0000001", "0.004", "\"0.0001\"", "\"0.004\""}) {
        f = d.write("tiny.toml", "[run]\ncpus = " + tiny + "\n");
        EXPECT_EQ(error_of(f), f + ":2:8: run.cpus: must be a CPU count of at least 0.01, such as "
                                   "2 or 0.5 (0: the runtime's own)")
            << tiny;
    }
    for (const std::string zero : {"0", "0.0", "\"0\"", "\"0.0\""})
        EXPECT_EQ(load(d.write("zero.toml", "[run]\ncpus = " + zero + "\n"), std::nullopt, "/x/bin")
                      .cpus_milli,
                  0u)
            << zero;
    f = d.write("two.toml", "[run]\nmemory = \"1g\"\n[run.docker]\nmemory = \"2g\"\n");
    EXPECT_EQ(error_of(f), f + ":2:10: run.memory: is set, and so is run.docker.memory; set the "
                               "bound once (run.memory for every runtime)");
}

TEST(HostConfig, SharedWorkspacesIsOffUnlessTheOperatorTurnsItOn) {
    test::TempDir d;
    EXPECT_FALSE(load(d.write("a.toml", "[run]\n"), std::nullopt, "/x/bin").shared_workspaces);
    EXPECT_TRUE(load(d.write("b.toml", "[run]\nsharedWorkspaces = true\n"), std::nullopt, "/x/bin")
                    .shared_workspaces);
    auto f = d.write("c.toml", "[run]\nsharedWorkspaces = \"yes\"\n");
    EXPECT_EQ(error_of(f), f + ":2:20: run.sharedWorkspaces: must be true or false");
}

// The broker looks a `hosts` name up exactly: a wildcard key would never be used, and names under
// it would go to DNS while the operator believed them pinned.
TEST(HostConfig, AWildcardInTheEgressHostsMapIsRefused) {
    test::TempDir d;
    auto f =
        d.write("h.toml",
                "[run.egress]\nallow = [\"*.corp:443\"]\nhosts = { \"*.corp\" = \"10.0.0.5\" }\n");
    EXPECT_EQ(error_of(f),
              f + ":3:9: run.egress.hosts: '*.corp' is a wildcard; hosts maps one name "
                  "to one address, so list each name");
    f = d.write("k.toml",
                "[run.egress]\nallow = [\"a.corp:443\"]\nhosts = { \"A.corp.\" = "
                "\"10.0.0.5\" }\n");
    EXPECT_EQ(load(f, std::nullopt, "/opt/radial/bin").egress.hosts.at("a.corp"), "10.0.0.5");
}

TEST(HostConfig, RefusesABadMaxConcurrentTurns) {
    test::TempDir d;
    auto f = d.write("r.toml", "[run]\nmaxConcurrentTurns = 0\n");
    EXPECT_EQ(error_of(f),
              f + ":2:22: run.maxConcurrentTurns: must be a whole number of turns from 1 to 256");
}

TEST(HostConfig, ReadsTheLogLevelAndRefusesAnyOther) {
    test::TempDir d;
    EXPECT_EQ(load(d.write("a.toml", "[run]\n"), std::nullopt, "/x/bin").log_level, "info");
    EXPECT_EQ(
        load(d.write("b.toml", "[run]\nlogLevel = \"warn\"\n"), std::nullopt, "/x/bin").log_level,
        "warn");
    auto f = d.write("c.toml", "[run]\nlogLevel = \"verbose\"\n");
    EXPECT_EQ(error_of(f),
              f + ":2:12: run.logLevel: must be \"debug\", \"info\", \"warn\" or \"error\"");
    auto w = d.write("w.toml", "[run]\nlogLevel = \"warning\"\n");
    EXPECT_EQ(error_of(w), w + ":2:12: run.logLevel: must be \"debug\", \"info\", \"warn\" or "
                               "\"error\" (\"warn\", not \"warning\")");
}

TEST(HostConfig, RefusesABadShutdownGrace) {
    test::TempDir d;
    auto f = d.write("r.toml", "[run]\nshutdownGrace = 30\n");
    EXPECT_EQ(error_of(f),
              f + ":2:17: run.shutdownGrace: must be a string, a duration such as \"30s\", "
                  "\"2m\" or \"0s\"; 30 is a bare number (\"30s\" says its unit)");
    // The same number as a string says no unit either: refused alike, not read as seconds.
    auto q = d.write("q.toml", "[run]\nshutdownGrace = \"30\"\n");
    EXPECT_EQ(error_of(q), q + ":2:17: run.shutdownGrace: \"30\" is a bare number (\"30s\" says "
                               "its unit)");
    // So in the turn bounds' table; zero is zero in any unit, and taken.
    auto o = d.write("o.toml", "[run]\noutputStall = \"30\"\n");
    EXPECT_EQ(error_of(o), o + ":2:15: run.outputStall: \"30\" is a bare number (\"30s\" says its "
                               "unit)");
    auto z = d.write("z.toml", "[run]\nshutdownGrace = \"0\"\nstopGrace = \"0\"\n");
    EXPECT_EQ(error_of(z), "(no error)");
    auto b = d.write("b.toml", "[run]\nshutdownGrace = true\n");
    EXPECT_EQ(error_of(b), b + ":2:17: run.shutdownGrace: must be a string, a duration such as "
                               "\"30s\", \"2m\" or \"0s\"");
    auto g = d.write("g.toml", "[run]\nshutdownGrace = \"25h\"\n");
    EXPECT_NE(error_of(g).find("'25h' is more than the limit of 24h"), std::string::npos)
        << error_of(g);
}

TEST(HostConfig, ReadsMinFreeBytesWithADefaultAndZeroToTurnItOff) {
    test::TempDir d;
    EXPECT_EQ(load(d.write("n.toml", "[run]\n"), std::nullopt, "/x/bin").min_free_bytes, 16u << 20);
    EXPECT_EQ(load(d.write("m.toml", "[run]\nminFreeBytes = \"64k\"\n"), std::nullopt, "/x/bin")
                  .min_free_bytes,
              65536u);
    EXPECT_EQ(
        load(d.write("z.toml", "[run]\nminFreeBytes = 0\n"), std::nullopt, "/x/bin").min_free_bytes,
        0u);
    auto f = d.write("r.toml", "[run]\nminFreeBytes = \"lots\"\n");
    EXPECT_EQ(error_of(f),
              f + ":2:16: run.minFreeBytes: must be a size from 0 to 1024t, such as \"16m\" (0: no "
                  "reserve); 'lots' is not one");
}

// docs/design.md §3.6, §9.6, §11.6: the bounds that keep one turn from holding or starving the
// others, each with its default, zero, and a refusal naming the key and its limit.
TEST(HostConfig, ReadsTheTurnBoundsAndTheJournalsRetention) {
    test::TempDir d;
    auto def = load(d.write("n.toml", "[run]\n"), std::nullopt, "/x/bin");
    EXPECT_EQ(def.output_stall_ms, 10'000u);
    EXPECT_EQ(def.max_records_per_turn, 10'000u);
    EXPECT_EQ(def.max_record_bytes_per_turn, 16u << 20);
    EXPECT_EQ(def.journal_max_age_ms, 720ull * 3'600'000);
    EXPECT_EQ(def.journal_max_bytes, 256u << 20);
    auto c = load(d.write("c.toml",
                          "[run]\noutputStall = \"0s\"\nmaxRecordsPerTurn = 0\n"
                          "maxRecordBytesPerTurn = \"1m\"\njournalMaxAge = \"24h\"\n"
                          "journalMaxBytes = 0\n"),
                  std::nullopt, "/x/bin");
    EXPECT_EQ(c.output_stall_ms, 0u);
    EXPECT_EQ(c.max_records_per_turn, 0u);
    EXPECT_EQ(c.max_record_bytes_per_turn, 1u << 20);
    EXPECT_EQ(c.journal_max_age_ms, 86'400'000u);
    EXPECT_EQ(c.journal_max_bytes, 0u);
    auto f = d.write("f.toml", "[run]\noutputStall = \"2h\"\n");
    EXPECT_EQ(error_of(f), f + ":2:15: run.outputStall: must be a duration of at most 1h, such as "
                               "\"10s\" (\"0s\": never wait)");
    auto g = d.write("g.toml", "[run]\nmaxRecordsPerTurn = -1\n");
    EXPECT_NE(error_of(g).find("run.maxRecordsPerTurn: must be a whole number of records from 0"),
              std::string::npos)
        << error_of(g);
    auto h = d.write("h.toml", "[run]\njournalMaxBytes = \"2t\"\n");
    EXPECT_NE(error_of(h).find(
                  "run.journalMaxBytes: must be 0 (no bound) or a size from \"1m\" to \"1t\""),
              std::string::npos)
        << error_of(h);
    // A bound so small that every turn's end would empty the journal is refused too.
    auto tiny = d.write("tiny.toml", "[run]\njournalMaxBytes = \"512k\"\n");
    EXPECT_NE(error_of(tiny).find("run.journalMaxBytes: must be 0 (no bound) or a size from"),
              std::string::npos)
        << error_of(tiny);
    auto i = d.write("i.toml", "[run]\njournalMaxAge = \"forever\"\n");
    EXPECT_NE(error_of(i).find("run.journalMaxAge: must be a duration of at most 87600h"),
              std::string::npos)
        << error_of(i);
}

// docs/design.md §11.7: the turn logs' bounds, their defaults, zero and a refusal naming the key.
TEST(HostConfig, ReadsTheTurnLogBounds) {
    test::TempDir d;
    auto def = load(d.write("n.toml", "[run]\n"), std::nullopt, "/x/bin");
    EXPECT_EQ(def.turn_log_max_bytes, 16u << 20);
    EXPECT_EQ(def.turn_logs_max_bytes, 1u << 30);
    auto c = load(d.write("c.toml", "[run]\nturnLogMaxBytes = 0\nturnLogsMaxBytes = \"64m\"\n"),
                  std::nullopt, "/x/bin");
    EXPECT_EQ(c.turn_log_max_bytes, 0u);
    EXPECT_EQ(c.turn_logs_max_bytes, 64u << 20);
    auto f = d.write("f.toml", "[run]\nturnLogMaxBytes = \"lots\"\n");
    EXPECT_NE(error_of(f).find("run.turnLogMaxBytes: must be a size of at most \"1t\""),
              std::string::npos)
        << error_of(f);
    auto g = d.write("g.toml", "[run]\nturnLogsMaxBytes = \"2t\"\n");
    EXPECT_NE(error_of(g).find("run.turnLogsMaxBytes: must be a size of at most \"1t\""),
              std::string::npos)
        << error_of(g);
}

// docs/design.md §7.6 and §8.7: the mode, where the workspace appears, the home's bound and the
// Codex credentials file, each with its default and its refusal.
TEST(HostConfig, ReadsModeWorkspaceMountHomeSizeAndCodexAuthFile) {
    test::TempDir d;
    auto defaults = load(d.write("n.toml", "[run]\n"), std::nullopt, "/x/bin");
    EXPECT_EQ(defaults.mode, "workspace-write");
    EXPECT_EQ(defaults.workspace_mount, "/work");
    EXPECT_EQ(defaults.home_size_bytes, 256u << 20);
    EXPECT_EQ(defaults.codex_auth_file, "");
    auto set = load(d.write("s.toml",
                            "[run]\nmode = \"read-only\"\nworkspaceMount = \"same-path\"\n"
                            "homeSize = \"64m\"\ncodexAuthFile = \"/etc/radial/auth.json\"\n"),
                    std::nullopt, "/x/bin");
    EXPECT_EQ(set.mode, "read-only");
    EXPECT_EQ(set.workspace_mount, "same-path");
    EXPECT_EQ(set.home_size_bytes, 64u << 20);
    EXPECT_EQ(set.codex_auth_file, "/etc/radial/auth.json");
    auto f = d.write("m.toml", "[run]\nmode = \"yolo\"\n");
    EXPECT_EQ(error_of(f), f + ":2:8: run.mode: must be \"read-only\" or \"workspace-write\"");
    f = d.write("w.toml", "[run]\nworkspaceMount = \"/src\"\n");
    EXPECT_EQ(error_of(f), f + ":2:18: run.workspaceMount: must be \"/work\" or \"same-path\"");
    f = d.write("h.toml", "[run]\nhomeSize = \"4k\"\n");
    EXPECT_EQ(error_of(f),
              f + ":2:12: run.homeSize: must be a size from 1m to 1024t, such as \"256m\"; '4k' is "
                  "less than 1m");
    f = d.write("c.toml", "[run]\ncodexAuthFile = \"auth.json\"\n");
    EXPECT_EQ(error_of(f), f + ":2:17: run.codexAuthFile: must be an absolute path, such as "
                               "\"/root/.codex/auth.json\"");
}

TEST(HostConfig, ReportsTomlSyntaxErrorsWithPosition) {
    test::TempDir d;
    auto f = d.write("r.toml", "[run]\ncontainerRuntime = \n");
    EXPECT_EQ(error_of(f).rfind(f + ":2:", 0), 0u) << error_of(f);
}

TEST(HostConfig, RefusesAnEmptyPluginDirList) {
    test::TempDir d;
    auto f = d.write("r.toml", "[run]\npluginDir = []\n");
    EXPECT_EQ(error_of(f), f + ":2:13: run.pluginDir: must name at least one directory");
}

TEST(HostConfig, RefusesAMissingFile) {
    EXPECT_EQ(error_of("/nonexistent/radiald.toml"),
              "reading config '/nonexistent/radiald.toml': no such file; pass an existing file "
              "with --config");
}

TEST(HostConfig, RefusesNonStringArraysInARuntimeSection) {
    test::TempDir d;
    auto f = d.write("r.toml", "[run.docker]\nports = [1, 2]\n");
    EXPECT_EQ(error_of(f), f + ":2:9: run.docker.ports: must be an array of strings");
}

TEST(HostConfig, ReadsTheTurnSocketKeys) {
    test::TempDir d;
    auto f = d.write("r.toml",
                     "[run]\nturnTransport = \"tcp\"\nturnSocketHost = \"127.0.0.2\"\n"
                     "stateDir = \"state\"\nmaxRecordBytes = \"64k\"\n");
    auto c = load(f, std::nullopt, "/x/bin");
    EXPECT_EQ(c.turn_transport, "tcp");
    EXPECT_EQ(c.turn_socket_host, "127.0.0.2");
    EXPECT_EQ(c.state_dir, d.path() + "/state");
    EXPECT_EQ(c.max_record_bytes, 64u << 10);
    auto defaults = load(std::nullopt, std::nullopt, "/x/bin");
    EXPECT_EQ(defaults.turn_transport, "auto");
    EXPECT_EQ(defaults.max_record_bytes, 1u << 20);
    EXPECT_EQ(defaults.state_dir, default_state_dir());
}

TEST(HostConfig, RefusesAnUnknownTurnTransport) {
    test::TempDir d;
    auto f = d.write("r.toml", "[run]\nturnTransport = \"udp\"\n");
    EXPECT_EQ(error_of(f), f + ":2:17: run.turnTransport: must be \"auto\", \"unix\" or \"tcp\"");
}

// docs/design.md §5.12: in-process unless the operator asks for a process of its own.
TEST(HostConfig, PluginIsolationIsInProcessByDefaultAndTakesOnlyItsTwoModes) {
    test::TempDir d;
    EXPECT_TRUE(load(std::nullopt, std::nullopt, "/x/bin").plugin_in_process);
    auto ok = d.write("ok.toml", "[run]\npluginIsolation = \"process\"\n");
    EXPECT_FALSE(load(ok, std::nullopt, "/x/bin").plugin_in_process);
    auto f = d.write("r.toml", "[run]\npluginIsolation = \"sandboxed\"\n");
    EXPECT_EQ(error_of(f), f + ":2:19: run.pluginIsolation: must be \"in-process\" or "
                               "\"process\" (a plugin host process of its own, "
                               "docs/configuration.md)");
}

TEST(HostConfig, RefusesABadRecordLimit) {
    test::TempDir d;
    auto f = d.write("r.toml", "[run]\nmaxRecordBytes = \"lots\"\n");
    EXPECT_EQ(error_of(f),
              f + ":2:18: run.maxRecordBytes: must be a size from 1 to 1g, such as \"1m\"; 'lots' "
                  "is not one");
}

} // namespace
} // namespace radial::config
