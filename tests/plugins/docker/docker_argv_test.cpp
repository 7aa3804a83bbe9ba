// tests/plugins/docker/docker_argv_test.cpp — the pure request builders and parsers of the docker
// runtime (plugins/docker/docker_argv.cpp): golden create bodies, validation, list and state
// parsing, the pull argv.
#include "docker_argv.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "box_inspect.h"
#include "box_user.h"

namespace radial::docker {
namespace {

using Argv = std::vector<std::string>;
using nlohmann::json;

constexpr const char* kSecret = "ghp_FAKE0123456789abcdef";

ContainerSpec typical_spec() {
    ContainerSpec s;
    s.label = "radial-turn-inst1-7";
    s.image = "radial/busybox:latest";
    s.mounts = {{"/srv/radial/work", "/work", false}, {"/srv/radial/bundle", "/bundle", true}};
    s.argv = {"sh", "-c", "echo hi"};
    // Plain: without radial-init (these tests' settings) a secret variable is refused.
    s.env = {{"GH_TOKEN", kSecret, false}, {"LANG", "C.UTF-8", false}};
    s.workdir = "/work";
    return s;
}

// Expects docker_create_body to refuse `spec` with RADIAL_E_INVALID naming `field`; returns the
// text.
std::string refusal(const ContainerSpec& spec, const std::string& field,
                    const DockerSettings& settings = {}) {
    try {
        docker_create_body(spec, settings);
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), RADIAL_E_INVALID);
        EXPECT_EQ(e.key(), field);
        return e.what();
    }
    ADD_FAILURE() << "no error for field " << field;
    return {};
}

// With a box init, PID 1 is radial-init (mounted read-only), which gets the deadline and runs
// what docker would have run: the image's entrypoint, then the turn's argv.
TEST(docker_argv, UnderTheBoxInitTheEntrypointCarriesTheDeadline) {
    DockerSettings settings;
    settings.init_path = "/usr/lib/radial/radial-init";
    settings.kill_grace_ms = 2000;
    ContainerSpec spec = typical_spec();
    spec.env[0].secret = true;
    spec.timeout_ms = 3000;
    json body = docker_create_body(spec, settings, {"/entry", "--flag"});
    EXPECT_FALSE(body["HostConfig"].contains("Init"));
    EXPECT_EQ(body["HostConfig"]["Binds"][0], "/usr/lib/radial/radial-init:/.radial/init:ro");
    EXPECT_EQ(body["Entrypoint"], json::array({"/.radial/init"}));
    EXPECT_EQ(body["Cmd"].get<Argv>(), (Argv{"--env-from-stdin", "3000", "2000", "--", "/entry",
                                             "--flag", "sh", "-c", "echo hi"}));
}

// Secret variables never enter the create body under radial-init: the engine keeps the body on
// disk. They go to radial-init on the attach stream's stdin, after start (docs/design.md §13.8).
TEST(docker_argv, UnderTheBoxInitSecretsAreInNoPartOfTheCreateBody) {
    DockerSettings settings;
    settings.init_path = "/usr/lib/radial/radial-init";
    ContainerSpec spec = typical_spec();
    spec.env[0].secret = true;
    spec.env.push_back({"PEM", "-----BEGIN-----\nabc\r\n-----END-----\r", true});
    json body = docker_create_body(spec, settings);
    EXPECT_EQ(body.dump().find(kSecret), std::string::npos) << body.dump();
    EXPECT_EQ(body.dump().find("abc"), std::string::npos) << body.dump();
    EXPECT_EQ(body["Env"].get<Argv>(), (Argv{"LANG=C.UTF-8"}));
    EXPECT_EQ(body["OpenStdin"], true);
    EXPECT_EQ(body["AttachStdin"], true);
    EXPECT_EQ(body.value("StdinOnce", false), false);
    EXPECT_EQ(body["Cmd"][0], "--env-from-stdin");
    const std::string block = secret_env_block(spec);
    const std::string entries = "GH_TOKEN=" + std::string(kSecret) + '\0' +
                                "PEM=-----BEGIN-----\nabc\r\n-----END-----\r" + '\0';
    EXPECT_EQ(block, "radial-env " + std::to_string(entries.size()) + "\n" + entries);
    // No secret: no stdin, no flag, no block.
    spec.env = {{"LANG", "C.UTF-8", false}};
    body = docker_create_body(spec, settings);
    EXPECT_EQ(body["OpenStdin"], false);
    EXPECT_EQ(body["Cmd"][0], "0");
    EXPECT_EQ(secret_env_block(spec), "");
}

