// `radiald turn` under gVisor (docs/design.md §13.9): the real binary, the real docker plugin, the
// real engine with runsc registered as the runtime "runsc" (scripts/setup.sh --with-gvisor, which
// scripts/test.sh runs), and the local test image. A turn with [run.docker] ociRuntime = "runsc"
// runs inside gVisor's kernel and keeps every hardening of §13.1; a runtime the engine does not
// list stops radiald before any box exists, and so does a pids cap too small for gVisor; the cap
// that stays on the sandbox ends a fork flood.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"

namespace radial {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

// Every container, in any state, carrying the given radial label.
std::string containers_labelled(const std::string& label) {
    return test::run_process({"docker", "ps", "-aq", "--filter", "label=radial.label=" + label})
        .out;
}

// The suite guarantees runsc is registered (scripts/setup.sh --with-gvisor); say how to get it.
void expect_engine_lists_runsc() {
    auto r = test::run_process({"docker", "info", "--format", "{{json .Runtimes}}"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(nlohmann::json::parse(r.out, nullptr, false).contains("runsc"))
        << "the engine does not list the runtime 'runsc' (" << r.out
        << "); run sudo scripts/setup.sh --with-gvisor";
}

TEST(RadialdGvisorLive, ATurnRunsInsideGvisorWithEveryHardeningKept) {
    expect_engine_lists_runsc();
    const std::string instance = test::unique_instance_id("gvisor");
    test::RadialdSetup setup("instanceId = \"" + instance + "\"\n",
                             "[run.docker]\nociRuntime = \"runsc\"\n");
    // read-only: the default mode, workspace-write, gives the box a writable layer of its own.
    auto t = setup.turn({"--turn-id", "g1", "--mode", "read-only"},
                        {"sh", "-c",
                         // gVisor's kernel log and its own kernel version, then §13.1's hardening
                         "dmesg | head -n 1; cat /proc/version; id -u; "
                         "touch /probe && echo wrote-root; grep ' / ' /proc/mounts; "
                         "cp /bin/busybox /tmp/echo && chmod 755 /tmp/echo && /tmp/echo tmp-ok; "
                         "echo interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ')"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_THAT(t.result.out, HasSubstr("Starting gVisor...")) << t.result.err;
    // The host's kernel is not what the box sees: gVisor reports its own fixed version.
    auto host_release = test::run_process({"uname", "-r"}).out; // e.g. "6.1.0-27-amd64\n"
    ASSERT_FALSE(host_release.empty());
    EXPECT_THAT(t.result.out, HasSubstr("Linux version "));
    EXPECT_THAT(t.result.out, Not(HasSubstr(host_release.substr(0, host_release.size() - 1))));
    EXPECT_THAT(t.result.out, HasSubstr("tmp-ok"));
    EXPECT_THAT(t.result.out, Not(HasSubstr("wrote-root")));
    // gVisor checks the permission first (EACCES for the non-root user where runc says EROFS),
    // so the read-only root shows in the mount table.
    EXPECT_THAT(t.result.out, ::testing::ContainsRegex("none / [a-z0-9]+ ro,"));
    EXPECT_THAT(t.result.out, HasSubstr("interfaces: lo\n"));
    EXPECT_THAT(t.result.out, Not(::testing::ContainsRegex("(^|\n)0\n"))) << "uid 0 in the box";
    EXPECT_EQ(t.record["status"], "succeeded");
    EXPECT_EQ(t.record["runtime"], "docker");
    EXPECT_EQ(containers_labelled("radial-turn-" + instance + "-g1"), "");
}

// The turn socket under gVisor (docs/design.md §13.9): the box connects to its host unix socket
// (runsc runs with --host-uds=open), posts a record, and the journal holds it — not only exit 0.
// The turn's socket directory is mounted read-only: a box that writes there would fill the state
// directory's disk past every quota (and a read-only turn would write after all). Its socket
// still answers through the read-only mount, under runc and under gVisor.
TEST(RadialdGvisorLive, TheSocketDirectoryIsReadOnlyToTheBoxAndItsSocketStillAnswers) {
    for (const bool gvisor : {false, true}) {
        SCOPED_TRACE(gvisor ? "gVisor" : "runc");
        if (gvisor) expect_engine_lists_runsc();
        test::RadialdSetup setup("", gvisor ? "[run.docker]\nociRuntime = \"runsc\"\n" : "");
        auto t = setup.turn({}, {"sh", "-c",
                                 "if (echo x > /run/radial/fill) 2>/dev/null; then echo wrote; "
                                 "else echo refused; fi; " +
                                     test::box_post_record_sh(R"({"type":"result","payload":1})")});
        EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
        EXPECT_EQ(t.result.out, "refused\n201\n") << t.result.err;
        EXPECT_FALSE(std::filesystem::exists(setup.state_dir() + "/turns/" +
                                             t.record.value("turnId", "") + "/fill"));
    }
}

TEST(RadialdGvisorLive, ATurnPostsARecordThroughItsSocketAndItIsJournaled) {
    expect_engine_lists_runsc();
    test::RadialdSetup setup("", "[run.docker]\nociRuntime = \"runsc\"\n");
    auto t = setup.turn(
        {}, {"sh", "-c", test::box_post_record_sh(R"({"type":"result","payload":{"answer":42}})")});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "201\n") << t.result.err;
    auto j = setup.records(t.record.value("turnId", ""));
    ASSERT_TRUE(j.is_object()) << t.result.err;
    ASSERT_EQ(j["records"].size(), 1u) << j.dump();
    EXPECT_EQ(j["records"][0]["payload"]["answer"], 42);
}

// radial-init is PID 1 under gVisor's kernel too: the deadline holds (docs/design.md §13.8).
TEST(RadialdGvisorLive, TheTimeoutEndsATurnUnderGvisor) {
    expect_engine_lists_runsc();
    const std::string instance = test::unique_instance_id("gvtmo");
    test::RadialdSetup setup("instanceId = \"" + instance + "\"\n",
                             "[run.docker]\nociRuntime = \"runsc\"\n");
    auto t = setup.turn({"--timeout", "2s", "--turn-id", "t1"},
                        {"sh", "-c", "trap '' TERM; sleep 60 & echo started; wait"});
    EXPECT_EQ(t.result.exit_code, 124) << t.result.err;
    EXPECT_EQ(t.record["status"], "timed_out");
    EXPECT_THAT(t.result.out, HasSubstr("started"));
    EXPECT_EQ(containers_labelled("radial-turn-" + instance + "-t1"), "");
}

// preflight asks the engine for its runtimes: an unknown one stops radiald with the key and the
// fix, before any box exists (docs/design.md §7.4).
TEST(RadialdGvisorLive, AnOciRuntimeTheEngineDoesNotListStopsRadialdBeforeAnyBox) {
    const std::string instance = test::unique_instance_id("gvno");
    test::RadialdSetup setup("instanceId = \"" + instance + "\"\n",
                             "[run.docker]\nociRuntime = \"radial-no-such-runtime\"\n");
    auto t = setup.turn({"--turn-id", "n1"}, {"echo", "must-not-run"});
    EXPECT_EQ(t.result.exit_code, 125) << t.result.err;
    EXPECT_THAT(t.result.err, HasSubstr("run.docker.ociRuntime = \"radial-no-such-runtime\": the "
                                        "engine (default host) has no runtime of that name"));
    EXPECT_THAT(t.result.err, HasSubstr("scripts/setup.sh --with-gvisor"));
    EXPECT_THAT(t.result.out, Not(HasSubstr("must-not-run")));
    EXPECT_EQ(containers_labelled("radial-turn-" + instance + "-n1"), "");
}

// Under runsc the pids cap counts gVisor's own host threads (docs/design.md §13.9): a cap too
// small for the sandbox to start with stops radiald at startup, naming both keys, before any box.
TEST(RadialdGvisorLive, APidsLimitTooSmallForGvisorStopsRadialdBeforeAnyBox) {
    expect_engine_lists_runsc();
    const std::string instance = test::unique_instance_id("gvpid");
    test::RadialdSetup setup("instanceId = \"" + instance + "\"\n",
                             "[run.docker]\nociRuntime = \"runsc\"\npidsLimit = 32\n");
    auto t = setup.turn({"--turn-id", "p1"}, {"echo", "must-not-run"});
    EXPECT_EQ(t.result.exit_code, 125) << t.result.err;
    EXPECT_THAT(t.result.err, HasSubstr("32 is below 128, the least a box starts with under "
                                        "run.docker.ociRuntime 'runsc'"));
    EXPECT_THAT(t.result.out, Not(HasSubstr("must-not-run")));
    EXPECT_EQ(containers_labelled("radial-turn-" + instance + "-p1"), "");
}

// The cap that stays on the sandbox still bounds it: a box under runsc that starts background
// processes without end never gets to all 300 (with the default cap of 256 it ended after 33 here,
// when the sandbox could not make another host thread: exit 2), and its turn ends, with its box
// removed.
TEST(RadialdGvisorLive, AForkFloodUnderGvisorEndsAtTheSandboxsCap) {
    expect_engine_lists_runsc();
    const std::string instance = test::unique_instance_id("gvflood");
    test::RadialdSetup setup("instanceId = \"" + instance + "\"\n",
                             "[run.docker]\nociRuntime = \"runsc\"\n");
    auto t = setup.turn({"--timeout", "120s", "--turn-id", "f1"},
                        {"sh", "-c",
                         "n=0; while [ $n -lt 300 ]; do sleep 60 </dev/null >/dev/null 2>&1 & "
                         "n=$((n+1)); echo started=$n; done; echo all=yes"});
    EXPECT_NE(t.result.exit_code, 0) << t.result.out;
    EXPECT_NE(t.result.exit_code, 124) << "the cap, not the timeout, must end it";
    EXPECT_THAT(t.result.out, HasSubstr("started=1\n"));
    EXPECT_THAT(t.result.out, Not(HasSubstr("all=yes")));
    EXPECT_EQ(containers_labelled("radial-turn-" + instance + "-f1"), "");
}

} // namespace
} // namespace radial
