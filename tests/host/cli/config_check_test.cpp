// `radiald config check`: the real radiald binary with fake plugins (no engine needed). Every
// problem is one line naming file:line:col and key, and a good config is described without a
// single file being created.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../../support/process_runner.h"
#include "../../support/small_disk.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

struct CheckSetup {
    test::TempDir dir{"radial-config-check"};
    std::string plugins = dir / "plugins";
    std::string state = dir / "state";
    std::string config = dir / "radiald.toml";
    CheckSetup() {
        fs::create_directory(plugins);
        fs::copy_file(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_good/fake.so",
                      plugins + "/fake.so");
    }
    // A config selecting the fake runtime, its own state directory, then `extra_run` in [run] and
    // `rest` after it.
    void write_config(const std::string& extra_run = "", const std::string& rest = "") {
        dir.write("radiald.toml",
                  "[run]\ncontainerRuntime = \"fake\"\npluginDir = \"plugins\"\nstateDir = \"" +
                      state + "\"\n" + extra_run + rest);
    }
    test::ProcessResult check(std::vector<std::string> global = {}) {
        std::vector<std::string> a{RADIALD_PATH};
        a.insert(a.end(), global.begin(), global.end());
        for (const char* s : {"config", "check", "--config"}) a.emplace_back(s);
        a.push_back(config);
        return test::run_process(a);
    }
};

// One line on stderr, nothing on stdout, the given status.
void expect_problem(const test::ProcessResult& r, int status, const std::string& line) {
    EXPECT_EQ(r.exit_code, status) << r.err;
    EXPECT_EQ(r.err, "radiald[config] error: " + line + "\n");
    EXPECT_EQ(r.out, "");
}

// A config path that is a fifo is refused at once by every command that reads it (config check
// here): the refusal's masking of the file's secrets opened it again, blocking, until a writer.
TEST(ConfigCheck, AConfigThatIsAFifoIsRefusedWithoutWaiting) {
    CheckSetup s;
    ASSERT_EQ(::mkfifo(s.config.c_str(), 0600), 0);
    const auto r = test::run_process({RADIALD_PATH, "config", "check", "--config", s.config}, {},
                                     std::chrono::seconds(30));
    EXPECT_FALSE(r.timed_out) << "radiald waited on the fifo";
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("it is a fifo, not a regular file"));
}

