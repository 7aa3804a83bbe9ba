// Secrets are never at rest (docs/design.md §13.8): a turn's secret variable and its turn token
// are in no file of the engine's data root (the container's config, containerd's metadata) nor of
// radiald's state directory — while the box runs, after it ended, after a timeout, and after
// radiald was SIGKILLed mid-turn and the box reconciled. Each value is random, made by the test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The first regular file under `root` (links not followed) holding the bytes `needle`, or "".
std::string file_holding(const fs::path& root, const std::string& needle) {
    std::error_code ec;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec),
        end;
    std::vector<char> buf(1 << 20);
    for (; !ec && it != end; it.increment(ec)) {
        // A running box's root file system, seen through its overlay mount, is its layers again.
        if (it->path().filename() == "merged" && it->is_directory(ec)) {
            it.disable_recursion_pending();
            continue;
        }
        if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
        std::ifstream in(it->path(), std::ios::binary);
        std::string carry;
        while (in) {
            in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
            std::string piece =
                carry + std::string(buf.data(), static_cast<std::size_t>(in.gcount()));
            if (piece.find(needle) != std::string::npos) return it->path().string();
            carry = piece.size() >= needle.size() ? piece.substr(piece.size() - needle.size() + 1)
                                                  : piece;
        }
    }
    return {};
}

std::string engine_root() {
    auto r = test::run_process({"docker", "info", "--format", "{{.DockerRootDir}}"});
    std::string root = r.out.substr(0, r.out.find('\n'));
    return root.empty() ? "/var/lib/docker" : root;
}

// A turn whose box writes its token into the workspace, says it is ready, and waits for `go`
// (or its timeout); its secret variable AT_REST_SECRET is a random value this process holds.
class SecretTurn {
public:
    explicit SecretTurn(const std::string& extra_flags_timeout = "")
        : ws_("radial-ws"), secret_("sk-at-rest-" + test::unique_instance_id("v")) {
        EXPECT_EQ(::chown(ws_.path().c_str(), 65534, 65534), 0);
        ::setenv("AT_REST_SECRET", secret_.c_str(), 1);
        std::vector<std::string> argv = {
            RADIALD_PATH,      "turn",        "--config", setup_.config(), "--image",
            RADIAL_TEST_IMAGE, "--workspace", ws_.path(), "--secret",      "AT_REST_SECRET"};
        if (!extra_flags_timeout.empty()) {
            argv.push_back("--timeout");
            argv.push_back(extra_flags_timeout);
        }
        for (const char* a :
             {"--", "sh", "-c",
              "[ -n \"$AT_REST_SECRET\" ] || exit 9; printf %s \"$RADIAL_TURN_TOKEN\" > "
              "/work/token; touch /work/ready; while [ ! -e /work/go ]; do sleep 0.1; done"})
            argv.push_back(a);
        turn_.emplace(argv, ws_ / "radiald.log");
        ::unsetenv("AT_REST_SECRET");
    }

    // Waits until the box is up and has written its token; false when it never did.
    bool await_box() {
        bool up = test::wait_until([&] { return fs::exists(ws_ / "ready"); }, 120s);
        if (up) token_ = test::read_file(ws_ / "token");
        return up && !token_.empty();
    }
    void let_it_end() { std::ofstream(ws_ / "go").put('\n'); }

    // Where the secret or the token lies on disk, or "" when nowhere.
    std::string at_rest() const {
        for (const std::string& root : {engine_root(), setup_.state_dir()}) {
            for (const std::string* v : {&secret_, &token_}) {
                std::string where = file_holding(root, *v);
                if (!where.empty())
                    return (v == &secret_ ? "the secret in " : "the turn token in ") + where;
            }
        }
        return {};
    }

    test::BackgroundProcess& process() { return *turn_; }
    const test::RadialdSetup& setup() const { return setup_; }
    std::string log() const { return test::read_file(ws_ / "radiald.log"); }

private:
    test::RadialdSetup setup_;
    test::TempDir ws_;
    std::string secret_, token_;
    std::optional<test::BackgroundProcess> turn_;
};

TEST(SecretAtRestLive, NeitherTheSecretNorTheTokenIsOnDiskWhileTheBoxRunsNorAfter) {
    SecretTurn t;
    ASSERT_TRUE(t.await_box()) << t.log();
    EXPECT_EQ(t.at_rest(), "") << "while the box runs";
    t.let_it_end();
    EXPECT_EQ(t.process().wait(120s), 0) << t.log();
    EXPECT_EQ(t.at_rest(), "") << "after the turn";
}

TEST(SecretAtRestLive, NothingOnDiskAfterATimeout) {
    SecretTurn t("3s");
    ASSERT_TRUE(t.await_box()) << t.log();
    EXPECT_EQ(t.process().wait(120s), 124) << t.log();
    EXPECT_EQ(t.at_rest(), "") << "after the timeout";
}

