// tests/plugins/docker/docker_argv_test.cpp — the pure docker CLI builders and parsers
// (plugins/docker/docker_argv.cpp): golden argv vectors, validation, list parsing, client env.
#include "docker_argv.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "box_user.h"

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

// With a box init, PID 1 is radial-init (mounted read-only), which gets the deadline and runs
// what docker would have run: the image's entrypoint, then the turn's argv.
TEST(docker_argv, UnderTheBoxInitTheEntrypointCarriesTheDeadline) {
    DockerSettings settings;
    settings.init_path = "/usr/lib/radial/radial-init";
    settings.kill_grace_ms = 2000;
    ContainerSpec spec = typical_spec();
    spec.timeout_ms = 3000;
    Argv argv = docker_run_argv(spec, settings, "", {"/entry", "--flag"});
    EXPECT_EQ(std::count(argv.begin(), argv.end(), "--init"), 0);
    auto v = std::find(argv.begin(), argv.end(), "/usr/lib/radial/radial-init:/.radial/init:ro");
    ASSERT_NE(v, argv.end());
    EXPECT_EQ(*(v - 1), "-v");
    EXPECT_EQ(*(v + 1), "--entrypoint");
    EXPECT_EQ(*(v + 2), "/.radial/init");
    auto image = std::find(argv.begin(), argv.end(), "radial/busybox:latest");
    ASSERT_NE(image, argv.end());
    EXPECT_EQ(Argv(image + 1, argv.end()),
              (Argv{"3000", "2000", "--", "/entry", "--flag", "sh", "-c", "echo hi"}));
}

TEST(docker_argv, WithoutATimeoutTheBoxInitGetsZero) {
    DockerSettings settings;
    settings.init_path = "/opt/radial-init";
    Argv argv = docker_run_argv(typical_spec(), settings);
    auto image = std::find(argv.begin(), argv.end(), "radial/busybox:latest");
    ASSERT_NE(image, argv.end());
    EXPECT_EQ(Argv(image + 1, argv.end()), (Argv{"0", "10000", "--", "sh", "-c", "echo hi"}));
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
    Argv expected = {"docker",
                     "--host",
                     "unix:///run/docker.sock",
                     "run",
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
                     "/tmp:rw,exec,nosuid,nodev,size=268435456",
                     "--network",
                     "none",
                     "-v",
                     "/srv/radial/work:/work",
                     "-v",
                     "/srv/radial/bundle:/bundle:ro",
                     "-w",
                     "/work",
                     "--env-file",
                     "/proc/self/fd/0",
                     "-e",
                     "GH_TOKEN",
                     "--cidfile",
                     "/tmp/radial-docker-x/cid",
                     "radial/busybox:latest",
                     "sh",
                     "-c",
                     "echo hi"};
    EXPECT_EQ(docker_run_argv(typical_spec(), settings, "/tmp/radial-docker-x/cid"), expected);
}

TEST(docker_argv, AnOciRuntimeBecomesDashDashRuntimeAndNoneLeavesTheEnginesDefault) {
    DockerSettings settings;
    Argv plain = docker_run_argv(typical_spec(), settings);
    EXPECT_EQ(std::find(plain.begin(), plain.end(), "--runtime"), plain.end());
    settings.oci_runtime = "runsc";
    Argv gvisor = docker_run_argv(typical_spec(), settings);
    Argv head = {"docker",    "run",
                 "--name",    "radial-turn-inst1-7",
                 "--label",   "radial.label=radial-turn-inst1-7",
                 "--runtime", "runsc",
                 "--init"};
    ASSERT_GE(gvisor.size(), head.size());
    EXPECT_EQ(Argv(gvisor.begin(), gvisor.begin() + head.size()), head);
    // Everything else is the same hardened run: gVisor is a stronger boundary, not a looser one.
    gvisor.erase(gvisor.begin() + 6, gvisor.begin() + 8);
    EXPECT_EQ(gvisor, plain);
}