// What `radiald run` and every turn then refuse, `config check` refuses too, naming the key and
// the fix: a state directory another user may change, one too long for the sockets radiald binds
// under it, a literal secret the secret set refuses (docs/design.md §7.4).
TEST(ConfigCheck, RefusesWhatRunOrEveryTurnWouldRefuse) {
    CheckSetup s;
    fs::create_directory(s.state);
    fs::permissions(s.state, fs::perms::all);
    s.write_config();
    auto r = s.check();
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_THAT(r.err, HasSubstr(s.state)) << r.err;
    EXPECT_THAT(r.err, HasSubstr("777")) << r.err;
    fs::permissions(s.state, fs::perms::owner_all);
    s.write_config();
    EXPECT_EQ(s.check().exit_code, 0);

    s.write_config("", "[redact]\nvalues = [\"abc\"]\n");
    r = s.check();
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_THAT(r.err, HasSubstr("redact.values: "));
    EXPECT_THAT(r.err, HasSubstr("shorter than the minimum of 6 bytes"));
    EXPECT_THAT(r.err, Not(HasSubstr("abc")));

    const std::string deep =
        s.dir.path() + "/" + std::string(80 - s.dir.path().size(), 'd') + "/state";
    s.state = deep;
    s.write_config();
    r = s.check();
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_THAT(r.err, HasSubstr("run.stateDir: '" + deep + "' is 87 bytes"));
    EXPECT_THAT(r.err, HasSubstr("choose a state directory of at most 60 bytes"));
    // The longest socket every turn may bind is a one-shot turn's with a generated id (28 bytes),
    // egress's: <stateDir>/turns/<id>/egress.sock. A state directory one byte over is refused; a
    // session's longer directory is checked when the session is made.
    auto of_bytes = [&](std::size_t n) {
        return s.dir.path() + "/" + std::string(n - 7 - s.dir.path().size(), 'f') + "/state";
    };
    s.state = of_bytes(61);
    s.write_config();
    r = s.check();
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_THAT(r.err, HasSubstr("<stateDir>/turns/<id>/egress.sock"));
    EXPECT_THAT(r.err, HasSubstr("would be 108 bytes"));
    // One that fits every socket a one-shot turn binds works.
    s.state = of_bytes(60);
    ASSERT_EQ(s.state.size(), 60u);
    s.write_config();
    r = s.check();
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

// A runtime whose boxes are root in a user namespace (radial.box-root/1) names the host ids that
// root is; radiald hands a turn's workspace to them, so ids that are a host account's, or no ids
// at all, refuse the runtime, naming it and what to check (docs/design.md §8.8).
TEST(ConfigCheck, BoxRootIdsThatAreSomeoneElsesAreRefused) {
    const passwd* nobody = ::getpwnam("nobody");
    ASSERT_NE(nobody, nullptr);
    CheckSetup s;
    for (const auto& [ids, says] : std::vector<std::pair<std::string, std::string>>{
             {std::to_string(nobody->pw_uid) + ":" + std::to_string(nobody->pw_uid + 7),
              "uid " + std::to_string(nobody->pw_uid) + " is host user 'nobody'"},
             {"4294967295:4294967295", "(uid_t)-1 is no id"}}) {
        s.write_config("", "[run.fake]\nboxRoot = \"" + ids + "\"\n");
        auto r = s.check();
        EXPECT_EQ(r.exit_code, 1) << ids << ": " << r.out;
        EXPECT_THAT(r.err, HasSubstr("runtime 'fake' says its boxes run as root in a user "
                                     "namespace of their own with host ids"))
            << r.err;
        EXPECT_THAT(r.err, HasSubstr(says)) << r.err;
        EXPECT_THAT(r.err, HasSubstr("dockerd --userns-remap")) << r.err;
    }
    s.write_config("", "[run.fake]\nboxRoot = \"2147000000:2147000000\"\n");
    auto ok = s.check();
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    EXPECT_THAT(ok.out, HasSubstr("2147000000:2147000000")) << ok.out;
}

// [redact] values are secrets in the file itself: a file every user may read is warned about, with
// the fix (docs/design.md §10.1); one only its owner (and its group) reads is not.
TEST(ConfigCheck, AConfigHoldingSecretsThatOthersMayReadIsWarnedAbout) {
    CheckSetup s;
    s.write_config("", "[redact]\nvalues = [\"Zq8wX41pL0k-literal\"]\n");
    fs::permissions(s.config, fs::perms::owner_read | fs::perms::owner_write |
                                  fs::perms::group_read | fs::perms::others_read);
    auto r = s.check();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("holds redact.values and is readable by every user (mode 644)"));
    EXPECT_THAT(r.err, HasSubstr("chmod 600 it"));
    EXPECT_THAT(r.err, Not(HasSubstr("Zq8wX41pL0k-literal")));
    for (const auto mode :
         {fs::perms::owner_read | fs::perms::owner_write,
          fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read}) {
        fs::permissions(s.config, mode);
        r = s.check();
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_THAT(r.err, Not(HasSubstr("redact.values"))) << "as the warning advises: 600, 640";
    }
}

// A denyRanges entry wins over allowRanges (docs/design.md §9.7): one holding an allowRanges
// entry whole leaves it allowing nothing, which is said; one inside an allowRanges entry carves
// it out, as meant, and is not.
TEST(ConfigCheck, AnAllowRangeADenyRangeHoldsWholeIsWarnedAbout) {
    CheckSetup s;
    s.write_config("",
                   "[run.egress]\nallow = [\"pkg.test:443\"]\nallowRanges = [\"10.0.0.0/8\", "
                   "\"192.168.7.0/24\"]\ndenyRanges = [\"10.1.2.3/32\", \"192.168.0.0/16\"]\n");
    auto r = s.check();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("run.egress.allowRanges' 192.168.7.0/24 lies inside denyRanges' "
                                 "192.168.0.0/16, which wins: it allows nothing"));
    EXPECT_THAT(r.err, Not(HasSubstr("10.1.2.3"))) << "a carve-out is meant";
}

