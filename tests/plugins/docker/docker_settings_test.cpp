// tests/plugins/docker/docker_settings_test.cpp — [run.docker] parsing
// (plugins/docker/docker_settings.cpp).
#include "docker_settings.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <limits>
#include <string>

#include "../../support/temp_dir.h"
#include "../support/config_builder.h"

namespace radial::docker {
namespace {

using radial::test::ConfigBuilder;

// Parses as on a host with `cpus` online CPUs (8 unless told: more than the default asks for).
DockerSettings parse(ConfigBuilder& b, unsigned cpus = 8) {
    radial::plugin::Config config(b.get());
    DockerSettings s = parse_docker_settings(config, cpus);
    config.finish();
    return s;
}

// Expects parsing to fail with RADIAL_E_INVALID naming `key`, and returns the message.
std::string refusal(const std::function<void(ConfigBuilder&)>& fill, const std::string& key,
                    unsigned cpus = 8) {
    ConfigBuilder b;
    fill(b);
    try {
        parse(b, cpus);
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), RADIAL_E_INVALID);
        EXPECT_EQ(e.key(), key);
        return e.what();
    }
    ADD_FAILURE() << "no error for key " << key;
    return {};
}

TEST(docker_settings, AbsentSectionGivesHardenedDefaults) {
    radial::plugin::Config config(nullptr);
    DockerSettings s = parse_docker_settings(config, 8);
    EXPECT_EQ(s.binary, "docker");
    EXPECT_EQ(s.host, "");
    EXPECT_EQ(s.memory_bytes, 2ull << 30);
    EXPECT_EQ(s.cpus_milli, 2000u);
    EXPECT_EQ(s.host_cpus_milli, 8000u);
    EXPECT_EQ(s.pids_limit, 256);
    EXPECT_EQ(s.user, "65534:65534");
    EXPECT_EQ(s.tmpfs_size_bytes, 256ull << 20);
    EXPECT_EQ(s.pull, "missing");
    EXPECT_EQ(s.kill_grace_ms, 10'000u);
    EXPECT_EQ(s.preflight_timeout_ms, 10'000u);
    EXPECT_EQ(s.command_timeout_ms, 30'000u);
}

TEST(docker_settings, EveryKeyIsRead) {
    ConfigBuilder b;
    b.str("binary", "/usr/local/bin/docker")
        .str("host", "unix:///nonexistent.sock")
        .str("memory", "512m")
        .str("cpus", "0.5")
        .integer("pidsLimit", 64)
        .str("user", "1000:1000")
        .str("tmpfsSize", "64m")
        .str("pull", "never")
        .str("killGrace", "1500ms")
        .integer("preflightTimeout", 2000)
        .str("commandTimeout", "5s");
    DockerSettings s = parse(b);
    EXPECT_EQ(s.binary, "/usr/local/bin/docker");
    EXPECT_EQ(s.host, "unix:///nonexistent.sock");
    EXPECT_EQ(s.memory_bytes, 512ull << 20);
    EXPECT_EQ(s.cpus_milli, 500u);
    EXPECT_EQ(s.pids_limit, 64);
    EXPECT_EQ(s.user, "1000:1000");
    EXPECT_EQ(s.tmpfs_size_bytes, 64ull << 20);
    EXPECT_EQ(s.pull, "never");
    EXPECT_EQ(s.kill_grace_ms, 1500u);
    EXPECT_EQ(s.preflight_timeout_ms, 2000u);
    EXPECT_EQ(s.command_timeout_ms, 5000u);
}

TEST(docker_settings, NumbersMayBeTomlIntegersAndFloats) {
    ConfigBuilder b;
    b.integer("memory", 64 << 20).floating("cpus", 1.5).integer("killGrace", 250);
    DockerSettings s = parse(b);
    EXPECT_EQ(s.memory_bytes, 64ull << 20);
    EXPECT_EQ(s.cpus_milli, 1500u);
    EXPECT_EQ(s.kill_grace_ms, 250u);
}

TEST(docker_settings, RootOrNonNumericUserIsRefusedNamingTheKey) {
    const std::string fix = "; give numeric ids uid:gid such as 65534:65534";
    const std::string name =
        " is a name, which docker resolves inside the image, where it may "
        "map to root" +
        fix;
    const std::string sign =
        " is not two plain decimal numbers uid:gid (no sign, space or other "
        "character, which runc may read as root)" +
        fix;
    const std::pair<const char*, std::string> refused[] = {
        {"root", name},
        {"nobody", name},
        {"0:0",
         " is root (uid 0), and a box never runs as the host's root (only as root in a user "
         "namespace of its own, on an engine started with --userns-remap: docs/design.md "
         "§8.8)" +
             fix},
        {"00:1000",
         " is root (uid 0), and a box never runs as the host's root (only as root in a user "
         "namespace of its own, on an engine started with --userns-remap: docs/design.md "
         "§8.8)" +
             fix},
        {"+0", sign},
        {"+0:+0", sign},
        {"1000:0",
         " has gid 0, root's group, and a box never runs as root or in root's group" + fix},
        {"1000",
         " has no gid, so docker would take the group from the image, or root's group 0 "
         "when the image does not list the uid" +
             fix}};
    for (const auto& [user, cause] : refused) {
        std::string message = refusal([&](ConfigBuilder& b) { b.str("user", user); }, "user");
        EXPECT_EQ(message, "reading run.docker.user: '" + std::string(user) + "'" + cause);
    }
}

TEST(docker_settings, TheDefaultCpusAreClampedToTheHostsOnlineCpus) {
    ConfigBuilder none;
    EXPECT_EQ(parse(none, 1).cpus_milli, 1000u) << "docker refuses --cpus 2 on a 1-CPU host";
    EXPECT_EQ(parse(none, 1).host_cpus_milli, 1000u);
    EXPECT_EQ(parse(none, 2).cpus_milli, 2000u);
    EXPECT_EQ(parse(none, 64).cpus_milli, 2000u);
    EXPECT_EQ(parse(none, 0).cpus_milli, 2000u) << "unknown count: the default as it is";
    ConfigBuilder half;
    half.str("cpus", "0.5");
    EXPECT_EQ(parse(half, 1).cpus_milli, 500u);
}

TEST(docker_settings, ExplicitCpusAboveTheHostsCountAreRefused) {
    std::string message = refusal([](ConfigBuilder& b) { b.str("cpus", "2"); }, "cpus", 1);
    EXPECT_EQ(message,
              "reading run.docker.cpus: 2 CPUs is more than this host's 1 online CPUs, and docker "
              "refuses --cpus above that; give at most 1");
    refusal([](ConfigBuilder& b) { b.floating("cpus", 1.5); }, "cpus", 1);
    refusal([](ConfigBuilder& b) { b.integer("cpus", 3); }, "cpus", 2);
    ConfigBuilder b;
    b.integer("cpus", 2);
    EXPECT_EQ(parse(b, 2).cpus_milli, 2000u);
}

TEST(docker_settings, CpusThatAreNotAFiniteCountAreRefused) {
    for (double bad :
         {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
          std::numeric_limits<double>::quiet_NaN(), 1e30, 1e7, -1.0, 0.0})
        refusal([&](ConfigBuilder& b) { b.floating("cpus", bad); }, "cpus", 0);
    refusal([](ConfigBuilder& b) { b.integer("cpus", 9'000'000'000'000'000'000); }, "cpus", 0);
    refusal([](ConfigBuilder& b) { b.integer("cpus", 2'000'000); }, "cpus", 0);
    refusal([](ConfigBuilder& b) { b.str("cpus", "18446744073709551"); }, "cpus", 0);
}

// run.docker.binary runs as radiald's user: a path someone other than root or radiald's user could
// replace is refused naming the key and the fix (docs/design.md §5.9, §15.1); a bare name is
// found in radiald's own PATH, and a path where nothing is yet is judged by its directories.
TEST(docker_settings, ABinaryOthersCouldReplaceIsRefusedNamingTheKey) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown to another uid)";
    test::TempDir d("radial-docker-bin");
    const std::string cli = d.write("docker", "#!/bin/sh\n");
    ASSERT_EQ(::chmod(cli.c_str(), 0755), 0);
    const auto with_binary = [](const std::string& binary) {
        return [binary](ConfigBuilder& b) { b.str("binary", binary); };
    };
    for (const std::string& ok : {cli, std::string("docker"), d / "not-yet/docker"}) {
        ConfigBuilder b;
        with_binary(ok)(b);
        EXPECT_EQ(parse(b).binary, ok);
    }
    ASSERT_EQ(::chmod(cli.c_str(), 0775), 0);
    EXPECT_EQ(refusal(with_binary(cli), "binary"),
              "reading run.docker.binary: the file '" + cli +
                  "' is writable by its group (gid 0), whose members could replace the docker "
                  "CLI; run 'chmod g-w " +
                  cli + "'");
    ASSERT_EQ(::chmod(cli.c_str(), 0755), 0);
    ASSERT_EQ(::chown(cli.c_str(), 65534, 65534), 0);
    EXPECT_EQ(refusal(with_binary(cli), "binary"),
              "reading run.docker.binary: the file '" + cli +
                  "' is owned by uid 65534, neither root nor radiald's user, who could replace "
                  "the docker CLI; run 'chown root " +
                  cli + "'");
}

TEST(docker_settings, BadValuesAreRefusedNamingTheKey) {
    refusal([](ConfigBuilder& b) { b.str("memory", "lots"); }, "memory");
    refusal([](ConfigBuilder& b) { b.str("memory", "1m"); }, "memory");
    refusal([](ConfigBuilder& b) { b.str("cpus", "0.001"); }, "cpus");
    refusal([](ConfigBuilder& b) { b.str("cpus", "two"); }, "cpus");
    refusal([](ConfigBuilder& b) { b.integer("pidsLimit", 0); }, "pidsLimit");
    refusal([](ConfigBuilder& b) { b.integer("pidsLimit", -1); }, "pidsLimit");
    refusal([](ConfigBuilder& b) { b.str("user", ""); }, "user");
    refusal([](ConfigBuilder& b) { b.str("user", ":1000"); }, "user");
    refusal([](ConfigBuilder& b) { b.str("user", "a b"); }, "user");
    refusal([](ConfigBuilder& b) { b.str("binary", ""); }, "binary");
    refusal([](ConfigBuilder& b) { b.integer("binary", 3); }, "binary");
    refusal([](ConfigBuilder& b) { b.str("killGrace", "soon"); }, "killGrace");
    refusal([](ConfigBuilder& b) { b.str("preflightTimeout", "0s"); }, "preflightTimeout");
    std::string pull = refusal([](ConfigBuilder& b) { b.str("pull", "sometimes"); }, "pull");
    EXPECT_EQ(pull,
              "reading run.docker.pull: 'sometimes' is not a pull policy; give \"missing\", "
              "\"never\" or \"always\"");
    std::string host = refusal([](ConfigBuilder& b) { b.str("host", "localhost:2375"); }, "host");
    EXPECT_NE(host.find("unix:///var/run/docker.sock"), std::string::npos) << host;
}

TEST(docker_settings, BoxInitIsAnExecutableGivenByAbsolutePath) {
    ConfigBuilder b;
    b.str("boxInit", "/bin/sh");
    EXPECT_EQ(parse(b).init_path, "/bin/sh");
    ConfigBuilder none;
    EXPECT_EQ(parse(none).init_path, "") << "the plugin, not the parser, finds the default";
    std::string rel = refusal([](ConfigBuilder& c) { c.str("boxInit", "radial-init"); }, "boxInit");
    EXPECT_NE(rel.find("is not an absolute path without ':'"), std::string::npos) << rel;
    std::string missing =
        refusal([](ConfigBuilder& c) { c.str("boxInit", "/nonexistent/radial-init"); }, "boxInit");
    EXPECT_NE(missing.find("is not a readable executable file"), std::string::npos) << missing;
}

TEST(docker_settings, OciRuntimeIsANameAndAbsentMeansTheEnginesDefault) {
    ConfigBuilder none;
    EXPECT_EQ(parse(none).oci_runtime, "");
    ConfigBuilder b;
    b.str("ociRuntime", "runsc");
    EXPECT_EQ(parse(b).oci_runtime, "runsc");
    ConfigBuilder dotted;
    dotted.str("ociRuntime", "io.containerd.runc.v2");
    EXPECT_EQ(parse(dotted).oci_runtime, "io.containerd.runc.v2");
    for (const char* bad : {"", "--privileged", "run sc", "/usr/bin/runsc", "runsc;id"}) {
        std::string why =
            refusal([&](ConfigBuilder& c) { c.str("ociRuntime", bad); }, "ociRuntime");
        EXPECT_NE(why.find("reading run.docker.ociRuntime: '" + std::string(bad) +
                           "' is not a runtime name"),
                  std::string::npos)
            << why;
    }
    refusal([](ConfigBuilder& c) { c.integer("ociRuntime", 1); }, "ociRuntime");
}

TEST(docker_settings, AnOciRuntimeTheEngineDoesNotListIsRefusedWithTheFix) {
    DockerSettings s;
    const std::vector<std::string> listed{"io.containerd.runc.v2", "runc"};
    EXPECT_EQ(oci_runtime_refusal(s, listed, "default host"), std::nullopt)
        << "no key: the engine's default runtime, nothing to check";
    s.oci_runtime = "runc";
    EXPECT_EQ(oci_runtime_refusal(s, listed, "default host"), std::nullopt);
    s.oci_runtime = "runsc";
    auto why = oci_runtime_refusal(s, listed, "default host");
    ASSERT_TRUE(why.has_value());
    EXPECT_EQ(*why,
              "run.docker.ociRuntime = \"runsc\": the engine (default host) has no runtime of that "
              "name (it lists: io.containerd.runc.v2, runc); register it in the engine's "
              "/etc/docker/daemon.json \"runtimes\" and send dockerd SIGHUP (for gVisor: sudo "
              "scripts/setup.sh --with-gvisor), or remove the key to use the engine's default "
              "runtime");
    EXPECT_NE(oci_runtime_refusal(s, {}, "'unix:///x.sock'")->find("(it lists: none)"),
              std::string::npos);
}

TEST(docker_settings, StartTimeoutAndWritableLayerSizeAreReadWithTheirDefaults) {
    ConfigBuilder none;
    DockerSettings d = parse(none);
    EXPECT_EQ(d.start_timeout_ms, 60'000u);
    EXPECT_EQ(d.writable_layer_bytes, 0u) << "unbounded unless asked for";
    ConfigBuilder b;
    b.str("startTimeout", "90s").str("writableLayerSize", "10g");
    DockerSettings s = parse(b);
    EXPECT_EQ(s.start_timeout_ms, 90'000u);
    EXPECT_EQ(s.writable_layer_bytes, 10ull << 30);
    refusal([](ConfigBuilder& c) { c.str("startTimeout", "0s"); }, "startTimeout");
    refusal([](ConfigBuilder& c) { c.str("startTimeout", "later"); }, "startTimeout");
    std::string tiny = refusal([](ConfigBuilder& c) { c.integer("writableLayerSize", 4096); },
                               "writableLayerSize");
    EXPECT_NE(tiny.find("leaves a box no room to write"), std::string::npos) << tiny;
}

// Under runsc the sandbox's own host threads count against the pids cap (docs/design.md §13.9):
// a cap below the least a box starts with is refused, naming both keys; the default passes.
TEST(docker_settings, APidsLimitTooSmallForTheOciRuntimeIsRefused) {
    std::string why =
        refusal([](ConfigBuilder& c) { c.str("ociRuntime", "runsc").integer("pidsLimit", 32); },
                "pidsLimit");
    EXPECT_EQ(why,
              "reading run.docker.pidsLimit: 32 is below 128, the least a box starts with under "
              "run.docker.ociRuntime 'runsc' (its own host threads count against the cap); give at "
              "least 128");
    ConfigBuilder runsc_default;
    runsc_default.str("ociRuntime", "runsc");
    EXPECT_EQ(parse(runsc_default).pids_limit, 256);
    ConfigBuilder runc_small;
    runc_small.integer("pidsLimit", 32);
    EXPECT_EQ(parse(runc_small).pids_limit, 32) << "runc has no floor";
}

// docs/design.md §13.9: the dispositions come from the runtime name's profile, so runsc registered
// under another name is refused instead of being described as runc.
TEST(docker_settings, AKnownRuntimeBinaryUnderAnotherNameIsRefused) {
    DockerSettings s;
    EXPECT_EQ(oci_runtime_alias_refusal(s, "/usr/bin/runsc", "default host"), std::nullopt);
    s.oci_runtime = "runsc";
    EXPECT_EQ(oci_runtime_alias_refusal(s, "/usr/bin/runsc", "default host"), std::nullopt);
    s.oci_runtime = "kata";
    EXPECT_EQ(oci_runtime_alias_refusal(s, "/usr/bin/kata-runtime", "default host"), std::nullopt);
    EXPECT_EQ(oci_runtime_alias_refusal(s, "", "default host"), std::nullopt);
    s.oci_runtime = "gvisor";
    auto why = oci_runtime_alias_refusal(s, "/usr/local/bin/runsc", "default host");
    ASSERT_TRUE(why.has_value());
    EXPECT_EQ(*why,
              "run.docker.ociRuntime = \"gvisor\": the engine (default host) runs it as "
              "'/usr/local/bin/runsc', which is runsc, whose resource bounds the docker runtime "
              "knows only under the name 'runsc'; register it in the engine's "
              "/etc/docker/daemon.json as \"runsc\" (for gVisor: sudo scripts/setup.sh "
              "--with-gvisor) and set ociRuntime = \"runsc\"");
    EXPECT_EQ(oci_runtime_alias_refusal(s, "runsc-wrapper", "default host"), std::nullopt);
}

TEST(docker_settings, AWritableLayerBoundOverlay2CannotGiveIsRefusedWithTheFix) {
    DockerSettings s;
    EXPECT_EQ(writable_layer_refusal(s, "overlay2", "extfs", "default host"), std::nullopt)
        << "no key: nothing to check";
    s.writable_layer_bytes = 10ull << 30;
    EXPECT_EQ(writable_layer_refusal(s, "overlay2", "xfs", "default host"), std::nullopt);
    EXPECT_EQ(writable_layer_refusal(s, "btrfs", "btrfs", "default host"), std::nullopt);
    auto why = writable_layer_refusal(s, "overlay2", "extfs", "default host");
    ASSERT_TRUE(why.has_value());
    EXPECT_EQ(*why,
              "run.docker.writableLayerSize: the engine (default host) cannot bound a box's "
              "writable layer: its storage driver is overlay2 on 'extfs', and overlay2 bounds a "
              "layer only on xfs mounted with pquota; put the engine's data-root on such an xfs, "
              "or remove the key (the writable layer is then unbounded)");
}

TEST(docker_settings, UnknownKeyIsRefusedByFinish) {
    ConfigBuilder b;
    b.str("memroy", "2g");
    radial::plugin::Config config(b.get());
    parse_docker_settings(config);
    try {
        config.finish();
        FAIL() << "unknown key accepted";
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), RADIAL_E_INVALID);
        EXPECT_EQ(e.key(), "memroy");
        EXPECT_STREQ(e.what(), "unknown key 'memroy' in [run.docker]; did you mean 'memory'?");
    }
}

} // namespace
} // namespace radial::docker
