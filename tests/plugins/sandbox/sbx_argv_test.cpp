// tests/plugins/sandbox/sbx_argv_test.cpp — every sbx invocation the runtime makes
// (plugins/sandbox/sbx_argv.cpp), golden, with and without the optional flags, and the refusals.
#include "sbx_argv.h"

#include <gtest/gtest.h>

#include <radial/plugin/runtime.hpp>

#include "../../support/plugin_error.h"

namespace radial::sandbox {
namespace {

using Args = std::vector<std::string>;

const SbxFeatures kOld{false, false};
const SbxFeatures kNew{true, true};

ContainerSpec turn_spec() {
    ContainerSpec s;
    s.label = "radial-turn-local-7";
    s.image = "radial/turn:latest";
    s.argv = {"harness", "--go"};
    s.env = {{"ANTHROPIC_API_KEY", "sk-secret-value", true}, {"MODE", "turn", false}};
    s.mounts = {{"/srv/ws/7", "/work", false},
                {"/srv/bundles/7", "/bundle", true},
                {"/srv/forge", "/run/radial-forge", true}};
    s.memory_bytes = 4ull << 30;
    s.host_ports = {40123};
    s.timeout_ms = 3'600'000;
    return s;
}

using radial::test::error_of;

TEST(sbx_argv, CreateGolden) {
    SandboxSettings settings;
    EXPECT_EQ(sbx_create_args(turn_spec(), settings, kOld),
              (Args{"create", "--name", "radial-turn-local-7", "--template", "radial/turn:latest",
                    "--memory", "4g", "--cpus", "2", "claude", "/srv/ws/7", "/srv/bundles/7:ro",
                    "/srv/forge:ro"}));
}

// A spec without memory or CPUs still gets a bounded VM: the settings' (run.sandbox.memory,
// run.sandbox.cpus), never sbx's default of half the host's memory.
TEST(sbx_argv, CreateBoundsTheVmWhenTheSpecCarriesNoLimits) {
    SandboxSettings settings;
    settings.memory_bytes = 3ull << 30;
    settings.cpus_milli = 1000;
    ContainerSpec s = turn_spec();
    s.memory_bytes = 0;
    s.cpus_milli = 0;
    EXPECT_EQ(sbx_create_args(s, settings, kOld),
              (Args{"create", "--name", "radial-turn-local-7", "--template", "radial/turn:latest",
                    "--memory", "3g", "--cpus", "1", "claude", "/srv/ws/7", "/srv/bundles/7:ro",
                    "/srv/forge:ro"}));
}

TEST(sbx_argv, CreateWithEverySettingAndTheNonInteractiveFlag) {
    SandboxSettings settings;
    settings.template_image = "radial/sandbox-turn:2";
    settings.agent = "shell";
    settings.kits = {"/etc/radial/kits/node", "oci://kits/py:1"};
    settings.create_args = {"--branch", "auto"};
    ContainerSpec s = turn_spec();
    s.label = "radial-turn-my_host-7";
    s.memory_bytes = 1536ull << 20;
    s.cpus_milli = 1500;
    EXPECT_EQ(sbx_create_args(s, settings, kNew), (Args{"create",
                                                        "--no-input",
                                                        "--name",
                                                        "radial-turn-my.5fhost-7",
                                                        "--template",
                                                        "radial/sandbox-turn:2",
                                                        "--memory",
                                                        "1536m",
                                                        "--cpus",
                                                        "2",
                                                        "--kit",
                                                        "/etc/radial/kits/node",
                                                        "--kit",
                                                        "oci://kits/py:1",
                                                        "--branch",
                                                        "auto",
                                                        "shell",
                                                        "/srv/ws/7",
                                                        "/srv/bundles/7:ro",
                                                        "/srv/forge:ro"}));
}

TEST(sbx_argv, CreateWithoutImageOrTemplateLeavesTheAgentsImage) {
    ContainerSpec s;
    s.label = "b";
    s.argv = {"true"};
    EXPECT_EQ(sbx_create_args(s, SandboxSettings(), kOld),
              (Args{"create", "--name", "b", "--memory", "4g", "--cpus", "2", "claude"}));
}

TEST(sbx_argv, CreateNeverCarriesAnEnvironmentValue) {
    Args args = sbx_create_args(turn_spec(), SandboxSettings(), kNew);
    for (const auto& a : args) {
        EXPECT_EQ(a.find("sk-secret-value"), std::string::npos) << a;
        EXPECT_NE(a, "-e");
        EXPECT_NE(a, "--env");
    }
}

TEST(sbx_argv, CreateRefusesANetworkLoudly) {
    ContainerSpec s = turn_spec();
    s.network = "radial-net";
    auto e = error_of([&] { sbx_create_args(s, SandboxSettings(), kOld); });
    EXPECT_EQ(e.code(), RADIAL_E_REFUSED);
    EXPECT_EQ(e.key(), "network");
    EXPECT_EQ(std::string(e.what()),
              "preparing box 'radial-turn-local-7': network 'radial-net' cannot be honoured: a "
              "sandbox has no docker network to join; unset run.network under the sandbox "
              "runtime");
}

TEST(sbx_argv, CreateRefusesAnImageSbxWouldReadAsAnOption) {
    ContainerSpec s = turn_spec();
    s.image = "--privileged";
    auto e = error_of([&] { sbx_create_args(s, SandboxSettings(), kOld); });
    EXPECT_EQ(e.code(), RADIAL_E_INVALID);
    EXPECT_EQ(e.key(), "image");
}

TEST(sbx_argv, WorkspacesMergeOneSourceAndRefuseWhatTheSyntaxCannotSay) {
    ContainerSpec s = turn_spec();
    s.mounts = {{"/a", "/x", true}, {"/a", "/y", true}, {"/b", "/z", false}};
    EXPECT_EQ(sbx_workspaces(s), (std::vector<Workspace>{{"/a", true}, {"/b", false}}));

    s.mounts = {{"/a", "/x", true}, {"/a", "/y", false}};
    auto e = error_of([&] { sbx_workspaces(s); });
    EXPECT_EQ(e.key(), "mounts[1]");
    EXPECT_NE(std::string(e.what()).find("a sandbox workspace has one mode"), std::string::npos);

    s.mounts = {{"/a:b", "/x", false}};
    e = error_of([&] { sbx_workspaces(s); });
    EXPECT_EQ(e.key(), "mounts[0]");
    EXPECT_NE(std::string(e.what()).find("contains ':'"), std::string::npos) << e.what();

    s.mounts = {{"relative", "/x", false}};
    EXPECT_EQ(error_of([&] { sbx_workspaces(s); }).key(), "mounts[0]");
    s.mounts = {{"/a", "x", false}};
    EXPECT_EQ(error_of([&] { sbx_workspaces(s); }).key(), "mounts[0]");
    // A control byte would reach `sbx ls`'s text table as it is: a newline forges a row.
    for (const std::string& bad : std::vector<std::string>{"/ws\nradial-turn-other-1 running",
                                                           "/ws\tx", "/ws\rx", "/ws\x7f"}) {
        s.mounts = {{"/ok", "/x", false}, {bad, "/y", false}};
        e = error_of([&] { sbx_workspaces(s); });
        EXPECT_EQ(e.key(), "mounts[1]") << bad;
        EXPECT_NE(std::string(e.what()).find("control character"), std::string::npos) << e.what();
        s.mounts = {{"/ok", bad, false}};
        EXPECT_EQ(error_of([&] { sbx_workspaces(s); }).key(), "mounts[0]") << bad;
    }
}

TEST(sbx_argv, MemoryInSbxUnits) {
    EXPECT_EQ(format_sbx_memory(4ull << 30), "4g");
    EXPECT_EQ(format_sbx_memory(512ull << 20), "512m");
    EXPECT_EQ(format_sbx_memory((1ull << 30) + 1), "1025m") << "rounded up, never below the ask";
    EXPECT_EQ(format_sbx_memory(1), "1m");
}

TEST(sbx_argv, ExecGolden) {
    EXPECT_EQ(sbx_exec_args("radial-turn-local-7", kOld),
              (Args{"exec", "-i", "radial-turn-local-7", "sh", "-s"}));
    EXPECT_EQ(sbx_exec_args("n", kNew), (Args{"exec", "--no-input", "-i", "n", "sh", "-s"}));
}

TEST(sbx_argv, PolicyIsAlwaysScopedToTheSandbox) {
    EXPECT_EQ(sbx_policy_args("radial-turn-local-7", 40123, kOld),
              (Args{"policy", "allow", "network", "--sandbox", "radial-turn-local-7",
                    "localhost:40123"}));
    EXPECT_EQ(sbx_policy_args("n", 1, kNew),
              (Args{"policy", "allow", "network", "--no-input", "--sandbox", "n", "localhost:1"}));
    for (std::uint32_t bad : {0u, 65536u}) {
        auto e = error_of([&] { sbx_policy_args("n", bad, kOld); });
        EXPECT_EQ(e.code(), RADIAL_E_INVALID);
        EXPECT_EQ(e.key(), "hostPorts");
    }
}

TEST(sbx_argv, RevokingAPolicyIsScopedLikeItsGrant) {
    EXPECT_EQ(sbx_policy_revoke_args("radial-turn-local-7", 40123, kOld),
              (Args{"policy", "rm", "network", "--sandbox", "radial-turn-local-7", "--resource",
                    "localhost:40123"}));
    EXPECT_EQ(sbx_policy_revoke_args("n", 1, kNew),
              (Args{"policy", "rm", "network", "--no-input", "--sandbox", "n", "--resource",
                    "localhost:1"}));
    for (std::uint32_t bad : {0u, 65536u})
        EXPECT_EQ(error_of([&] { sbx_policy_revoke_args("n", bad, kOld); }).key(), "hostPorts");
}

// An egress destination is one scoped rule, granted and revoked the same way (docs/design.md
// §9.7); nothing but host:port reaches sbx's argv.
TEST(sbx_argv, AnEgressDestinationIsOneRuleScopedToTheSandbox) {
    EXPECT_EQ(sbx_policy_resource_args("n", "*.pythonhosted.org:443", kNew),
              (Args{"policy", "allow", "network", "--no-input", "--sandbox", "n",
                    "*.pythonhosted.org:443"}));
    EXPECT_EQ(sbx_policy_revoke_resource_args("n", "pypi.org:443", kOld),
              (Args{"policy", "rm", "network", "--sandbox", "n", "--resource", "pypi.org:443"}));
    for (const char* bad :
         {"", "pypi.org", "pypi.org:", ":443", "-rf:443", "a b:443", "pypi.org:44x", "x\n:1",
          "--sandbox=other:1", "*:443", "a*b:443", "*.:443", "pypi.*:443"}) {
        auto e = error_of([&] { sbx_policy_resource_args("n", bad, kOld); });
        EXPECT_EQ(e.code(), RADIAL_E_INVALID) << bad;
        EXPECT_EQ(e.key(), "egress") << bad;
        EXPECT_EQ(error_of([&] { sbx_policy_revoke_resource_args("n", bad, kOld); }).key(),
                  "egress")
            << bad;
    }
}

TEST(sbx_argv, RemoveListVersionAndHelpGolden) {
    EXPECT_EQ(sbx_remove_args("n", kOld), (Args{"rm", "--force", "n"}));
    EXPECT_EQ(sbx_remove_args("n", kNew), (Args{"rm", "--no-input", "--force", "n"}));
    EXPECT_EQ(sbx_list_args(kOld), (Args{"ls"}));
    EXPECT_EQ(sbx_list_args(kNew), (Args{"ls", "--no-input", "--json"}));
    EXPECT_EQ(sbx_list_args(SbxFeatures{false, true}), (Args{"ls", "--json"}));
    EXPECT_EQ(sbx_version_args(), (Args{"version"}));
    EXPECT_EQ(sbx_help_args(), (Args{"--help"}));
    EXPECT_EQ(sbx_list_help_args(), (Args{"ls", "--help"}));
}

} // namespace
} // namespace radial::sandbox