TEST(ConfigCheck, PrintsWhatRadialdWouldUseAndCreatesNothing) {
    CheckSetup s;
    s.write_config("maxConcurrentTurns = 3\nshutdownGrace = \"45s\"\n", "[run.fake]\ncaps = []\n");
    auto r = s.check();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_THAT(r.out, HasSubstr("config          " + s.config + "\n"));
    EXPECT_THAT(r.out, HasSubstr("runtime         fake 9.9.9 (ABI 1."));
    EXPECT_THAT(r.out, HasSubstr("preflight passed\n"));
    EXPECT_THAT(r.out, HasSubstr("plugin          " + s.plugins + "/fake.so\n"));
    EXPECT_THAT(r.out, HasSubstr("state dir       " + s.state + " (created at first start)\n"));
    EXPECT_THAT(r.out, HasSubstr("instance id     generated at first start (kept in " + s.state +
                                 "/instance-id)\n"));
    // The fake reports no capability, so "auto" resolves to tcp on loopback.
    EXPECT_THAT(r.out,
                HasSubstr("transport       tcp: bound on 127.0.0.1, boxes connect to 127.0.0.1\n"));
    EXPECT_THAT(
        r.out,
        HasSubstr(
            "limits          maxConcurrentTurns 3, shutdownGrace 45s, maxRecordBytes 1048576\n"));
    EXPECT_THAT(
        r.out,
        HasSubstr("[run.fake] (as set; the runtime's defaults for the rest)\n  caps = []\n"));
    EXPECT_THAT(r.out, HasSubstr("\nconfig ok\n"));
    EXPECT_FALSE(fs::exists(s.state)) << "config check created the state directory";
}

// The config's own secrets are masked in all it prints — a setting, a runtime's error, an error
// of another key quoting one — and a turn's --secret in an error about a flag read with the
// config (--runtime), before any turn's redaction exists.
TEST(ConfigCheck, TheConfigsOwnSecretsAreMaskedInAllItPrints) {
    CheckSetup s;
    const std::string secret = "sk-live-SECRETVALUE123";
    const std::string redact = "[redact]\nvalues = [\"" + secret + "\"]\n";
    s.write_config("", "[run.fake]\nhangCreateWhile = \"/nowhere/" + secret + "\"\n" + redact);
    fs::permissions(s.config, fs::perms::owner_read | fs::perms::owner_write);
    auto r = s.check();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("hangCreateWhile = \"/nowhere/[REDACTED:redact.values.0]\""));
    s.write_config("", "[run.fake]\nfailPreflight = \"engine " + secret + " is down\"\n" + redact);
    r = s.check();
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("engine [REDACTED:redact.values.0] is down"));
    s.write_config("stopGrace = \"" + secret + "\"\n", redact);
    r = s.check();
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("run.stopGrace: "));
    for (const auto* out : {&r.out, &r.err}) EXPECT_THAT(*out, Not(HasSubstr(secret)));

    s.write_config();
    const std::string token = "Zq8wX41pL0kAbCdEf9876";
    r = test::run_process({RADIALD_PATH, "turn", "--config", s.config, "--secret", "MY_TOKEN",
                           "--runtime", token, "--image", "img", "--", "true"},
                          {{"MY_TOKEN", token}});
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.err, HasSubstr("--runtime: '[REDACTED:MY_TOKEN]' is not a runtime id"));
    EXPECT_THAT(r.err, Not(HasSubstr(token)));
}

TEST(ConfigCheck, AnExistingStateDirectoryIsLeftAsItWas) {
    CheckSetup s;
    fs::create_directory(s.state);
    s.write_config();
    auto r = s.check();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("state dir       " + s.state + " (exists)\n"));
    EXPECT_THAT(r.out, HasSubstr("instance id     generated at first start"));
    EXPECT_TRUE(fs::is_empty(s.state)) << "config check wrote into the state directory";
}

