// tests/plugins/docker/docker_argv_test.cpp — the pure docker CLI builders and parsers
// (plugins/docker/docker_argv.cpp): golden argv vectors, validation, list parsing, client env.
#include "docker_argv.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace radial::docker {
namespace {

using Argv = std::vector<std::string>;

constexpr const char* kSecret = "ghp_FAKE0123456789abcdef";

ContainerSpec typical_spec() {
    ContainerSpec s;
    s.label = "radial-turn-inst1-7";
    s.image = "radial/busybox:latest";
    s.mounts = {{"/srv/radial/work", "/work", false}, {"/srv/radial/bundle", "/bundle", true}};
    s.argv = {"sh", "-c", "echo hi"};
    s.env = {{"GH_TOKEN", kSecret, true}, {"LANG", "C.UTF-8", false}};
    s.workdir = "/work";
    return s;
}

// Expects docker_run_argv to refuse `spec` with RADIAL_E_INVALID naming `field`; returns the text.
std::string refusal(const ContainerSpec& spec, const std::string& field,
                    const DockerSettings& settings = {}) {
    try {
        docker_run_argv(spec, settings);
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), RADIAL_E_INVALID);
        EXPECT_EQ(e.key(), field);
        return e.what();
    }
    ADD_FAILURE() << "no error for field " << field;
    return {};
}

TEST(docker_argv, GoldenTypicalSpec) {
    DockerSettings settings;
    settings.host = "unix:///run/docker.sock";
    Argv expected = {"docker",
                     "--host",
                     "unix:///run/docker.sock",
                     "run",
                     "--rm",
                     "--name",
                     "radial-turn-inst1-7",
                     "--label",
                     "radial.label=radial-turn-inst1-7",
                     "--init",
                     "--log-driver",
                     "none",
                     "--pull",
                     "missing",
                     "--cap-drop=ALL",
                     "--security-opt",
                     "no-new-privileges",
                     "--pids-limit",
                     "256",
                     "--memory",
                     "2147483648",
                     "--memory-swap",
                     "2147483648",
                     "--cpus",
                     "2",
                     "--user",
                     "65534:65534",
                     "--read-only",
                     "--tmpfs",
                     "/tmp:rw,nosuid,nodev,size=268435456",
                     "--network",
                     "none",
                     "-v",
                     "/srv/radial/work:/work",
                     "-v",
                     "/srv/radial/bundle:/bundle:ro",
                     "-w",
                     "/work",
                     "-e",
                     "GH_TOKEN",
                     "-e",
                     "LANG",
                     "--cidfile",
                     "/tmp/radial-docker-x/cid",
                     "radial/busybox:latest",
                     "sh",
                     "-c",
                     "echo hi"};
    EXPECT_EQ(docker_run_argv(typical_spec(), settings, "/tmp/radial-docker-x/cid"), expected);
}

TEST(docker_argv, MinimalSpecUsesEverySettingsDefault) {
    ContainerSpec s;
    s.label = "b1";
    s.image = "img";
    s.argv = {"true"};
    Argv expected = {"docker",
                     "run",
                     "--rm",
                     "--name",
                     "b1",
                     "--label",
                     "radial.label=b1",
                     "--init",
                     "--log-driver",
                     "none",
                     "--pull",
                     "missing",
                     "--cap-drop=ALL",
                     "--security-opt",
                     "no-new-privileges",
                     "--pids-limit",
                     "256",
                     "--memory",
                     "2147483648",
                     "--memory-swap",
                     "2147483648",
                     "--cpus",
                     "2",
                     "--user",
                     "65534:65534",
                     "--read-only",
                     "--tmpfs",
                     "/tmp:rw,nosuid,nodev,size=268435456",
                     "--network",
                     "none",
                     "img",
                     "true"};
    EXPECT_EQ(docker_run_argv(s, DockerSettings{}), expected);
}

