// The real radiald binary: every startup refusal is one line on stderr and a non-zero exit,
// never a crash; `radiald plugins` and `--version` report what they should.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../../support/box_id_leases.h"
#include "../../support/id_squatter.h"
#include "../../support/process_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

struct PluginSetup {
    test::TempDir dir{"radial-cli"};
    std::string plugins = dir / "plugins";
    PluginSetup(std::initializer_list<std::pair<std::string, std::string>> list,
                const std::string& extra = "") {
        fs::create_directory(plugins);
        for (const auto& [target, file] : list)
            fs::copy_file(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/" + target + "/" + file + ".so",
                          plugins + "/" + file + ".so");
        // Its own state directory: never the machine's /var/lib/radial (tests/README.md).
        dir.write("radiald.toml", "[run]\npluginDir = \"plugins\"\nstateDir = \"" +
                                      (dir / "state") + "\"\n" + extra);
    }
    test::ProcessResult turn(const std::string& runtime,
                             std::vector<std::string> argv = {"echo", "hi"}) {
        std::vector<std::string> a{RADIALD_PATH, "turn",  "--config", dir / "radiald.toml",
                                   "--runtime",  runtime, "--image",  "img",
                                   "--"};
        a.insert(a.end(), argv.begin(), argv.end());
        return test::run_process(a);
    }
};

// One line, naming the problem, and the conventional exit status for a host failure.
void expect_refusal(const test::ProcessResult& r, const std::string& fragment) {
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.err, HasSubstr(fragment));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
}

