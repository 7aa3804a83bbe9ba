// host/turn/request_policy.cpp in process: image references, box targets, host sources and the
// exec limits, each naming the key it refuses.
#include "turn/request_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../../support/temp_dir.h"
#include "turn/turn_request.h"

namespace radial::turn {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string refusal(const std::function<void()>& f) {
    try {
        f();
    } catch (const RequestError& e) {
        return e.what();
    }
    return "(accepted)";
}

TEST(C14_RequestPolicy, ImageReferences) {
    for (const char* good : {"img", "radial/busybox:latest", "localhost:5000/a/b:1.0",
                             "docker.io/library/debian@sha256:"
                             "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                             "a_b__c-d.e/f"})
        EXPECT_TRUE(valid_image_reference(good)) << good;
    for (const char* bad : {"", "--privileged", "-x", "Busybox", "a b", "a:", ":tag", "a//b",
                            "a/b:-x", "img\n", "a@sha256:short"})
        EXPECT_FALSE(valid_image_reference(bad)) << bad;
}

TEST(C14_RequestPolicy, AllowedImagesArePatterns) {
    config::HostConfig cfg;
    cfg.allowed_images = {"radial/*", "debian:12"};
    EXPECT_EQ(refusal([&] { check_image("radial/busybox:latest", cfg); }), "(accepted)");
    EXPECT_EQ(refusal([&] { check_image("debian:12", cfg); }), "(accepted)");
    EXPECT_THAT(refusal([&] { check_image("debian:13", cfg); }),
                HasSubstr("matches none of run.allowedImages ('radial/*', 'debian:12')"));
    // A root filesystem directory (the bubblewrap runtime's image) is held to the mount rules.
    cfg.allowed_images = {"*"};
    test::TempDir d("radial-img");
    cfg.state_dir = "/nonexistent-state";
    EXPECT_EQ(check_image(d.path() + "/.", cfg), d.path());
    EXPECT_THAT(refusal([&] { check_image("/", cfg); }),
                HasSubstr("image '/' is, lies under or contains the protected host path '/'"));
    EXPECT_THAT(refusal([&] { check_image("/etc", cfg); }), HasSubstr("protected host path"));
}

TEST(C14_RequestPolicy, BoxTargetsAreNormalisedBeforeTheyAreJudged) {
    EXPECT_EQ(checked_box_target("t", "/data/./x/"), "/data/x");
    EXPECT_THAT(refusal([] { checked_box_target("mounts[0].target", "/work/../proc"); }),
                HasSubstr("mounts[0].target '/work/../proc' is '/proc', under /proc"));
    EXPECT_THAT(refusal([] { checked_box_target("t", "/a/../../sys/x"); }),
                HasSubstr("under /sys"));
    EXPECT_THAT(refusal([] { checked_box_target("t", "/x/.."); }), HasSubstr("whole file system"));
    EXPECT_THAT(refusal([] { checked_box_target("t", "/run/radial"); }),
                HasSubstr("under /run/radial"));
    EXPECT_EQ(checked_box_target("t", "/run/radiald"), "/run/radiald");
    EXPECT_EQ(checked_box_target("t", "/devices"), "/devices");
}

TEST(C14_RequestPolicy, ProtectedPathsConfiguredByTheOperatorAreRefused) {
    test::TempDir d("radial-pp");
    fs::create_directories(d / "ws/secret/inner");
    fs::create_directories(d / "other");
    config::HostConfig cfg;
    cfg.state_dir = d / "state";
    cfg.workspace_roots = {d.path()};
    cfg.protected_paths = {d / "ws/secret"};
    EXPECT_EQ(checked_host_source("workspace", d / "other", true, cfg), d / "other");
    // Under it, and around it.
    EXPECT_THAT(refusal([&] { checked_host_source("k", d / "ws/secret/inner", true, cfg); }),
                HasSubstr("the protected host path '" + d / "ws/secret" + "'"));
    EXPECT_THAT(refusal([&] { checked_host_source("k", d / "ws", true, cfg); }),
                HasSubstr("contains the protected host path"));
}

// radiald's own control files are never mounted, nor a tree holding one: a box that owned its
// workspace's top directory renamed a root-owned directory holding the config there and wrote
// another config, which the next radiald ran (network = "host"). docs/design.md §7.5.
TEST(C14_RequestPolicy, RadialdsOwnControlFilesAreNeverMounted) {
    test::TempDir d("radial-cf");
    for (const char* sub : {"cfg/etc", "plugins/runtimes", "codex/.codex", "plain"})
        fs::create_directories(d / sub);
    std::ofstream(d / "cfg/etc/radiald.toml") << "[run]\n";
    std::ofstream(d / "codex/.codex/auth.json") << "{}";
    config::HostConfig cfg;
    cfg.state_dir = d / "state";
    cfg.workspace_roots = {d.path()};
    cfg.file = d / "cfg/etc/radiald.toml";
    cfg.plugin_dirs = {d / "plugins/runtimes"};
    cfg.codex_auth = true;
    cfg.codex_auth_file = d / "codex/.codex/auth.json";
    EXPECT_EQ(checked_host_source("workspace", d / "plain", true, cfg), d / "plain");
    EXPECT_THAT(refusal([&] { checked_host_source("workspace", d / "cfg", true, cfg); }),
                HasSubstr("workspace '" + d / "cfg" +
                          "' is, lies under or contains radiald's config file '" +
                          d / "cfg/etc/radiald.toml" + "'"));
    EXPECT_THAT(refusal([&] { checked_host_source("mounts[0].source", d / "cfg/etc", true, cfg); }),
                HasSubstr("radiald's config file"));
    EXPECT_THAT(refusal([&] { checked_host_source("workspace", d / "plugins", true, cfg); }),
                HasSubstr("the plugin directory (run.pluginDir)"));
    EXPECT_THAT(refusal([&] { checked_host_source("workspace", d / "codex", true, cfg); }),
                HasSubstr("the operator's Codex credentials (run.codexAuthFile)"));
    // Without run.codexAuth radiald never reads that file: it is not radiald's to protect.
    cfg.codex_auth = false;
    EXPECT_EQ(checked_host_source("workspace", d / "codex", true, cfg), d / "codex");
}

// What the runtime's table names (its CLI, its box init, a unix:// engine) and the docker
// client's configuration in radiald's environment are refused by the host too: a warm pool's
// workspace is mounted by the host, which the runtime never sees (docs/design.md §7.5).
TEST(C14_RequestPolicy, WhatTheRuntimesTableAndTheDockerClientNameIsNeverMounted) {
    test::TempDir d("radial-rt");
    for (const char* sub : {"init", "engine", "client/dc", "plain"})
        fs::create_directories(d / sub);
    config::HostConfig cfg;
    cfg.state_dir = d / "state";
    cfg.workspace_roots = {d.path()};
    cfg.runtime_section.section = "run.docker";
    auto entry = [](std::string key, std::string value) {
        host::ConfigEntry e;
        e.key = std::move(key);
        e.string_value = std::move(value);
        return e;
    };
    cfg.runtime_section.entries = {entry("boxInit", d / "init/radial-init"),
                                   entry("host", "unix://" + d / "engine/d.sock"),
                                   entry("pull", "never")};
    ASSERT_EQ(::setenv("DOCKER_CONFIG", (d / "client/dc").c_str(), 1), 0);
    EXPECT_EQ(checked_host_source("workspace", d / "plain", true, cfg), d / "plain");
    EXPECT_THAT(refusal([&] { checked_host_source("workspace", d / "init", true, cfg); }),
                HasSubstr("what run.docker.boxInit names"));
    EXPECT_THAT(refusal([&] { checked_host_source("workspace", d / "engine", true, cfg); }),
                HasSubstr("what run.docker.host names '" + d / "engine/d.sock" + "'"));
    EXPECT_THAT(refusal([&] { checked_host_source("workspace", d / "client", true, cfg); }),
                HasSubstr("the docker client's configuration"));
    ::unsetenv("DOCKER_CONFIG");
}

TEST(C14_RequestPolicy, TheResolvedSourceIsWhatTheBoxGets) {
    test::TempDir d("radial-rs");
    fs::create_directories(d / "real");
    fs::create_directory_symlink(d / "real", d / "link");
    config::HostConfig cfg;
    cfg.state_dir = "/nonexistent-state";
    EXPECT_EQ(checked_host_source("workspace", d / "link", true, cfg), d / "real");
    EXPECT_EQ(checked_host_source("workspace", d / "real/../link", true, cfg), d / "real");
}

TEST(C14_RequestPolicy, ExecLimitsNameTheKeyAndTheLimit) {
    TurnRequest r;
    r.argv = {"echo", std::string(200'000, 'a')};
    EXPECT_THAT(refusal([&] { check_exec_size(r); }),
                HasSubstr("argv[1] is 200001 bytes; the kernel refuses any single argument"));
    r.argv = {"echo"};
    r.env = {{"BIG", std::string(200'000, 'b'), true}};
    EXPECT_THAT(refusal([&] { check_exec_size(r); }), HasSubstr("env.BIG is 200005 bytes"));
    r.env.clear();
    for (int i = 0; i < 40; ++i)
        r.env.push_back({"V" + std::to_string(i), std::string(100'000, 'c'), false});
    EXPECT_THAT(refusal([&] { check_exec_size(r); }), HasSubstr("(the kernel's ARG_MAX of"));
}

// The config keys: defaults, and a bad value refused naming file, line, column and key.
std::string config_error(const std::string& run_keys) {
    test::TempDir d("radial-pc");
    std::string file = d.write("radiald.toml", "[run]\n" + run_keys);
    try {
        config::load(file, std::nullopt, "/nonexistent");
    } catch (const config::ConfigError& e) {
        return std::string(e.what()).substr(file.size());
    }
    return "(accepted)";
}

TEST(C14_RequestPolicy, ConfigKeysHaveSafeDefaultsAndAreChecked) {
    config::HostConfig defaults = config::load(std::nullopt, std::nullopt, "/nonexistent");
    EXPECT_EQ(defaults.workspace_roots,
              (std::vector<std::string>{"/home", "/srv", "/tmp", "/var/tmp"}));
    EXPECT_EQ(defaults.allowed_images, (std::vector<std::string>{"*"}));
    EXPECT_TRUE(defaults.protected_paths.empty());

    test::TempDir d("radial-pc");
    std::string file = d.write("radiald.toml",
                               "[run]\nworkspaceRoots = [\"/srv/ws/\"]\n"
                               "allowedImages = [\"radial/*\"]\n"
                               "protectedPaths = [\"/srv/ws/keys\"]\n");
    auto cfg = config::load(file, std::nullopt, "/nonexistent");
    EXPECT_EQ(cfg.workspace_roots, (std::vector<std::string>{"/srv/ws"}));
    EXPECT_EQ(cfg.allowed_images, (std::vector<std::string>{"radial/*"}));
    EXPECT_EQ(cfg.protected_paths, (std::vector<std::string>{"/srv/ws/keys"}));

    EXPECT_EQ(config_error("workspaceRoots = [\"/\"]\n"),
              ":2:18: run.workspaceRoots: must not contain '/': it would let a request mount any "
              "host path; name the directories workspaces live in");
    EXPECT_EQ(config_error("workspaceRoots = [\"ws\"]\n"),
              ":2:18: run.workspaceRoots: 'ws' is not an absolute path");
    EXPECT_EQ(config_error("allowedImages = \"*\"\n"),
              ":2:17: run.allowedImages: must be an array of strings");
    EXPECT_EQ(config_error("protectedPaths = [1]\n"),
              ":2:18: run.protectedPaths: must be an array of strings");
}

} // namespace
} // namespace radial::turn