TEST(docker_argv, SpecValuesOverrideSettings) {
    DockerSettings settings;
    settings.binary = "/opt/docker";
    settings.pull = "never";
    settings.memory_bytes = 1ull << 30;
    ContainerSpec s;
    s.label = "b2";
    s.image = "img";
    s.argv = {"true"};
    s.memory_bytes = 4ull << 30;
    s.cpus_milli = 1250;
    s.pids_limit = 32;
    s.user = "1000";
    s.read_only_rootfs = Tristate::no;
    s.tmpfs = {{"/tmp", 1 << 20}, {"/cache", 0}};
    s.network = "host";
    s.extra_hosts = {"db:127.0.0.1"};
    Argv expected = {"/opt/docker",
                     "run",
                     "--rm",
                     "--name",
                     "b2",
                     "--label",
                     "radial.label=b2",
                     "--init",
                     "--log-driver",
                     "none",
                     "--pull",
                     "never",
                     "--cap-drop=ALL",
                     "--security-opt",
                     "no-new-privileges",
                     "--pids-limit",
                     "32",
                     "--memory",
                     "4294967296",
                     "--memory-swap",
                     "4294967296",
                     "--cpus",
                     "1.25",
                     "--user",
                     "1000",
                     "--tmpfs",
                     "/tmp:rw,nosuid,nodev,size=1048576",
                     "--tmpfs",
                     "/cache:rw,nosuid,nodev,size=268435456",
                     "--network",
                     "host",
                     "--add-host",
                     "db:127.0.0.1",
                     "img",
                     "true"};
    EXPECT_EQ(docker_run_argv(s, settings), expected);
}

TEST(docker_argv, ReadOnlyRootfsYesAndUnsetBothGiveReadOnly) {
    ContainerSpec s = typical_spec();
    for (Tristate t : {Tristate::unset, Tristate::yes}) {
        s.read_only_rootfs = t;
        Argv argv = docker_run_argv(s, {});
        EXPECT_EQ(std::count(argv.begin(), argv.end(), "--read-only"), 1);
    }
}

TEST(docker_argv, CpusAreFormattedAsDockerReadsThem) {
    EXPECT_EQ(format_cpus(2000), "2");
    EXPECT_EQ(format_cpus(500), "0.5");
    EXPECT_EQ(format_cpus(1250), "1.25");
    EXPECT_EQ(format_cpus(10), "0.01");
    EXPECT_EQ(format_cpus(1001), "1.001");
}

TEST(docker_argv, QuotingSensitiveValuesPassThroughAsSingleElements) {
    ContainerSpec s = typical_spec();
    const std::string tricky = "it's a $HOME `x` \"q\" \\ line1\nline2 h\xC3\xA9llo \xE2\x9C\x93 *";
    s.argv = {"sh", "-c", tricky, "", "two words"};
    s.mounts = {{"/srv/my dir/it's $x\n\xC3\xA9", "/work/sp ace", false}};
    s.workdir = "/work/sp ace";
    Argv argv = docker_run_argv(s, {});
    ASSERT_GE(argv.size(), 5u);
    Argv tail(argv.end() - 5, argv.end());
    EXPECT_EQ(tail, (Argv{"sh", "-c", tricky, "", "two words"}));
    EXPECT_NE(std::find(argv.begin(), argv.end(), "/srv/my dir/it's $x\n\xC3\xA9:/work/sp ace"),
              argv.end());
    EXPECT_NE(std::find(argv.begin(), argv.end(), "/work/sp ace"), argv.end());
}

TEST(docker_argv, C02EnvNamesOnlyAndNoSecretValueAnywhere) {
    ContainerSpec s = typical_spec();
    Argv argv = docker_run_argv(s, {}, "/tmp/x/cid");
    for (const auto& a : argv) {
        EXPECT_EQ(a.find(kSecret), std::string::npos) << a;
        EXPECT_EQ(a.find("C.UTF-8"), std::string::npos) << a;
        EXPECT_NE(a, "GH_TOKEN=" + std::string(kSecret));
    }
    auto e = std::find(argv.begin(), argv.end(), "GH_TOKEN");
    ASSERT_NE(e, argv.end());
    EXPECT_EQ(*(e - 1), "-e");
    for (std::size_t i = 0; i + 1 < argv.size(); ++i)
        if (argv[i] == "-e") {
            EXPECT_EQ(argv[i + 1].find('='), std::string::npos) << argv[i + 1];
        }
}

