// Boxes that are root only in a user namespace of their own (docs/design.md §8.8), on an engine of
// this test's own started with --userns-remap (userns_engine.sh): a workspace-write turn installs
// into the image's system directories, the next turn starts from the image again, the workspace
// comes back to its owner, and `config check` and the record say which host ids the box's root
// was. Beside it the machine's engine, which does not remap: `config check` says a workspace-write
// turn cannot install there, and a write to a system directory is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "../../support/radiald_runner.h"

namespace radial {
namespace {
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

const std::string kEngineScript = std::string(RADIAL_TEST_SOURCE_DIR) + "/userns_engine.sh";

// A workspace of a host user, as in production (radiald hands it to the box for the turn).
void owned_by_someone(const test::TempDir& ws) {
    ASSERT_EQ(::chown(ws.path().c_str(), 4242, 4242), 0);
}

class UsernsLive : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        root_ = std::make_unique<test::TempDir>("radial-userns");
        // The remapped root must walk down to its data root (dockerd refuses otherwise).
        ::chmod(root_->path().c_str(), 0711);
        engine_dir_ = *root_ / "engine";
        std::filesystem::create_directory(engine_dir_);
        auto started = test::run_process({kEngineScript, "start", engine_dir_, RADIAL_TEST_IMAGE},
                                         {}, std::chrono::seconds(240));
        start_error_ = started.exit_code == 0 ? "" : started.err;
        if (start_error_.empty()) {
            address_ = test::read_file(engine_dir_ + "/engine.sock");
            while (!address_.empty() && address_.back() == '\n') address_.pop_back();
        }
    }
    static void TearDownTestSuite() {
        test::run_process({kEngineScript, "stop", engine_dir_}, {}, std::chrono::seconds(120));
        root_.reset();
    }
    void SetUp() override { ASSERT_EQ(start_error_, "") << "the remapped engine did not start"; }

    // The [run.docker] table that points the docker runtime at the remapped engine.
    static std::string remapped_engine() { return "[run.docker]\nhost = \"" + address_ + "\"\n"; }

    static inline std::unique_ptr<test::TempDir> root_;
    static inline std::string engine_dir_, address_, start_error_;
};

TEST_F(UsernsLive, AWorkspaceWriteBoxIsRootInItsNamespaceInstallsAndTheNextTurnStartsClean) {
    test::RadialdSetup s("", remapped_engine());
    auto check = test::run_process({RADIALD_PATH, "config", "check", "--config", s.config()});
    ASSERT_EQ(check.exit_code, 0) << check.err;
    EXPECT_THAT(check.out, MatchesRegex("(.|\n)*box root +root in a user namespace of its own "
                                        "\\(host ids [1-9][0-9]*:[1-9][0-9]*\\)(.|\n)*"));

    test::TempDir ws("radial-userns-ws");
    owned_by_someone(ws);
    // An install as a package manager makes one: a binary under /bin, its files under /usr/lib,
    // its config under /etc — all directories of the image's root.
    auto first = s.turn({"--workspace", ws.path()},
                        {"sh", "-c",
                         "id -u && printf '#!/bin/sh\\nexec cat \"$@\"\\n' > "
                         "/bin/radial-tool && chmod 755 /bin/radial-tool && mkdir -p "
                         "/usr/lib/radial-pkg && echo pkg-1 > /usr/lib/radial-pkg/VERSION && echo "
                         "on > /etc/radial-pkg.conf && /bin/radial-tool "
                         "/usr/lib/radial-pkg/VERSION && echo \"$HOME $USER\" && echo made > "
                         "/work/out"});
    ASSERT_EQ(first.result.exit_code, 0) << first.result.out << first.result.err;
    EXPECT_EQ(first.result.out, "0\npkg-1\n/home/radial root\n");
    EXPECT_EQ(first.record.value("boxUser", std::string()), "0:0");
    const std::string host_ids = first.record.value("boxHostUser", std::string());
    EXPECT_THAT(host_ids, MatchesRegex("[1-9][0-9]*:[1-9][0-9]*"));
    EXPECT_THAT(check.out, HasSubstr("(host ids " + host_ids + ")"));
    // What the box's root wrote in the workspace is the owner's again.
    struct stat st {};
    ASSERT_EQ(::stat((ws / "out").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 4242u);
    EXPECT_EQ(test::read_file(ws / "out"), "made\n");

    auto second = s.turn({"--workspace", ws.path()},
                         {"sh", "-c",
                          "for f in /bin/radial-tool /usr/lib/radial-pkg /etc/radial-pkg.conf; do "
                          "test -e $f && echo left: $f; done; cat /work/out"});
    EXPECT_EQ(second.result.exit_code, 0) << second.result.err;
    EXPECT_EQ(second.result.out, "made\n");
}

// run.codexAuth under a namespaced root (docs/design.md §8.7, §8.8): the rotated auth.json the
// box's root leaves is owned by that root's host ids, not 0, and is still written back.
TEST_F(UsernsLive, CodexAuthWritesTheRotatedTokenBackFromANamespacedRoot) {
    test::TempDir creds("radial-codex-userns");
    const std::string new_token = "rt-radial-userns-new-" + std::to_string(::getpid());
    const std::string file = creds.write("auth.json", R"({"tokens":{"refresh_token":"rt-old"}})");
    test::RadialdSetup s("codexAuth = true\ncodexAuthFile = \"" + file + "\"\n", remapped_engine());
    const std::string rotated = R"({"tokens":{"refresh_token":")" + new_token + R"("}})";
    auto t =
        s.turn({}, {"sh", "-c",
                    "id -u && printf '%s' '" + rotated +
                        "' > \"$HOME/.codex/auth.json.new\" && mv \"$HOME/.codex/auth.json.new\" "
                        "\"$HOME/.codex/auth.json\""});
    ASSERT_EQ(t.result.exit_code, 0) << t.result.out << t.result.err;
    EXPECT_EQ(t.result.out, "0\n");
    EXPECT_EQ(nlohmann::json::parse(test::read_file(file)), nlohmann::json::parse(rotated))
        << t.result.err;
    EXPECT_THAT(t.result.err, HasSubstr("written back to the operator's file"));
}

// On the machine's engine, which does not remap user namespaces, radiald says so before any turn,
// and the box, never root, cannot write the image's system directories.
TEST_F(UsernsLive, AnEngineWithoutRemappingSaysInstallsAreUnavailable) {
    test::RadialdSetup s;
    auto check = test::run_process({RADIALD_PATH, "config", "check", "--config", s.config()});
    ASSERT_EQ(check.exit_code, 0) << check.err;
    EXPECT_THAT(check.out, HasSubstr("box root        none: boxes never run as root, so "
                                     "workspace-write turns cannot install"));
    EXPECT_THAT(check.out, HasSubstr("does not remap user namespaces"));
    EXPECT_THAT(check.out, HasSubstr("--userns-remap"));
    auto t = s.turn({}, {"sh", "-c", "id -u; cp /bin/busybox /bin/radial-tool && echo installed"});
    EXPECT_NE(t.result.exit_code, 0);
    EXPECT_THAT(t.result.out, Not(HasSubstr("installed")));
    EXPECT_THAT(t.result.out, Not(MatchesRegex("0\n(.|\n)*")));
    EXPECT_THAT(t.result.err, HasSubstr("Permission denied"));
    EXPECT_EQ(t.record.value("boxHostUser", std::string()), "");
}

} // namespace
} // namespace radial