TEST(SecretAtRestLive, NothingOnDiskAfterRadialdIsKilledAndTheBoxReconciled) {
    SecretTurn t;
    ASSERT_TRUE(t.await_box()) << t.log();
    t.process().signal(SIGKILL);
    t.process().wait(30s);
    EXPECT_EQ(t.at_rest(), "") << "with radiald dead and the box running";
    auto r = test::run_process({RADIALD_PATH, "reconcile", "--config", t.setup().config()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, ::testing::HasSubstr("reclaimed")) << r.out << r.err;
    EXPECT_EQ(t.at_rest(), "") << "after reconciliation";
}

// A secret value in the request itself — the image's tag, an argv word, a mount path, a flag's
// value — is masked in every byte radiald writes: its output and log, the record file, the
// journal, `radiald records` and `turns`, and the messages of failures before the box.
class SecretInTheRequest : public ::testing::Test {
protected:
    SecretInTheRequest() : secret_("sk-field-" + test::unique_instance_id("v")) {}
    std::map<std::string, std::string> env() const { return {{"FIELD_SECRET", secret_}}; }
    void expect_nowhere(const test::TurnRun& t, const std::string& what) {
        SCOPED_TRACE(what);
        EXPECT_EQ(t.result.out.find(secret_), std::string::npos) << t.result.out;
        EXPECT_EQ(t.result.err.find(secret_), std::string::npos) << t.result.err;
        EXPECT_EQ(t.record.dump().find(secret_), std::string::npos) << t.record.dump();
        EXPECT_EQ(file_holding(t.state_dir, secret_), "");
        for (const char* cmd : {"turns", "records"}) {
            std::vector<std::string> argv = {RADIALD_PATH, cmd, "--config", t.config, "--json"};
            if (std::string(cmd) == "records") argv.push_back(t.record.value("turnId", ""));
            auto r = test::run_process(argv);
            EXPECT_EQ(r.out.find(secret_), std::string::npos) << cmd << ": " << r.out;
        }
    }
    test::RadialdSetup setup_;
    std::string secret_;
};

// The image's tag or an argv word holding the value would be kept by the engine (the container's
// config) and shown on the box's command line to every local user: the turn is refused before any
// box, naming the field, and the value is masked in all radiald writes (docs/design.md §6.3).
TEST_F(SecretInTheRequest, ATurnWhoseImageTagOrArgvHoldsItIsRefusedAndMaskedEverywhere) {
    const std::string image = std::string("radial/busybox:") + secret_;
    auto tag = test::run_process({"docker", "tag", RADIAL_TEST_IMAGE, image});
    ASSERT_EQ(tag.exit_code, 0) << tag.err;
    auto tagged = setup_.turn({"--secret", "FIELD_SECRET"}, {"true"}, env(), image);
    test::run_process({"docker", "rmi", image});
    auto quoted = setup_.turn({"--secret", "FIELD_SECRET"}, {"echo", "argv:" + secret_}, env());
    for (const auto& [t, field] :
         {std::pair<const test::TurnRun&, std::string>{tagged, "the image"},
          {quoted, "argv[1] (a word of the command)"}}) {
        EXPECT_EQ(t.result.exit_code, 125) << t.result.err;
        EXPECT_THAT(t.result.err,
                    ::testing::HasSubstr(field + " holds the value of secret FIELD_SECRET"));
        ASSERT_TRUE(t.record.is_object()) << t.result.err;
        EXPECT_EQ(t.record["status"], "error");
        expect_nowhere(t, field);
    }
    EXPECT_EQ(tagged.record["image"], "radial/busybox:[REDACTED:FIELD_SECRET]");
    // A box is named by its label, which ends in the turn id.
    for (const auto& t : {tagged, quoted}) {
        const auto boxes = test::run_process(
            {"docker", "ps", "-aq", "--filter", "name=" + t.record.value("turnId", "?")});
        EXPECT_EQ(boxes.out, "") << "a box was made";
    }
}

TEST_F(SecretInTheRequest, FailuresBeforeTheBoxMaskItInTheirMessagesAndRecords) {
    // An invalid image reference, a workspace that does not exist, a timeout that is no duration.
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--secret", "FIELD_SECRET"}, "radial/BAD_" + secret_},
        {{"--secret", "FIELD_SECRET", "--workspace", "/nonexistent/" + secret_}, RADIAL_TEST_IMAGE},
        {{"--secret", "FIELD_SECRET", "--timeout", secret_}, RADIAL_TEST_IMAGE},
    };
    for (const auto& [flags, image] : cases) {
        auto t = setup_.turn(flags, {"true"}, env(), image);
        EXPECT_EQ(t.result.exit_code, 125) << t.result.err;
        EXPECT_THAT(t.result.err, ::testing::HasSubstr("[REDACTED:FIELD_SECRET]"));
        ASSERT_TRUE(t.record.is_object()) << t.result.err;
        EXPECT_EQ(t.record["status"], "error");
        expect_nowhere(t, flags.back());
    }
}

} // namespace
} // namespace radial