TEST(docker_argv, WithoutATimeoutTheBoxInitGetsZero) {
    DockerSettings settings;
    settings.init_path = "/opt/radial-init";
    ContainerSpec spec = typical_spec();
    spec.env[0].secret = true;
    json body = docker_create_body(spec, settings);
    EXPECT_EQ(body["Cmd"].get<Argv>(),
              (Argv{"--env-from-stdin", "0", "10000", "--", "sh", "-c", "echo hi"}));
}

TEST(docker_argv, ParsesAnImagesEntrypoint) {
    EXPECT_EQ(parse_entrypoint("null\n"), Argv{});
    EXPECT_EQ(parse_entrypoint(R"(["/bin/tini","--"])"), (Argv{"/bin/tini", "--"}));
    EXPECT_EQ(parse_entrypoint("[1]"), std::nullopt);
    EXPECT_EQ(parse_entrypoint("Error: No such image"), std::nullopt);
}

TEST(docker_argv, GoldenTypicalSpec) {
    DockerSettings settings;
    settings.host = "unix:///run/docker.sock";
    json expected = R"({
      "Image": "radial/busybox:latest",
      "Labels": {"radial.label": "radial-turn-inst1-7"},
      "User": "65534:65534",
      "AttachStdin": false, "AttachStdout": true, "AttachStderr": true,
      "OpenStdin": false, "Tty": false, "Healthcheck": {"Test": ["NONE"]},
      "WorkingDir": "/work",
      "Env": ["GH_TOKEN=ghp_FAKE0123456789abcdef", "LANG=C.UTF-8"],
      "Cmd": ["sh", "-c", "echo hi"],
      "HostConfig": {
        "Init": true,
        "LogConfig": {"Type": "none", "Config": {}},
        "CapDrop": ["ALL"],
        "SecurityOpt": ["no-new-privileges"],
        "PidsLimit": 256,
        "Memory": 2147483648,
        "MemorySwap": 2147483648,
        "NanoCpus": 2000000000,
        "ReadonlyRootfs": true,
        "Tmpfs": {"/tmp": "rw,exec,nosuid,nodev,size=268435456"},
        "NetworkMode": "none",
        "Binds": ["/srv/radial/work:/work", "/srv/radial/bundle:/bundle:ro"]
      }
    })"_json;
    EXPECT_EQ(docker_create_body(typical_spec(), settings), expected);
}

TEST(docker_argv, AnOciRuntimeIsTheOnlyDifferenceAndNoneLeavesTheEnginesDefault) {
    DockerSettings settings;
    json plain = docker_create_body(typical_spec(), settings);
    EXPECT_FALSE(plain["HostConfig"].contains("Runtime"));
    settings.oci_runtime = "runsc";
    json gvisor = docker_create_body(typical_spec(), settings);
    EXPECT_EQ(gvisor["HostConfig"]["Runtime"], "runsc");
    // Everything else is the same hardened box: gVisor is a stronger boundary, not a looser one.
    gvisor["HostConfig"].erase("Runtime");
    EXPECT_EQ(gvisor, plain);
}

// The pids cap under runsc is raised to the least a gVisor box starts with (docs/design.md §13.9);
// runc takes the spec's value as it is.
TEST(docker_argv, UnderRunscAPidsCapIsRaisedToTheRuntimesFloor) {
    DockerSettings settings;
    ContainerSpec s = typical_spec();
    s.pids_limit = 32;
    EXPECT_EQ(docker_create_body(s, settings)["HostConfig"]["PidsLimit"], 32);
    settings.oci_runtime = "runsc";
    EXPECT_EQ(docker_create_body(s, settings)["HostConfig"]["PidsLimit"], 128);
    s.pids_limit = 512;
    EXPECT_EQ(docker_create_body(s, settings)["HostConfig"]["PidsLimit"], 512);
}

