// tests/plugins/sandbox/sbx_cli_test.cpp — the short sbx calls (plugins/sandbox/sbx_cli.cpp)
// against the scripted sbx and through the real process executor: flag detection, the budget of
// every call against a CLI that never answers, the recognised problems and their fixes, removal.
#include "sbx_cli.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "../../support/load_factor.h"
#include "../../support/plugin_error.h"
#include "sbx_diagnosis.h"
#include "scripted_sbx.h"

namespace radial::sandbox {
namespace {

using radial::test::ScriptedSbx;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using Args = std::vector<std::string>;

SbxCli cli_for(const ScriptedSbx& fake, std::uint64_t budget_ms = 5000,
               std::uint64_t removal_ms = 1000) {
    SandboxSettings s;
    s.binary = fake.binary();
    s.probe_timeout_ms = budget_ms;
    s.command_timeout_ms = budget_ms;
    s.removal_timeout_ms = removal_ms;
    return SbxCli(s, std::make_shared<ProcessSbxExecutor>(s.binary), radial::plugin::Host());
}

using radial::test::error_of;

TEST(sbx_cli, FeaturesAreReadFromHelpAndKeptOnceBothProbesAnswered) {
    ScriptedSbx fake;
    SbxCli cli = cli_for(fake);
    EXPECT_EQ(cli.features(), (SbxFeatures{true, true}));
    EXPECT_EQ(cli.features(), (SbxFeatures{true, true}));
    EXPECT_EQ(fake.calls(), (std::vector<Args>{{"--help"}, {"ls", "--help"}})) << "probed once";
}

TEST(sbx_cli, AnOlderSbxGetsNeitherFlag) {
    ScriptedSbx fake;
    fake.features("");
    SbxCli cli = cli_for(fake);
    EXPECT_EQ(cli.features(), (SbxFeatures{false, false}));
    fake.add_sandbox("radial-turn-a-1");
    EXPECT_EQ(cli.list(5s), (std::vector<ListedSandbox>{{"radial-turn-a-1", ""}}));
    EXPECT_EQ(fake.calls("ls").back(), (Args{"ls"})) << "text listing, no flag it rejects";
}

TEST(sbx_cli, AFailedProbeIsNotKept) {
    ScriptedSbx fake;
    fake.fail("help", 1, "Error: daemon hiccup");
    SbxCli cli = cli_for(fake);
    EXPECT_EQ(cli.features().no_input, false);
    fake.clear("help");
    EXPECT_EQ(cli.features(), (SbxFeatures{true, true})) << "probed again, now kept";
}

TEST(sbx_cli, VersionIsTheFirstLine) {
    ScriptedSbx fake;
    EXPECT_EQ(cli_for(fake).version(), "sbx version v0.43.0-scripted (fake)");
}

TEST(sbx_cli, EveryCallHasABudgetAgainstACliThatNeverAnswers) {
    for (std::string step : {"version", "ls", "rm", "help"}) {
        ScriptedSbx fake;
        fake.hang(step);
        fake.add_sandbox("n"); // so a removal that does not answer leaves it listed
        SbxCli cli = cli_for(fake, 300);
        auto start = Clock::now();
        if (step == "version") {
            auto e = error_of([&] { cli.version(); });
            EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
            EXPECT_NE(std::string(e.what()).find("gave no answer within 300 ms"), std::string::npos)
                << e.what();
        } else if (step == "ls") {
            auto e = error_of([&] { cli.list(300ms); });
            EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
        } else if (step == "rm") {
            auto e = error_of([&] { cli.remove("n", "n"); });
            EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
            EXPECT_NE(std::string(e.what()).find("gave no answer within 300 ms"), std::string::npos)
                << e.what();
        } else {
            EXPECT_EQ(cli.features(), (SbxFeatures{false, true}));
        }
        EXPECT_LT(Clock::now() - start, 4s) << step;
    }
}

TEST(sbx_cli, RecognisedProblemsAreExplainedWithTheirFix) {
    struct Case {
        const char* message;
        const char* explanation;
        const char* fix;
    };
    const Case cases[] = {
        {"Error: you are not signed in. Run 'sbx login' to sign in.",
         "sbx is not signed in to a Docker account", "run 'sbx login' once"},
        {"Error: network policy has not been initialized",
         "sbx's network policy is not initialised", "sbx policy init deny-all"},
        {"Error: dial unix /home/u/.local/state/sandboxes/sandboxd/sandboxd.sock: connect: no such "
         "file or directory",
         "the sandboxd daemon is not running", "sbx daemon start -d"},
    };
    for (const auto& c : cases) {
        ScriptedSbx fake;
        fake.fail("ls", 1, c.message);
        auto e = error_of([&] { cli_for(fake).list(5s); });
        std::string what = e.what();
        EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE) << what;
        EXPECT_TRUE(what.starts_with("listing sandboxes with 'sbx ls --no-input --json': "))
            << what;
        EXPECT_NE(what.find(c.explanation), std::string::npos) << what;
        EXPECT_NE(what.find(std::string("(sbx said: ") + c.message + ")"), std::string::npos)
            << what;
        EXPECT_NE(what.find(c.fix), std::string::npos) << what;
        EXPECT_FALSE(what.ends_with(".")) << what;
    }
}

TEST(sbx_cli, DiagnosisGolden) {
    EXPECT_EQ(diagnose_sbx_message("Error: not authenticated").problem, SbxProblem::not_signed_in);
    EXPECT_EQ(diagnose_sbx_message("ERROR: NOT LOGGED IN").problem, SbxProblem::not_signed_in);
    EXPECT_EQ(diagnose_sbx_message("run 'sbx policy init' first").problem,
              SbxProblem::policy_not_initialised);
    EXPECT_EQ(diagnose_sbx_message("sandboxd: connection refused").problem,
              SbxProblem::daemon_not_running);
    Diagnosis t = diagnose_sbx_message("Error: template \"radial/turn:1\" not found");
    EXPECT_EQ(t.problem, SbxProblem::template_missing);
    EXPECT_EQ(t.code, RADIAL_E_NOT_FOUND);
    EXPECT_EQ(diagnose_sbx_message("Error: sandbox 'x' already exists").problem,
              SbxProblem::unknown);
}

TEST(sbx_cli, UnrecognisedFailuresCarrySbxsMessage) {
    ScriptedSbx fake;
    fake.fail("version", 3, "boom: something odd\nRun 'sbx version --help' for usage.");
    auto e = error_of([&] { cli_for(fake).version(); });
    EXPECT_EQ(std::string(e.what()),
              "checking sbx '" + fake.binary() +
                  "' with 'sbx version': boom: something odd; install a working sbx (Docker "
                  "Sandboxes) or set run.sandbox.binary");
}

TEST(sbx_cli, MissingBinaryIsUnavailableNamingIt) {
    SandboxSettings s;
    s.binary = "/nonexistent/sbx";
    SbxCli cli(s, std::make_shared<ProcessSbxExecutor>(s.binary), radial::plugin::Host());
    auto e = error_of([&] { cli.version(); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_EQ(e.key(), "binary");
    EXPECT_EQ(std::string(e.what()),
              "starting the sbx CLI '/nonexistent/sbx': '/nonexistent/sbx' is not an executable "
              "file; install the sbx CLI or set run.sandbox.binary");
}

TEST(sbx_cli, RemovingAnUnknownSandboxSucceedsOnceLsConfirmsItIsGone) {
    ScriptedSbx fake;
    SbxCli cli = cli_for(fake);
    EXPECT_NO_THROW(cli.remove("radial-turn-a-1", "radial-turn-a-1"));
    auto rm = fake.calls("rm");
    ASSERT_EQ(rm.size(), 1u);
    EXPECT_EQ(rm[0], (Args{"rm", "--no-input", "--force", "radial-turn-a-1"}));
    EXPECT_EQ(fake.calls("ls").size(), 1u) << "the failed rm was checked against ls";
}

TEST(sbx_cli, ARemovalAlreadyUnderWayIsWaitedFor) {
    // The first rm is refused while another removal is in progress; the sandbox then goes.
    ScriptedSbx fake;
    fake.add_sandbox("radial-turn-a-2");
    fake.fail("rm", 1, "Error: removal of radial-turn-a-2 is already in progress");
    SbxCli cli = cli_for(fake);
    std::thread other([&] {
        std::this_thread::sleep_for(200ms);
        std::filesystem::remove(std::filesystem::path(fake.dir()) / "sandboxes/radial-turn-a-2");
    });
    EXPECT_NO_THROW(cli.remove("radial-turn-a-2", "radial-turn-a-2"));
    other.join();
    EXPECT_GE(fake.calls("rm").size(), 1u);
}

TEST(sbx_cli, ARemovalThatLeavesTheSandboxIsAnError) {
    ScriptedSbx fake;
    fake.add_sandbox("radial-turn-a-1");
    fake.fail("rm", 1, "Error: sandbox is busy");
    // A removal budget long enough for the scripted sbx's rm and ls to answer beside a CPU hog; a
    // later rm cut short by it reports the last answer, not "no answer".
    auto e =
        error_of([&] { cli_for(fake, 5000, 3000).remove("radial-turn-a-1", "radial-turn-a-1"); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_EQ(std::string(e.what()),
              "removing sandbox 'radial-turn-a-1' of box 'radial-turn-a-1' with 'sbx rm "
              "--no-input --force radial-turn-a-1': Error: sandbox is busy; it is still listed; "
              "remove it by hand with 'sbx rm --force radial-turn-a-1'");
}

TEST(sbx_cli, JsonListingAfterStartUpNoise) {
    ScriptedSbx fake;
    fake.ls_noise(
        "Starting sandboxd daemon...\nDaemon started (PID: 7, socket: /x.sock)\nLogs: "
        "/x.log\n");
    fake.add_sandbox("b");
    fake.add_sandbox("a");
    EXPECT_EQ(cli_for(fake).list(5s),
              (std::vector<ListedSandbox>{{"a", "running"}, {"b", "running"}}));
}

TEST(sbx_cli, JsonListingWithoutADocumentIsAnError) {
    ScriptedSbx fake;
    fake.answer("ls", "Something unexpected\nand no document\n");
    auto e = error_of([&] { cli_for(fake).list(5s); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("holds no {\"sandboxes\":[...]} document"),
              std::string::npos)
        << e.what();
}

// Every remove of one sandbox shares the deadline the first one set: past it, a call tries once
// (docs/design.md §8.3), so the paths that end a box together take one removal budget.
TEST(sbx_cli, RemovalsOfOneSandboxShareOneDeadline) {
    ScriptedSbx fake;
    fake.add_sandbox("radial-turn-a-9");
    fake.fail("rm", 1, "Error: sandboxd: context deadline exceeded");
    // Scaled: the later calls must come within one removal budget of the deadline, or they start
    // an episode of their own (docs/design.md §16).
    SbxCli cli = cli_for(fake, 5000, static_cast<std::uint64_t>(test::scaled(1500ms).count()));
    EXPECT_EQ(error_of([&] { cli.remove("radial-turn-a-9", "radial-turn-a-9"); }).code(),
              RADIAL_E_UNAVAILABLE);
    const auto first = fake.calls("rm").size();
    EXPECT_GE(first, 2u) << "retried within the budget";
    for (int i = 1; i <= 2; ++i) {
        EXPECT_EQ(error_of([&] { cli.remove("radial-turn-a-9", "radial-turn-a-9"); }).code(),
                  RADIAL_E_UNAVAILABLE);
        EXPECT_EQ(fake.calls("rm").size(), first + i) << "one try past the shared deadline";
    }
    // Once it works, the deadline is forgotten; another sandbox has its own all along.
    fake.clear("rm");
    EXPECT_NO_THROW(cli.remove("radial-turn-a-9", "radial-turn-a-9"));
    EXPECT_TRUE(fake.sandboxes().empty());
}

// An ls that succeeds but prints nothing is no listing, in either form: only a document (or the
// table's header) says that there is no sandbox.
TEST(sbx_cli, ASilentListingIsAnError) {
    ScriptedSbx fake;
    fake.answer("ls", "\n");
    SbxCli cli = cli_for(fake);
    EXPECT_EQ(error_of([&] { cli.list(5s); }).code(), RADIAL_E_UNAVAILABLE);
    fake.features("no-input");
    SbxCli text = cli_for(fake);
    EXPECT_EQ(error_of([&] { text.list(5s); }).code(), RADIAL_E_UNAVAILABLE);
    fake.answer("ls", "null\n");
    EXPECT_EQ(cli.list(5s), std::vector<ListedSandbox>{}) << "Go's nil list";
}

} // namespace
} // namespace radial::sandbox
