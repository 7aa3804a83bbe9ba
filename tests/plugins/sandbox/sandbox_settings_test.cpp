// tests/plugins/sandbox/sandbox_settings_test.cpp — [run.sandbox] (plugins/sandbox/
// sandbox_settings.cpp): defaults, every key, and each refusal with its message.
#include "sandbox_settings.h"

#include <gtest/gtest.h>

#include "../support/config_builder.h"

namespace radial::sandbox {
namespace {

using radial::test::ConfigBuilder;

SandboxSettings parse(ConfigBuilder& b) {
    radial::plugin::Config config(b.get());
    SandboxSettings s = parse_sandbox_settings(config);
    config.finish();
    return s;
}

radial::plugin::Error refusal(ConfigBuilder& b) {
    try {
        parse(b);
    } catch (const radial::plugin::Error& e) {
        return e;
    }
    ADD_FAILURE() << "accepted";
    return radial::plugin::Error(RADIAL_OK, "");
}

TEST(sandbox_settings, Defaults) {
    ConfigBuilder b("run.sandbox");
    SandboxSettings s = parse(b);
    EXPECT_EQ(s.binary, "sbx");
    EXPECT_EQ(s.agent, "claude");
    EXPECT_TRUE(s.template_image.empty());
    EXPECT_TRUE(s.kits.empty());
    EXPECT_TRUE(s.create_args.empty());
    EXPECT_GT(s.command_timeout_ms, 0u);
    EXPECT_GT(s.create_timeout_ms, 0u);
    EXPECT_GT(s.probe_timeout_ms, 0u);
    EXPECT_EQ(s.memory_bytes, 4ull << 30);
}

TEST(sandbox_settings, MemoryAndCpusBoundTheVm) {
    ConfigBuilder b("run.sandbox");
    b.str("memory", "1536m").integer("cpus", 3);
    radial::plugin::Config config(b.get());
    SandboxSettings s = parse_sandbox_settings(config, 4);
    config.finish();
    EXPECT_EQ(s.memory_bytes, 1536ull << 20);
    EXPECT_EQ(s.cpus_milli, 3000u);
    ConfigBuilder none("run.sandbox");
    radial::plugin::Config defaults(none.get());
    EXPECT_EQ(parse_sandbox_settings(defaults, 1).cpus_milli, 1000u) << "capped at the host's";
    EXPECT_EQ(parse_sandbox_settings(defaults, 8).cpus_milli, 2000u);
}

TEST(sandbox_settings, MemoryAndCpusRefusals) {
    auto refused = [](ConfigBuilder& b) {
        radial::plugin::Config config(b.get());
        try {
            parse_sandbox_settings(config, 4);
        } catch (const radial::plugin::Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    ConfigBuilder small("run.sandbox");
    small.str("memory", "100m");
    EXPECT_EQ(refused(small),
              "reading run.sandbox.memory: 104857600 bytes is too little for a microVM with its "
              "own kernel; give at least \"512m\", e.g. \"4g\"");
    ConfigBuilder fraction("run.sandbox");
    fraction.floating("cpus", 1.5);
    EXPECT_EQ(refused(fraction),
              "reading run.sandbox.cpus: sbx takes a whole number of CPUs; give e.g. 1 or 2");
    ConfigBuilder many("run.sandbox");
    many.integer("cpus", 5);
    EXPECT_EQ(refused(many),
              "reading run.sandbox.cpus: 5 CPUs is more than this host's 4 online "
              "CPUs; give at most 4");
}

TEST(sandbox_settings, EveryKey) {
    ConfigBuilder b("run.sandbox");
    b.str("binary", "/opt/sbx/bin/sbx")
        .str("template", "radial/turn:3")
        .str("agent", "shell")
        .strings("kits", {"/etc/radial/kits/node", "oci://k/py:1"})
        .strings("createArgs", {"--branch", "auto"});
    SandboxSettings s = parse(b);
    EXPECT_EQ(s.binary, "/opt/sbx/bin/sbx");
    EXPECT_EQ(s.template_image, "radial/turn:3");
    EXPECT_EQ(s.agent, "shell");
    EXPECT_EQ(s.kits, (std::vector<std::string>{"/etc/radial/kits/node", "oci://k/py:1"}));
    EXPECT_EQ(s.create_args, (std::vector<std::string>{"--branch", "auto"}));
}

TEST(sandbox_settings, UnknownKeysAreRefusedByTheHelper) {
    ConfigBuilder b("run.sandbox");
    b.str("tempalte", "x");
    auto e = refusal(b);
    EXPECT_EQ(e.code(), RADIAL_E_INVALID);
    EXPECT_EQ(e.key(), "tempalte");
    EXPECT_EQ(std::string(e.what()),
              "unknown key 'tempalte' in [run.sandbox]; did you mean 'template'?");
    ConfigBuilder docker_key("run.sandbox");
    docker_key.str("pidsLimit", "5");
    EXPECT_EQ(refusal(docker_key).key(), "pidsLimit") << "a [run.docker] key is not a sandbox key";
}

TEST(sandbox_settings, RefusedValues) {
    struct Case {
        const char* key;
        std::string value;
        const char* message;
    };
    const Case cases[] = {
        {"binary", "",
         "reading run.sandbox.binary: the value is empty; give the sbx CLI's name or path"},
        {"template", "-x",
         "reading run.sandbox.template: '-x' starts with '-', which sbx reads as an option; give a "
         "template image such as \"radial/turn:latest\""},
        {"template", "a b",
         "reading run.sandbox.template: 'a b' contains whitespace or a control character; give a "
         "template image such as \"radial/turn:latest\""},
        {"agent", "",
         "reading run.sandbox.agent: the value is empty; give an sbx agent such as "
         "\"claude\" or \"shell\""},
    };
    for (const auto& c : cases) {
        ConfigBuilder b("run.sandbox");
        b.str(c.key, c.value);
        auto e = refusal(b);
        EXPECT_EQ(e.code(), RADIAL_E_INVALID) << c.key;
        EXPECT_EQ(e.key(), c.key);
        EXPECT_EQ(std::string(e.what()), c.message);
    }
}

TEST(sandbox_settings, KitsAndCreateArgsAreChecked) {
    ConfigBuilder kits("run.sandbox");
    kits.strings("kits", {"ok", "--evil"});
    EXPECT_EQ(refusal(kits).key(), "kits");
    ConfigBuilder rename("run.sandbox");
    rename.strings("createArgs", {"--name=mine"});
    auto e = refusal(rename);
    EXPECT_EQ(e.key(), "createArgs");
    EXPECT_EQ(std::string(e.what()),
              "reading run.sandbox.createArgs: '--name=mine' would rename the sandbox, whose name "
              "is the only mark of which radiald owns it; remove it");
    ConfigBuilder wrong_type("run.sandbox");
    wrong_type.str("kits", "one");
    EXPECT_EQ(refusal(wrong_type).key(), "kits");
}

} // namespace
} // namespace radial::sandbox