TEST(docker_argv, AWritableLayerBoundIsTheStorageOptSizeInBytes) {
    DockerSettings settings;
    EXPECT_FALSE(docker_create_body(typical_spec(), settings)["HostConfig"].contains("StorageOpt"));
    settings.writable_layer_bytes = 10ull << 30;
    EXPECT_EQ(docker_create_body(typical_spec(), settings)["HostConfig"]["StorageOpt"],
              R"({"size": "10737418240"})"_json);
}

TEST(docker_argv, MinimalSpecUsesEverySettingsDefault) {
    ContainerSpec s;
    s.label = "b1";
    s.image = "img";
    s.argv = {"true"};
    json expected = R"({
      "Image": "img",
      "Labels": {"radial.label": "b1"},
      "User": "65534:65534",
      "AttachStdin": false, "AttachStdout": true, "AttachStderr": true,
      "OpenStdin": false, "Tty": false, "Healthcheck": {"Test": ["NONE"]},
      "Cmd": ["true"],
      "HostConfig": {
        "Init": true,
        "LogConfig": {"Type": "none", "Config": {}},
        "CapDrop": ["ALL"],
        "SecurityOpt": ["no-new-privileges"],
        "PidsLimit": 256,
        "Memory": 2147483648,
        "MemorySwap": 2147483648,
        "NanoCpus": 2000000000,
        "ReadonlyRootfs": true,
        "Tmpfs": {"/tmp": "rw,exec,nosuid,nodev,size=268435456"},
        "NetworkMode": "none"
      }
    })"_json;
    EXPECT_EQ(docker_create_body(s, DockerSettings{}), expected);
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
    s.user = "1000:1000";
    s.read_only_rootfs = Tristate::no;
    s.tmpfs = {{"/tmp", 1 << 20}, {"/cache", 0}};
    s.network = "host";
    s.extra_hosts = {"db:127.0.0.1"};
    json host = docker_create_body(s, settings)["HostConfig"];
    EXPECT_EQ(host["PidsLimit"], 32);
    EXPECT_EQ(host["Memory"], 4294967296ull);
    EXPECT_EQ(host["MemorySwap"], 4294967296ull);
    EXPECT_EQ(host["NanoCpus"], 1250000000ull);
    EXPECT_EQ(host["ReadonlyRootfs"], false);
    EXPECT_EQ(host["Tmpfs"], R"({"/tmp": "rw,exec,nosuid,nodev,size=1048576",
                                 "/cache": "rw,exec,nosuid,nodev,size=268435456,uid=1000,gid=1000,mode=0700"})"_json);
    EXPECT_EQ(host["NetworkMode"], "host");
    EXPECT_EQ(host["ExtraHosts"], json::array({"db:127.0.0.1"}));
    EXPECT_EQ(docker_create_body(s, settings)["User"], "1000:1000");
}

