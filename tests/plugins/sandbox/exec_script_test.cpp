// tests/plugins/sandbox/exec_script_test.cpp — the exec script (plugins/sandbox/exec_script.cpp):
// golden text, and the script really run by /bin/sh: every value byte for byte, mount targets
// bridged by symlink, the workload's exit status, stdin closed, a failed bridge failing the run.
#include "exec_script.h"

#include <gtest/gtest.h>
#include <radial/support/cli_capture.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <radial/plugin/runtime.hpp>

#include "../../support/plugin_error.h"
#include "../../support/temp_dir.h"

namespace radial::sandbox {
namespace {

using radial::test::read_file;
using radial::test::TempDir;

// Runs `script` with `sh -s` on stdin (as `sbx exec -i NAME sh -s` does) and returns its output.
plugin_support::CliOutput run_script(const std::string& script, const TempDir& dir) {
    std::string path = dir.write("script.sh", script);
    return plugin_support::capture_cli("/bin/sh", {"-c", "exec sh -s < \"$0\"", path},
                                       {{"PATH", "/usr/bin:/bin"}}, std::chrono::seconds(20));
}

TEST(exec_script, PosixQuoteGolden) {
    EXPECT_EQ(posix_quote(""), "''");
    EXPECT_EQ(posix_quote("plain"), "'plain'");
    EXPECT_EQ(posix_quote("it's"), "'it'\\''s'");
    EXPECT_EQ(posix_quote("$HOME `x` \\ \"q\"\n"), "'$HOME `x` \\ \"q\"\n'");
}

TEST(exec_script, Golden) {
    ContainerSpec s;
    s.label = "radial-turn-local-7";
    s.mounts = {{"/srv/ws/7", "/work", false}, {"/srv/same", "/srv/same", true}};
    s.env = {{"API_KEY", "sk-'x'", true}, {"MODE", "turn", false}};
    s.workdir = "/work";
    s.argv = {"harness", "--prompt", "it's $1"};
    EXPECT_EQ(sbx_exec_script(s),
              "set -e\n"
              "radial_root=\n"
              "if [ \"$(id -u)\" != 0 ] && command -v sudo >/dev/null 2>&1; then "
              "radial_root='sudo -n'; fi\n"
              "$radial_root mkdir -p '/'\n"
              "if [ -d '/work' ] && [ ! -L '/work' ]; then $radial_root rmdir '/work' 2>/dev/null "
              "|| $radial_root mv '/work' '/work.radial-covered'.$$; fi\n"
              "$radial_root ln -sfn '/srv/ws/7' '/work'\n"
              "export API_KEY='sk-'\\''x'\\'''\n"
              "export MODE='turn'\n"
              "cd '/work'\n"
              "exec 'harness' '--prompt' 'it'\\''s $1' </dev/null\n");
}

TEST(exec_script, WithoutMountsThereIsNoBridge) {
    ContainerSpec s;
    s.label = "b";
    s.argv = {"true"};
    EXPECT_EQ(sbx_exec_script(s), "set -e\nexec 'true' </dev/null\n");
}

TEST(exec_script, EnvironmentArrivesByteForByte) {
    TempDir dir("radial-script");
    const std::vector<std::string> values = {"it's \"quoted\"",
                                             "$HOME ${X:-y} $(id) `id` \\n \\",
                                             "line1\nline2\n\n",
                                             "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x90\xB3",
                                             "'",
                                             "''\\''",
                                             "",
                                             "   leading and trailing   ",
                                             "*?[a]~#!;&|<>(){}",
                                             std::string("bytes \x01\x7f\xff\xfe", 10)};
    ContainerSpec s;
    s.label = "b";
    for (std::size_t i = 0; i < values.size(); ++i)
        s.env.push_back({"V" + std::to_string(i), values[i], i % 2 == 0});
    // printf '%s\0' writes each value exactly as the workload's environment holds it.
    s.argv = {"sh", "-c",
              "for n in 0 1 2 3 4 5 6 7 8 9; do eval \"printf '%s\\\\0' \\\"\\$V$n\\\"\"; done"};
    auto r = run_script(sbx_exec_script(s), dir);
    ASSERT_TRUE(r.ok()) << r.err;
    std::string expected;
    for (const auto& v : values) expected += v + '\0';
    EXPECT_EQ(r.out, expected);
}

TEST(exec_script, ArgvWorkdirAndExitStatusAreTheWorkloads) {
    TempDir dir("radial-script");
    ContainerSpec s;
    s.label = "b";
    s.workdir = dir.path();
    s.argv = {"sh", "-c",          "printf '%s|' \"$PWD\" \"$@\"; exit 7", "zero", "a b", "it's",
              "$x", "\xE2\x9C\x93"};
    auto r = run_script(sbx_exec_script(s), dir);
    EXPECT_EQ(r.status.code, 7);
    EXPECT_EQ(r.out, dir.path() + "|a b|it's|$x|\xE2\x9C\x93|");
}

TEST(exec_script, TheWorkloadReadsNothingFromTheScript) {
    TempDir dir("radial-script");
    ContainerSpec s;
    s.label = "b";
    s.argv = {"sh", "-c", "cat; echo end"};
    auto r = run_script(sbx_exec_script(s) + "echo this line must not reach the workload\n", dir);
    EXPECT_EQ(r.out, "end\n");
}

TEST(exec_script, MountTargetsAreBridgedBySymlink) {
    TempDir dir("radial-script");
    std::filesystem::create_directories(dir / "src");
    dir.write("src/brief.md", "the brief");
    std::filesystem::create_directories(dir / "inbox/work"); // an empty dir at the target
    ContainerSpec s;
    s.label = "b";
    s.mounts = {{dir / "src", dir / "inbox/work", false},
                {dir / "src", dir / "deep/er/bundle", false}};
    s.workdir = dir / "inbox/work";
    s.argv = {"sh", "-c", "cat brief.md; cat \"$0\"/brief.md; echo made > made.txt",
              dir / "deep/er/bundle"};
    auto r = run_script(sbx_exec_script(s), dir);
    ASSERT_TRUE(r.ok()) << r.err;
    EXPECT_EQ(r.out, "the briefthe brief");
    EXPECT_TRUE(std::filesystem::is_symlink(dir / "inbox/work"));
    EXPECT_EQ(std::filesystem::read_symlink(dir / "inbox/work"), dir / "src");
    EXPECT_EQ(read_file(dir / "src/made.txt"), "made\n") << "writes land in the workspace";
}

TEST(exec_script, AFailedBridgeFailsTheRunBeforeTheWorkloadStarts) {
    TempDir dir("radial-script");
    std::filesystem::create_directories(dir / "src");
    dir.write("plain", "x"); // a file where the target's parent directory should be
    ContainerSpec s;
    s.label = "b";
    s.mounts = {{dir / "src", dir / "plain/work", false}};
    s.argv = {"sh", "-c", "echo workload-started"};
    auto r = run_script(sbx_exec_script(s, "radial-exec-started-test"), dir);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.out.find("workload-started"), std::string::npos);
    EXPECT_EQ(r.err.find("radial-exec-started-test"), std::string::npos)
        << "no marker: the runtime knows the command never started";
}

// A directory with files at the target is covered, as a docker mount covers it: the workload sees
// the workspace there (docs/design.md §13.3).
TEST(exec_script, ATargetDirectoryWithFilesIsMovedAside) {
    TempDir dir("radial-script");
    std::filesystem::create_directories(dir / "src");
    dir.write("src/brief.md", "the brief");
    std::filesystem::create_directories(dir / "busy");
    dir.write("busy/image-file", "from the image");
    ContainerSpec s;
    s.label = "b";
    s.mounts = {{dir / "src", dir / "busy", false}};
    s.workdir = dir / "busy";
    s.argv = {"sh", "-c", "cat brief.md; ls"};
    auto r = run_script(sbx_exec_script(s), dir);
    ASSERT_TRUE(r.ok()) << r.err;
    EXPECT_EQ(r.out, "the briefbrief.md\n");
    EXPECT_EQ(std::filesystem::read_symlink(dir / "busy"), dir / "src");
}

// The marker is the script's last line on stderr before the command: the command's stderr follows
// it, nothing of the command's comes before it.
TEST(exec_script, TheMarkerLineComesLastBeforeTheCommand) {
    TempDir dir("radial-script");
    ContainerSpec s;
    s.label = "b";
    s.argv = {"sh", "-c", "echo to-err >&2; exit 3"};
    auto r = run_script(sbx_exec_script(s, "radial-exec-started-0123"), dir);
    EXPECT_EQ(r.status.code, 3);
    EXPECT_EQ(r.err, "radial-exec-started-0123\nto-err\n");
    EXPECT_NE(exec_started_marker(), exec_started_marker());
    EXPECT_EQ(exec_started_marker().size(), std::string("radial-exec-started-").size() + 32);
}

using radial::test::error_of;

TEST(exec_script, RefusesWhatAShellWordCannotCarry) {
    ContainerSpec s;
    s.label = "b";
    s.argv = {"true"};
    s.env = {{"1BAD", "x", false}};
    auto e = error_of([&] { sbx_exec_script(s); });
    EXPECT_EQ(e.code(), RADIAL_E_INVALID);
    EXPECT_EQ(e.key(), "env[0]");
    s.env = {{"OK", std::string("a\0b", 3), true}};
    e = error_of([&] { sbx_exec_script(s); });
    EXPECT_EQ(e.key(), "env[0]");
    EXPECT_EQ(std::string(e.what()).find(std::string("a\0b", 3)), std::string::npos);
    s.env.clear();
    s.argv = {"x", std::string("\0", 1)};
    EXPECT_EQ(error_of([&] { sbx_exec_script(s); }).key(), "argv[1]");
}

TEST(exec_script, RefusesTargetsThatCannotBeBridged) {
    ContainerSpec s;
    s.label = "b";
    s.argv = {"true"};
    s.mounts = {{"/a", "/", false}};
    EXPECT_EQ(error_of([&] { sbx_exec_script(s); }).key(), "mounts[0]");
    s.mounts = {{"/a", "/work", false}, {"/b", "/work/", false}};
    EXPECT_EQ(error_of([&] { sbx_exec_script(s); }).key(), "mounts[1]");
    s.mounts = {{"/a", "/work", false}, {"/b", "/work/sub", false}};
    auto e = error_of([&] { sbx_exec_script(s); });
    EXPECT_EQ(e.key(), "mounts[1]");
    EXPECT_NE(std::string(e.what()).find("into the host's workspace"), std::string::npos)
        << e.what();
    s.mounts = {{"/a", "/work", false}, {"/work/sub", "/work/sub", false}};
    EXPECT_EQ(error_of([&] { sbx_exec_script(s); }).key(), "mounts[1]")
        << "a passthrough inside a bridged target would vanish behind the symlink";
    s.mounts = {{"/srv/ws", "/srv/ws", false}, {"/x", "/srv/ws/sub", false}};
    e = error_of([&] { sbx_exec_script(s); });
    EXPECT_EQ(e.key(), "mounts[1]");
    EXPECT_NE(std::string(e.what()).find("written into the host's files"), std::string::npos)
        << e.what();
    s.mounts = {{"/a", "/work", false}, {"/srv/same", "/srv/same", true}, {"/b", "/bundle", true}};
    EXPECT_NO_THROW(sbx_exec_script(s));
}

} // namespace
} // namespace radial::sandbox