TEST(ConfigCheck, ShowsTheInstanceIdGeneratedEarlier) {
    CheckSetup s;
    fs::create_directory(s.state);
    s.dir.write("state/instance-id", "abc123def456\n");
    s.write_config();
    auto r = s.check();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("instance id     abc123def456 (generated, kept in " + s.state +
                                 "/instance-id)\n"));
}

TEST(ConfigCheck, ShowsTheConfiguredInstanceId) {
    CheckSetup s;
    s.write_config("instanceId = \"prod1\"\n");
    auto r = s.check();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("instance id     prod1 (run.instanceId)\n"));
}

// docs/design.md §8.7: the check `radiald run` and `radiald turn` make at startup, made here too.
// 65534 is `nobody` in passwd.
TEST(ConfigCheck, ABoxIdRangeAHostAccountUsesIsRefusedAsRunRefusesIt) {
    CheckSetup s;
    s.write_config("boxIdRange = \"65534-65534\"\n");
    auto r = s.check();
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("radiald[config] error: " + s.config +
                                 ":5:14: run.boxIdRange 65534-65534: host user '"));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
}

TEST(ConfigCheck, AnUnknownRunKeyIsNamedWithItsPosition) {
    CheckSetup s;
    s.write_config("maxConcurentTurns = 3\n");
    expect_problem(s.check(), 2,
                   s.config +
                       ":5:21: run.maxConcurentTurns: unknown key; did you mean "
                       "'maxConcurrentTurns'? (see the configuration reference in "
                       "docs/configuration.md)");
}

TEST(ConfigCheck, AKeyTheRuntimeRefusesIsNamedWithItsPosition) {
    CheckSetup s;
    s.write_config("", "[run.fake]\nbogus = 1\n");
    auto r = s.check();
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("radiald[config] error: " + s.config + ":6:9: run.fake.bogus: "));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
}

TEST(ConfigCheck, AFailingPreflightIsReported) {
    CheckSetup s;
    s.write_config("",
                   "[run.fake]\nfailPreflight = \"engine at unix:///nowhere is not answering\"\n");
    expect_problem(s.check(), 1,
                   "runtime 'fake' cannot run boxes: engine at unix:///nowhere is not answering");
}

TEST(ConfigCheck, AUnixTransportTheRuntimeCannotPassIsRefused) {
    CheckSetup s;
    s.write_config("turnTransport = \"unix\"\n");
    auto r = s.check();
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(
        r.err,
        HasSubstr(
            "radiald[config] error: " + s.config +
            ":5:17: run.turnTransport is \"unix\" but run.containerRuntime 'fake' cannot pass"));
    EXPECT_EQ(r.out, "");
}

TEST(ConfigCheck, ANetworkTheRuntimeRefusesIsNamedWithItsPosition) {
    CheckSetup s;
    s.write_config("network = \"bridge\"\n", "[run.fake]\nrefuse = [\"network\"]\n");
    expect_problem(
        s.check(), 1,
        s.config + ":5:11: run.network: runtime 'fake' refuses it: refused by test config");
}

TEST(ConfigCheck, ATableForAnotherRuntimeIsRefused) {
    CheckSetup s;
    s.write_config("", "[run.docker]\nmemory = \"1g\"\n");
    auto r = s.check();
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(
        r.err,
        HasSubstr(
            s.config +
            ":5:1: run.docker: configures runtime 'docker' but run.containerRuntime is 'fake'"));
    EXPECT_EQ(r.out, "");
}

TEST(ConfigCheck, AMissingRuntimeIsNamed) {
    CheckSetup s;
    s.dir.write("radiald.toml",
                "[run]\ncontainerRuntime = \"nothere\"\npluginDir = \"plugins\"\nstateDir = \"" +
                    s.state + "\"\n");
    auto r = s.check();
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("run.containerRuntime 'nothere' names no installed runtime; the "
                                 "known runtimes are 'fake'"));
    EXPECT_FALSE(fs::exists(s.state));
}