TEST(docker_argv, InvalidEnvNamesAreRefusedNamingTheEntry) {
    for (const char* bad : {"1X", "A-B", "A=B", "", "A B", "\xC3\xA9"}) {
        ContainerSpec s = typical_spec();
        s.env.push_back({bad, "v", false});
        refusal(s, "env[2]");
    }
}

TEST(docker_argv, DockerPrefixedEnvIsRefusedSayingWhy) {
    ContainerSpec s = typical_spec();
    s.env.insert(s.env.begin(), {"DOCKER_HOST", "tcp://evil:2375", false});
    std::string message = refusal(s, "env[0]");
    EXPECT_NE(message.find("DOCKER_HOST"), std::string::npos) << message;
    EXPECT_NE(message.find("docker client's own environment"), std::string::npos) << message;
    EXPECT_EQ(message.find("tcp://evil"), std::string::npos) << "a value leaked: " << message;
}

TEST(docker_argv, DuplicateEnvAndNulValuesAreRefused) {
    ContainerSpec s = typical_spec();
    s.env.push_back({"LANG", "C", false});
    refusal(s, "env[2]");
    s = typical_spec();
    s.env[0].value = std::string("a\0b", 3);
    std::string message = refusal(s, "env[0]");
    EXPECT_EQ(message.find(std::string("a\0b", 3)), std::string::npos);
}

TEST(docker_argv, MountsMustBeAbsoluteAndColonFree) {
    ContainerSpec s = typical_spec();
    s.mounts[1].source = "relative/dir";
    std::string message = refusal(s, "mounts[1]");
    EXPECT_EQ(message,
              "preparing box 'radial-turn-inst1-7': mounts[1] source 'relative/dir' is not an "
              "absolute path; give an absolute path");
    s = typical_spec();
    s.mounts[0].source = "/srv/a:b";
    message = refusal(s, "mounts[0]");
    EXPECT_NE(message.find("contains ':'"), std::string::npos) << message;
    s = typical_spec();
    s.mounts[0].target = "/work:ro";
    refusal(s, "mounts[0]");
    s = typical_spec();
    s.mounts[0].target = "work";
    refusal(s, "mounts[0]");
}

TEST(docker_argv, RootUserIsRefused) {
    for (const char* root : {"root", "0", "0:0", "root:1000", "000"}) {
        ContainerSpec s = typical_spec();
        s.user = root;
        std::string message = refusal(s, "user");
        EXPECT_NE(message.find("never runs as root"), std::string::npos) << message;
    }
    ContainerSpec s = typical_spec();
    s.user = "1000:0"; // root group, non-root user: allowed
    EXPECT_NO_THROW(docker_run_argv(s, {}));
}

TEST(docker_argv, OptionLookingValuesAreRefused) {
    ContainerSpec s = typical_spec();
    s.image = "--privileged";
    refusal(s, "image");
    s = typical_spec();
    s.network = "--privileged";
    refusal(s, "network");
    s = typical_spec();
    s.extra_hosts = {"no-address"};
    refusal(s, "extraHosts[0]");
    s = typical_spec();
    s.workdir = "work";
    refusal(s, "workdir");
    s = typical_spec();
    s.tmpfs = {{"/x,size=1", 0}};
    refusal(s, "tmpfs[0]");
    s = typical_spec();
    s.label = "-bad";
    refusal(s, "label");
    s = typical_spec();
    s.argv = {};
    refusal(s, "argv");
    s = typical_spec();
    s.pids_limit = -1;
    refusal(s, "pidsLimit");
}

TEST(docker_argv, ShortCommandsHaveFixedShapes) {
    DockerSettings settings;
    EXPECT_EQ(docker_rm_argv(settings, {"abc", "def"}),
              (Argv{"docker", "rm", "--force", "--volumes", "abc", "def"}));
    EXPECT_EQ(docker_list_argv(settings),
              (Argv{"docker", "ps", "--all", "--no-trunc", "--filter", "label=radial.label",
                    "--format", "{{.ID}}\t{{json (.Label \"radial.label\")}}"}));
    settings.host = "unix:///nonexistent.sock";
    EXPECT_EQ(docker_info_argv(settings), (Argv{"docker", "--host", "unix:///nonexistent.sock",
                                                "info", "--format", "{{json .ServerVersion}}"}));
}