TEST(docker_argv, ReadOnlyRootfsYesAndUnsetBothGiveReadOnly) {
    ContainerSpec s = typical_spec();
    for (Tristate t : {Tristate::unset, Tristate::yes}) {
        s.read_only_rootfs = t;
        EXPECT_EQ(docker_create_body(s, {})["HostConfig"]["ReadonlyRootfs"], true);
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
    json body = docker_create_body(s, {});
    EXPECT_EQ(body["Cmd"].get<Argv>(), (Argv{"sh", "-c", tricky, "", "two words"}));
    EXPECT_EQ(body["HostConfig"]["Binds"],
              json::array({"/srv/my dir/it's $x\n\xC3\xA9:/work/sp ace"}));
    EXPECT_EQ(body["WorkingDir"], "/work/sp ace");
}

// C-02: values travel only in the request body; any name is allowed there, names a docker
// client would act on too (no client process exists), and a value the old env-file could not
// carry (newlines, a trailing CR) arrives as it is.
TEST(docker_argv, C02EnvValuesOnlyInTheBodyByteForByte) {
    ContainerSpec s = typical_spec();
    s.env.push_back({"LD_PRELOAD", "/x.so", false});
    s.env.push_back({"PEM", "-----BEGIN-----\nabc\r\n-----END-----\r", false});
    json body = docker_create_body(s, {});
    EXPECT_EQ(body["Env"].get<Argv>(),
              (Argv{"GH_TOKEN=" + std::string(kSecret), "LANG=C.UTF-8", "LD_PRELOAD=/x.so",
                    "PEM=-----BEGIN-----\nabc\r\n-----END-----\r"}));
    // A secret one, without radial-init, would be kept on disk with the body: refused, unnamed
    // by value (docs/design.md §6.3).
    s.env.back().secret = true;
    try {
        docker_create_body(s, {});
        FAIL() << "a secret went into the create body";
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), RADIAL_E_REFUSED);
        EXPECT_EQ(e.key(), "env[3]");
        EXPECT_NE(std::string(e.what()).find("run.docker.boxInit"), std::string::npos);
        EXPECT_EQ(std::string(e.what()).find("abc"), std::string::npos) << e.what();
    }
    EXPECT_EQ(docker_pull_argv({}, "img:1"), (Argv{"docker", "pull", "--quiet", "img:1"}));
}

