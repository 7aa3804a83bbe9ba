// Turn files (docs/design.md §12.1): every key read, every refusal asserted verbatim with
// file:line:column and the key (docs/design.md §14.3).
#include "daemon/turn_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "../../support/temp_dir.h"

namespace radial::daemon {
namespace {

std::string error_of(const std::string& file) {
    try {
        read_turn_file(file);
    } catch (const TurnFileError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(TurnFile, ReadsEveryKeyAndResolvesRelativePathsFromTheFilesDirectory) {
    test::TempDir d;
    std::filesystem::create_directory(d / "ws");
    std::filesystem::create_directory(d / "cache");
    auto f = d.write("t.toml", R"(
id = "build-42"
image = "radial/busybox:latest"
argv = ["sh", "-c", "make test"]
workdir = "/src/"
workspace = "ws"
timeout = "90s"
recordType = "review"
secrets = ["GH_TOKEN", "API_KEY"]
[env]
CI = "1"
LANG = "C.UTF-8"
[[mounts]]
source = "cache"
target = "/cache"
readOnly = true
[[mounts]]
source = "/tmp"
target = "/host-tmp"
)");
    SpooledRequest r = read_turn_file(f);
    EXPECT_EQ(r.turn_id, "build-42");
    EXPECT_EQ(r.image, "radial/busybox:latest");
    EXPECT_EQ(r.argv, (std::vector<std::string>{"sh", "-c", "make test"}));
    EXPECT_EQ(r.workdir, "/src/");
    EXPECT_EQ(r.workspace, d / "ws");
    EXPECT_EQ(r.timeout_ms, 90'000u);
    EXPECT_EQ(r.record_type, "review");
    EXPECT_EQ(r.secrets, (std::vector<std::string>{"GH_TOKEN", "API_KEY"}));
    ASSERT_EQ(r.env.size(), 2u);
    EXPECT_EQ(r.env[0], (EnvVar{"CI", "1", false}));
    EXPECT_EQ(r.env[1], (EnvVar{"LANG", "C.UTF-8", false}));
    ASSERT_EQ(r.mounts.size(), 2u);
    EXPECT_EQ(r.mounts[0], (Mount{d / "cache", "/cache", true}));
    EXPECT_EQ(r.mounts[1], (Mount{"/tmp", "/host-tmp", false}));
}

// A turn file of gigabytes (a sparse one, here) was read whole into memory before it was found
// to be no request (2 GiB resident for `radiald submit`). Refused by its size.
TEST(TurnFile, AFileLargerThanAnyRequestIsRefusedUnread) {
    test::TempDir d;
    const std::string f = d.write("huge.toml", "image = \"img\"\n");
    std::filesystem::resize_file(f, std::uintmax_t{2} << 30);
    EXPECT_EQ(error_of(f), "reading turn file '" + f +
                               "': it is larger than 16777216 bytes, more "
                               "than any request; give the turn file (TOML) of one request");
}

TEST(TurnFile, OnlyImageAndArgvAreRequired) {
    test::TempDir d;
    auto r = read_turn_file(d.write("t.toml", "image = \"img\"\nargv = [\"true\"]\n"));
    EXPECT_EQ(r.turn_id, "");
    EXPECT_EQ(r.record_type, "result");
    EXPECT_EQ(r.timeout_ms, 0u);
    EXPECT_TRUE(r.env.empty() && r.secrets.empty() && r.mounts.empty());
}

TEST(TurnFile, MissingImageNamesTheKey) {
    test::TempDir d;
    auto f = d.write("t.toml", "argv = [\"true\"]\n");
    EXPECT_EQ(error_of(f), f + ": image: missing; name the image the box runs, e.g. image = "
                               "\"radial/busybox:latest\"");
}

TEST(TurnFile, MissingArgvNamesTheKey) {
    test::TempDir d;
    auto f = d.write("t.toml", "image = \"img\"\n");
    EXPECT_EQ(
        error_of(f),
        f + ": argv: missing; give the command to run, e.g. argv = [\"sh\", \"-c\", \"make\"]");
}

TEST(TurnFile, UnknownKeyIsRefusedWithItsPosition) {
    test::TempDir d;
    auto f = d.write("t.toml", "image = \"img\"\nargv = [\"true\"]\ncommand = \"x\"\n");
    EXPECT_EQ(error_of(f),
              f + ":3:11: command: unknown key; a turn file takes id, kind, image, argv, workdir, "
                  "workspace, timeout, recordType, secrets, env, mode, workspaceMount, mounts, "
                  "session, egress and offer");
}

// docs/design.md §9.7 "Between boxes": the services a queued turn offers, read as `--offer` is.
TEST(TurnFile, OfferIsRead) {
    test::TempDir d;
    auto r = read_turn_file(
        d.write("t.toml", "image = \"img\"\nargv = [\"true\"]\noffer = [\"api\", \"metrics\"]\n"));
    EXPECT_EQ(r.offer, (std::vector<std::string>{"api", "metrics"}));
}

// docs/design.md §7.6: the mode and where the workspace appears, checked before anything is queued.
TEST(TurnFile, ModeAndWorkspaceMountAreReadAndChecked) {
    test::TempDir d;
    auto f = d.write("t.toml",
                     "image = \"img\"\nargv = [\"true\"]\nmode = \"read-only\"\n"
                     "workspaceMount = \"same-path\"\nworkspace = \"/tmp\"\n");
    SpooledRequest r = read_turn_file(f);
    EXPECT_EQ(r.mode, "read-only");
    EXPECT_EQ(r.workspace_mount, "same-path");
    auto bad = d.write("b.toml", "image = \"img\"\nargv = [\"true\"]\nmode = \"rw\"\n");
    EXPECT_EQ(error_of(bad), bad + ":3:8: mode: must be \"read-only\" or \"workspace-write\"");
    auto where =
        d.write("w.toml", "image = \"img\"\nargv = [\"true\"]\nworkspaceMount = \"/src\"\n");
    EXPECT_EQ(error_of(where),
              where + ":3:18: workspaceMount: '/src' is neither \"/work\" nor \"same-path\"");
    // Where a workspace appears, without a workspace: a workspace forgotten, refused.
    auto alone =
        d.write("a.toml", "image = \"img\"\nargv = [\"true\"]\nworkspaceMount = \"same-path\"\n");
    EXPECT_EQ(error_of(alone),
              alone +
                  ":3:18: workspaceMount: is set, but the turn has no workspace to mount; add "
                  "workspace = \"DIR\", or remove workspaceMount");
}

TEST(TurnFile, KindIsATurnByDefaultAndMayBeACheck) {
    test::TempDir d;
    EXPECT_EQ(read_turn_file(d.write("t.toml", "image = \"img\"\nargv = [\"true\"]\n")).kind,
              turn::RequestKind::turn);
    EXPECT_EQ(
        read_turn_file(d.write("c.toml", "kind = \"check\"\nimage = \"img\"\nargv = [\"true\"]\n"))
            .kind,
        turn::RequestKind::check);
    auto f = d.write("x.toml", "kind = \"lint\"\nimage = \"img\"\nargv = [\"true\"]\n");
    EXPECT_EQ(error_of(f), f + ":1:8: kind: must be \"turn\" (the default) or \"check\" (a "
                               "project's own command, without secrets)");
}

TEST(TurnFile, ACheckThatNamesASecretIsRefused) {
    test::TempDir d;
    auto f =
        d.write("c.toml",
                "image = \"img\"\nargv = [\"true\"]\nsecrets = [\"GH_TOKEN\"]\nkind = \"check\"\n");
    EXPECT_EQ(error_of(f), f + ":3:11: secrets: a check carries no secrets (kind = \"check\" at "
                               "line 4), but this one names 'GH_TOKEN'; remove secrets, or make "
                               "it a turn");
}

TEST(TurnFile, TomlSyntaxErrorHasLineAndColumn) {
    test::TempDir d;
    auto f = d.write("t.toml", "image = \"img\"\nargv = [\"true\"\n");
    EXPECT_EQ(error_of(f).rfind(f + ":", 0), 0u) << error_of(f);
    EXPECT_NE(error_of(f).find(f + ":2:"), std::string::npos) << error_of(f);
}

TEST(TurnFile, ArgvMustBeStrings) {
    test::TempDir d;
    auto f = d.write("t.toml", "image = \"img\"\nargv = [\"sh\", 3]\n");
    EXPECT_EQ(error_of(f), f + ":2:15: argv: must be an array of strings");
}

TEST(TurnFile, EmptyArgvIsRefused) {
    test::TempDir d;
    auto f = d.write("t.toml", "image = \"img\"\nargv = []\n");
    EXPECT_EQ(error_of(f), f + ":2:8: argv: must not be empty; give the command to run in the box");
}

TEST(TurnFile, BadTimeoutIsRefused) {
    test::TempDir d;
    auto f = d.write("t.toml", "image = \"img\"\nargv = [\"true\"]\ntimeout = \"soon\"\n");
    EXPECT_EQ(
        error_of(f),
        f + ":3:11: timeout: must be a duration from 1ms to 720h, such as \"90s\", \"10m\" or "
            "\"1500ms\"; 'soon' is not one");
    // Past the limit, named: it would reach radial-init as a number it cannot parse.
    f = d.write("l.toml", "image = \"img\"\nargv = [\"true\"]\ntimeout = \"2600000000000h\"\n");
    EXPECT_EQ(error_of(f), f + ":3:11: timeout: must be a duration from 1ms to 720h, such as "
                               "\"90s\", \"10m\" or \"1500ms\"; '2600000000000h' is more than "
                               "the limit of 720h");
}

TEST(TurnFile, BadTurnIdIsRefused) {
    test::TempDir d;
    auto f = d.write("t.toml", "id = \"Build_1\"\nimage = \"img\"\nargv = [\"true\"]\n");
    EXPECT_EQ(error_of(f), f + ":1:6: id: turn id 'Build_1' must be 1 to 64 characters of a-z, 0-9 "
                               "and '-', not starting with '-'");
}

TEST(TurnFile, RelativeWorkdirIsRefused) {
    test::TempDir d;
    auto f = d.write("t.toml", "image = \"img\"\nargv = [\"true\"]\nworkdir = \"src\"\n");
    EXPECT_EQ(error_of(f), f + ":3:11: workdir: 'src' must be an absolute path in the box");
}

TEST(TurnFile, MissingWorkspaceIsRefused) {
    test::TempDir d;
    auto f = d.write("t.toml", "image = \"img\"\nargv = [\"true\"]\nworkspace = \"nope\"\n");
    EXPECT_EQ(error_of(f),
              f + ":3:13: workspace: '" + d.path() +
                  "/nope' is not an existing directory; create it first (a relative path "
                  "is taken from the turn file's directory)");
}

TEST(TurnFile, BadEnvNameIsRefused) {
    test::TempDir d;
    auto f = d.write("t.toml", "image = \"img\"\nargv = [\"true\"]\n[env]\n\"1X\" = \"y\"\n");
    EXPECT_EQ(error_of(f), f + ":4:8: env.1X: is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
}

TEST(TurnFile, AVariableIsEitherPlainOrSecret) {
    test::TempDir d;
    auto f = d.write(
        "t.toml",
        "image = \"img\"\nargv = [\"true\"]\nsecrets = [\"TOKEN\"]\n[env]\nTOKEN = \"y\"\n");
    EXPECT_EQ(
        error_of(f),
        f + ":5:9: env.TOKEN: is also listed in secrets; a variable is either plain or secret");
}

TEST(TurnFile, TheTurnSocketVariablesAreRadialds) {
    test::TempDir d;
    auto f =
        d.write("t.toml", "image = \"img\"\nargv = [\"true\"]\n[env]\nRADIAL_TURN_TOKEN = \"y\"\n");
    EXPECT_EQ(
        error_of(f),
        f + ":4:21: env.RADIAL_TURN_TOKEN: is set by radiald for every turn; pick another name");
}

TEST(TurnFile, ASecretNamedTwiceIsRefused) {
    test::TempDir d;
    auto f = d.write("t.toml", "image = \"img\"\nargv = [\"true\"]\nsecrets = [\"A\", \"A\"]\n");
    EXPECT_EQ(error_of(f),
              f + ":3:11: secrets: 'A' must be a variable name matching [A-Za-z_][A-Za-z0-9_]*, "
                  "named once");
}

TEST(TurnFile, MountSourceMustExist) {
    test::TempDir d;
    auto f = d.write("t.toml",
                     "image = \"img\"\nargv = [\"true\"]\n[[mounts]]\nsource = \"/nonexistent-x\"\n"
                     "target = \"/x\"\n");
    EXPECT_EQ(error_of(f),
              f + ":4:10: mounts[0].source: '/nonexistent-x' is not an existing file or "
                  "directory; create it first (a relative path is taken from the turn "
                  "file's directory)");
}

TEST(TurnFile, MountOverTheTurnSocketIsRefused) {
    test::TempDir d;
    auto f = d.write("t.toml",
                     "image = \"img\"\nargv = [\"true\"]\n[[mounts]]\nsource = \"/tmp\"\n"
                     "target = \"/run/radial\"\n");
    EXPECT_EQ(error_of(f),
              f + ":5:10: mounts[0].target: '/run/radial' is already taken (by another mount, "
                  "the workspace at /work or the turn socket at /run/radial); pick another path");
}

TEST(TurnFile, UnknownMountKeyIsRefused) {
    test::TempDir d;
    auto f = d.write("t.toml",
                     "image = \"img\"\nargv = [\"true\"]\n[[mounts]]\nsource = \"/tmp\"\n"
                     "target = \"/t\"\nro = true\n");
    EXPECT_EQ(error_of(f),
              f + ":6:6: mounts[0].ro: unknown key; a mount takes source, target and readOnly");
}

TEST(TurnFile, NoSuchFile) {
    EXPECT_EQ(error_of("/nonexistent/t.toml"),
              "reading turn file '/nonexistent/t.toml': no such file");
}

// A directory given for the file is named as one, not as missing; a pipe (`submit /dev/stdin`)
// was "it is no regular file, not a file".
TEST(TurnFile, ADirectoryOrAPipeIsNamedAsOne) {
    test::TempDir d;
    EXPECT_EQ(error_of(d.path()), "reading turn file '" + d.path() +
                                      "': it is a directory, not a regular file; write the turn "
                                      "file (TOML) to a file and give its path");
    const std::string fifo = d / "turn.toml";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(error_of(fifo), "reading turn file '" + fifo +
                                  "': it is a fifo, not a regular file; write the turn file (TOML) "
                                  "to a file and give its path");
}

// The parser's words for a key given twice name the key and the fix, as in the config file.
TEST(TurnFile, AKeyGivenTwiceIsNamed) {
    test::TempDir d;
    const std::string f = d.write("t.toml", "image = \"img\"\nimage = \"other\"\n");
    EXPECT_EQ(error_of(f), f + ":2:9: the key 'image' is set twice; keep one");
}

} // namespace
} // namespace radial::daemon
