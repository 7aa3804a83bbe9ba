// Managed Codex auth keeps rotated credentials (docs/design.md §8.7): what a harness rotated in the
// box's scratch home reaches the operator's file when the turn ends — atomically, only if it
// changed, only a valid file, and never over a newer rotation.
#include "turn/codex_auth.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "../../support/temp_dir.h"

namespace radial::turn {
namespace {
namespace fs = std::filesystem;

constexpr uid_t kBoxUid = 2000000123;
const std::string kGiven = R"({"tokens":{"refresh_token":"rt-1","access_token":"at-1"}})";
const std::string kRotated =
    R"({"tokens":{"refresh_token":"rt-2-refreshed-0123456789","access_token":"at-2-refreshed-0123456789"}})";
// What the write-back writes for kRotated: the JSON it judged, written again (never the box's
// bytes).
const std::string kRotatedAsWritten = nlohmann::ordered_json::parse(kRotated).dump(2) + "\n";

// The operator's file (owned by uid 4242, mode 0600) and the host side of a box's ~/.codex.
struct Fixture {
    test::TempDir dir{"radial-codex"};
    std::string operator_file = dir.write("auth.json", kGiven);
    std::string box_dir = dir / "box";

    Fixture() {
        EXPECT_EQ(::chown(operator_file.c_str(), 4242, 4242), 0);
        EXPECT_EQ(::chmod(operator_file.c_str(), 0600), 0);
        fs::create_directory(box_dir);
        box_writes(kGiven);
    }
    // The box user writes `text` as its auth.json, as a harness's atomic save does.
    void box_writes(const std::string& text) const {
        const std::string tmp = box_dir + "/.tmp";
        std::ofstream(tmp) << text;
        EXPECT_EQ(::chown(tmp.c_str(), kBoxUid, kBoxUid), 0);
        fs::rename(tmp, box_dir + "/auth.json");
    }
    CodexWriteBackResult write_back() const {
        return write_back_codex_auth(box_dir, kBoxUid, operator_file, kGiven);
    }
};

TEST(CodexAuthWriteBack, ARotatedFileReachesTheOperatorsFileWithItsOwnerAndMode) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (files of other uids)";
    Fixture f;
    f.box_writes(kRotated);
    const auto r = f.write_back();
    EXPECT_EQ(r.outcome, CodexWriteBack::written) << r.detail;
    EXPECT_EQ(test::read_file(f.operator_file), kRotatedAsWritten);
    struct stat st {};
    ASSERT_EQ(::stat(f.operator_file.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 4242u);
    EXPECT_EQ(st.st_gid, 4242u);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    // Nothing left beside it: the temporary file was renamed into place.
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(f.dir.path())) ++entries;
    EXPECT_EQ(entries, 2u) << "auth.json and box/";
    // And the next turn reads the new one.
    std::string error;
    EXPECT_EQ(read_codex_auth(f.operator_file, error), kRotatedAsWritten) << error;
}

TEST(CodexAuthWriteBack, AnUnchangedFileIsNotRewritten) {
    Fixture f;
    struct stat before {};
    ASSERT_EQ(::stat(f.operator_file.c_str(), &before), 0);
    EXPECT_EQ(f.write_back().outcome, CodexWriteBack::unchanged);
    struct stat after {};
    ASSERT_EQ(::stat(f.operator_file.c_str(), &after), 0);
    EXPECT_EQ(before.st_ino, after.st_ino) << "the file was replaced";
}

TEST(CodexAuthWriteBack, AFileThatIsNotACodexAuthFileIsNotWrittenBack) {
    Fixture f;
    for (const std::string& bad : {std::string("{\"tokens\":"), std::string("[]"),
                                   std::string("{\"other\":1}"), std::string("")}) {
        f.box_writes(bad);
        const auto r = f.write_back();
        EXPECT_EQ(r.outcome, CodexWriteBack::invalid) << bad;
        EXPECT_EQ(test::read_file(f.operator_file), kGiven) << bad;
    }
    fs::remove(f.box_dir + "/auth.json");
    EXPECT_EQ(f.write_back().outcome, CodexWriteBack::invalid) << "removed by the box";
    EXPECT_EQ(test::read_file(f.operator_file), kGiven);
}

// A rotation changes token strings and the refresh time only: another account, an API key, keys
// of the box's own or padding would reach every later turn (docs/design.md §8.7).
TEST(CodexAuthRotation, OnlyTheTokensAndTheRefreshTimeMayChange) {
    const std::string given =
        R"({"OPENAI_API_KEY":null,"tokens":{"id_token":"i1","access_token":"a1",)"
        R"("refresh_token":"r1","account_id":"acc-1"},"last_refresh":"2026-12-01T00:00:00Z"})";
    EXPECT_EQ(
        codex_rotation_problem(
            given,
            R"({"OPENAI_API_KEY":null,"tokens":{"id_token":"i2-0123456789abcdefghij","access_token":"a2-0123456789abcdefghij",)"
            R"("refresh_token":"r2-0123456789abcdefghij","account_id":"acc-1"},)"
            R"("last_refresh":"2026-12-06T00:00:00Z"})"),
        "");
    const std::pair<std::string, std::string> refused[] = {
        {R"({"OPENAI_API_KEY":null,"tokens":{"id_token":"i2-0123456789abcdefghij","access_token":"a2-0123456789abcdefghij",)"
         R"("refresh_token":"r2-0123456789abcdefghij","account_id":"attacker"},"last_refresh":"x"})",
         "the value of 'tokens.account_id' changed"},
        {R"({"OPENAI_API_KEY":"sk-attacker","tokens":{"id_token":"i1","access_token":"a1",)"
         R"("refresh_token":"r1","account_id":"acc-1"},"last_refresh":"x"})",
         "the key 'OPENAI_API_KEY' changed its type"},
        {R"({"OPENAI_API_KEY":null,"tokens":{"id_token":"i1","access_token":"a1",)"
         R"("refresh_token":"r1","account_id":"acc-1","extra":"x"},"last_refresh":"x"})",
         "it adds a key of its own to tokens"},
        {R"({"OPENAI_API_KEY":null,"tokens":{"id_token":"i1","access_token":"a1",)"
         R"("refresh_token":"r1","account_id":"acc-1"},"last_refresh":"x","injected":1})",
         "it adds a key of its own"},
        {R"({"OPENAI_API_KEY":null,"tokens":{"access_token":"a1","refresh_token":"r1",)"
         R"("account_id":"acc-1"},"last_refresh":"x"})",
         "it drops the key 'tokens.id_token'"},
        {R"({"OPENAI_API_KEY":null,"tokens":{"id_token":"i1","access_token":"a1",)"
         R"("refresh_token":"r1","account_id":"acc-1"},"last_refresh":"x","pad":")" +
             std::string(70000, 'Z') + R"("})",
         "bytes, more than a rotation"},
    };
    for (const auto& [box, says] : refused)
        EXPECT_NE(codex_rotation_problem(given, box).find(says), std::string::npos)
            << codex_rotation_problem(given, box) << " for " << box.substr(0, 200);
    // A first refresh adds the time of it.
    EXPECT_EQ(
        codex_rotation_problem(
            R"({"tokens":{"a":"1"}})",
            R"({"tokens":{"a":"2-0123456789abcdefghij"},"last_refresh":"2026-12-06T00:00:00Z"})"),
        "");
    // A nested value other than the tokens is the file's, not the box's to change.
    EXPECT_EQ(codex_rotation_problem(
                  R"({"tokens":{"a":"1"},"meta":{"plan":"pro"}})",
                  R"({"tokens":{"a":"2-0123456789abcdefghij"},"meta":{"plan":"free"}})"),
              "the value of 'meta' changed");
}

