// The box user's environment is coherent under the default hardening (docs/design.md §8.7, §17
// C-25): a writable home of its own, a name, XDG directories and /tmp — whatever the image ships.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
using ::testing::HasSubstr;

// Prints one line per fact, so a failure shows which one broke.
const std::string kHomeScript = R"SH(echo "home=$HOME"
mkdir -p "$HOME/.config" && echo ok
echo "name=$(id -un) whoami=$(whoami) user=$USER logname=$LOGNAME"
echo "entry=$(grep "^[^:]*:[^:]*:$(id -u):" /etc/passwd)"
echo "owner=$(stat -c '%u:%g %a' "$HOME")"
for d in "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME"; do
  mkdir -p "$d" && echo x > "$d/f" && echo "wrote $d"
done
echo x > /tmp/f && echo tmp-ok
echo "lines=$(grep -c . /etc/passwd)"
touch /etc/passwd 2>/dev/null || echo passwd-read-only)SH";

TEST(BoxUserLive, C25_AHarnessCanWriteItsHomeUnderTheDefaultHardening) {
    test::RadialdSetup s;
    const std::string id = "c25-" + std::to_string(::getpid());
    auto t = s.turn({"--turn-id", id}, {"sh", "-c", kHomeScript});
    ASSERT_EQ(t.result.exit_code, 0) << t.result.out << t.result.err;
    const std::string& out = t.result.out;
    EXPECT_THAT(out, HasSubstr("home=/home/radial\nok\n"));
    EXPECT_THAT(out, HasSubstr("name=radial whoami=radial user=radial logname=radial\n"));
    // The image's own passwd gives the box's leased ids no entry: this one is radiald's.
    const std::string ids = t.record.value("boxUser", std::string("?"));
    const std::string uid = ids.substr(0, ids.find(':'));
    EXPECT_EQ(ids, uid + ":" + uid);
    EXPECT_THAT(uid, ::testing::MatchesRegex("20000[0-9]{5}")); // the default run.boxIdRange
    EXPECT_THAT(out,
                HasSubstr("entry=radial:x:" + ids + ":radial box user:/home/radial:/bin/sh\n"));
    EXPECT_THAT(out, HasSubstr("owner=" + ids + " 700\n"));
    for (const char* d : {"/home/radial/.config", "/home/radial/.cache",
                          "/home/radial/.local/share", "/home/radial/.local/state"})
        EXPECT_THAT(out, HasSubstr(std::string("wrote ") + d + "\n"));
    EXPECT_THAT(out, HasSubstr("tmp-ok\n"));
    EXPECT_THAT(out, HasSubstr("lines=3\n"));
    EXPECT_THAT(out, HasSubstr("passwd-read-only\n"));
    // The generated files went with the turn.
    EXPECT_FALSE(std::filesystem::exists(s.state_dir() + "/identity/" + id));
}

// A HOME the request sets is the request's choice; the other variables still point home.
TEST(BoxUserLive, C25_ARequestsOwnHomeWins) {
    test::RadialdSetup s;
    auto t = s.turn({"--env", "HOME=/tmp"}, {"sh", "-c", "echo $HOME $XDG_CACHE_HOME $(id -un)"});
    ASSERT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "/tmp /home/radial/.cache radial\n");
}