TEST(ConfigCheck, AStateDirThatIsAFileIsRefused) {
    CheckSetup s;
    s.dir.write("state", "not a directory\n");
    s.write_config();
    expect_problem(s.check(), 1,
                   s.config + ":4:12: run.stateDir: '" + s.state +
                       "' exists and is not a directory; remove it or choose another path");
}

// A state directory on a read-only file system (a backup mounted to be looked at, a disk the
// kernel remounted read-only) passed config check; `radiald run` then failed at its journal and
// every turn with it. So did a missing one that could not be created there.
TEST(ConfigCheck, AStateDirOnAReadOnlyFileSystemIsRefused) {
    CheckSetup s;
    const std::string mount = s.dir / "ro";
    test::SmallDisk disk(mount, "1m");
    ASSERT_TRUE(disk.ok()) << "mounting a tmpfs needs root: the suite runs as root";
    s.state = mount + "/state";
    fs::create_directory(s.state);
    ASSERT_EQ(::mount("tmpfs", mount.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr), 0);
    s.write_config();
    expect_problem(s.check(), 1,
                   s.config + ":4:12: run.stateDir: '" + s.state +
                       "' is on a read-only file system: radiald keeps its journal and its "
                       "turns' sockets there; make it writable (remount it read-write) or choose "
                       "another directory");
    s.state = mount + "/missing/state";
    s.write_config();
    expect_problem(s.check(), 1,
                   s.config + ":4:12: run.stateDir: '" + s.state +
                       "' does not exist and cannot be created: '" + mount +
                       "' is on a read-only file system; create it for radiald's user or choose "
                       "another directory");
}

// A unix metrics socket at a path a file holds, or under a file, passed config check and then
// stopped `radiald run` at its start; a directory missing now is said.
TEST(ConfigCheck, AMetricsSocketRunCouldNotServeIsRefused) {
    CheckSetup s;
    const std::string missing = s.dir / "no-such-dir";
    // Missing now: said, not refused (the packaged unit makes /run/radial at its start).
    s.write_config("metrics = \"unix:" + missing + "/metrics.sock\"\n");
    auto r = s.check();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("run.metrics: the socket's directory '" + missing +
                                 "' does not exist now; radiald run serves no metrics until it "
                                 "does (it tries again every 30 s"));
    // A file where the directory should be is never one.
    const std::string not_dir = s.dir.write("not-a-dir", "x\n");
    s.write_config("metrics = \"unix:" + not_dir + "/metrics.sock\"\n");
    r = s.check();
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("'" + not_dir + "' is not a directory"));
    const std::string file = s.dir.write("metrics.sock", "a file\n");
    s.write_config("metrics = \"unix:" + file + "\"\n");
    r = s.check();
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("'" + file +
                                 "' exists and is not a socket; remove it or pick "
                                 "another path"));
    s.write_config("metrics = \"unix:" + std::string(s.dir / "free.sock") + "\"\n");
    r = s.check();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("config ok"));
}

TEST(ConfigCheck, ProblemsAreJsonLinesWithLogFormatJson) {
    CheckSetup s;
    s.write_config("maxConcurentTurns = 3\n");
    auto r = s.check({"--log-format", "json"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    ASSERT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    auto j = nlohmann::json::parse(r.err);
    EXPECT_EQ(j["level"], "error");
    EXPECT_EQ(j["component"], "config");
    EXPECT_EQ(j["message"], s.config +
                                ":5:21: run.maxConcurentTurns: unknown key; did you mean "
                                "'maxConcurrentTurns'? (see the configuration reference in "
                                "docs/configuration.md)");
}

TEST(ConfigCheck, AnUnknownLogFormatIsAUsageError) {
    CheckSetup s;
    s.write_config();
    auto r = s.check({"--log-format", "xml"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("--log-format"));
}

TEST(ConfigCheck, ConfigWithoutASubcommandIsAUsageError) {
    auto r = test::run_process({RADIALD_PATH, "config"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("A subcommand is required"));
}

} // namespace
} // namespace radial