TEST(docker_argv, MinimalSpecUsesEverySettingsDefault) {
    ContainerSpec s;
    s.label = "b1";
    s.image = "img";
    s.argv = {"true"};
    Argv expected = {"docker",
                     "run",
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
                     "/tmp:rw,exec,nosuid,nodev,size=268435456",
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
    s.user = "1000:1000";
    s.read_only_rootfs = Tristate::no;
    s.tmpfs = {{"/tmp", 1 << 20}, {"/cache", 0}};
    s.network = "host";
    s.extra_hosts = {"db:127.0.0.1"};
    Argv expected = {"/opt/docker",
                     "run",
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
                     "1000:1000",
                     "--tmpfs",
                     "/tmp:rw,exec,nosuid,nodev,size=1048576",
                     "--tmpfs",
                     "/cache:rw,exec,nosuid,nodev,size=268435456",
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

TEST(docker_argv, ClientSensitiveNamesAreRecognisedIgnoringCase) {
    for (const char* name : {"LD_PRELOAD",
                             "LD_LIBRARY_PATH",
                             "LD_AUDIT",
                             "ld_preload",
                             "GCONV_PATH",
                             "GETCONF_DIR",
                             "GLIBC_TUNABLES",
                             "HOSTALIASES",
                             "LOCALDOMAIN",
                             "LOCPATH",
                             "MALLOC_ARENA_MAX",
                             "MALLOC_TRACE",
                             "NIS_PATH",
                             "NLSPATH",
                             "RESOLV_HOST_CONF",
                             "RES_OPTIONS",
                             "TMPDIR",
                             "TZDIR",
                             "TZ",
                             "GODEBUG",
                             "GOGC",
                             "GOMAXPROCS",
                             "GOTRACEBACK",
                             "GOMEMLIMIT",
                             "GOROOT",
                             "DOCKER_HOST",
                             "DOCKER_CONFIG",
                             "HTTP_PROXY",
                             "https_proxy",
                             "No_Proxy",
                             "ALL_PROXY",
                             "SSL_CERT_FILE",
                             "SSL_CERT_DIR",
                             "PATH",
                             "HOME",
                             "XDG_CONFIG_HOME",
                             "LANG",
                             "LC_ALL",
                             "OTEL_EXPORTER_OTLP_ENDPOINT",
                             "SSH_AUTH_SOCK",
                             "OPENSSL_CONF",
                             "AWS_CONFIG_FILE",
                             "SHELL"})
        EXPECT_TRUE(client_sensitive_env(name)) << name;
    for (const char* name : {"GH_TOKEN", "API_KEY", "CI", "RUN", "X", "PATHS_FILE", "MY_LD_PRELOAD",
                             "HOMEPAGE", "TERM", "C06_MARK"})
        EXPECT_FALSE(client_sensitive_env(name)) << name;
}

TEST(docker_argv, ClientSensitiveEnvGoesThroughTheEnvFileNeverTheArgvOrClientEnv) {
    ContainerSpec s = typical_spec();
    s.env = {{"GH_TOKEN", kSecret, true},
             {"LD_PRELOAD", "/tmp/evil.so", false},
             {"DOCKER_HOST", "tcp://evil:2375", false},
             {"PATH", "/opt/bin:/usr/bin:/bin", false},
             {"HOME", "  it's \"home\" $X \xE2\x9C\x93 ", true},
             {"MULTI", "line1\nline2\n", true}};
    Argv argv = docker_run_argv(s, {}, "/tmp/x/cid");
    EXPECT_EQ(std::count(argv.begin(), argv.end(), "--env-file"), 1);
    auto file = std::find(argv.begin(), argv.end(), "--env-file");
    ASSERT_NE(file, argv.end());
    EXPECT_EQ(*(file + 1), "/proc/self/fd/0");
    for (const char* name : {"LD_PRELOAD", "DOCKER_HOST", "PATH", "HOME"})
        EXPECT_EQ(std::find(argv.begin(), argv.end(), name), argv.end()) << name;
    for (const char* name : {"GH_TOKEN", "MULTI"}) {
        auto e = std::find(argv.begin(), argv.end(), name);
        ASSERT_NE(e, argv.end()) << name;
        EXPECT_EQ(*(e - 1), "-e");
    }
    for (const auto& a : argv)
        for (const auto& e : s.env) EXPECT_EQ(a.find(e.value), std::string::npos) << a;

    EXPECT_EQ(docker_env_file(s),
              "LD_PRELOAD=/tmp/evil.so\nDOCKER_HOST=tcp://evil:2375\n"
              "PATH=/opt/bin:/usr/bin:/bin\n"
              "HOME=  it's \"home\" $X \xE2\x9C\x93 \n");
    EnvMap env = docker_client_env(s, {{"PATH", "/usr/bin:/bin"}, {"HOME", "/root"}});
    EXPECT_EQ(env, (EnvMap{{"PATH", "/usr/bin:/bin"},
                           {"HOME", "/root"},
                           {"GH_TOKEN", kSecret},
                           {"MULTI", "line1\nline2\n"}}));
    EXPECT_EQ(docker_env_file(typical_spec()), "LANG=C.UTF-8\n");
    s.env = {{"GH_TOKEN", kSecret, true}};
    EXPECT_EQ(docker_env_file(s), "");
    argv = docker_run_argv(s, {});
    EXPECT_EQ(std::find(argv.begin(), argv.end(), "--env-file"), argv.end());
}

TEST(docker_argv, ClientSensitiveValuesTheEnvFileCannotCarryAreRefusedNamingOnlyTheVariable) {
    const std::string secret = "s3cr3t-value";
    const std::pair<std::string, std::string> cases[] = {
        {secret + "\nmore", "contains a newline"},
        {secret + "\r", "ends with a carriage return"},
        {secret + "\xff\xfe", "is not valid UTF-8"},
        {secret + "\xC0\xAF", "is not valid UTF-8"},     // overlong '/'
        {secret + "\xED\xA0\x80", "is not valid UTF-8"}, // a surrogate
        {secret + std::string(65536, 'x'), "is longer than"}};
    for (const auto& [value, cause] : cases) {
        ContainerSpec s = typical_spec();
        s.env = {{"GH_TOKEN", kSecret, true}, {"LD_PRELOAD", value, true}};
        std::string message = refusal(s, "env[1]");
        EXPECT_NE(message.find("value of 'LD_PRELOAD' " + cause), std::string::npos) << message;
        EXPECT_NE(message.find("--env-file"), std::string::npos) << message;
        EXPECT_EQ(message.find(secret), std::string::npos) << "the value leaked: " << message;
    }
    // At the limit, and with a carriage return inside rather than at the end: carried.
    ContainerSpec s = typical_spec();
    s.env = {{"PATH", std::string(65535 - 5, 'p'), false}, {"TZ", "a\rb", false}};
    EXPECT_NO_THROW(docker_run_argv(s, {}));
    // An ordinary name keeps the client-environment route, which carries any value but NUL.
    s.env = {{"PEM", "-----BEGIN-----\nabc\r\n\xff-----END-----\r", true}};
    EXPECT_NO_THROW(docker_run_argv(s, {}));
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
    EXPECT_NO_THROW(docker_run_argv(s, {}));
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
    EXPECT_NO_THROW(docker_run_argv(s, settings));
    settings.host_cpus_milli = 0; // unknown: docker decides
    s.cpus_milli = 64000;
    EXPECT_NO_THROW(docker_run_argv(s, settings));
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

TEST(docker_argv, TheEnginesRuntimesAreAskedForAndParsed) {
    DockerSettings settings;
    settings.host = "unix:///nonexistent.sock";
    EXPECT_EQ(docker_runtimes_argv(settings), (Argv{"docker", "--host", "unix:///nonexistent.sock",
                                                    "info", "--format", "{{json .Runtimes}}"}));
    // As docker 20.10 prints them after runsc was registered in daemon.json.
    EXPECT_EQ(parse_runtime_names(R"({"runc":{"path":"runc"},"runsc":{"path":"/usr/bin/runsc",)"
                                  R"("runtimeArgs":["--network=none","--platform=ptrace"]}})"
                                  "\n"),
              (std::vector<std::string>{"runc", "runsc"}));
    EXPECT_EQ(parse_runtime_names("{}"), std::vector<std::string>{});
    EXPECT_EQ(parse_runtime_names(""), std::nullopt);
    EXPECT_EQ(parse_runtime_names("null"), std::nullopt);
    EXPECT_EQ(parse_runtime_names("[\"runc\"]"), std::nullopt);
    EXPECT_EQ(parse_runtime_names("Cannot connect to the Docker daemon"), std::nullopt);
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

TEST(docker_argv, InspectArgvAndStateParsing) {
    DockerSettings settings;
    const std::string id(64, 'a');
    EXPECT_EQ(docker_inspect_argv(settings, id), (Argv{"docker", "inspect", "--type", "container",
                                                       "--format", "{{json .State}}", id}));
    // As docker 20.10 prints them: a start failure, an OOM kill, a normal exit.
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

TEST(docker_argv, ClientEnvPassesThroughOnlyClientVariablesThenOrdinarySpecVariables) {
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
                       {"WEIRD", "semi;colon:colon\nline 'q' \"d\" $X \xE2\x9C\x93"}};
    EXPECT_EQ(env, expected); // LANG, client-sensitive, is in the env-file instead
}

TEST(docker_argv, ClientEnvKeepsTheOperatorsHomeAndPathWhenTheSpecSetsThem) {
    ContainerSpec s = typical_spec();
    s.env.push_back({"HOME", "/work", false});
    s.env.push_back({"PATH", "/work/bin", false});
    EnvMap env = docker_client_env(s, {{"HOME", "/root"}, {"PATH", "/usr/bin"}});
    EXPECT_EQ(env.at("HOME"), "/root");
    EXPECT_EQ(env.at("PATH"), "/usr/bin");
    EXPECT_FALSE(env.contains("DOCKER_CONFIG"));
    env = docker_client_env(s, {});
    EXPECT_FALSE(env.contains("HOME"));
    EXPECT_FALSE(env.contains("PATH"));
}

} // namespace
} // namespace radial::docker