// run.codexAuth: the operator's credentials reach the box user at $HOME/.codex/auth.json, the box
// can read them and write beside them, their token is masked in the output, and nothing of them
// is left on the host after the turn.
TEST(BoxUserLive, CodexAuthReachesTheBoxUserAndGoesWithTheTurn) {
    test::TempDir creds("radial-codex");
    const std::string token = "at-radial-test-" + std::to_string(::getpid()) + "-0123456789";
    const std::string file =
        creds.write("auth.json", R"({"tokens":{"access_token":")" + token + R"("}})");
    test::RadialdSetup s("codexAuth = true\ncodexAuthFile = \"" + file + "\"\n");
    const std::string id = "codex-" + std::to_string(::getpid());
    auto t =
        s.turn({"--turn-id", id},
               {"sh", "-c",
                "stat -c '%u:%g %a' \"$HOME/.codex/auth.json\"; cat \"$HOME/.codex/auth.json\"; "
                "echo; mkdir \"$HOME/.codex/sessions\" && echo codex-dir-writable"});
    ASSERT_EQ(t.result.exit_code, 0) << t.result.out << t.result.err;
    EXPECT_THAT(t.result.out, ::testing::StartsWith(t.record.value("boxUser", std::string("?")) +
                                                    " 600\n{\"tokens\":{\"access_token\":\""));
    EXPECT_THAT(t.result.out, HasSubstr("codex-dir-writable\n"));
    EXPECT_THAT(t.result.out, ::testing::Not(HasSubstr(token))) << "the token was not masked";
    EXPECT_THAT(t.record.dump(), ::testing::Not(HasSubstr(token)));
    EXPECT_FALSE(std::filesystem::exists(s.state_dir() + "/identity/" + id));
    EXPECT_EQ(test::read_file(file), R"({"tokens":{"access_token":")" + token + R"("}})")
        << "the operator's file is never the box's";
}

// A check carries no secrets (docs/design.md §4), run.codexAuth's neither: its box has no
// ~/.codex, and an auth.json it writes in its home never reaches the operator's file.
TEST(BoxUserLive, ACheckGetsNoCodexAuthAndWritesNothingBack) {
    test::TempDir creds("radial-codex");
    const std::string text = R"({"tokens":{"access_token":"at-radial-check-)" +
                             std::to_string(::getpid()) + R"(-0123456789"}})";
    const std::string file = creds.write("auth.json", text);
    test::RadialdSetup s("codexAuth = true\ncodexAuthFile = \"" + file + "\"\n");
    auto r = test::run_process(
        {RADIALD_PATH, "check", "--config", s.config(), "--image", RADIAL_TEST_IMAGE, "--", "sh",
         "-c",
         "ls -A \"$HOME\"; cat \"$HOME/.codex/auth.json\" || echo no-auth; mkdir -p "
         "\"$HOME/.codex\" && echo '{\"tokens\":{\"access_token\":\"from-a-check-0123\"}}' > "
         "\"$HOME/.codex/auth.json\" && echo wrote"},
        {}, std::chrono::seconds(120));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("no-auth\nwrote\n")) << r.out;
    EXPECT_THAT(r.out, ::testing::Not(HasSubstr("tokens"))) << r.out;
    EXPECT_THAT(r.out, ::testing::Not(HasSubstr(".codex"))) << r.out;
    EXPECT_EQ(test::read_file(file), text) << "a check rewrote the operator's credentials";
    // Its lines are a check's, though the turn layer runs it (log/logger.h, CheckLines).
    EXPECT_THAT(r.err, HasSubstr("radiald[check] info: check ")) << r.err;
    EXPECT_THAT(r.err, HasSubstr(": succeeded (exit code 0)")) << r.err;
    EXPECT_THAT(r.err, ::testing::Not(HasSubstr("radiald[turn]"))) << r.err;
}

// run.codexAuth keeps rotated credentials (docs/design.md §8.7): a harness that saves a new refresh
// token in its scratch home the way codex does (a new file renamed over auth.json) leaves it in the
// operator's file when the turn ends, so the next turn is given the new one; a turn that leaves
// an invalid file changes nothing.
TEST(BoxUserLive, CodexAuthWritesTheRotatedTokenBackForTheNextTurn) {
    test::TempDir creds("radial-codex");
    const std::string old_token = "rt-radial-test-old-" + std::to_string(::getpid());
    const std::string new_token = "rt-radial-test-new-" + std::to_string(::getpid());
    const std::string file =
        creds.write("auth.json", R"({"tokens":{"refresh_token":")" + old_token + R"("}})");
    test::RadialdSetup s("codexAuth = true\ncodexAuthFile = \"" + file + "\"\n");
    const std::string rotated = R"({"tokens":{"refresh_token":")" + new_token + R"("}})";
    auto t =
        s.turn({}, {"sh", "-c",
                    "printf '%s' '" + rotated +
                        "' > \"$HOME/.codex/auth.json.new\" && mv \"$HOME/.codex/auth.json.new\" "
                        "\"$HOME/.codex/auth.json\" && echo rotated"});
    ASSERT_EQ(t.result.exit_code, 0) << t.result.out << t.result.err;
    EXPECT_EQ(nlohmann::json::parse(test::read_file(file)), nlohmann::json::parse(rotated))
        << "the rotated token was lost";
    EXPECT_THAT(t.result.err, HasSubstr("written back to the operator's file")) << t.result.err;
    // The next turn is given the new token (looked for by a part of it: a command quoting a
    // secret, as the whole token now is, is refused before any box).
    auto next = s.turn({}, {"sh", "-c", "grep -c radial-test-new- \"$HOME/.codex/auth.json\""});
    EXPECT_EQ(next.result.exit_code, 0) << next.result.out << next.result.err;
    // A box that leaves something that is not an auth file changes nothing.
    auto broken = s.turn({}, {"sh", "-c", "echo garbage > \"$HOME/.codex/auth.json\""});
    ASSERT_EQ(broken.result.exit_code, 0) << broken.result.err;
    EXPECT_EQ(nlohmann::json::parse(test::read_file(file)), nlohmann::json::parse(rotated));
    EXPECT_THAT(broken.result.err, HasSubstr("not a Codex auth file"));
}

