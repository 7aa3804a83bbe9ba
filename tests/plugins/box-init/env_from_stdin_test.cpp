// radial-init --env-from-stdin (plugins/box-init/, docs/design.md §13.8): the docker runtime's
// secret variables reach the command through radial-init's stdin, never the container's
// configuration. Run for real, as PID 1 of a pid namespace of its own, its stdin a file.
#include <gtest/gtest.h>

#include <string>

#include "../../support/process_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {

// radial-init [FLAGS] with `input` as its stdin.
test::ProcessResult run_init(const std::string& input, const std::vector<std::string>& args) {
    test::TempDir dir("radial-init-env");
    const std::string in = dir.write("stdin", input);
    std::vector<std::string> argv = {"sh",
                                     "-c",
                                     "exec \"$@\" < \"$0\"",
                                     in,
                                     "unshare",
                                     "--user",
                                     "--map-root-user",
                                     "--pid",
                                     "--fork",
                                     RADIAL_BINARY_DIR "/lib/radial/radial-init"};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_process(argv);
}

std::string block(const std::string& entries) {
    return "radial-env " + std::to_string(entries.size()) + "\n" + entries;
}

TEST(RadialInitEnvFromStdin, TheVariablesReachTheCommandByteForByteAndStdinIsEmpty) {
    const std::string pem = "-----BEGIN-----\nabc\r\n-----END-----\r";
    const std::string entries = "API_KEY=sk-1'\"$x\\" + std::string(1, '\0') + "PEM=" + pem +
                                std::string(1, '\0') + "EMPTY=" + std::string(1, '\0');
    // What follows the block on stdin is never the command's.
    auto r = run_init(block(entries) + "left over",
                      {"--env-from-stdin", "0", "0", "--", "sh", "-c",
                       "printf '%s|' \"$API_KEY\" \"$PEM\" \"${EMPTY-unset}\"; wc -c"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "sk-1'\"$x\\|" + pem + "||0\n");
    EXPECT_EQ(r.err, "");
}

TEST(RadialInitEnvFromStdin, AMissingOrMalformedBlockRunsNothing) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "did not arrive"},
        {"radial-env x\n", "did not arrive"},
        {"radial-env 0\n", "did not arrive"},
        {"something else\n", "did not arrive"},
        {"radial-env 100\nA=1", "ended inside"},
        {block(std::string("NOEQUALS") + '\0'), "without NAME="},
        {block(std::string("=v") + '\0'), "without NAME="},
    };
    for (const auto& [input, said] : cases) {
        auto r = run_init(input, {"--env-from-stdin", "0", "0", "--", "sh", "-c", "echo ran"});
        EXPECT_EQ(r.exit_code, 125) << input;
        EXPECT_EQ(r.out, "") << "the command ran for input '" << input << "'";
        EXPECT_NE(r.err.find(said), std::string::npos) << input << ": " << r.err;
    }
}

TEST(RadialInitEnvFromStdin, TheDeadlineHoldsWhileItWaitsForTheBlock) {
    // stdin a FIFO held open for writing by radial-init itself (<>): nothing ever arrives, and it
    // never ends, so radial-init waits for the block until the deadline only.
    test::TempDir dir("radial-init-env");
    auto r = test::run_process(
        {"sh", "-c", "mkfifo \"$0\" && exec \"$@\" <> \"$0\"", dir / "stdin", "unshare", "--user",
         "--map-root-user", "--pid", "--fork", RADIAL_BINARY_DIR "/lib/radial/radial-init",
         "--env-from-stdin", "500", "100", "--", "sh", "-c", "echo ran"},
        {}, std::chrono::seconds(60));
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 124);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("timeout passed before its secret variables arrived"), std::string::npos)
        << r.err;
}

// --say-ready (a session's exec): "radial-init: ready" on stdout before the block is read — here
// it never arrives, and the line is there all the same — and then the command's own output. Only
// with --env-from-stdin: without secrets there is nothing to be ready for.
TEST(RadialInitEnvFromStdin, SayReadyWritesItsLineBeforeTheBlockIsRead) {
    test::TempDir dir("radial-init-env");
    auto waiting = test::run_process(
        {"sh", "-c", "mkfifo \"$0\" && exec \"$@\" <> \"$0\"", dir / "stdin", "unshare", "--user",
         "--map-root-user", "--pid", "--fork", RADIAL_BINARY_DIR "/lib/radial/radial-init",
         "--env-from-stdin", "--say-ready", "500", "100", "--", "sh", "-c", "echo ran"},
        {}, std::chrono::seconds(60));
    EXPECT_EQ(waiting.exit_code, 124);
    EXPECT_EQ(waiting.out, "radial-init: ready\n");
    auto r = run_init(block(std::string("A=v1") + '\0'), {"--env-from-stdin", "--say-ready", "0",
                                                          "0", "--", "sh", "-c", "echo \"$A\""});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "radial-init: ready\nv1\n");
    auto alone = run_init("", {"--say-ready", "0", "0", "--", "echo", "ran"});
    EXPECT_EQ(alone.exit_code, 125);
    EXPECT_EQ(alone.out, "");
    EXPECT_NE(alone.err.find("usage"), std::string::npos) << alone.err;
}

TEST(RadialInitEnvFromStdin, NoValueIsEverInAMessage) {
    auto r = run_init("radial-env 9999\nAPI_KEY=sk-never-say-me",
                      {"--env-from-stdin", "0", "0", "--", "true"});
    EXPECT_EQ(r.exit_code, 125);
    EXPECT_EQ(r.err.find("sk-never"), std::string::npos) << r.err;
}

} // namespace
} // namespace radial
