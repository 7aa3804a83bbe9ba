// The Codex tokens a harness refreshes while its turn runs become the turn's secrets
// (docs/design.md §8.7): the watch returns each new token of a rotation once, and nothing of a
// file that is no rotation, no file of the box user's, or a value too short to mask safely.
#include "turn/codex_rotation_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../../support/temp_dir.h"

namespace radial::turn {
namespace rotation_watch_test {
namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr uid_t kBoxUid = 2000000123;
const std::string kOld = "rt-given-0123456789abcdefghij";
const std::string kGiven =
    R"({"tokens":{"refresh_token":")" + kOld + R"(","account_id":"acct-1"}})";

std::string rotation(const std::string& token) {
    return R"({"tokens":{"refresh_token":")" + token + R"(","account_id":"acct-1"}})";
}

// The host side of a box's ~/.codex, holding what the turn gave it.
struct Fixture {
    test::TempDir dir{"radial-codex-watch"};
    std::string box_dir = dir / "codex";
    int serial = 0;

    Fixture() {
        fs::create_directory(box_dir);
        box_writes(kGiven);
    }
    // The box user saves `text` as a harness does: a new file renamed over auth.json.
    void box_writes(const std::string& text, uid_t owner = kBoxUid) {
        const std::string tmp = box_dir + "/.tmp" + std::to_string(++serial);
        std::ofstream(tmp) << text;
        EXPECT_EQ(::chown(tmp.c_str(), owner, owner), 0);
        fs::rename(tmp, box_dir + "/auth.json");
    }
    CodexRotationWatch watch() const {
        return CodexRotationWatch(box_dir, kBoxUid, kGiven, {"other-secret-value"});
    }
};

TEST(CodexRotationWatch, EachRefreshedTokenIsReturnedOnceAndTheGivenOnesNever) {
    Fixture f;
    auto w = f.watch();
    EXPECT_THAT(w.new_tokens(), IsEmpty()) << "the file as given is no rotation";
    const std::string fresh = "rt-refreshed-0123456789abcdef";
    f.box_writes(rotation(fresh));
    EXPECT_THAT(w.new_tokens(), ElementsAre(fresh));
    EXPECT_THAT(w.new_tokens(), IsEmpty()) << "an unchanged file is not read again";
    f.box_writes(rotation(fresh)); // rewritten, the same token
    EXPECT_THAT(w.new_tokens(), IsEmpty());
    const std::string again = "rt-refreshed-again-0123456789";
    f.box_writes(rotation(again));
    EXPECT_THAT(w.new_tokens(), ElementsAre(again));
    f.box_writes(rotation(kOld)); // back to the given token: known already
    EXPECT_THAT(w.new_tokens(), IsEmpty());
}

TEST(CodexRotationWatch, WhatIsNoRotationOfTheBoxUsersIsNeverLearned) {
    Fixture f;
    auto w = f.watch();
    // Another account: no rotation (the write-back refuses it too).
    f.box_writes(
        R"({"tokens":{"refresh_token":"rt-other-account-0123456789","account_id":"acct-2"}})");
    EXPECT_THAT(w.new_tokens(), IsEmpty());
    // A file of another owner's.
    f.box_writes(rotation("rt-not-the-box-users-0123456789"), 0);
    EXPECT_THAT(w.new_tokens(), IsEmpty());
    // A link to a host file.
    const std::string host_file = f.dir.write("host.json", rotation("rt-host-file-0123456789abcd"));
    fs::remove(f.box_dir + "/auth.json");
    fs::create_symlink(host_file, f.box_dir + "/auth.json");
    EXPECT_THAT(w.new_tokens(), IsEmpty());
    fs::remove(f.box_dir + "/auth.json");
    // A token holding another secret of the turn's.
    f.box_writes(rotation("rt-other-secret-value-0123"));
    EXPECT_THAT(w.new_tokens(), IsEmpty());
    // A short value would mask ordinary words in every log line: not learned.
    f.box_writes(rotation("rt-short"));
    EXPECT_THAT(w.new_tokens(), IsEmpty());
}

TEST(CodexRotationWatch, ABoxRotatingWithoutEndIsLearnedAFixedNumberOfTimes) {
    Fixture f;
    auto w = f.watch();
    std::size_t learned = 0;
    for (int i = 0; i < 100; ++i) {
        f.box_writes(rotation("rt-endless-rotation-" + std::to_string(1000 + i)));
        learned += w.new_tokens().size();
    }
    EXPECT_EQ(learned, CodexRotationWatch::kMostLearned);
}

TEST(CodexRotationWatch, ADirectoryThatCannotBeOpenedIsAnError) {
    Fixture f;
    EXPECT_THROW(CodexRotationWatch(f.box_dir + "/missing", kBoxUid, kGiven, {}),
                 std::system_error);
}

} // namespace rotation_watch_test
} // namespace radial::turn