TEST(docker_argv, InvalidEnvNamesAreRefusedNamingTheEntry) {
    for (const char* bad : {"1X", "A-B", "A=B", "", "A B", "\xC3\xA9"}) {
        ContainerSpec s = typical_spec();
        s.env.push_back({bad, "v", false});
        refusal(s, "env[2]");
    }
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

TEST(docker_argv, OnlyNumericNonRootUidAndGidAreAccepted) {
    const std::pair<const char*, const char*> refused[] = {
        {"root", "is a name"},
        {"nobody", "is a name"},
        {"nobody:nogroup", "is a name"},
        {"root:1000", "is a name"},
        {"0", "has no gid"},
        {"1000", "has no gid"},
        {"0:0", "is root (uid 0)"},
        {"000:1", "is root (uid 0)"},
        {"1000:0", "has gid 0, root's group"},
        {"1000:00", "has gid 0, root's group"},
        {"+0", "not two plain decimal numbers"},
        {"+0:+0", "not two plain decimal numbers"},
        {"1000:+0", "not two plain decimal numbers"},
        {"+1000:1000", "not two plain decimal numbers"},
        {"-1:1000", "not two plain decimal numbers"},
        {" 1000:1000", "not two plain decimal numbers"},
        {"1000:1000 ", "not two plain decimal numbers"},
        {"1000:1000:1", "not two plain decimal numbers"},
        {":1000", "not two plain decimal numbers"},
        {"4294967296:1", "out of range"},
        {"1:2147483648", "out of range"}};
    for (const auto& [user, cause] : refused) {
        ContainerSpec s = typical_spec();
        s.user = user;
        std::string message = refusal(s, "user");
        EXPECT_NE(message.find(cause), std::string::npos) << user << ": " << message;
        EXPECT_NE(message.find("65534:65534"), std::string::npos) << message;
        EXPECT_EQ(parse_box_user(user), std::nullopt) << user;
    }
    EXPECT_EQ(parse_box_user("1000:1000"), (BoxUser{1000, 1000}));
    EXPECT_EQ(parse_box_user("0100:2147483647"), (BoxUser{100, 2147483647}));
    ContainerSpec s = typical_spec();
    s.user = "1000:1000";
    EXPECT_NO_THROW(docker_create_body(s, {}));
}

// A root in a user namespace of its own (docs/design.md §8.8): exactly "0:0", and only once the
// engine was found remapping; every other spelling of root stays refused, and the home tmpfs is
// that root's.
TEST(docker_argv, RootIsAcceptedOnlyAsZeroZeroOnAnEngineThatRemaps) {
    ContainerSpec s = typical_spec();
    s.user = "0:0";
    s.tmpfs.push_back({"/home/radial", 1 << 20});
    EXPECT_NE(refusal(s, "user").find("--userns-remap"), std::string::npos);
    const json body = docker_create_body(s, {}, {}, /*namespaced_root=*/true);
    EXPECT_EQ(body["User"], "0:0");
    EXPECT_NE(body["HostConfig"]["Tmpfs"]["/home/radial"].get<std::string>().find(",uid=0,gid=0,"),
              std::string::npos);
    for (const char* root : {"0", "00:0", "0:00", "+0:0", "0:1", "1:0", "root:root", "0:0 "}) {
        ContainerSpec r = typical_spec();
        r.user = root;
        EXPECT_THROW(docker_create_body(r, {}, {}, true), radial::plugin::Error) << root;
        EXPECT_EQ(parse_box_user(root, true), std::nullopt) << root;
    }
    EXPECT_EQ(parse_box_user("0:0", true), (BoxUser{0, 0}));
    EXPECT_EQ(parse_box_user("0:0"), std::nullopt);
}

// GET /info of a remapped engine names "name=userns" and keeps its data in <root>/<uid>.<gid>.
TEST(docker_argv, TheRemappedRootIsReadFromTheEnginesInfo) {
    auto info = [](json options, json dir) {
        return json{{"SecurityOptions", std::move(options)}, {"DockerRootDir", std::move(dir)}};
    };
    const json userns = json::array({"name=seccomp,profile=default", "name=userns"});
    EXPECT_EQ(parse_userns_root(info(userns, "/var/lib/docker/100000.100000")),
              (UsernsRoot{100000, 100000}));
    EXPECT_EQ(parse_userns_root(info(userns, "/d/231072.231073/")), (UsernsRoot{231072, 231073}));
    // Not remapped, or a root dir that does not say the ids: no namespaced root.
    EXPECT_EQ(parse_userns_root(info(json::array({"name=seccomp"}), "/var/lib/docker/1.1")),
              std::nullopt);
    for (const char* dir : {"/var/lib/docker", "/d/0.0", "/d/100000.0", "/d/x.1", "/d/1.", "/d/.1",
                            "/d/99999999999.1", "/d/1.2.3", "/d/-1.5", ""})
        EXPECT_EQ(parse_userns_root(info(userns, dir)), std::nullopt) << dir;
    EXPECT_EQ(parse_userns_root(json{{"SecurityOptions", "name=userns"}}), std::nullopt);
    EXPECT_EQ(parse_userns_root(json::array()), std::nullopt);
}

TEST(docker_argv, TheSettingsUserIsCheckedToo) {
    DockerSettings settings;
    settings.user = "+0";
    std::string message = refusal(typical_spec(), "user", settings);
    EXPECT_NE(message.find("'+0'"), std::string::npos) << message;
}

TEST(docker_argv, CpusAboveTheHostsCountAreRefused) {
    DockerSettings settings;
    settings.host_cpus_milli = 2000;
    ContainerSpec s = typical_spec();
    s.cpus_milli = 2500;
    std::string message = refusal(s, "cpus", settings);
    EXPECT_NE(message.find("2.5 CPUs is more than this host's 2 online CPUs"), std::string::npos)
        << message;
    s.cpus_milli = 2000;
    EXPECT_NO_THROW(docker_create_body(s, settings));
    settings.host_cpus_milli = 0; // unknown: docker decides
    s.cpus_milli = 64000;
    EXPECT_NO_THROW(docker_create_body(s, settings));
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

TEST(docker_argv, PullArgvNamesTheEngine) {
    DockerSettings settings;
    settings.host = "unix:///nonexistent.sock";
    EXPECT_EQ(docker_pull_argv(settings, "img"),
              (Argv{"docker", "--host", "unix:///nonexistent.sock", "pull", "--quiet", "img"}));
}

TEST(docker_argv, TheEnginesRuntimesAreParsed) {
    // As docker 20.10's GET /info lists them after runsc was registered in daemon.json.
    EXPECT_EQ(parse_runtime_names(json::parse(R"({"runc":{"path":"runc"},"runsc":{"path":)"
                                              R"("/usr/bin/runsc","runtimeArgs":["--network=none",)"
                                              R"("--platform=ptrace"]}})")),
              (std::vector<std::string>{"runc", "runsc"}));
    EXPECT_EQ(parse_runtime_names(json::object()), std::vector<std::string>{});
    EXPECT_EQ(parse_runtime_names(json()), std::nullopt);
    EXPECT_EQ(parse_runtime_names(json::array({"runc"})), std::nullopt);
    EXPECT_EQ(parse_runtime_names(json("runc")), std::nullopt);
}

TEST(docker_argv, ParseContainerListIsExactAndSkipsOddEntries) {
    const std::string id1(64, 'a'), id2(64, 'b'), id3(64, 'c');
    json list = json::array({
        {{"Id", id1}, {"Labels", {{"radial.label", "radial-turn-inst1-7"}}}},
        {{"Id", id2}, {"Labels", {{"radial.label", "a\nb\tc\"\xC3\xA9"}}}},
        {{"Id", "not-hex"}, {"Labels", {{"radial.label", "x"}}}},
        {{"Id", id3}, {"Labels", {{"other", "x"}}}},
        {{"Id", id3}, {"Labels", nullptr}},
        {{"Id", id3}, {"Labels", {{"radial.label", ""}}}},
        "odd",
    });
    auto boxes = parse_container_list(list.dump());
    ASSERT_TRUE(boxes);
    ASSERT_EQ(boxes->size(), 3u);
    EXPECT_EQ((*boxes)[0], (ListedBox{id1, "radial-turn-inst1-7"}));
    EXPECT_EQ((*boxes)[1], (ListedBox{id2, "a\nb\tc\"\xC3\xA9"}));
    EXPECT_EQ((*boxes)[2], (ListedBox{id3, ""}));
    EXPECT_TRUE(parse_container_list("[]")->empty());
    EXPECT_EQ(parse_container_list("{\"message\":\"x\"}"), std::nullopt);
    EXPECT_EQ(parse_container_list("garbage"), std::nullopt);
}

TEST(docker_argv, StateParsing) {
    // As the engine 20.10 answers them: a start failure, an OOM kill, a normal exit.
    EXPECT_EQ(parse_container_state(
                  R"({"Status":"created","Running":false,"OOMKilled":false,"Dead":false,"Pid":0,)"
                  R"("ExitCode":128,"Error":"unable to find user x","StartedAt":)"
                  R"("0001-01-01T00:00:00Z","FinishedAt":"0001-01-01T00:00:00Z"})"
                  "\n"),
              (ContainerState{false, false, 128, "unable to find user x"}));
    EXPECT_EQ(
        parse_container_state(R"({"Status":"exited","OOMKilled":true,"ExitCode":137,"Error":"",)"
                              R"("StartedAt":"2026-11-29T14:12:21.208309192Z"})"),
        (ContainerState{true, true, 137, ""}));
    EXPECT_EQ(parse_container_state(""), std::nullopt);
    EXPECT_EQ(parse_container_state("null"), std::nullopt);
    EXPECT_EQ(parse_container_state(R"({"Status":"exited"})"), std::nullopt);
}

// A reclaimed box's end as the engine kept it: OOMKilled says the bound killed some process, and a
// workload that exited 0 was not ended by it (as a run's result says; radiald refuses OOM_KILLED
// with exit 0 for a contradiction).
TEST(docker_argv, AnInspectedBoxThatExitedZeroWasNotKilledByItsMemoryBound) {
    const auto oom = box_state_from_json(R"({"Status":"exited","OOMKilled":true,"ExitCode":137})");
    EXPECT_EQ(oom.flags, RADIAL_RUN_EXITED | RADIAL_RUN_OOM_KILLED);
    EXPECT_EQ(oom.exit_code, 137);
    const auto zero = box_state_from_json(R"({"Status":"exited","OOMKilled":true,"ExitCode":0})");
    EXPECT_EQ(zero.flags, RADIAL_RUN_EXITED);
    EXPECT_EQ(zero.exit_code, 0);
}

} // namespace
} // namespace radial::docker