// A token the harness refreshed during the turn is a secret of the turn from the moment it is in
// the box's auth.json (docs/design.md §8.7): printed afterwards on either stream it is masked in
// the output, the terminal record's tails and radiald's log. The command spells the token in
// parts, so the request itself never holds it.
TEST(BoxUserLive, ATokenRefreshedDuringTheTurnIsMaskedWhereverTheBoxPrintsIt) {
    test::TempDir creds("radial-codex");
    const std::string pid = std::to_string(::getpid());
    const std::string new_token = "rt-radial-test-refreshed-" + pid;
    const std::string file = creds.write(
        "auth.json", R"({"tokens":{"refresh_token":"rt-radial-test-given-)" + pid + R"("}})");
    test::RadialdSetup s("codexAuth = true\ncodexAuthFile = \"" + file + "\"\n");
    const std::string id = "codex-refresh-" + pid;
    auto t = s.turn(
        {"--turn-id", id},
        {"sh", "-c",
         "t=rt-radial-test-re; t=${t}freshed-" + pid +
             "; printf '{\"tokens\":{\"refresh_token\":\"%s\"}}' \"$t\" > "
             "\"$HOME/.codex/auth.json.new\" && mv \"$HOME/.codex/auth.json.new\" "
             "\"$HOME/.codex/auth.json\" && echo \"out:$t\" && echo \"err:$t\" >&2 && "
             "curl -s -o /dev/null -w '%{http_code}\\n' --unix-socket "
             "\"${RADIAL_TURN_SOCKET#unix://}\" -H \"Authorization: Bearer $RADIAL_TURN_TOKEN\" "
             "-H 'Content-Type: application/json' --data-binary "
             "\"{\\\"type\\\":\\\"result\\\",\\\"payload\\\":\\\"rec:$t\\\"}\" "
             "http://radial/v1/records"});
    ASSERT_EQ(t.result.exit_code, 0) << t.result.out << t.result.err;
    EXPECT_THAT(t.result.out, HasSubstr("out:[REDACTED:codexAuth.1]")) << t.result.out;
    EXPECT_THAT(t.result.err, HasSubstr("err:[REDACTED:codexAuth.1]")) << t.result.err;
    EXPECT_THAT(t.result.out + t.result.err, ::testing::Not(HasSubstr(new_token)));
    EXPECT_THAT(t.record.dump(), ::testing::Not(HasSubstr(new_token)));
    EXPECT_THAT(t.result.out, HasSubstr("201\n")) << "the record was not taken";
    const std::string records = s.records(id).dump();
    EXPECT_THAT(records, HasSubstr("rec:[REDACTED:codexAuth.1]")) << records;
    EXPECT_THAT(records, ::testing::Not(HasSubstr(new_token)));
    EXPECT_THAT(t.result.err, HasSubstr("refreshed its Codex credentials; 1 new token(s) masked"));
    // And the rotation still reaches the operator's file for the next turn.
    EXPECT_THAT(test::read_file(file), HasSubstr(new_token));
}

} // namespace
} // namespace radial
