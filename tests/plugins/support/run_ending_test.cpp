// tests/plugins/support/run_ending_test.cpp — the run result that follows from how a run ended
// (plugin-api/support/run_ending.cpp), shared by the docker and sandbox runtimes.
#include <gtest/gtest.h>
#include <radial/support/run_ending.h>

namespace radial::plugin_support {
namespace {

using radial::plugin::RunResult;

ExitStatus exited(int code) { return {true, code, 0}; }

TEST(plugin_support_run_ending, AWorkloadThatEndedOnItsOwnReportsItsExitCode) {
    RunResult r;
    set_run_outcome(r, Ending::none, exited(3), false, "box 'b'", "the x client", "b was removed");
    EXPECT_EQ(r.flags, RADIAL_RUN_EXITED);
    EXPECT_EQ(r.exit_code, 3);
}

TEST(plugin_support_run_ending, FlagsTheRuntimeAlreadySetAreKeptForANaturalEnd) {
    RunResult r;
    r.flags = RADIAL_RUN_OOM_KILLED;
    set_run_outcome(r, Ending::none, exited(137), false, "box 'b'", "the x client", "removed");
    EXPECT_EQ(r.flags, RADIAL_RUN_EXITED | RADIAL_RUN_OOM_KILLED);
    EXPECT_EQ(r.exit_code, 137);
}

TEST(plugin_support_run_ending, EarlyEndsAreFlaggedWhateverTheClientReported) {
    for (auto [ending, flag] : {std::pair{Ending::killed, RADIAL_RUN_KILLED},
                                std::pair{Ending::aborted, RADIAL_RUN_KILLED},
                                std::pair{Ending::timed_out, RADIAL_RUN_TIMED_OUT}}) {
        RunResult r;
        r.flags = RADIAL_RUN_OOM_KILLED; // an engine's verdict about a box we ended is not kept
        set_run_outcome(r, ending, ExitStatus{false, 0, 9}, false, "box 'b'", "c", "removed");
        EXPECT_EQ(r.flags, static_cast<std::uint32_t>(flag)) << ending_text(ending);
        EXPECT_EQ(r.exit_code, 0);
    }
}

TEST(plugin_support_run_ending, AnAbortingSinkIsFlaggedOnTopOfTheEnding) {
    RunResult r;
    set_run_outcome(r, Ending::aborted, exited(0), true, "box 'b'", "c", "removed");
    EXPECT_EQ(r.flags, RADIAL_RUN_KILLED | RADIAL_RUN_OUTPUT_ABORTED);
}

TEST(plugin_support_run_ending, AClientKilledByAStrangerIsAnErrorNamingTheSignal) {
    RunResult r;
    try {
        set_run_outcome(r, Ending::none, ExitStatus{false, 0, 9}, false, "box 'b'",
                        "the docker client", "the box was removed");
        FAIL() << "no error";
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), RADIAL_E_INTERNAL);
        EXPECT_STREQ(e.what(),
                     "running box 'b': the docker client was killed by signal 9 and the "
                     "box was removed; find what signals processes on this host");
    }
}

TEST(plugin_support_run_ending, ALostExitStatusIsAnErrorThatSaysSo) {
    RunResult r;
    try {
        set_run_outcome(r, Ending::none, ExitStatus{}, false, "box 'b'", "c", "gone");
        FAIL() << "no error";
    } catch (const radial::plugin::Error& e) {
        EXPECT_NE(std::string(e.what()).find("exit status lost (is SIGCHLD ignored"),
                  std::string::npos)
            << e.what();
    }
}

TEST(plugin_support_run_ending, EndingTexts) {
    EXPECT_STREQ(ending_text(Ending::killed), "kill requested");
    EXPECT_STREQ(ending_text(Ending::timed_out), "timeout reached");
    EXPECT_STREQ(ending_text(Ending::aborted), "the output sink asked to stop");
    EXPECT_STREQ(ending_text(Ending::none), "running");
}

} // namespace
} // namespace radial::plugin_support
