// The state directory's store of what every turn was given (host/session/instance_fingerprints.h):
// kept once per value, never the token, never a value on disk, found again under the store's key,
// and refused by name when the store cannot be written or read.
#include "session/instance_fingerprints.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "../../support/temp_dir.h"
#include "redaction/stream_redactor.h"
#include "session/secret_scan.h"
#include "turn/turn_setup_error.h"

namespace radial::session {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> value_files(const std::string& state) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(instance_fingerprints_dir(state)))
        if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
    return out;
}

std::optional<std::string> found(const InstanceFingerprints& kept, const std::string& text) {
    FingerprintMatcher m(kept.fingerprints, kept.key);
    return m.feed(text);
}

TEST(InstanceFingerprints, EachValueIsKeptOnceAndTheTokenNever) {
    test::TempDir dir("radial-fp");
    const std::string state = dir.path();
    EXPECT_TRUE(load_instance_fingerprints(state).fingerprints.empty()) << "an empty store";
    const redaction::SecretSet turn1{{"API_KEY", "sk-live-aaaa1111bbbb"},
                                     {"RADIAL_TURN_TOKEN", "token-one-0123456789"}};
    remember_secrets(state, turn1, "RADIAL_TURN_TOKEN");
    ASSERT_EQ(value_files(state).size(), 1u) << "the token was kept, or the key was not";
    // Another turn: the same value under another name, a new value, its own token.
    const redaction::SecretSet turn2{{"OTHER_NAME", "sk-live-aaaa1111bbbb"},
                                     {"FORGE_TOKEN", "ghp-secret-98765432"},
                                     {"RADIAL_TURN_TOKEN", "token-two-0123456789"}};
    remember_secrets(state, turn2, "RADIAL_TURN_TOKEN");
    EXPECT_EQ(value_files(state).size(), 2u);

    const auto kept = load_instance_fingerprints(state);
    EXPECT_EQ(found(kept, "x sk-live-aaaa1111bbbb y"), "API_KEY") << "the first name is kept";
    EXPECT_EQ(found(kept, "ghp-secret-98765432"), "FORGE_TOKEN");
    EXPECT_EQ(found(kept, "Z2hwLXNlY3JldC05ODc2NTQzMg=="), "FORGE_TOKEN") << "its base64";
    EXPECT_EQ(found(kept, "token-one-0123456789 token-two-0123456789"), std::nullopt);
    // Nothing of a value on disk, and root's alone.
    for (const auto& e : fs::directory_iterator(instance_fingerprints_dir(state))) {
        const std::string text = test::read_file(e.path().string());
        EXPECT_THAT(text, Not(HasSubstr("aaaa1111"))) << e.path();
        EXPECT_THAT(text, Not(HasSubstr("98765432"))) << e.path();
        struct stat st {};
        ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 077, 0u) << e.path();
    }
    struct stat st {};
    ASSERT_EQ(::stat(instance_fingerprints_dir(state).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 077, 0u);
}

// A request may name any variable of radiald's as a secret: the ordinary ones, and values too
// short to be secrets, stay the turn's own, so that no request makes "/bin/bash" masked in every
// later turn or bars every snapshot holding it.
TEST(InstanceFingerprints, OrdinaryVariablesAndShortValuesAreNotKept) {
    EXPECT_TRUE(kept_in_store("DEPLOY_KEY", "deploy-0123456789ab"));
    EXPECT_FALSE(kept_in_store("DEPLOY_KEY", "short-value-15b")) << "15 bytes";
    for (const char* name :
         {"PATH", "HOME", "SHELL", "LANG", "LC_ALL", "XDG_RUNTIME_DIR", "TERM",
          "DBUS_SESSION_BUS_ADDRESS", "SUDO_COMMAND", "MEMORY_PRESSURE_WATCH", "SSH_CONNECTION"})
        EXPECT_FALSE(kept_in_store(name, "/usr/local/sbin:/usr/local/bin:/usr/bin")) << name;
    test::TempDir dir("radial-fp");
    remember_secrets(dir.path(),
                     redaction::SecretSet{{"SHELL", "/usr/local/bin/fancy-shell"},
                                          {"SHORTISH", "abcdef-12345"},
                                          {"API_KEY", "sk-live-aaaa1111bbbb"}},
                     "");
    ASSERT_EQ(value_files(dir.path()).size(), 1u);
    const auto kept = load_instance_fingerprints(dir.path());
    EXPECT_EQ(found(kept, "sk-live-aaaa1111bbbb"), "API_KEY");
    EXPECT_EQ(found(kept, "/usr/local/bin/fancy-shell abcdef-12345"), std::nullopt);
}

