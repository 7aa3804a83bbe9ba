// The real radiald binary, mistyped: an unknown flag, command or runtime id is named as what it is,
// with the nearest known one, in every command — never reported as whatever its value then broke
// ("--image is required", "not expected: hi echo", "remove [run.docker]"). And the config file a
// command reads when --config is not given ($RADIAL_CONFIG, else /etc/radial/radiald.toml).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "../../support/process_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A config with the fake runtime alone in its plugin directory and a private state directory.
struct FakeConfig {
    test::TempDir dir{"radial-usage"};
    std::string plugins = dir / "plugins";
    std::string config;
    explicit FakeConfig(const std::string& extra = "") {
        fs::create_directory(plugins);
        fs::copy_file(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_good/fake.so",
                      plugins + "/fake.so");
        config = dir.write("radiald.toml", "[run]\ncontainerRuntime = \"fake\"\npluginDir = \"" +
                                               plugins + "\"\nstateDir = \"" + (dir / "state") +
                                               "\"\n" + extra);
    }
};

test::ProcessResult radiald(std::vector<std::string> args,
                            const std::map<std::string, std::string>& env = {}) {
    args.insert(args.begin(), RADIALD_PATH);
    // Never the caller's $RADIAL_CONFIG: only the one a test sets.
    std::vector<std::string> unset;
    if (!env.count("RADIAL_CONFIG")) unset.push_back("RADIAL_CONFIG");
    return test::run_process(args, env, std::chrono::seconds(30), unset);
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(RadialdUsage, AMistypedFlagOfTurnIsNamedWithTheNearestOne) {
    auto r = radiald({"turn", "--imgae", "x", "--", "true"});
    EXPECT_EQ(r.exit_code, 125) << r.err; // a turn's failure before the box (docs/design.md §14.4)
    EXPECT_EQ(r.err,
              "radiald[cli] error: radiald turn: unknown flag '--imgae'; did you mean --image? "
              "(see 'radiald turn --help')\n");
    EXPECT_EQ(r.out, "");

    auto t = radiald({"turn", "--image", "img", "--timout", "5s", "--", "echo", "hi"});
    EXPECT_EQ(t.exit_code, 125);
    EXPECT_THAT(t.err, HasSubstr("radiald turn: unknown flag '--timout'; did you mean --timeout?"));
    EXPECT_THAT(t.err, Not(HasSubstr("not expected")));
}

// Every command, and the nested ones: the same check, the same message, exit 2 (125 for the two
// commands that run a box).
TEST(RadialdUsage, EveryCommandNamesAnUnknownFlag) {
    const std::vector<std::vector<std::string>> commands = {{"turn"},
                                                            {"check"},
                                                            {"submit"},
                                                            {"run"},
                                                            {"reconcile"},
                                                            {"status"},
                                                            {"records"},
                                                            {"turns"},
                                                            {"plugins"},
                                                            {"config", "check"},
                                                            {"session", "create"},
                                                            {"session", "rm"},
                                                            {"session", "ls"},
                                                            {"session", "snapshot"},
                                                            {"session", "snapshots"},
                                                            {"session", "snapshot-rm"},
                                                            {"template", "export"}};
    for (const auto& c : commands) {
        std::string name = "radiald";
        for (const auto& w : c) name += " " + w;
        auto args = c;
        args.push_back("--confg");
        args.push_back("x.toml");
        auto r = radiald(args);
        const bool box = c[0] == "turn" || c[0] == "check";
        EXPECT_EQ(r.exit_code, box ? 125 : 2) << name << ": " << r.err;
        EXPECT_EQ(r.err, "radiald[cli] error: " + name +
                             ": unknown flag '--confg'; did you mean --config? (see '" + name +
                             " --help')\n")
            << name;
    }
}

TEST(RadialdUsage, AnUnknownShortFlagIsNamedToo) {
    auto r = radiald({"status", "-x"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err,
                HasSubstr("radiald status: unknown flag '-x' (see 'radiald status --help')"));
}

// A count flag refuses a negative count by name: CLI11 wrapped "-2" into the largest unsigned
// count, so `turns -n -2` listed every turn.
TEST(RadialdUsage, ANegativeCountIsRefusedNotTakenForAll) {
    for (const std::vector<std::string>& args : {std::vector<std::string>{"turns", "-n", "-2"},
                                                 {"status", "-n", "-1"},
                                                 {"turns", "--limit", "x"}}) {
        auto r = radiald(args);
        EXPECT_EQ(r.exit_code, 2) << args[0];
        EXPECT_THAT(r.err, HasSubstr("--limit: '" + args[2] +
                                     "' is not a number of turns; give 0 "
                                     "or more"))
            << r.err;
        EXPECT_EQ(r.out, "");
    }
}

TEST(RadialdUsage, AMistypedCommandIsNamedWithTheNearestOne) {
    auto top = radiald({"trun", "--image", "x"});
    EXPECT_EQ(top.exit_code, 2);
    EXPECT_THAT(top.err, HasSubstr("radiald: unknown command 'trun'; did you mean turn?"));
    auto nested = radiald({"session", "craete"});
    EXPECT_EQ(nested.exit_code, 2);
    EXPECT_THAT(nested.err,
                HasSubstr("radiald session: unknown command 'craete'; did you mean create?"));
    auto config = radiald({"config", "chek"});
    EXPECT_THAT(config.err,
                HasSubstr("radiald config: unknown command 'chek'; did you mean check?"));
}

// CLI11 takes radiald's own flags only before the subcommand; written after it, the message says
// where it goes instead of "not expected".
TEST(RadialdUsage, AGlobalFlagAfterTheCommandSaysWhereItGoes) {
    auto r = radiald({"status", "--verbose"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("radiald status: '--verbose' is a flag of 'radiald', not of "
                                 "'radiald status'; write it before 'status'"));
}

// In the log format asked for, though CLI11 has not read the flag yet.
TEST(RadialdUsage, AnUnknownFlagIsReportedInTheJsonLogFormat) {
    auto r = radiald({"--log-format", "json", "status", "--jsn"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, ::testing::StartsWith("{\"time\":"));
    EXPECT_THAT(r.err, HasSubstr("\"component\":\"cli\",\"message\":\"radiald status: unknown "
                                 "flag '--jsn'; did you mean --json?"));
    auto eq = radiald({"--log-format=json", "trun"});
    EXPECT_THAT(eq.err, ::testing::StartsWith("{\"time\":"));
}

// The value given with '=' may be a secret: only the flag's name is quoted.
TEST(RadialdUsage, AnUnknownFlagsValueIsNeverQuoted) {
    auto r = radiald({"turn", "--secrte=hunter2-value", "--image", "x", "--", "true"});
    EXPECT_EQ(r.exit_code, 125);
    EXPECT_THAT(r.err, HasSubstr("unknown flag '--secrte'; did you mean --secret?"));
    EXPECT_THAT(r.err, Not(HasSubstr("hunter2")));
}

TEST(RadialdUsage, KnownFlagsAndValuesThatLookLikeCommandsStillParse) {
    FakeConfig f;
    // "status" here is --image's value and "turn" the box's command, not subcommands.
    auto r = radiald({"-v", "--log-format", "text", "turn", "--config", f.config, "--image",
                      "status", "--timeout=5s", "--", "echo", "turn"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "turn\n");
}

// `--runtime dokcer` beside a [run.fake] table: the id is what is wrong, not the table.
TEST(RadialdUsage, AMistypedRuntimeFlagNamesTheFlagAndTheKnownRuntimes) {
    FakeConfig f("[run.fake]\n");
    auto r =
        radiald({"turn", "--config", f.config, "--runtime", "fkae", "--image", "i", "--", "true"});
    EXPECT_EQ(r.exit_code, 125);
    EXPECT_THAT(r.err, HasSubstr("--runtime 'fkae' names no installed runtime; did you mean "
                                 "'fake'? The known runtimes are 'fake' (plugins in '" +
                                 f.plugins + "'); pass one of those"));
    EXPECT_THAT(r.err, Not(HasSubstr("remove [run.fake]")));
    EXPECT_EQ(lines(r.err), 1) << r.err;
}

TEST(RadialdUsage, AMistypedRuntimeFlagWithoutATableNamesTheFlagToo) {
    FakeConfig f;
    auto r =
        radiald({"session", "create", "--config", f.config, "--runtime", "fkae", "--image", "i"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("--runtime 'fkae' names no installed runtime; did you mean "
                                 "'fake'? The known runtimes are 'fake'"));
}

TEST(RadialdUsage, AMistypedContainerRuntimeNamesTheKeyWithItsPosition) {
    test::TempDir d("radial-usage");
    FakeConfig f;
    const std::string config =
        d.write("radiald.toml", "[run]\ncontainerRuntime = \"fkae\"\npluginDir = \"" + f.plugins +
                                    "\"\nstateDir = \"" + (d / "state") + "\"\n[run.fake]\n");
    for (const std::string cmd : {"status", "submit"}) {
        auto r = radiald({cmd, "--config", config, "request.toml"});
        if (cmd == "status") r = radiald({cmd, "--config", config});
        EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
        EXPECT_THAT(r.err, HasSubstr(config + ":2:20: run.containerRuntime 'fkae' names no "
                                              "installed runtime; did you mean 'fake'?"))
            << cmd;
        EXPECT_THAT(r.err, HasSubstr("set it to one of those")) << cmd;
    }
}

// $RADIAL_CONFIG stands in for --config; --config still wins over it.
TEST(RadialdConfigFile, RadialConfigIsReadWithoutTheFlag) {
    FakeConfig f;
    auto st = radiald({"status", "--json"}, {{"RADIAL_CONFIG", f.config}});
    EXPECT_EQ(st.exit_code, 3) << st.err; // no daemon runs there
    EXPECT_THAT(st.out, HasSubstr("\"stateDir\": \"" + (f.dir / "state") + "\""));
    auto t = radiald({"turn", "--image", "img", "--", "echo", "from", "env"},
                     {{"RADIAL_CONFIG", f.config}});
    EXPECT_EQ(t.exit_code, 0) << t.err; // the fake runtime: only this config selects it
    EXPECT_EQ(t.out, "from env\n");

    test::TempDir other("radial-usage");
    const std::string broken = other.write("broken.toml", "[run]\nnoSuchKey = 1\n");
    auto flag = radiald({"status", "--json", "--config", f.config}, {{"RADIAL_CONFIG", broken}});
    EXPECT_EQ(flag.exit_code, 3) << flag.err;
    auto env = radiald({"status", "--json"}, {{"RADIAL_CONFIG", broken}});
    EXPECT_EQ(env.exit_code, 2);
    EXPECT_THAT(env.err, HasSubstr(broken + ":2:13: run.noSuchKey: unknown key"));
}

TEST(RadialdConfigFile, ARadialConfigThatDoesNotExistIsAnErrorNamingTheVariable) {
    test::TempDir d("radial-usage");
    const std::string missing = d / "nope.toml";
    for (const std::string cmd : {"status", "turns", "plugins", "turn"}) {
        std::vector<std::string> args{cmd};
        // --runtime fake: were the variable ignored, the turn still could not reach an engine.
        if (cmd == "turn") args = {"turn", "--runtime", "fake", "--image", "img", "--", "true"};
        auto r = radiald(args, {{"RADIAL_CONFIG", missing}});
        EXPECT_EQ(r.exit_code, cmd == "turn" ? 125 : 2) << cmd << ": " << r.err;
        EXPECT_THAT(r.err, HasSubstr("reading config '" + missing +
                                     "' named by $RADIAL_CONFIG: no such file; point "
                                     "RADIAL_CONFIG at an existing file, or unset it"))
            << cmd;
    }
}

} // namespace
} // namespace radial
