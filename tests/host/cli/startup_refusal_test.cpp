// Every command that runs or queues boxes (`turn`, `run`, `reconcile`, `submit`) applies the same
// startup validation, so no command serves a config another refuses: each refused combination of
// runtime and [run] keys, through each entry point, with the real runtime plugins. The runtimes'
// binaries do not exist, so the refusal must come before any contact with an engine or sbx.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "../../support/process_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Refused {
    std::string name;     // the test's name suffix
    std::string run_keys; // [run] keys besides stateDir
    std::string tables;   // the runtime's settings table
    std::string key;      // the key the message must name, with its line
    std::string message;  // a fragment of the refusal
};

void PrintTo(const Refused& r, std::ostream* os) { *os << r.name; }

const std::string kNoSbx = "[run.sandbox]\nbinary = \"/nonexistent/radial-test/sbx\"\n";
const std::string kNoDocker = "[run.docker]\nbinary = \"/nonexistent/radial-test/docker\"\n";

const Refused kRefused[] = {
    {"SandboxNetwork", "containerRuntime = \"sandbox\"\nnetwork = \"host\"\n", kNoSbx,
     "run.network", "run.network: runtime 'sandbox' refuses it"},
    {"SandboxCodexAuth", "containerRuntime = \"sandbox\"\ncodexAuth = true\n", kNoSbx,
     "run.codexAuth",
     "run.codexAuth is set but runtime 'sandbox' cannot mount files keyed to the host's uid"},
    {"SandboxUnixTransport", "containerRuntime = \"sandbox\"\nturnTransport = \"unix\"\n", kNoSbx,
     "run.turnTransport",
     "run.turnTransport is \"unix\" but run.containerRuntime 'sandbox' cannot pass a unix socket "
     "into its boxes"},
    {"DockerCodexAuthUnreadable",
     "codexAuth = true\ncodexAuthFile = \"/nonexistent/radial-test/auth.json\"\n", kNoDocker,
     "run.codexAuthFile",
     "run.codexAuthFile: the Codex credentials file '/nonexistent/radial-test/auth.json' cannot "
     "be read"},
    // docs/design.md §9.3: a box with no network reaches no host port, so no tcp turn socket.
    {"DockerTcpWithoutNetwork", "turnTransport = \"tcp\"\n", kNoDocker, "run.turnTransport",
     "run.turnTransport resolves to tcp (bound on 127.0.0.1), but runtime 'docker' cannot let its "
     "boxes reach it: a box with no network"},
    // A runtime's own key is named once, with where it is set.
    {"DockerPullPolicy", "", kNoDocker + "pull = \"sometimes\"\n", "run.docker.pull",
     "run.docker.pull: 'sometimes' is not a pull policy"},
    // docs/design.md §8.7: the box ids must be nobody else's; 65534 is `nobody` in passwd.
    {"BoxIdRangeInUse", "boxIdRange = \"65534-65534\"\n", kNoDocker, "run.boxIdRange",
     "run.boxIdRange 65534-65534: host user '"},
};

enum class Entry { turn, run, reconcile, submit };

const char* entry_name(Entry e) {
    switch (e) {
        case Entry::turn: return "turn";
        case Entry::run: return "run";
        case Entry::reconcile: return "reconcile";
        case Entry::submit: return "submit";
    }
    return "?";
}

// The exit status for a startup failure (docs/design.md §14.4): 125 for `radiald turn`, 1 for the
// others — the config parsed, the runtime refused it.
int refusal_status(Entry e) {
    switch (e) {
        case Entry::turn: return 125;
        case Entry::run: return 1;
        case Entry::reconcile: return 1;
        case Entry::submit: return 1;
    }
    return -1;
}

void PrintTo(Entry e, std::ostream* os) { *os << entry_name(e); }

// "FILE:LINE:" of the line where `key`'s last dotted part is set in `text`.
std::string where(const std::string& file, const std::string& text, const std::string& key) {
    std::string leaf = key.substr(key.rfind('.') + 1) + " = ";
    auto at = text.find(leaf);
    return file + ":" + std::to_string(1 + std::count(text.begin(), text.begin() + at, '\n')) + ":";
}

class EveryEntryPoint : public ::testing::TestWithParam<std::tuple<Entry, Refused>> {};