TEST(InstanceFingerprints, OnlyATokenKeepsNothing) {
    test::TempDir dir("radial-fp");
    remember_secrets(dir.path(), redaction::SecretSet{{"RADIAL_TURN_TOKEN", "token-0123456789"}},
                     "RADIAL_TURN_TOKEN");
    EXPECT_FALSE(fs::exists(instance_fingerprints_dir(dir.path())));
}

TEST(InstanceFingerprints, AStoreThatCannotBeWrittenOrReadIsNamed) {
    test::TempDir dir("radial-fp");
    // The store's path is a file: nothing can be kept there.
    dir.write("secret-fingerprints", "not a directory");
    try {
        remember_secrets(dir.path(), redaction::SecretSet{{"API_KEY", "sk-live-aaaa1111bbbb"}},
                         "RADIAL_TURN_TOKEN");
        FAIL() << "a store that is a file was written";
    } catch (const turn::TurnSetupError& e) {
        EXPECT_THAT(e.what(), HasSubstr(instance_fingerprints_dir(dir.path())));
    }
    fs::remove(instance_fingerprints_dir(dir.path()));
    remember_secrets(dir.path(), redaction::SecretSet{{"API_KEY", "sk-live-aaaa1111bbbb"}},
                     "RADIAL_TURN_TOKEN");
    const std::string file =
        instance_fingerprints_dir(dir.path()) + "/" + value_files(dir.path())[0];
    { std::ofstream(file, std::ios::trunc) << "{\"fingerprints\": 7}"; }
    try {
        load_instance_fingerprints(dir.path());
        FAIL() << "a damaged store was read as if whole";
    } catch (const turn::TurnSetupError& e) {
        EXPECT_THAT(e.what(), HasSubstr(file));
    }
}

// A store whose key was removed or replaced is refused, never read as one that holds nothing;
// nor is the key made anew by a reader.
TEST(InstanceFingerprints, AStoreWithoutItsKeyIsRefused) {
    test::TempDir dir("radial-fp");
    remember_secrets(dir.path(), redaction::SecretSet{{"API_KEY", "sk-live-aaaa1111bbbb"}}, "");
    const std::string key = instance_fingerprints_dir(dir.path()) + "/key";
    fs::remove(key);
    EXPECT_THROW(load_instance_fingerprints(dir.path()), turn::TurnSetupError);
    EXPECT_FALSE(fs::exists(key)) << "a reader made a key";
    // A writer makes a new key; the value kept under the old one is refused now.
    remember_secrets(dir.path(), redaction::SecretSet{{"OTHER", "ghp-secret-98765432"}}, "");
    try {
        load_instance_fingerprints(dir.path());
        FAIL() << "a value kept under a key that is gone was read";
    } catch (const turn::TurnSetupError& e) {
        EXPECT_THAT(e.what(), HasSubstr("another key"));
    }
}