TEST(RadialdCli, RunsATurnThroughAFakePlugin) {
    PluginSetup s{{"fake_good", "fake"}};
    auto r = s.turn("fake", {"echo", "hello", "from", "fake"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "hello from fake\n");
}

// docs/design.md §3.6: a reader that takes nothing of radiald's stdout does not hold the turn's
// outcome: the record is written and radiald exits about run.outputStall after the reader last
// took something, and what it did not take is counted in the record.
TEST(RadialdCli, AReaderThatTakesNothingDoesNotHoldTheOutcome) {
    PluginSetup s{{{"fake_good", "fake"}}, "outputStall = \"1s\"\n"};
    const std::string record = s.dir / "record.json";
    constexpr unsigned long long kBytes = 32ull << 20;
    const auto t0 = std::chrono::steady_clock::now();
    // stdout is a pipe this test never reads.
    test::BackgroundProcess p(
        {RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml", "--runtime", "fake", "--image",
         "img", "--record-file", record, "--", "flood", std::to_string(kBytes)},
        s.dir / "stderr.txt", /*pipe_stdout=*/true);
    EXPECT_EQ(p.wait(std::chrono::seconds(60)), 0) << test::read_file(s.dir / "stderr.txt");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
    const auto rec = nlohmann::json::parse(test::read_file(record));
    EXPECT_EQ(rec.at("status"), "succeeded");
    const auto dropped = rec.at("outputDropped").at("stdoutBytes").get<unsigned long long>();
    EXPECT_GT(dropped, 0u);
    EXPECT_LE(dropped, kBytes);
    EXPECT_THAT(test::read_file(s.dir / "stderr.txt"), HasSubstr("run.outputStall"));
}

// docs/design.md §3.6: the box's last stderr bytes, without a newline, come before radiald's own
// line saying the turn succeeded.
TEST(RadialdCli, TheBoxsLastStderrBytesComeBeforeTheSucceededLine) {
    PluginSetup s{{{"fake_good", "fake"}}, "\n[redact]\nvalues = [\"Zq8-wX41-pL0k\"]\n"};
    for (int i = 0; i < 4; ++i) {
        auto r = s.turn("fake", {"stderr-n", "last", "Zq8-"});
        EXPECT_EQ(r.exit_code, 0) << r.err;
        const auto tail = r.err.find("last Zq8-");
        const auto line = r.err.find("succeeded");
        ASSERT_NE(tail, std::string::npos) << r.err;
        ASSERT_NE(line, std::string::npos) << r.err;
        EXPECT_LT(tail, line) << r.err;
    }
}

// The record holds the last output of each stream: it is the invoking user's alone (0600), as the
// output log is, whatever the umask, also where it replaces a file of its name.
TEST(RadialdCli, TheRecordFileIsTheInvokersAlone) {
    PluginSetup s{{"fake_good", "fake"}};
    const std::string record = s.dir / "record.json";
    std::ofstream(record) << "{}\n";
    ASSERT_EQ(::chmod(record.c_str(), 0644), 0);
    const mode_t umask_before = ::umask(022);
    auto r =
        test::run_process({RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml", "--runtime",
                           "fake", "--image", "img", "--record-file", record, "--", "echo", "x"});
    ::umask(umask_before);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    struct stat st {};
    ASSERT_EQ(::stat(record.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(nlohmann::json::parse(test::read_file(record)).at("status"), "succeeded");
}

TEST(RadialdCli, TurnExitCodeIsTheWorkloads) {
    PluginSetup s{{"fake_good", "fake"}};
    EXPECT_EQ(s.turn("fake", {"exit", "3"}).exit_code, 3);
}

// A run result the ABI does not allow — no ending at all, a "signal" that is none — is recorded as
// the runtime's error naming the plugin, never as an ending radiald made up (a bare `failed`,
// "signal 0" with exit status 128); a timeout, a kill, the memory bound and an aborted output
// alone are endings.
TEST(RadialdCli, ARunResultThatSaysNoEndingIsThePluginsErrorNotAFailure) {
    // A timeout, so that TIMED_OUT is one the spec allows.
    PluginSetup s{{{"fake_good", "fake"}}, "defaultTimeout = \"1h\"\n"};
    for (const auto& [flags, signal, says] :
         std::vector<std::tuple<std::string, std::string, std::string>>{
             {"0", "0",
              "says neither an exit, a signal, a timeout, a kill, the memory bound nor an "
              "aborted output (flags 0x0)"},
             {"0x80", "0", "(flags 0x80)"},
             {"0x2", "0", "ended by signal 0, which is no signal"},
             {"0x3", "65", "ended by signal 65, which is no signal"}}) {
        const std::string record = s.dir / ("record-" + flags + "-" + signal + ".json");
        auto r = test::run_process({RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml",
                                    "--runtime", "fake", "--image", "img", "--record-file", record,
                                    "--", "result", flags, "0", signal});
        EXPECT_EQ(r.exit_code, 125) << flags << ": " << r.err;
        const auto rec = nlohmann::json::parse(test::read_file(record));
        EXPECT_EQ(rec.at("status"), "error") << rec;
        EXPECT_THAT(rec.value("error", ""), HasSubstr("runtime 'fake' returned a run result that "))
            << rec;
        EXPECT_THAT(rec.value("error", ""), HasSubstr(says)) << rec;
        EXPECT_FALSE(rec.contains("signal")) << rec;
        EXPECT_FALSE(rec.contains("exitCode")) << rec;
    }
    auto timed_out = s.turn("fake", {"result", "0x4", "0", "0"});
    EXPECT_EQ(timed_out.exit_code, 124) << timed_out.err;
    EXPECT_EQ(s.turn("fake", {"result", "0x2", "0", "9"}).exit_code, 137);
    // The memory bound alone is an ending (the ABI's OOM_KILLED: "the memory bound ended it").
    const std::string oom = s.dir / "record-oom.json";
    auto r = test::run_process({RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml",
                                "--runtime", "fake", "--image", "img", "--record-file", oom, "--",
                                "result", "0x10", "0", "0"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const auto oom_rec = nlohmann::json::parse(test::read_file(oom));
    EXPECT_EQ(oom_rec.at("status"), "failed") << oom_rec;
    EXPECT_EQ(oom_rec.value("reason", ""), "out of memory") << oom_rec;
}

// A plugin that blocks SIGTERM, SIGINT, SIGHUP and SIGQUIT when it is loaded or created (every
// later thread inherited the mask: `kill -TERM` let the turn run to its end) or resets SIGUSR1 and
// SIGQUIT to SIG_DFL in its run (SIGUSR1 then ended radiald turn, exit 138, its box left
// running): radiald puts its own handling back, and the turn still hears each signal
// (docs/design.md §12.3).
TEST(RadialdCli, APluginsSignalMaskOrHandlersNeitherDeafenNorKillATurn) {
    for (const std::string where : {"load", "create", "run"}) {
        PluginSetup s{{{"fake_good", "fake"}},
                      where == "load" ? std::string()
                                      : "\n[run.fake]\ntamperSignals = [\"" + where + "\"]\n"};
        const std::string err = s.dir / "stderr.txt";
        test::BackgroundProcess radiald(
            {"env", "RADIAL_FAKE_TAMPER_AT_LOAD=" + std::string(where == "load" ? "1" : "0"),
             RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml", "--runtime", "fake",
             "--image", "img", "--", "sleep", "600000"},
            err);
        auto logged = [&](const std::string& text) {
            return test::wait_until(
                [&] { return test::read_file(err).find(text) != std::string::npos; },
                std::chrono::seconds(30));
        };
        ASSERT_TRUE(logged("fake run of")) << where << ": " << test::read_file(err);
        if (where == "run") { // put back by the keeper, within a second of the run's change
            ASSERT_TRUE(logged("SIGPIPE's handling was changed by code in radiald's process"))
                << test::read_file(err);
        } else {
            EXPECT_THAT(test::read_file(err),
                        HasSubstr("changed radiald's signal handling when it was " +
                                  std::string(where == "load" ? "loaded" : "created") +
                                  " (SIGHUP blocked, SIGINT blocked, SIGQUIT blocked, SIGTERM "
                                  "blocked, SIGPIPE's handler)"));
        }
        radiald.signal(SIGUSR1);
        ASSERT_TRUE(logged("SIGUSR1 received and ignored"))
            << where << ": " << test::read_file(err);
        EXPECT_TRUE(radiald.running()) << where;
        radiald.signal(SIGTERM);
        EXPECT_EQ(radiald.wait(std::chrono::seconds(30)), 130)
            << where << ": " << test::read_file(err);
    }
}

// A run result whose flags contradict each other or the spec (radial/runtime_plugin.h,
// RADIAL_RUN_*) is the runtime's error naming the contradiction: it was recorded as given,
// OOM_KILLED with exit 0 as `succeeded`. The combinations the ABI allows still end the turn as they
// say.
TEST(RadialdCli, ARunResultThatContradictsItselfIsThePluginsError) {
    PluginSetup s{{{"fake_good", "fake"}}};
    for (const auto& [flags, code, signal, timeout, says] :
         std::vector<std::tuple<std::string, std::string, std::string, std::string, std::string>>{
             {"0x3", "0", "9", "", "the workload both exited (code 0) and was ended by signal 9"},
             {"0x11", "0", "0", "",
              "the memory bound ended the box (OOM_KILLED) and its workload "
              "exited 0"},
             {"0x4", "0", "0", "", "the box timed out (TIMED_OUT), but its spec had no timeout"},
             {"0x41", "0", "0", "1h",
              "the box ended within its stop grace (STOPPED_IN_GRACE) without a timeout "
              "or a kill to stop it (flags 0x41)"}}) {
        const std::string record = s.dir / ("record-" + flags + ".json");
        std::vector<std::string> argv{RADIALD_PATH,    "turn", "--config", s.dir / "radiald.toml",
                                      "--runtime",     "fake", "--image",  "img",
                                      "--record-file", record};
        if (!timeout.empty()) argv.insert(argv.end(), {"--timeout", timeout});
        argv.insert(argv.end(), {"--", "result", flags, code, signal});
        auto r = test::run_process(argv);
        EXPECT_EQ(r.exit_code, 125) << flags << ": " << r.err;
        const auto rec = nlohmann::json::parse(test::read_file(record));
        EXPECT_EQ(rec.at("status"), "error") << rec;
        EXPECT_THAT(rec.value("error", ""), HasSubstr("runtime 'fake' returned a run result that "
                                                      "says " +
                                                      says))
            << rec;
    }
    // Allowed: the bound's SIGKILL, a timeout's signal, a kill that ended in the grace.
    EXPECT_EQ(s.turn("fake", {"result", "0x12", "0", "9"}).exit_code, 137);
    EXPECT_EQ(s.turn("fake", {"result", "0x11", "137", "0"}).exit_code, 137);
    EXPECT_EQ(s.turn("fake", {"result", "0x48", "0", "0"}).exit_code, 1); // failed, killed
}

// `turn --runtime fake` with a [run.docker] table: the refusal names the flag that chose the
// runtime, not run.containerRuntime, which this file does not set (docs/design.md §7.2).
TEST(RadialdCli, ATableOfAnotherRuntimeUnderTheRuntimeFlagNamesTheFlag) {
    PluginSetup s{{{"fake_good", "fake"}}, "\n[run.docker]\npull = \"never\"\n"};
    auto r = s.turn("fake");
    expect_refusal(r,
                   "radiald.toml:5:1: run.docker: configures runtime 'docker' but --runtime "
                   "selects 'fake'; remove [run.docker] or select that runtime");
    EXPECT_THAT(r.err, Not(HasSubstr("containerRuntime")));
}

TEST(RadialdCli, NoPluginWithThatIdListsTheIdsFound) {
    PluginSetup s{{"fake_good", "fake"}, {"fake_throwing", "throwing"}};
    expect_refusal(s.turn("sandbox"),
                   "--runtime 'sandbox' names no installed runtime; the known "
                   "runtimes are 'fake', 'throwing' (plugins in '" +
                       s.plugins + "'); pass one of those");
}

TEST(RadialdCli, AbiMajorMismatchNamesBothVersions) {
    PluginSetup s{{"fake_good", "fake"}, {"zoo_wrong_major", "zoo_wrong_major"}};
    expect_refusal(s.turn("fake"), "targets runtime ABI 2.1, this radiald supports 1.1");
}

TEST(RadialdCli, MissingEntrySymbolIsRefused) {
    PluginSetup s{{"fake_good", "fake"}, {"zoo_no_entry", "zoo_no_entry"}};
    expect_refusal(s.turn("fake"), "no entry symbol 'radial_runtime_plugin_entry'");
}

TEST(RadialdCli, NotASharedObjectIsRefused) {
    PluginSetup s{{"fake_good", "fake"}};
    s.dir.write("plugins/notes.so", "hello\n");
    expect_refusal(s.turn("fake"), "not a loadable shared object");
}

TEST(RadialdCli, TwoPluginsClaimingOneIdAreRefused) {
    PluginSetup s{{"fake_dup_a", "dup_a"}, {"fake_dup_b", "dup_b"}};
    expect_refusal(s.turn("dup"), "both claim runtime id 'dup'");
}

TEST(RadialdCli, CreateFailureShowsThePluginsMessage) {
    PluginSetup s{{{"fake_throwing", "throwing"}},
                  "[run.throwing]\ncreateFails = \"libfoo.so.1 is missing\"\n"};
    expect_refusal(s.turn("throwing"), "creating runtime 'throwing' from '" + s.plugins +
                                           "/throwing.so': libfoo.so.1 is missing");
}

TEST(RadialdCli, PluginConfigErrorNamesFileLineAndKey) {
    PluginSetup s{{{"fake_good", "fake"}}, "[run.fake]\nbogus = 1\n"};
    expect_refusal(s.turn("fake"), s.dir / "radiald.toml" +
                                       ":5:9: run.fake.bogus: unknown key 'bogus' in [run.fake]");
}

TEST(RadialdCli, FailingPreflightStopsTheTurn) {
    PluginSetup s{{{"fake_good", "fake"}}, "[run.fake]\nfailPreflight = \"engine is asleep\"\n"};
    expect_refusal(s.turn("fake"), "runtime 'fake' cannot run boxes: engine is asleep");
}

// A plugin's message is kept to 4 KiB, in the loading process and through a plugin host alike: a
// megabyte of it went to stderr, the journal and the log whole (docs/design.md §5.13).
TEST(RadialdCli, APluginsMessageIsCutAtFourKiB) {
    const std::string huge = "engine " + std::string(1 << 20, 'x') + " END";
    for (const std::string isolation : {"", "pluginIsolation = \"process\"\n"}) {
        SCOPED_TRACE(isolation);
        PluginSetup s{{{"fake_good", "fake"}},
                      isolation + "[run.fake]\nfailPreflight = \"" + huge + "\"\n"};
        auto r = s.turn("fake");
        expect_refusal(r, "runtime 'fake' cannot run boxes: engine xxxx");
        EXPECT_THAT(r.err, HasSubstr("xxx [cut: the plugin's text was longer]"));
        EXPECT_THAT(r.err, Not(HasSubstr("END")));
        EXPECT_LT(r.err.size(), 4096u + 512u);
    }
}

TEST(RadialdCli, ThrowingPluginMethodsDoNotCrashTheHost) {
    PluginSetup s{{"fake_throwing", "throwing"}};
    auto r = s.turn("throwing");
    EXPECT_EQ(r.exit_code, 125) << r.err;
    // The startup validation asks for the capabilities before the preflight: a non-std exception
    // from there is a one-line error too.
    EXPECT_THAT(r.err, HasSubstr("runtime 'throwing': internal error: unknown exception"));
}

TEST(RadialdCli, PluginsListsIdVersionAbiAndPath) {
    PluginSetup s{{"fake_good", "fake"}, {"fake_throwing", "throwing"}};
    auto r = test::run_process({RADIALD_PATH, "plugins", "--config", s.dir / "radiald.toml"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("fake"));
    EXPECT_THAT(r.out, HasSubstr("9.9.9"));
    EXPECT_THAT(r.out, HasSubstr("1.1"));
    EXPECT_THAT(r.out, HasSubstr(s.plugins + "/fake.so"));
    EXPECT_THAT(r.out, HasSubstr(s.plugins + "/throwing.so"));
}

TEST(RadialdCli, PluginsReportsABrokenPluginAndFails) {
    PluginSetup s{{"fake_good", "fake"}, {"zoo_wrong_major", "zoo_wrong_major"}};
    auto r = test::run_process({RADIALD_PATH, "plugins", "--config", s.dir / "radiald.toml"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.out, HasSubstr(s.plugins + "/fake.so"));
    EXPECT_THAT(r.err, HasSubstr("targets runtime ABI 2.1"));
}

TEST(RadialdCli, VersionPrintsVersionAndAbi) {
    auto r = test::run_process({RADIALD_PATH, "--version"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_THAT(r.out, ::testing::MatchesRegex(
                           "radiald [0-9]+\\.[0-9]+\\.[0-9]+ \\(runtime ABI 1\\.1\\)\n"));
}

TEST(RadialdCli, MissingSecretIsAClearError) {
    PluginSetup s{{"fake_good", "fake"}};
    auto r = test::run_process(
        {RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml", "--runtime", "fake", "--image",
         "img", "--secret", "RADIAL_TEST_UNSET_SECRET", "--", "echo"},
        {}, std::chrono::seconds(30), {"RADIAL_TEST_UNSET_SECRET"});
    expect_refusal(r, "'RADIAL_TEST_UNSET_SECRET' is not set in radiald's environment");
}

// A wrong --env names what is wrong and which one, and never quotes it back: it may be a secret
// passed the wrong way. `--env '=x'` was said as "--env ''", and `--env "$TOKEN"` (a token is
// often a valid variable name) or a base64 value whose padding reads as the '=' were quoted.
TEST(RadialdCli, AWrongEnvFlagSaysWhatIsWrongWithoutItsText) {
    PluginSetup s{{"fake_good", "fake"}};
    for (const auto& [arg, said] : std::vector<std::pair<std::string, std::string>>{
             {"=hunter2value", "the name before '=' is empty"},
             {"hunter2+val/ue==", "the text before '=' is not a variable name"},
             {"ghp_hunter2TokenValue", "it has no '='"}}) {
        auto r = test::run_process({RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml",
                                    "--runtime", "fake", "--image", "img", "--env", "OK=1", "--env",
                                    arg, "--", "env"});
        expect_refusal(r, "--env (the 2nd of 2): " + said);
        EXPECT_THAT(r.err, Not(HasSubstr("hunter2"))) << arg;
    }
}

TEST(RadialdCli, ARequestCannotSetTheVariablesThatCarryTheTurnSocketAndToken) {
    PluginSetup s{{"fake_good", "fake"}};
    auto r = test::run_process({RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml",
                                "--runtime", "fake", "--image", "img", "--env",
                                "RADIAL_TURN_TOKEN=forged", "--", "env"});
    expect_refusal(r,
                   "env 'RADIAL_TURN_TOKEN' is set by radiald for every turn; pick another name");
    EXPECT_THAT(r.out, Not(HasSubstr("forged")));
    auto secret =
        test::run_process({RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml", "--runtime",
                           "fake", "--image", "img", "--secret", "RADIAL_TURN_SOCKET", "--", "env"},
                          {{"RADIAL_TURN_SOCKET", "unix:///tmp/elsewhere.sock"}});
    expect_refusal(secret, "secret 'RADIAL_TURN_SOCKET' is set by radiald for every turn");
}

// One secret the set refuses (too short) refuses the turn, and the request's other secrets are
// still masked in everything written before the session takes over: the refusal's line and the
// record file, which quote the image.
TEST(RadialdCli, ARefusedSecretLeavesTheOtherSecretsMaskedFromTheFirstLine) {
    PluginSetup s{{"fake_good", "fake"}};
    const std::string good = "good-secret-value-" + std::to_string(::getpid());
    const std::string record = s.dir / "record.json";
    auto r = test::run_process({RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml",
                                "--runtime", "fake", "--image", "img-" + good, "--secret", "GOOD",
                                "--secret", "SHORT", "--record-file", record, "--", "echo"},
                               {{"GOOD", good}, {"SHORT", "abc"}});
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.err, HasSubstr("SHORT"));
    EXPECT_THAT(r.err, Not(HasSubstr(good)));
    const std::string written = test::read_file(record);
    EXPECT_THAT(written, HasSubstr("img-[REDACTED:GOOD]"));
    EXPECT_THAT(written, Not(HasSubstr(good)));
}

// The turn id and the record type are stored and printed as they are (the label, the output log's
// name, `radiald turns`, the journal's records): one holding a secret's value — also folded to
// lower case, as a turn id is written — is refused, masked in the refusal and the record file.
TEST(RadialdCli, ATurnIdOrRecordTypeHoldingASecretIsRefused) {
    PluginSetup s{{"fake_good", "fake"}};
    const std::string secret = "Zq8wX41pL0kSECRET" + std::to_string(::getpid());
    std::string folded = secret;
    for (char& c : folded) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& [flag, value, what] :
         std::vector<std::tuple<std::string, std::string, std::string>>{
             {"--turn-id", folded + "-0042", "the turn id"},
             {"--record-type", "result-" + secret, "the record type"}}) {
        const std::string record = s.dir / "record.json";
        auto r = test::run_process({RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml",
                                    "--runtime", "fake", "--image", "img", "--secret", "MY_KEY",
                                    flag, value, "--record-file", record, "--", "echo", "ran"},
                                   {{"MY_KEY", secret}});
        expect_refusal(r, what + " '");
        EXPECT_THAT(r.err, HasSubstr("holds the value of a secret")) << r.err;
        EXPECT_THAT(r.err, HasSubstr("[REDACTED:MY_KEY]")) << r.err;
        EXPECT_THAT(r.err, Not(HasSubstr(folded))) << r.err;
        EXPECT_THAT(r.err, Not(HasSubstr(secret))) << r.err;
        const std::string written = test::read_file(record);
        EXPECT_THAT(written, Not(HasSubstr(folded))) << written;
        EXPECT_THAT(written, Not(HasSubstr(secret))) << written;
    }
}

// A secret's value in a field the runtime keeps (the engine's create body, a swarm service) would
// be at rest (docs/design.md §6.3): a plain --env beside --secret, a command word the shell
// expanded on the host (also folded to upper case), the image. Each is refused before any box,
// naming the field, never the value.
TEST(RadialdCli, ASecretInAFieldTheRuntimeKeepsIsRefused) {
    PluginSetup s{{"fake_good", "fake"}};
    const std::string secret = "Kp3vQ9xL2mSECRET" + std::to_string(::getpid());
    std::string upper = secret;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const std::vector<std::string> base = {RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml",
                                           "--runtime",  "fake", "--secret", "MY_KEY"};
    for (const auto& [flags, what] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"--image", "img", "--env", "COPY=x" + secret, "--", "env"}, "plain variable 'COPY'"},
             {{"--image", "img", "--", "echo", "token=" + secret}, "argv[1]"},
             {{"--image", "img", "--", "echo", "a", upper}, "argv[2]"},
             {{"--image", "img:" + secret, "--", "echo"}, "the image"}}) {
        std::vector<std::string> argv = base;
        argv.insert(argv.end(), flags.begin(), flags.end());
        auto r = test::run_process(argv, {{"MY_KEY", secret}});
        expect_refusal(r, what);
        EXPECT_THAT(r.err, HasSubstr("holds the value of secret MY_KEY")) << r.err;
        EXPECT_THAT(r.err, HasSubstr(what == "the image" ? "choose one that does not hold it"
                                                         : "refer to it inside the box as $MY_KEY"))
            << r.err;
        EXPECT_THAT(r.err, Not(HasSubstr(secret))) << r.err;
        EXPECT_THAT(r.err, Not(HasSubstr(upper))) << r.err;
    }
}

TEST(RadialdCli, SecretsReachTheRuntimeMarkedSecret) {
    PluginSetup s{{"fake_good", "fake"}};
    auto r = test::run_process(
        {RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml", "--runtime", "fake", "--image",
         "img", "--secret", "MY_KEY", "--env", "PLAIN=1", "--", "env"},
        {{"MY_KEY", "s3cret-value"}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    // The fake runtime printed the value it received; the host masked it because it was marked
    // secret, and left the plain one alone.
    EXPECT_THAT(r.out, ::testing::StartsWith("PLAIN=1\nMY_KEY=[REDACTED:MY_KEY]\n"));
    EXPECT_THAT(r.out, Not(HasSubstr("s3cret-value")));
    // The fake reports no unix-socket capability, so the turn socket is tcp on loopback.
    EXPECT_THAT(r.out,
                ::testing::ContainsRegex("RADIAL_TURN_SOCKET=tcp://127\\.0\\.0\\.1:[0-9]+\n"));
    EXPECT_THAT(r.out, HasSubstr("RADIAL_TURN_TOKEN=[REDACTED:RADIAL_TURN_TOKEN]\n"));
}

TEST(RadialdCli, BadTimeoutIsRefused) {
    PluginSetup s{{"fake_good", "fake"}};
    auto r =
        test::run_process({RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml", "--runtime",
                           "fake", "--image", "img", "--timeout", "soon", "--", "echo"});
    expect_refusal(r,
                   "--timeout must be a duration from 1ms to 720h, such as 90s, 5m or 1500ms; "
                   "'soon' is not one");
}

// Where the workspace appears, for a turn without one: a workspace forgotten, refused naming both.
TEST(RadialdCli, AWorkspaceMountWithoutAWorkspaceIsRefused) {
    PluginSetup s{{"fake_good", "fake"}};
    auto r = test::run_process({RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml",
                                "--runtime", "fake", "--image", "img", "--workspace-mount",
                                "same-path", "--", "echo"});
    expect_refusal(r, "--workspace-mount same-path without --workspace: the turn has no workspace");
}

// Under systemd with StandardError=journal (JOURNAL_STREAM names radiald's stderr), each line
// starts with its syslog priority, so journalctl -p ranks them; anywhere else (a terminal, a
// file, a stale variable inherited across a redirect) lines are as they were.
TEST(RadialdCli, LinesCarryTheirSyslogPriorityOnlyWhenStderrIsTheJournal) {
    PluginSetup s{{"fake_good", "fake"}};
    const std::string turn = std::string(RADIALD_PATH) + " turn --config " +
                             (s.dir / "radiald.toml") + " --runtime fake --image img -- exit 3";
    auto journal = test::run_process(
        {"sh", "-c", "JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec " + turn});
    EXPECT_EQ(journal.exit_code, 3) << journal.err;
    EXPECT_THAT(journal.err, HasSubstr("<6>radiald[turn] info: turn ")) << journal.err;
    std::istringstream lines(journal.err);
    for (std::string line; std::getline(lines, line);) EXPECT_EQ(line.front(), '<') << line;
    auto stale = test::run_process({"sh", "-c", "JOURNAL_STREAM=1:2 exec " + turn});
    EXPECT_EQ(stale.exit_code, 3) << stale.err;
    EXPECT_THAT(stale.err, HasSubstr("radiald[turn] info: turn "));
    EXPECT_THAT(stale.err, Not(HasSubstr("<6>")));
}

// A session limit that rounds to 0 ms is too short, not "no limit"; only a written zero is none.
TEST(RadialdCli, ASessionLimitBelowAMillisecondIsRefusedNotTakenForNoLimit) {
    PluginSetup s{{"fake_good", "fake"}};
    for (const std::string flag : {"--idle-timeout", "--max-lifetime"})
        for (const std::string text : {"0.4ms", "0.0001s"}) {
            auto r = test::run_process({RADIALD_PATH, "session", "create", "--config",
                                        s.dir / "radiald.toml", "--runtime", "fake", "--image",
                                        "img", flag, text});
            expect_refusal(r, flag + " must be a duration from 10s to 8760h");
        }
}

// The box-id range check's look at processes and the journal's opening run beside loading the
// runtime, and failures are still reported in the order of the steps (docs/design.md §3.2): a
// range something on the host uses before anything else, then the runtime's failure, then the
// journal's.
TEST(RadialdCli, ARangeAProcessUsesIsReportedBeforeEveryOtherStartupFailure) {
    test::IdSquatter squatter(2100000005);
    ASSERT_TRUE(squatter.running());
    PluginSetup s{{{"fake_good", "fake"}}, "boxIdRange = \"2100000000-2100000009\"\n"};
    fs::create_directories(s.dir / "state/journal.sqlite3"); // a journal that cannot open
    auto r =
        test::run_process({RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml", "--runtime",
                           "nothere", "--image", "img", "--timeout", "soon", "--", "echo"});
    expect_refusal(r, "run.boxIdRange 2100000000-2100000009: host process " +
                          std::to_string(squatter.pid()) + " (");
}

TEST(RadialdCli, ARangeAnAccountUsesIsReportedBeforeEveryOtherStartupFailure) {
    // 65534 is `nobody` in passwd (docs/design.md §8.7).
    PluginSetup s{{{"fake_good", "fake"}}, "boxIdRange = \"65534-65534\"\n"};
    fs::create_directories(s.dir / "state/journal.sqlite3");
    auto r =
        test::run_process({RADIALD_PATH, "turn", "--config", s.dir / "radiald.toml", "--runtime",
                           "nothere", "--image", "img", "--timeout", "soon", "--", "echo"});
    expect_refusal(r, "run.boxIdRange 65534-65534: host user '");
}

// A turn refused before it is claimed leaves the journal as it was: not created (nor migrated).
TEST(RadialdCli, ARefusedTurnCreatesNoJournal) {
    PluginSetup s{{{"fake_good", "fake"}}};
    expect_refusal(s.turn("nothere"), "--runtime 'nothere' names no installed runtime");
    EXPECT_FALSE(fs::exists(s.dir / "state/journal.sqlite3"));
    EXPECT_EQ(s.turn("fake").exit_code, 0); // and the next turn creates it
    EXPECT_TRUE(fs::exists(s.dir / "state/journal.sqlite3"));
}

TEST(RadialdCli, ARuntimeFailureIsReportedBeforeTheJournals) {
    PluginSetup s{{"fake_good", "fake"}};
    fs::create_directories(s.dir / "state/journal.sqlite3");
    expect_refusal(s.turn("nothere"), "--runtime 'nothere' names no installed runtime");
}

TEST(RadialdCli, AJournalThatCannotOpenRefusesTheTurnBeforeItsBox) {
    PluginSetup s{{"fake_good", "fake"}};
    fs::create_directories(s.dir / "state/journal.sqlite3");
    auto r = s.turn("fake", {"echo", "ran"});
    expect_refusal(r, "journal");
    EXPECT_THAT(r.err, HasSubstr(s.dir / "state/journal.sqlite3"));
}

} // namespace
} // namespace radial

namespace radial {
namespace {

// radiald links no runtime plugin: plugins are only ever loaded at run time.
TEST(RadialdBinary, LinksNoRuntimePlugin) {
    auto r = test::run_process({"ldd", RADIALD_PATH});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("libc.so")); // ldd really listed the dependencies
    EXPECT_THAT(r.out, Not(HasSubstr("radial/runtimes")));
    EXPECT_THAT(r.out, Not(HasSubstr("docker.so")));
    EXPECT_THAT(r.out, Not(HasSubstr("fake.so")));
}

// A plugin built with radial_add_runtime_plugin exports exactly the entry symbol.
TEST(RadialdBinary, PluginsExportOnlyTheEntrySymbol) {
    for (const char* so : {"/fake_good/fake.so", "/fake_throwing/throwing.so"}) {
        auto r = test::run_process(
            {"nm", "-D", "--defined-only", std::string(RADIAL_FAKE_PLUGIN_ROOT) + so});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        std::istringstream lines(r.out);
        std::vector<std::string> symbols;
        for (std::string line; std::getline(lines, line);)
            symbols.push_back(line.substr(line.rfind(' ') + 1));
        EXPECT_EQ(symbols, std::vector<std::string>{"radial_runtime_plugin_entry"}) << so << ":\n"
                                                                                    << r.out;
    }
}

} // namespace
} // namespace radial

namespace radial {
namespace {

// A runtime whose `hang` call never returns (the good zoo runtime, config key `hang`), under
// run.pluginCallTimeout = "1s": radiald fails naming the plugin and the call, well within budget.
struct HangingSetup {
    test::TempDir dir{"radial-cli-hang"};
    std::string config = dir / "radiald.toml";
    // `zoo` names the conformance zoo's plugin: its directory, "good" or a defect.
    explicit HangingSetup(const std::string& call, std::string zoo = "good") {
        fs::create_directory(dir / "plugins");
        fs::copy_file(std::string(RADIAL_ZOO_PLUGIN_ROOT) + "/" + zoo + "/zoo_" + zoo + ".so",
                      dir / ("plugins/zoo_" + zoo + ".so"));
        std::string id = "zoo-" + zoo;
        std::replace(id.begin(), id.end(), '_', '-');
        dir.write("radiald.toml", "[run]\npluginDir = \"plugins\"\ncontainerRuntime = \"" + id +
                                      "\"\nstateDir = \"" + (dir / "state") +
                                      "\"\npluginCallTimeout = \"1s\"\n[run." + id +
                                      "]\nhang = [\"" + call + "\"]\n");
    }
    test::ProcessResult run(std::vector<std::string> args) {
        std::vector<std::string> a{RADIALD_PATH};
        a.insert(a.end(), args.begin(), args.end());
        auto t0 = std::chrono::steady_clock::now();
        auto r = test::run_process(a, {}, std::chrono::seconds(30));
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return r;
    }
    double seconds = 0;
};

TEST(RadialdPluginDeadline, HungListByLabelFailsReconcileNamingPluginAndCall) {
    HangingSetup s("list_by_label");
    auto r = s.run({"reconcile", "--config", s.config});
    EXPECT_FALSE(r.timed_out) << "radiald reconcile hung with the plugin";
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr("runtime plugin 'zoo-good'"));
    EXPECT_THAT(r.err, HasSubstr("list_by_label did not return within 1 s"));
    EXPECT_LT(s.seconds, 15.0);
}

TEST(RadialdPluginDeadline, HungPreflightFailsTurnNamingPluginAndCall) {
    HangingSetup s("preflight");
    auto r = s.run({"turn", "--config", s.config, "--image", "img", "--", "echo", "hi"});
    EXPECT_FALSE(r.timed_out) << "radiald turn hung with the plugin";
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.err, HasSubstr("preflight did not return within 1 s"));
    EXPECT_THAT(r.err, HasSubstr("runtime plugin 'zoo-good'"));
    EXPECT_LT(s.seconds, 15.0);
}

TEST(RadialdPluginDeadline, HungDescribeSpecFailsTurnNamingPluginAndCall) {
    HangingSetup s("describe_spec");
    auto r = s.run({"turn", "--config", s.config, "--image", "img", "--", "echo", "hi"});
    EXPECT_FALSE(r.timed_out) << "radiald turn hung with the plugin";
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.err, HasSubstr("describe_spec did not return within 1 s"));
    EXPECT_LT(s.seconds, 15.0);
}

TEST(RadialdPluginDeadline, PluginCallTimeoutMustBeADuration) {
    HangingSetup s("kill");
    s.dir.write("radiald.toml", "[run]\npluginCallTimeout = \"soon\"\n");
    auto r = s.run({"turn", "--config", s.config, "--image", "img", "--", "echo", "hi"});
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.err, HasSubstr("run.pluginCallTimeout"));
}

// A session whose record cannot be written (one exists at its path already) and whose box the
// runtime then cannot remove (kill hangs past run.pluginCallTimeout): the command says the
// record's error, not the removal's, and the box keeps its ids leased for reconciliation, since
// it may still run under them.
TEST(RadialdSessionCreate, ARecordThatCannotBeWrittenWithABoxThatStaysKeepsItsIdsAndSaysWhy) {
    // The zoo runtime that says it confines (the good one refuses a read-only root, which
    // radiald puts in every box): this test is about radiald, not the runtime's confinement.
    HangingSetup s("kill", "claim_confinement");
    const std::string state = s.dir / "state";
    fs::create_directories(state + "/sessions");
    s.dir.write("state/sessions/taken.json", "{}\n");
    auto r = s.run(
        {"session", "create", "--config", s.config, "--image", "img", "--session-id", "taken"});
    EXPECT_FALSE(r.timed_out) << "radiald session create hung with the plugin";
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.err, HasSubstr("session 'taken' exists already"));
    EXPECT_THAT(r.err, HasSubstr("could not remove box"));
    EXPECT_THAT(r.err, HasSubstr("kill did not return within 1 s"));
    EXPECT_EQ(test::box_id_leases_of(state), 1u)
        << "the ids of a box that may still run were freed";
    // Reconciliation frees them (the zoo's box lived in the process that made it).
    auto rec = s.run({"reconcile", "--config", s.config});
    EXPECT_EQ(rec.exit_code, 0) << rec.err;
    EXPECT_EQ(test::box_id_leases_of(state), 0u) << rec.err;
}