// What a box may choose in a rotation cannot carry what it likes: a new token is token-shaped, a
// new refresh time is a time, and no string holds a secret of the turn's (carried to every later
// turn, on any workspace, it would outlive the turn there).
TEST(CodexAuthRotation, ANewTokenOrRefreshTimeCarriesNoTextOrSecretOfTheTurns) {
    const std::string given =
        R"({"tokens":{"id_token":"i1","access_token":"a1","refresh_token":"r1",)"
        R"("account_id":"acc-1"},"last_refresh":"2026-12-01T00:00:00Z"})";
    const auto with = [](const std::string& refresh_token, const std::string& last_refresh) {
        return R"({"tokens":{"id_token":"eyJhbGciOi.eyJzdWIiOiIx.c2lnbmF0dXJl","access_token":"a2-0123456789abcdefghij","refresh_token":")" +
               refresh_token + R"(","account_id":"acc-1"},"last_refresh":")" + last_refresh +
               R"("})";
    };
    const std::vector<std::string> turns_secrets{"Zq8wX41pL0kAbCdEf9876"};
    for (const char* time :
         {"2026-12-06T00:00:00Z", "2026-12-06T17:51:32.123456789Z", "2026-12-06T00:00:00+01:00"})
        EXPECT_EQ(
            codex_rotation_problem(given, with("rt_new-Token.9/+=~0123", time), turns_secrets), "")
            << time;
    const std::pair<std::string, std::string> refused[] = {
        {with("r2-0123456789abcdefghij", "Zq8wX41pL0kAbCdEf9876"),
         "'last_refresh' is not an RFC 3339 time"},
        {with("r2-0123456789abcdefghij", "2026-12-06T00:00:00Z and more"),
         "'last_refresh' is not an RFC 3339 time"},
        {with("r2 with spaces", "2026-12-06T00:00:00Z"),
         "'tokens.refresh_token' is not 20 to 16384 token characters"},
        {with("", "2026-12-06T00:00:00Z"), "'tokens.refresh_token' is not 20 to 16384"},
        {with("rt_Zq8wX41pL0kAbCdEf9876", "2026-12-06T00:00:00Z"),
         "it holds a secret of the turn's"},
    };
    for (const auto& [box, says] : refused)
        EXPECT_NE(codex_rotation_problem(given, box, turns_secrets).find(says), std::string::npos)
            << codex_rotation_problem(given, box, turns_secrets) << " for " << box;
    // An unchanged value is the operator's own, whatever its shape and whatever else it is (an
    // API key the turn was also given as a secret).
    EXPECT_EQ(
        codex_rotation_problem(
            R"({"OPENAI_API_KEY":"Zq8wX41pL0kAbCdEf9876","tokens":{"a":"1"}})",
            R"({"OPENAI_API_KEY":"Zq8wX41pL0kAbCdEf9876","tokens":{"a":"2-0123456789abcdefghij"}})",
            turns_secrets),
        "");
    EXPECT_EQ(codex_rotation_problem(
                  R"({"tokens":{"a":"x y","b":"1"},"last_refresh":"never"})",
                  R"({"tokens":{"a":"x y","b":"2-0123456789abcdefghij"},"last_refresh":"never"})"),
              "");
}