// A scan with more than one store of fingerprints looks in each: a session's and the state
// directory's keys differ.
TEST(InstanceFingerprints, AScanLooksInEveryStoreItIsGiven) {
    test::TempDir dir("radial-fp");
    remember_secrets(dir.path(), redaction::SecretSet{{"DEPLOY_KEY", "deploy-0123456789ab"}}, "");
    const auto kept = load_instance_fingerprints(dir.path());
    FingerprintMatcher elsewhere(kept.fingerprints, kept.key);
    std::vector<SecretFingerprint> mine;
    const std::string session_key = new_fingerprint_key();
    add_fingerprints(redaction::SecretSet{{"API_KEY", "sk-live-aaaa1111bbbb"}}, session_key, mine);
    FingerprintMatcher earlier(mine, session_key);
    const redaction::Redactor redactor(redaction::SecretSet{{"OWN", "own-secret-value-1"}});
    for (const auto& [text, name] :
         std::vector<std::pair<std::string, std::string>>{{"..deploy-0123456789ab..", "DEPLOY_KEY"},
                                                          {"..sk-live-aaaa1111bbbb..", "API_KEY"},
                                                          {"..own-secret-value-1..", "OWN"}}) {
        SecretScan scan(redactor, {&earlier, &elsewhere});
        ASSERT_TRUE(scan.entry("/opt/file"));
        scan.data(text);
        const auto& hit = scan.finish();
        ASSERT_TRUE(hit.has_value()) << text;
        EXPECT_EQ(hit->secret, name);
        EXPECT_EQ(hit->path, "/opt/file");
    }
    SecretScan clean(redactor, {&earlier, &elsewhere, nullptr});
    ASSERT_TRUE(clean.entry("/opt/file"));
    EXPECT_TRUE(clean.data("nothing secret here"));
    EXPECT_FALSE(clean.finish().has_value());
}

// Another turn's value in a path, which the turn's redactor cannot mask: the report names the
// deepest directory above the value's first byte, never a part of it — a value that holds '/'
// (as keys in base64 do), or a directory an earlier turn named with it.
TEST(InstanceFingerprints, AnotherTurnsValueInAPathIsNotReportedInPart) {
    const std::string key = new_fingerprint_key();
    std::vector<SecretFingerprint> fps;
    add_fingerprints(redaction::SecretSet{{"AWS_SECRET", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLE"},
                                          {"DIR_TOKEN", "dirtok-0123456789abcdef"}},
                     key, fps);
    FingerprintMatcher other_turns(fps, key);
    const redaction::Redactor redactor(redaction::SecretSet{{"OWN", "own-secret-value-1"}});
    for (const auto& [path, shown] : std::vector<std::pair<std::string, std::string>>{
             {"/opt/wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLE", "/opt"},
             {"/opt/wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLE/f", "/opt"},
             {"/var/cache/dirtok-0123456789abcdef/f", "/var/cache"},
             {"/var/x-dirtok-0123456789abcdef-y/z", "/var"},
             {"/dirtok-0123456789abcdef", "/"},
             {"/dirtok-0123456789abcdef/f", "/"}}) {
        SecretScan scan(redactor, {&other_turns});
        EXPECT_FALSE(scan.entry(path)) << path;
        const auto& hit = scan.finish();
        ASSERT_TRUE(hit.has_value()) << path;
        EXPECT_EQ(hit->path, shown + " (an entry whose name holds it)") << path;
        for (const char* part : {"wJal", "K7MD", "bPxR", "dirtok"})
            EXPECT_EQ(hit->path.find(part), std::string::npos) << path;
    }
    // Beside the turn's own value, which alone the report's redaction would mask.
    for (const auto& [path, shown] : std::vector<std::pair<std::string, std::string>>{
             {"/opt/cache/x-dirtok-0123456789abcdef-own-secret-value-1", "/opt/cache"},
             {"/opt/own-secret-value-1/dirtok-0123456789abcdef", "/opt/[REDACTED:OWN]"},
             {"/opt/own-secret-value-1-dirtok-0123456789abcdef", "/opt"}}) {
        SecretScan scan(redactor, {&other_turns});
        EXPECT_FALSE(scan.entry(path)) << path;
        const auto& hit = scan.finish();
        ASSERT_TRUE(hit.has_value()) << path;
        EXPECT_EQ(hit->secret, "OWN") << path;
        EXPECT_EQ(hit->path, shown + " (an entry whose name holds it)") << path;
        EXPECT_EQ(hit->path.find("dirtok"), std::string::npos) << path;
    }
}

} // namespace
} // namespace radial::session