// A radiald killed while it wrote a record (the retention clock at a turn's end, a session's
// record) left the record's temporary file for good: the next daemon or reconcile removes one an
// hour old, and leaves one a live writer may hold.
TEST(RadialdReconcile, RemovesTheTemporaryFilesAKilledWriterLeft) {
    HangingSetup s("kill");
    const std::string state = s.dir / "state";
    fs::create_directories(state + "/sessions");
    ::chmod(state.c_str(), 0700);
    const std::string left = state + "/.retention-clock.Ab12Cd",
                      live = state + "/sessions/.s1.json.Qq1Ww2";
    s.dir.write("state/.retention-clock.Ab12Cd", "1\n");
    s.dir.write("state/sessions/.s1.json.Qq1Ww2", "{}\n");
    // An egress broker's ceiling, whose turn a killed radiald ran: no broker runs while the state
    // directory is held exclusively.
    fs::create_directories(state + "/egress-brokers");
    s.dir.write("state/egress-brokers/t1.json", "{\"allow\":[]}\n");
    // A file of the same shape radiald does not publish there.
    s.dir.write("state/.notes.backup", "mine\n");
    const timespec hour_ago[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, left.c_str(), hour_ago, 0), 0);
    ASSERT_EQ(::utimensat(AT_FDCWD, (state + "/.notes.backup").c_str(), hour_ago, 0), 0);
    auto r = s.run({"reconcile", "--config", s.config});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(fs::exists(left)) << r.err;
    EXPECT_TRUE(fs::exists(live)) << "a file a live writer may hold was removed";
    EXPECT_FALSE(fs::exists(state + "/egress-brokers/t1.json")) << r.err;
    EXPECT_TRUE(fs::exists(state + "/.notes.backup")) << "a file radiald does not write went";
    EXPECT_THAT(r.err, HasSubstr("removed 2 file(s) under '" + state +
                                 "' that a killed radiald "
                                 "left"));
}

