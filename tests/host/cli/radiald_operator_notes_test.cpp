// What the real radiald binary tells an operator where it used to say nothing (no engine needed:
// the fake runtime): `status` on a state directory that does not exist says it is missing;
// `session ls` with no session says so; `policy deny` and `allow` print what they changed, and a
// deny outside the ceiling is noted as a likely typo (docs/usage.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "../../support/process_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct NotesSetup {
    test::TempDir dir{"radial-notes"};
    std::string state = dir / "state";
    std::string config;
    explicit NotesSetup(const std::string& extra = "", bool make_state = true) {
        fs::create_directory(dir / "plugins");
        fs::copy_file(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_good/fake.so",
                      dir / "plugins/fake.so");
        if (make_state) fs::create_directory(state);
        config = dir.write("radiald.toml",
                           "[run]\npluginDir = \"plugins\"\ncontainerRuntime = "
                           "\"fake\"\nstateDir = \"" +
                               state + "\"\n" + extra);
    }
    test::ProcessResult radiald(std::vector<std::string> args) const {
        args.insert(args.begin(), RADIALD_PATH);
        args.insert(args.end(), {"--config", config});
        return test::run_process(args);
    }
};

TEST(RadialdOperatorNotes, StatusOfAStateDirectoryThatDoesNotExistSaysItIsMissing) {
    NotesSetup s("", false);
    auto r = s.radiald({"status"});
    EXPECT_EQ(r.exit_code, 3) << r.err; // not running, as before (docs/design.md §14.4)
    EXPECT_THAT(r.err, HasSubstr("no state directory at '" + s.state + "' (run.stateDir)"));
    EXPECT_FALSE(fs::exists(s.state)) << "status only reads";
}

TEST(RadialdOperatorNotes, SessionLsWithNoSessionSaysSoOnStderr) {
    NotesSetup s;
    auto r = s.radiald({"session", "ls"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(r.err, HasSubstr("no sessions in state directory '" + s.state + "'"));
    auto json = s.radiald({"session", "ls", "--json"});
    EXPECT_EQ(json.exit_code, 0) << json.err;
    EXPECT_EQ(json.out, "[]\n");
}

TEST(RadialdOperatorNotes, PolicyChangesArePrintedAndADenyOutsideTheCeilingIsNoted) {
    NotesSetup s("[run.egress]\nallow = [\"pkg.test:443\"]\n");
    auto deny = s.radiald({"policy", "deny", "pkg.test:443"});
    EXPECT_EQ(deny.exit_code, 0) << deny.err;
    EXPECT_EQ(deny.out, "denied to every turn: pkg.test:443\n");
    EXPECT_EQ(deny.err, "");
    auto again = s.radiald({"policy", "deny", "pkg.test:443"});
    EXPECT_EQ(again.out, "already denied to every turn: pkg.test:443\n");
    auto lift = s.radiald({"policy", "allow", "pkg.test:443"});
    EXPECT_EQ(lift.exit_code, 0) << lift.err;
    EXPECT_EQ(lift.out, "no longer denied to every turn: pkg.test:443\n");
    auto typo = s.radiald({"policy", "deny", "nothere.test:1"});
    EXPECT_EQ(typo.exit_code, 0) << typo.err;
    EXPECT_EQ(typo.out, "denied to every turn: nothere.test:1\n");
    EXPECT_THAT(typo.err, HasSubstr("nothere.test:1 is outside the ceiling ([run.egress] allow: "
                                    "pkg.test:443)"));
}

} // namespace
} // namespace radial
