// radiald's standard output that cannot take what a command prints (a full disk: /dev/full) is
// said on stderr and fails the command — a queued turn's id, a listing, a log lost must not
// exit 0 — while a reader that left (EPIPE: `| head -1`) is no error and keeps the status
// (docs/design.md §14.4).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../../support/fake_runtime_setup.h"
#include "../../support/process_runner.h"

namespace radial {
namespace {

struct StdoutSetup : test::FakeRuntimeSetup {
    std::string request =
        dir.write("request.toml", "image = \"img\"\nargv = [\"echo\", \"queued\"]\n");
    StdoutSetup() : FakeRuntimeSetup("radial-stdout") {}
    // The commands that print what the operator asked for, after a turn that printed "hi" ran.
    std::vector<std::vector<std::string>> commands() const {
        return {{RADIALD_PATH, "--version"},
                {RADIALD_PATH, "--help"},
                {RADIALD_PATH, "turns", "--config", config},
                {RADIALD_PATH, "status", "--config", config},
                {RADIALD_PATH, "records", "--config", config, "t1"},
                {RADIALD_PATH, "logs", "--config", config, "t1"},
                {RADIALD_PATH, "submit", "--config", config, request},
                // A turn's own output, lost to a full disk, fails it too (not its command's 0).
                {RADIALD_PATH, "turn", "--config", config, "--image", "img", "--", "echo", "hi"}};
    }
};

TEST(RadialdStdout, AFullStdoutFailsTheCommandAndAReaderThatLeftDoesNot) {
    StdoutSetup s;
    const auto ran = test::run_process({RADIALD_PATH, "turn", "--config", s.config, "--image",
                                        "img", "--turn-id", "t1", "--", "echo", "hi"});
    ASSERT_EQ(ran.exit_code, 0) << ran.err;
    const internal::UniqueFd full(::open("/dev/full", O_WRONLY | O_CLOEXEC));
    ASSERT_TRUE(full.valid());
    for (const auto& argv : s.commands()) {
        const std::string command = argv[1];
        auto r = test::run_process_with_stdout(argv, full.get());
        // `status` keeps its own 3 (no daemon holds the state directory); the rest did what they
        // were asked but for the output, and fail with 1.
        EXPECT_EQ(r.exit_code, command == "status" ? 3 : 1) << command << ": " << r.err;
        EXPECT_THAT(r.err, ::testing::EndsWith(
                               "radiald: writing standard output: No space left on device\n"))
            << command;

        // The reader is gone before radiald starts: every write gets EPIPE, as under `| head`
        // once head has its line.
        int fds[2];
        ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
        internal::UniqueFd read_end(fds[0]), write_end(fds[1]);
        read_end.reset();
        r = test::run_process_with_stdout(argv, write_end.get());
        EXPECT_EQ(r.exit_code, command == "status" ? 3 : 0) << command << ": " << r.err;
        EXPECT_THAT(r.err, ::testing::Not(::testing::HasSubstr("standard output"))) << command;
    }
}

} // namespace
} // namespace radial