TEST(CodexAuthWriteBack, AFileThatIsNoRotationOfTheGivenOneIsNotWrittenBack) {
    Fixture f;
    f.box_writes(
        R"({"tokens":{"refresh_token":"rt-2-refreshed-0123456789","access_token":"at-2-refreshed-0123456789"},"injected":"x"})");
    const auto r = f.write_back();
    EXPECT_EQ(r.outcome, CodexWriteBack::invalid) << r.detail;
    EXPECT_NE(r.detail.find("not a rotation of the tokens it was given"), std::string::npos)
        << r.detail;
    EXPECT_EQ(test::read_file(f.operator_file), kGiven);
}

// A key twice: a reader keeps one value, the file would carry both — a secret of the turn's beside
// the token, handed to every later box unmasked. Refused by the rotation check and at a turn's
// start; and what is written back is the JSON as judged, never the box's bytes. A token too short
// to be one ("REDACTED", a word) is no rotation either.
TEST(CodexAuthRotation, AKeyTwiceOrATokenTooShortIsNoRotationAndTheJudgedJsonIsWritten) {
    const std::string given = R"({"tokens":{"refresh_token":"rt-given-0123456789abcdef"}})";
    EXPECT_EQ(codex_rotation_problem(
                  given, R"({"tokens":{"refresh_token":"dk-TOPSECRET-9f8e7d6c5b4a3210",)"
                         R"("refresh_token":"rt-fresh-0123456789abcdef"}})"),
              "it has a key twice in one object");
    EXPECT_TRUE(has_duplicate_keys(R"({"a":{"b":1,"b":2}})"));
    EXPECT_FALSE(has_duplicate_keys(R"({"a":{"b":1},"b":{"b":2}})"));
    EXPECT_NE(codex_rotation_problem(given, R"({"tokens":{"refresh_token":"REDACTED"}})")
                  .find("is not 20 to 16384 token characters"),
              std::string::npos);
    Fixture f;
    f.box_writes(std::string("  \n") + kRotated + "   \n\n");
    EXPECT_EQ(f.write_back().outcome, CodexWriteBack::written);
    EXPECT_EQ(test::read_file(f.operator_file), kRotatedAsWritten);
    // A file that has a key twice (an older radiald's write-back, a hand edit) is refused at a
    // turn's start, naming the file.
    std::ofstream(f.operator_file, std::ios::trunc)
        << R"({"tokens":{"refresh_token":"a-0123456789abcdefghij","refresh_token":"b"}})";
    std::string error;
    EXPECT_FALSE(read_codex_auth(f.operator_file, error));
    EXPECT_NE(error.find("has a key twice"), std::string::npos) << error;
    EXPECT_NE(error.find(f.operator_file), std::string::npos) << error;
}

