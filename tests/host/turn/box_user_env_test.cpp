// The box user's generated passwd, group, home and variables (docs/design.md §8.7, C-25).
#include "turn/box_user_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>

#include "../../support/temp_dir.h"

namespace radial::turn {
namespace {

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

TEST(BoxUserEnv, PasswdNamesRootNobodyAndTheBoxUserWithItsHome) {
    EXPECT_EQ(box_passwd(2000000000, 2000000000),
              "root:x:0:0:root:/root:/bin/sh\n"
              "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
              "radial:x:2000000000:2000000000:radial box user:/home/radial:/bin/sh\n");
    EXPECT_EQ(box_group(2000000000), "root:x:0:\nnogroup:x:65534:\nradial:x:2000000000:\n");
}

TEST(BoxUserEnv, AnIdNobodyHasIsNotListedTwice) {
    // One uid, one line: getent and `id -un` must not answer with "nobody".
    EXPECT_EQ(box_passwd(65534, 65534),
              "root:x:0:0:root:/root:/bin/sh\n"
              "radial:x:65534:65534:radial box user:/home/radial:/bin/sh\n");
    EXPECT_EQ(box_group(65534), "root:x:0:\nradial:x:65534:\n");
}

TEST(BoxUserEnv, EveryLineIsWellFormedWhateverTheIds) {
    // The name is fixed and the ids are numbers, so nothing can add a line or a field.
    for (uid_t id : {1u, 4242u, 2147483647u}) {
        for (const auto& line : lines(box_passwd(id, id + 0u)))
            EXPECT_EQ(std::count(line.begin(), line.end(), ':'), 6) << line;
        for (const auto& line : lines(box_group(id)))
            EXPECT_EQ(std::count(line.begin(), line.end(), ':'), 3) << line;
        EXPECT_EQ(lines(box_passwd(id, id)).size(), 3u);
    }
}

TEST(BoxUserEnv, VariablesPointIntoTheHomeAndTheRequestsOwnWin) {
    auto vars = box_user_variables({});
    std::vector<EnvVar> expected = {
        {"HOME", "/home/radial", false},
        {"USER", "radial", false},
        {"LOGNAME", "radial", false},
        {"XDG_CONFIG_HOME", "/home/radial/.config", false},
        {"XDG_CACHE_HOME", "/home/radial/.cache", false},
        {"XDG_DATA_HOME", "/home/radial/.local/share", false},
        {"XDG_STATE_HOME", "/home/radial/.local/state", false},
    };
    EXPECT_EQ(vars, expected);
    auto kept = box_user_variables({{"HOME", "/work", false}, {"XDG_CACHE_HOME", "/tmp/c", true}});
    ASSERT_EQ(kept.size(), 5u);
    for (const auto& v : kept) {
        EXPECT_NE(v.name, "HOME");
        EXPECT_NE(v.name, "XDG_CACHE_HOME");
    }
}

TEST(BoxUserEnv, FilesAreWrittenMountedReadOnlyAndRemovedWithTheTurn) {
    test::TempDir state("radial-bue");
    const std::string dir = box_identity_dir(state.path(), "t1");
    EXPECT_EQ(dir, state.path() + "/identity/t1");
    ContainerSpec spec;
    spec.env = {{"USER", "me", false}};
    {
        BoxIdentity identity(box_identity_dir(state.path(), "t1"), 2000000000, 2000000001);
        EXPECT_EQ(test::read_file(dir + "/passwd"), box_passwd(2000000000, 2000000001));
        EXPECT_EQ(test::read_file(dir + "/group"), box_group(2000000001));
        struct stat st {};
        ASSERT_EQ(::stat((dir + "/passwd").c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 07777, 0644u);
        ASSERT_EQ(::stat((state.path() + "/identity").c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 07777, 0700u);

        identity.apply(spec, 1 << 20);
        ASSERT_EQ(spec.mounts.size(), 2u);
        EXPECT_EQ(spec.mounts[0], (Mount{dir + "/passwd", "/etc/passwd", true}));
        EXPECT_EQ(spec.mounts[1], (Mount{dir + "/group", "/etc/group", true}));
        ASSERT_EQ(spec.tmpfs.size(), 1u);
        EXPECT_EQ(spec.tmpfs[0], (Tmpfs{"/home/radial", 1 << 20}));
        EXPECT_EQ(spec.env.size(), 7u); // the request's USER and six of ours
        EXPECT_EQ(spec.env[0], (EnvVar{"USER", "me", false}));
        EXPECT_EQ(spec.env[1].name, "HOME");
    }
    EXPECT_FALSE(std::filesystem::exists(dir));
}

// A directory that exists is another box's of the same id (a session's, a pool box's, a turn run
// twice): it is refused and left as it is. It was taken over: its passwd rewritten under the
// other box's mount, then removed with this box's turn.
TEST(BoxUserEnv, AnotherBoxesIdentityDirectoryIsNeverTakenOver) {
    test::TempDir state("radial-bue");
    const std::string dir = box_identity_dir(state.path(), "same");
    BoxIdentity first(dir, 2000000000, 2000000001);
    try {
        BoxIdentity second(dir, 2000000002, 2000000003);
        ADD_FAILURE() << "a second box took over " << dir;
    } catch (const TurnSetupError& e) {
        EXPECT_THAT(e.what(),
                    HasSubstr("'" + dir + "' exists already: another box of the same id"));
    }
    EXPECT_EQ(test::read_file(dir + "/passwd"), box_passwd(2000000000, 2000000001));
}

TEST(BoxUserEnv, AMountOnTheBoxUsersPathsIsRefused) {
    test::TempDir state("radial-bue");
    BoxIdentity identity(box_identity_dir(state.path(), "t2"), 2000000000, 2000000000);
    for (const char* target : {"/etc/passwd", "/etc/group", "/home/radial"}) {
        ContainerSpec spec;
        spec.mounts = {{"/srv/x", target, true}};
        try {
            identity.apply(spec, 1 << 20);
            ADD_FAILURE() << target << " was taken over";
        } catch (const TurnSetupError& e) {
            EXPECT_NE(std::string(e.what()).find(target), std::string::npos) << e.what();
        }
    }
}

TEST(BoxUserEnv, CodexAuthSecretsAreTheKeyAndEveryToken) {
    const std::string json = R"({"OPENAI_API_KEY": "sk-proj-0123456789abcdef",
        "tokens": {"id_token": "eyJhbGciOiJSUzI1NiJ9.a.b", "access_token": "at-0123456789",
                   "refresh_token": "rt-0123456789", "account_id": "acc"},
        "last_refresh": "2026-11-30T12:00:00Z"})";
    EXPECT_EQ(codex_auth_secrets(json, 6),
              (std::vector<std::string>{"sk-proj-0123456789abcdef", "at-0123456789",
                                        "eyJhbGciOiJSUzI1NiJ9.a.b", "rt-0123456789"}));
    // Too short to mask is left out; a key that is null is no secret.
    EXPECT_EQ(codex_auth_secrets(R"({"OPENAI_API_KEY": null, "tokens": {"a": "short"}})", 6),
              std::vector<std::string>{});
    // Not JSON: the whole text is the secret.
    EXPECT_EQ(codex_auth_secrets("  sk-plain-key-123\n", 6),
              std::vector<std::string>{"sk-plain-key-123"});
}

TEST(BoxUserEnv, CodexAuthFileDefaultsToCodexHomeThenTheUsersHome) {
    EXPECT_EQ(codex_auth_path("/etc/radial/auth.json"), "/etc/radial/auth.json");
    const char* was = std::getenv("CODEX_HOME");
    const std::optional<std::string> saved = was ? std::optional<std::string>(was) : std::nullopt;
    ::setenv("CODEX_HOME", "/srv/codex", 1);
    EXPECT_EQ(codex_auth_path(""), "/srv/codex/auth.json");
    ::unsetenv("CODEX_HOME");
    ASSERT_NE(std::getenv("HOME"), nullptr);
    EXPECT_EQ(codex_auth_path(""), std::string(std::getenv("HOME")) + "/.codex/auth.json");
    if (saved) ::setenv("CODEX_HOME", saved->c_str(), 1);
}

// The tests run as root (tests/README.md), so the file can be given to the box ids.
TEST(BoxUserEnv, CodexAuthIsTheBoxUsersFile0600InItsOwnDirectory) {
    test::TempDir state("radial-bue");
    const std::string dir = box_identity_dir(state.path(), "t3");
    ContainerSpec spec;
    {
        BoxIdentity identity(box_identity_dir(state.path(), "t3"), 2000000000, 2000000001,
                             std::string(R"({"tokens":{"access_token":"at-0123456789"}})"));
        struct stat st {};
        ASSERT_EQ(::stat((dir + "/codex").c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 07777, 0700u);
        EXPECT_EQ(st.st_uid, 2000000000u);
        EXPECT_EQ(st.st_gid, 2000000001u);
        ASSERT_EQ(::stat((dir + "/codex/auth.json").c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 07777, 0600u);
        EXPECT_EQ(st.st_uid, 2000000000u);
        EXPECT_EQ(test::read_file(dir + "/codex/auth.json"),
                  R"({"tokens":{"access_token":"at-0123456789"}})");
        identity.apply(spec, 1 << 20);
        ASSERT_EQ(spec.mounts.size(), 3u);
        EXPECT_EQ(spec.mounts[2], (Mount{dir + "/codex", "/home/radial/.codex", false}));
    }
    EXPECT_FALSE(std::filesystem::exists(dir)) << "the credentials outlived their turn";
}

} // namespace
} // namespace radial::turn