// What `session create` refuses of its flags names the flag and the fix, before any box: an id
// that is not one, an id whose turns' socket would not fit under the state directory, an id in
// use (its socket directory there: the session's, or another create's under way).
TEST(RadialdSessionCreate, AnIdThatIsNotOneDoesNotFitOrIsInUseIsRefusedBeforeAnyBox) {
    HangingSetup s("kill", "claim_confinement");
    const std::string state = s.dir / "state";
    auto create = [&](const std::string& id) {
        return s.run(
            {"session", "create", "--config", s.config, "--image", "img", "--session-id", id});
    };
    auto r = create("A_B");
    expect_refusal(r, "--session-id 'A_B': a session id must be 1 to 64 characters");
    EXPECT_THAT(r.err, Not(HasSubstr("turn id")));
    r = s.run({"session", "rm", "--config", s.config, "A_B"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("session id 'A_B'"));
    EXPECT_THAT(r.err, Not(HasSubstr("turn id")));

    const std::string long_id(64, 'x');
    r = create(long_id);
    expect_refusal(r, "session '" + long_id + "': the session's turns bind their unix sockets");
    EXPECT_THAT(r.err, HasSubstr("over the limit of 107 bytes"));
    EXPECT_THAT(r.err, HasSubstr("give a --session-id of at most"));
    EXPECT_THAT(r.err, HasSubstr("(or leave it out: a generated id fits)"));
    EXPECT_FALSE(fs::exists(state + "/sessions/" + long_id + ".run"));
    // A state directory every one-shot turn fits under (57 bytes) but a session with a generated
    // id does not: refused at create, naming run.stateDir.
    {
        const std::string config = test::read_file(s.config);
        const std::string longer =
            s.dir.path() + "/" + std::string(57 - 7 - s.dir.path().size(), 'p') + "/state";
        std::string changed = config;
        changed.replace(changed.find(state), state.size(), longer);
        std::ofstream(s.config) << changed;
        r = s.run({"session", "create", "--config", s.config, "--image", "img"});
        expect_refusal(r, "the session's turns bind their unix sockets under run.stateDir");
        EXPECT_THAT(r.err, HasSubstr("choose a run.stateDir of at most 53 bytes"));
        EXPECT_THAT(r.err, Not(HasSubstr("leave it out")));
        std::ofstream(s.config) << config;
    }

    // Its directory without a record: a create under way, or a killed one's leftovers, which
    // `session rm` does not know (no record) and reconciliation removes.
    fs::create_directories(state + "/sessions/dup1.run");
    r = create("dup1");
    expect_refusal(r,
                   "another 'radiald session create' is making session 'dup1', or one was "
                   "killed while it did");
    EXPECT_THAT(r.err, HasSubstr("'radiald reconcile' removes what a killed one left"));
    EXPECT_THAT(r.err, Not(HasSubstr("session rm")));
    EXPECT_THAT(r.err, Not(HasSubstr("File exists")));
    EXPECT_TRUE(fs::exists(state + "/sessions/dup1.run")) << "another's directory was removed";
    // With a record: the session's, which `session rm` removes.
    fs::create_directories(state + "/sessions/dup2.run");
    s.dir.write("state/sessions/dup2.json", "{}\n");
    r = create("dup2");
    expect_refusal(r, "session 'dup2' exists already");
    EXPECT_THAT(r.err, HasSubstr("'radiald session rm dup2', or pick another --session-id"));
    EXPECT_EQ(test::box_id_leases_of(state), 0u);
}

// A session limit is written as every duration of radiald is (no days): the help says so, and a
// day written "1d" is refused saying how to write it.
TEST(RadialdSessionCreate, TheLimitsHelpAndRefusalAgreeOnTheirUnits) {
    PluginSetup s{{"fake_good", "fake"}};
    auto help = test::run_process({RADIALD_PATH, "session", "create", "--help"});
    EXPECT_EQ(help.exit_code, 0) << help.err;
    EXPECT_THAT(help.out, HasSubstr("10s to 8760h"));
    EXPECT_THAT(help.out, Not(HasSubstr("365d")));
    for (const std::string flag : {"--idle-timeout", "--max-lifetime"}) {
        auto r = test::run_process({RADIALD_PATH, "session", "create", "--config",
                                    s.dir / "radiald.toml", "--runtime", "fake", "--image", "img",
                                    flag, "1d"});
        expect_refusal(r, flag + " must be a duration from 10s to 8760h");
        EXPECT_THAT(r.err, HasSubstr("a day is written 24h (365 days: 8760h)"));
    }
}

} // namespace
} // namespace radial