TEST_P(EveryEntryPoint, RefusesTheConfigBeforeAnyBoxOrQueue) {
    const auto& [entry, refused] = GetParam();
    test::TempDir dir("radial-refusal");
    const std::string state = dir / "state";
    const std::string text =
        "[run]\nstateDir = \"" + state + "\"\n" + refused.run_keys + "\n" + refused.tables;
    const std::string config = dir.write("radiald.toml", text);
    const std::string request =
        dir.write("request.toml", "image = \"" RADIAL_TEST_IMAGE "\"\nargv = [\"true\"]\n");

    std::vector<std::string> argv{RADIALD_PATH, entry_name(entry), "--config", config};
    switch (entry) {
        case Entry::turn:
            argv.insert(argv.end(), {"--image", RADIAL_TEST_IMAGE, "--", "true"});
            break;
        case Entry::submit: argv.push_back(request); break;
        case Entry::run:
        case Entry::reconcile: break;
    }
    auto r = test::run_process(argv, {}, std::chrono::seconds(30));
    ASSERT_FALSE(r.timed_out) << entry_name(entry) << " served a config it must refuse:\n" << r.err;
    EXPECT_EQ(r.exit_code, refusal_status(entry)) << r.err;
    EXPECT_THAT(r.err, HasSubstr(refused.message));
    // The message points at the key in the operator's file.
    EXPECT_THAT(r.err, HasSubstr(where(config, text, refused.key)));
    EXPECT_THAT(r.err, HasSubstr(refused.key));
    // Named once: a runtime's own wording ("reading run.docker.pull: …") is not repeated after it.
    EXPECT_THAT(r.err, ::testing::Not(HasSubstr("reading " + refused.key)));
    EXPECT_EQ(r.out, "");
    // Nothing was queued for a daemon that would refuse to start.
    std::error_code ec;
    EXPECT_FALSE(fs::exists(state + "/spool/queue", ec) &&
                 !fs::is_empty(state + "/spool/queue", ec))
        << "a turn was enqueued";
}

// A runtime's CLI that someone other than root or radiald's user could replace is refused where
// the config is read, naming the key and the fix, and never run (docs/design.md §5.9, §15.1):
// here a script owned by uid 65534 that would leave a mark, under each runtime that names one.
TEST(StartupRefusal, ARuntimeCliOthersCouldReplaceIsRefusedAndNeverRun) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown to another uid)";
    for (const std::string runtime : {"docker", "sandbox"}) {
        test::TempDir dir("radial-cli-trust");
        const std::string mark = dir / "ran";
        const std::string cli = dir.write("cli.sh", "#!/bin/sh\ntouch " + mark + "\nexit 1\n");
        ASSERT_EQ(::chmod(cli.c_str(), 0755), 0);
        ASSERT_EQ(::chown(cli.c_str(), 65534, 65534), 0);
        // No engine is reachable there and nothing is pulled, under the old code too: nothing
        // runs but the script.
        const std::string text =
            "[run]\nstateDir = \"" + (dir / "state") + "\"\ncontainerRuntime = \"" + runtime +
            "\"\n[run." + runtime + "]\nbinary = \"" + cli + "\"\n" +
            (runtime == "docker" ? "host = \"unix:///nonexistent.sock\"\npull = \"never\"\n" : "");
        const std::string config = dir.write("radiald.toml", text);
        for (const std::vector<std::string>& command :
             {std::vector<std::string>{"turn", "--config", config, "--image", "radial-none/x:1",
                                       "--", "true"},
              std::vector<std::string>{"config", "check", "--config", config}}) {
            std::vector<std::string> argv{RADIALD_PATH};
            argv.insert(argv.end(), command.begin(), command.end());
            const auto r = test::run_process(argv, {}, std::chrono::seconds(30));
            EXPECT_EQ(r.exit_code, command[0] == "turn" ? 125 : 1) << runtime << " " << r.err;
            EXPECT_THAT(r.err, HasSubstr(where(config, text, "binary"))) << r.err;
            EXPECT_THAT(r.err, HasSubstr("run." + runtime + ".binary: the file '" + cli +
                                         "' is owned by uid 65534, neither root nor radiald's "
                                         "user, who could replace the " +
                                         (runtime == "docker" ? "docker" : "sbx") +
                                         " CLI; run 'chown root " + cli + "'"))
                << r.err;
            EXPECT_FALSE(fs::exists(mark)) << runtime << " " << command[0] << " ran the CLI";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(StartupRefusal, EveryEntryPoint,
                         ::testing::Combine(::testing::Values(Entry::turn, Entry::run,
                                                              Entry::reconcile, Entry::submit),
                                            ::testing::ValuesIn(kRefused)),
                         [](const auto& info) {
                             return std::string(entry_name(std::get<0>(info.param))) + "_" +
                                    std::get<1>(info.param).name;
                         });

} // namespace
} // namespace radial