// The box controls its ~/.codex: a link or a second name of a host file is never read as root.
TEST(CodexAuthWriteBack, ALinkPlantedByTheBoxIsNeverFollowed) {
    Fixture f;
    const std::string secret = f.dir.write("host-secret", R"({"tokens":{"x":"host"}})");
    fs::remove(f.box_dir + "/auth.json");
    fs::create_symlink(secret, f.box_dir + "/auth.json");
    auto r = f.write_back();
    EXPECT_EQ(r.outcome, CodexWriteBack::invalid);
    EXPECT_NE(r.detail.find("symlink"), std::string::npos) << r.detail;
    fs::remove(f.box_dir + "/auth.json");
    ASSERT_EQ(::chown(secret.c_str(), kBoxUid, kBoxUid), 0);
    ASSERT_EQ(::link(secret.c_str(), (f.box_dir + "/auth.json").c_str()), 0);
    r = f.write_back();
    EXPECT_EQ(r.outcome, CodexWriteBack::invalid) << "a hard link: " << r.detail;
    EXPECT_EQ(test::read_file(f.operator_file), kGiven);
    // A file of another uid than the box user's (radiald's own, say) is not the box's.
    fs::remove(f.box_dir + "/auth.json");
    std::ofstream(f.box_dir + "/auth.json") << kRotated;
    EXPECT_EQ(f.write_back().outcome, CodexWriteBack::invalid);
    EXPECT_EQ(test::read_file(f.operator_file), kGiven);
}

// Another turn (or the operator) changed the file while this turn ran: the newer credentials stay.
TEST(CodexAuthWriteBack, ANewerRotationIsNeverUndone) {
    Fixture f;
    const std::string newer = R"({"tokens":{"refresh_token":"rt-other"}})";
    std::ofstream(f.operator_file, std::ios::trunc) << newer;
    f.box_writes(kRotated);
    const auto r = f.write_back();
    EXPECT_EQ(r.outcome, CodexWriteBack::conflict) << r.detail;
    EXPECT_EQ(test::read_file(f.operator_file), newer);
}

// The write-back waits for a turn that holds the file (reading it at its start): it never runs
// concurrently with another turn's use of it.
TEST(CodexAuthWriteBack, WaitsWhileAnotherTurnHoldsTheFile) {
    Fixture f;
    f.box_writes(kRotated);
    const int dir = ::open(f.dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dir, 0);
    ASSERT_EQ(::flock(dir, LOCK_SH), 0); // as read_codex_auth holds it
    std::atomic<pid_t> tid{0};
    auto pending = std::async(std::launch::async, [&] {
        tid = static_cast<pid_t>(::syscall(SYS_gettid));
        return f.write_back();
    });
    // Await the thread blocking in flock(2) (syscall 73 on x86-64) on the held directory.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    bool blocked = false;
    while (!blocked && std::chrono::steady_clock::now() < deadline) {
        if (tid == 0) continue;
        std::ifstream in("/proc/self/task/" + std::to_string(tid.load()) + "/syscall");
        std::string number;
        in >> number;
        blocked = number == std::to_string(SYS_flock);
        if (!blocked) std::this_thread::yield();
    }
    EXPECT_TRUE(blocked) << "the write-back did not wait for the lock";
    EXPECT_EQ(test::read_file(f.operator_file), kGiven);
    ASSERT_EQ(::flock(dir, LOCK_UN), 0);
    EXPECT_EQ(pending.get().outcome, CodexWriteBack::written);
    EXPECT_EQ(test::read_file(f.operator_file), kRotatedAsWritten);
    ::close(dir);
}

} // namespace
} // namespace radial::turn