TEST(docker_argv, ParseDockerListIsExactAndSkipsOddLines) {
    const std::string id1(64, 'a'), id2(64, 'b'), id3(64, 'c');
    std::string output = id1 + "\t\"radial-turn-inst1-7\"\n" +    // plain
                         id2 + "\t\"a\\nb\\tc\\\"\\u00e9\"\r\n" + // escapes, CRLF
                         "not-hex\t\"x\"\n" +                     // not an id
                         id3 + "\tradial-turn-unquoted\n" +       // not JSON
                         "\n" +                                   // blank
                         id3 + "\t\"\"\n" +                       // empty label
                         id1.substr(0, 20);                       // truncated, no tab
    std::vector<ListedBox> boxes = parse_docker_list(output);
    ASSERT_EQ(boxes.size(), 3u);
    EXPECT_EQ(boxes[0], (ListedBox{id1, "radial-turn-inst1-7"}));
    EXPECT_EQ(boxes[1], (ListedBox{id2, "a\nb\tc\"\xC3\xA9"}));
    EXPECT_EQ(boxes[2], (ListedBox{id3, ""}));
    EXPECT_TRUE(parse_docker_list("").empty());
}

TEST(docker_argv, C07ServerVersionIsJudgedFromTheOutput) {
    EXPECT_EQ(parse_server_version("\"20.10.24+dfsg1\"\n"), "20.10.24+dfsg1");
    EXPECT_EQ(parse_server_version("\"\"\n"), std::nullopt); // dead socket, exit status 0 or 1
    EXPECT_EQ(parse_server_version(""), std::nullopt);
    EXPECT_EQ(parse_server_version("null"), std::nullopt);
    EXPECT_EQ(parse_server_version("Cannot connect to the Docker daemon"), std::nullopt);
}

TEST(docker_argv, ClientEnvPassesThroughOnlyClientVariablesThenTheSpec) {
    EnvMap parent = {{"PATH", "/usr/bin:/bin"},         {"HOME", "/root"},
                     {"DOCKER_HOST", "unix:///d.sock"}, {"XDG_RUNTIME_DIR", "/run/user/0"},
                     {"AWS_SECRET_ACCESS_KEY", "nope"}, {"LD_PRELOAD", "/evil.so"}};
    ContainerSpec s = typical_spec();
    s.env.push_back({"WEIRD", "semi;colon:colon\nline 'q' \"d\" $X \xE2\x9C\x93", false});
    EnvMap env = docker_client_env(s, parent);
    EnvMap expected = {{"PATH", "/usr/bin:/bin"},
                       {"HOME", "/root"},
                       {"DOCKER_HOST", "unix:///d.sock"},
                       {"XDG_RUNTIME_DIR", "/run/user/0"},
                       {"GH_TOKEN", kSecret},
                       {"LANG", "C.UTF-8"},
                       {"WEIRD", "semi;colon:colon\nline 'q' \"d\" $X \xE2\x9C\x93"}};
    EXPECT_EQ(env, expected);
}

TEST(docker_argv, ClientEnvKeepsTheOperatorsDockerConfigWhenTheSpecSetsHome) {
    ContainerSpec s = typical_spec();
    s.env.push_back({"HOME", "/work", false});
    EnvMap env = docker_client_env(s, {{"HOME", "/root"}});
    EXPECT_EQ(env.at("HOME"), "/work");
    EXPECT_EQ(env.at("DOCKER_CONFIG"), "/root/.docker");
    env = docker_client_env(s, {{"HOME", "/root"}, {"DOCKER_CONFIG", "/etc/docker-cli"}});
    EXPECT_EQ(env.at("DOCKER_CONFIG"), "/etc/docker-cli");
}

} // namespace
} // namespace radial::docker
