// The warm pool (docs/design.md §13.14) through the real daemon and engine: a turn of a pooled
// class claims an idle box, gets its workspace and socket after the claim, and leaves nothing a
// later turn can see; a claim racing a refill never shares a box; a box past its age is replaced
// and ends by itself; a daemon SIGKILLed with a half-bound box leaves nothing after
// reconciliation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "../../support/loopback_http_server.h"
#include "../../support/scope_exit.h"
#include "daemon_harness.h"
#include "docker_boxes.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::DaemonProcess;
using test::DaemonSetup;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A pool of `size` boxes of the test image, `extra` more [run] keys.
std::string pool_keys(const std::string& inst, int size, const std::string& pool_extra = "",
                      const std::string& run_extra = "") {
    return "instanceId = \"" + inst + "\"\n" + run_extra + "[run.pool]\nimages = [\"" +
           RADIAL_TEST_IMAGE "\"]\nsize = " + std::to_string(size) + "\n" + pool_extra;
}

// A workspace owned by an ordinary user, as a real one is (radiald hands a root-owned tree to no
// box).
std::string workspace(const DaemonSetup& s, const std::string& name) {
    const std::string ws = s.dir().path() + "/" + name;
    fs::create_directories(ws);
    EXPECT_EQ(::chown(ws.c_str(), 1000, 1000), 0);
    return ws;
}

std::string ws_key(const std::string& ws) { return "workspace = \"" + ws + "\"\n"; }

// The pool's idle boxes: pool boxes of the instance the engine runs.
std::size_t running_pool_boxes(const std::string& inst) {
    std::size_t n = 0;
    for (const auto& l : test::boxes_with_prefix("radial-pool-" + inst + "-"))
        if (test::box_state(l) == "running") ++n;
    return n;
}

// The box the journal names for turn `id` (`radiald turns --json`), or "" when it names none.
std::string journal_label(const DaemonSetup& s, const std::string& id) {
    const auto r = test::run_process(
        {RADIALD_PATH, "turns", "--config", s.config(), "--json", "-n", "100"}, {}, 30s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        const auto t = nlohmann::json::parse(line, nullptr, false);
        if (t.is_object() && t.value("turnId", "") == id) return t.value("label", "");
    }
    return "";
}

// The pool's claims of `result` as `radiald status --json` shows them.
double claims(const DaemonSetup& s, const std::string& result) {
    const auto st = s.status();
    double n = 0;
    if (!st.contains("metrics") || st["metrics"].is_null()) return n;
    for (const auto& c :
         st["metrics"]["metrics"].value("radiald_pool_claims_total", nlohmann::json::array()))
        if (c["labels"].value("result", "") == result) n += c.value("value", 0.0);
    return n;
}

// The pool's idle boxes as `radiald status --json` shows them.
double idle_shown(const DaemonSetup& s) {
    const auto st = s.status();
    double n = 0;
    if (!st.contains("metrics") || st["metrics"].is_null()) return n;
    for (const auto& c :
         st["metrics"]["metrics"].value("radiald_pool_boxes_idle", nlohmann::json::array()))
        n += c.value("value", 0.0);
    return n;
}

bool mounted_under(const std::string& dir) {
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);)
        if (line.find(" " + dir + "/") != std::string::npos) return true;
    return false;
}

// A daemon the test ends with SIGKILL (DaemonProcess's destructor) leaves its pool boxes'
// receiving directories mounted on the host until its state directory is reconciled, as its next
// start would do: done when the test ends, after the daemon (declared before the DaemonProcess).
struct Reconciled {
    const DaemonSetup& setup;
    ~Reconciled() {
        const auto r = setup.reconcile();
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_FALSE(mounted_under(setup.state_dir() + "/pool"));
    }
};

TEST(PoolLive, AWarmTurnClaimsAnIdleBoxAndItsWorkspaceAndSocketArriveAfterTheClaim) {
    const std::string inst = test::unique_instance_id("pool");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"}, turns{"radial-turn-" + inst + "-"};
    DaemonSetup s(pool_keys(inst, 1));
    Reconciled reconciled{s};
    const std::string ws = workspace(s, "ws");
    { std::ofstream(ws + "/in.txt") << "from the host\n"; }
    DaemonProcess d(s);
    ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 1; }, 60s)) << d.log();
    const std::string idle = test::boxes_with_prefix("radial-pool-" + inst + "-").at(0);

    const std::string id = s.submit(test::shell_turn(
        "cat in.txt; echo written > out.txt; pwd; id -u; test -S /run/radial/turn.sock && echo "
        "SOCKET; curl -s -o /dev/null -w '%{http_code}\\n' --unix-socket "
        "\"${RADIAL_TURN_SOCKET#unix://}\" -H \"Authorization: Bearer $RADIAL_TURN_TOKEN\" "
        "-d '{\"type\":\"result\",\"payload\":{\"ok\":true}}' http://r/v1/records",
        ws_key(ws)));
    ASSERT_TRUE(s.wait_terminal({id}, 60s)) << d.log();
    const auto rec = s.terminal(id);
    EXPECT_EQ(rec["status"], "succeeded") << rec;
    EXPECT_EQ(rec["label"], idle) << "the turn ran in the idle box: " << rec;
    const std::string out = rec["outputTail"]["stdout"];
    EXPECT_THAT(out, HasSubstr("from the host\n/work\n"));
    EXPECT_THAT(out, HasSubstr("SOCKET\n201\n")) << "the turn's socket reached the box";
    // The box ran as the pool box's leased ids, which the record names.
    std::smatch uid;
    ASSERT_TRUE(std::regex_search(out, uid, std::regex("/work\n([0-9]+)\n"))) << out;
    EXPECT_THAT(rec["boxUser"].get<std::string>(), StartsWith(uid[1].str() + ":"));
    EXPECT_EQ(s.records(id)["records"].size(), 1u);
    // The workspace got what the box wrote, and is its owner's again.
    EXPECT_EQ(test::read_file(ws + "/out.txt"), "written\n");
    struct stat st {};
    ASSERT_EQ(::stat((ws + "/out.txt").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 1000u);
    // Used once, then removed; the pool made another.
    EXPECT_TRUE(test::wait_until([&] { return test::box_state(idle) == "gone"; }, 30s));
    EXPECT_TRUE(test::wait_until(
        [&] { return running_pool_boxes(inst) == 1 && claims(s, "hit") == 1; }, 60s))
        << s.status().dump();
    EXPECT_EQ(claims(s, "miss"), 0);

    // A turn of a mode the pool does not serve (read-only) starts its own box, as a cold turn does.
    const std::string ro = s.submit(
        test::shell_turn("touch /work/x 2>/dev/null || echo RO", ws_key(ws) + "mode = "
                                                                              "\"read-only\"\n"));
    ASSERT_TRUE(s.wait_terminal({ro}, 60s)) << d.log();
    const auto cold = s.terminal(ro);
    EXPECT_EQ(cold["label"], "radial-turn-" + inst + "-" + ro) << cold;
    EXPECT_THAT(cold["outputTail"]["stdout"].get<std::string>(), HasSubstr("RO"));
    EXPECT_EQ(claims(s, "miss"), 0) << "a mode the pool does not serve is no class's miss";

    // Nor is a turn of the pooled image with a further mount, which no pool box is made with.
    const std::string cache = workspace(s, "cache");
    { std::ofstream(cache + "/c.txt") << "cached\n"; }
    const std::string mnt = s.submit(
        test::shell_turn("cat /cache/c.txt", ws_key(ws) + "[[mounts]]\nsource = \"" + cache +
                                                 "\"\ntarget = \"/cache\"\nreadOnly = true\n"));
    ASSERT_TRUE(s.wait_terminal({mnt}, 60s)) << d.log();
    const auto own = s.terminal(mnt);
    EXPECT_EQ(own["label"], "radial-turn-" + inst + "-" + mnt) << own;
    EXPECT_EQ(own["outputTail"]["stdout"], "cached\n") << own;
    EXPECT_EQ(claims(s, "miss"), 0) << "a shape the pool does not make is no class's miss";
    EXPECT_EQ(claims(s, "hit"), 1);
}

// The pool's figures reach `radiald status` when they change, not at the daemon's next rescan of
// the spool (30 s): an idle box made after the start is counted while nothing else wakes the
// daemon (docs/design.md §12.4).
TEST(PoolLive, StatusCountsAnIdleBoxWhenItIsMadeNotAtTheNextRescan) {
    const std::string inst = test::unique_instance_id("poolidle");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"};
    DaemonSetup s(pool_keys(inst, 1));
    Reconciled reconciled{s};
    DaemonProcess d(s);
    ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 1; }, 60s)) << d.log();
    // Well within the 30 s a rescan waits: shown because the pool woke the daemon's loop.
    EXPECT_TRUE(test::wait_until([&] { return idle_shown(s) == 1; }, 8s))
        << s.status().dump() << d.log();
}

// With run.pool.modes, each mode of an image is a class of its own: a read-only turn claims a
// read-only box, whose workspace it cannot write, and a workspace-write turn a writable one.
TEST(PoolLive, EachModeIsAClassOfItsOwn) {
    const std::string inst = test::unique_instance_id("poolmodes");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"}, turns{"radial-turn-" + inst + "-"};
    DaemonSetup s(pool_keys(inst, 1, "modes = [\"read-only\", \"workspace-write\"]\n"));
    Reconciled reconciled{s};
    const std::string ws = workspace(s, "ws");
    DaemonProcess d(s);
    ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 2; }, 90s)) << d.log();
    const std::string ro = s.submit(test::shell_turn(
        "touch /work/x 2>/dev/null || echo RO; touch /tmp/y 2>/dev/null || echo ROOTFS-RO",
        ws_key(ws) + "mode = \"read-only\"\n"));
    const std::string rw = s.submit(test::shell_turn("touch /work/rw && echo RW", ws_key(ws)));
    ASSERT_TRUE(s.wait_terminal({ro, rw}, 60s)) << d.log();
    const auto r = s.terminal(ro), w = s.terminal(rw);
    EXPECT_THAT(r["label"].get<std::string>(), StartsWith("radial-pool-" + inst + "-")) << r;
    EXPECT_THAT(w["label"].get<std::string>(), StartsWith("radial-pool-" + inst + "-")) << w;
    EXPECT_EQ(r["outputTail"]["stdout"], "RO\n") << "the workspace is read-only, /tmp is not";
    EXPECT_EQ(w["outputTail"]["stdout"], "RW\n") << w;
    EXPECT_FALSE(fs::exists(ws + "/x"));
    EXPECT_TRUE(fs::exists(ws + "/rw"));
    EXPECT_TRUE(test::wait_until([&] { return claims(s, "hit") == 2; }, 30s));
    const auto st = test::run_process({RADIALD_PATH, "status", "--config", s.config()});
    EXPECT_THAT(st.out, HasSubstr("pool " RADIAL_TEST_IMAGE " (read-only): "));
    EXPECT_THAT(st.out, HasSubstr("pool " RADIAL_TEST_IMAGE " (workspace-write): "));
}

// Egress is a turn's, not the box's: the broker is bound in the pool box's socket directory at
// the claim, and the exec's radial-init starts the loopback endpoint (docs/design.md §9.7).
TEST(PoolLive, AWarmTurnReachesItsEgressThroughItsOwnBroker) {
    test::LoopbackHttpServer up("127.0.0.2", "HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n");
    const std::string port = std::to_string(up.port());
    const std::string inst = test::unique_instance_id("poolegress");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"}, turns{"radial-turn-" + inst + "-"};
    DaemonSetup s(pool_keys(inst, 1) + "[run.egress]\nallow = [\"pkg.test:" + port +
                  "\"]\nallowRanges = [\"127.0.0.2/32\"]\nhosts = { \"pkg.test\" = "
                  "\"127.0.0.2\" }\n");
    Reconciled reconciled{s};
    const std::string ws = workspace(s, "ws");
    DaemonProcess d(s);
    ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 1; }, 60s)) << d.log();
    const std::string id =
        s.submit(test::shell_turn("curl -s http://pkg.test:" + port + "/",
                                  ws_key(ws) + "egress = [\"pkg.test:" + port + "\"]\n"));
    ASSERT_TRUE(s.wait_terminal({id}, 60s)) << d.log();
    const auto rec = s.terminal(id);
    EXPECT_EQ(rec["status"], "succeeded") << rec;
    EXPECT_THAT(rec["label"].get<std::string>(), StartsWith("radial-pool-" + inst + "-"));
    EXPECT_EQ(rec["outputTail"]["stdout"], "hello\n") << rec;
    EXPECT_EQ(up.requests(), 1);
}

// An image tag of the test's own, removed when the test ends.
struct OwnTag {
    std::string name;
    ~OwnTag() { test::run_process({"docker", "image", "rm", "-f", name}); }
};

// The pool's class follows its image (docs/design.md §13.14): one not on the engine at the start
// is served once it appears, and status says meanwhile that making its boxes fails; one rebuilt
// under its name misses once, and the pool then serves the new digest.
TEST(PoolLive, ThePoolFollowsItsImageAppearingAndBeingRebuilt) {
    const std::string inst = test::unique_instance_id("poolimg");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"}, turns{"radial-turn-" + inst + "-"};
    OwnTag tag{"radial-pooltest/" + inst + ":1"};
    // Beside a class that is served all along: one failing class holds up no other.
    DaemonSetup s("instanceId = \"" + inst + "\"\n[run.pool]\nimages = [\"" + tag.name +
                  "\", \"" RADIAL_TEST_IMAGE "\"]\nsize = 1\n");
    Reconciled reconciled{s};
    const std::string ws = workspace(s, "ws");
    const std::string turn = "image = \"" + tag.name + "\"\nargv = [\"true\"]\n" + ws_key(ws);
    DaemonProcess d(s);
    ASSERT_TRUE(test::wait_until(
        [&] {
            return test::run_process({RADIALD_PATH, "status", "--config", s.config()})
                       .out.find("making its boxes fails") != std::string::npos;
        },
        60s))
        << d.log();
    ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 1; }, 60s)) << d.log();

    ASSERT_EQ(test::run_process({"docker", "tag", RADIAL_TEST_IMAGE, tag.name}).exit_code, 0);
    ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 2; }, 60s)) << d.log();
    const std::string first = s.submit(turn);
    ASSERT_TRUE(s.wait_terminal({first}, 60s)) << d.log();
    EXPECT_THAT(s.terminal(first)["label"].get<std::string>(),
                StartsWith("radial-pool-" + inst + "-"))
        << "served once the image appeared: " << s.terminal(first);

    // Rebuilt under the same name (a label changes its digest; nothing is run or pulled).
    auto built = test::run_process({"sh", "-c",
                                    "printf 'FROM " RADIAL_TEST_IMAGE "\\nLABEL rebuilt=" + inst +
                                        "\\n' | docker build -q -t " + tag.name + " -"});
    ASSERT_EQ(built.exit_code, 0) << built.err;
    const std::string missed = s.submit(turn);
    ASSERT_TRUE(s.wait_terminal({missed}, 60s)) << d.log();
    const auto cold = s.terminal(missed);
    EXPECT_EQ(cold["label"], "radial-turn-" + inst + "-" + missed)
        << "the idle box runs the old image: " << cold;
    EXPECT_NE(cold["imageDigest"], s.terminal(first)["imageDigest"]);
    ASSERT_TRUE(test::wait_until(
        [&] { return d.log().find("replacing its 1 idle box(es)") != std::string::npos; }, 60s))
        << d.log();
    ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 2; }, 60s)) << d.log();
    const std::string again = s.submit(turn);
    ASSERT_TRUE(s.wait_terminal({again}, 60s)) << d.log();
    const auto warm = s.terminal(again);
    EXPECT_THAT(warm["label"].get<std::string>(), StartsWith("radial-pool-" + inst + "-")) << warm;
    EXPECT_EQ(warm["imageDigest"], cold["imageDigest"]) << "the pool serves the rebuilt image";
}

// `radiald config check` (and so `submit`) refuses a pool the daemon would refuse (docs/design.md
// §7.4).
TEST(PoolLive, APoolTheRuntimeCannotServeIsRefusedByConfigCheck) {
    DaemonSetup s(pool_keys(test::unique_instance_id("poolrunsc"), 1),
                  "[run.docker]\nociRuntime = \"runsc\"\n");
    auto r = test::run_process({RADIALD_PATH, "config", "check", "--config", s.config()}, {}, 60s);
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_THAT(r.err, HasSubstr("run.pool.size"));
    EXPECT_THAT(r.err, HasSubstr("radial.cap.mount-propagation")) << r.err;
    auto q = s.submit_raw(test::shell_turn("true"));
    EXPECT_NE(q.exit_code, 0) << "no turn is queued for a daemon that would not start";
}

// A pool whose idle boxes would hold the ids the turns need is refused by the checks every command
// shares, with the runtime's box-root answer known (docs/design.md §13.14).
TEST(PoolLive, APoolThatWouldHoldTheTurnsIdsIsRefusedByConfigCheck) {
    DaemonSetup s(pool_keys(test::unique_instance_id("poolids"), 2, "",
                            "boxIdRange = \"3100000-3100004\"\nmaxConcurrentTurns = 4\n"));
    auto r = test::run_process({RADIALD_PATH, "config", "check", "--config", s.config()}, {}, 60s);
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_THAT(r.err, HasSubstr("run.pool.size: 2 idle boxes for each image and mode (1 of "
                                 "them) and run.maxConcurrentTurns (4) need at least 6 ids, but "
                                 "run.boxIdRange holds 5"))
        << r.err;
}

// As tight a range as the pool's check allows (its idle box and the turns at once): a turn given
// the slot of a warm turn whose box still held its id waits for that box's removal rather than
// failing for want of an id.
TEST(PoolLive, ATurnInTheSlotOfAWarmTurnWaitsForItsBoxsIdRatherThanFailing) {
    const std::string inst = test::unique_instance_id("poolfit");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"}, turns{"radial-turn-" + inst + "-"};
    DaemonSetup s(
        pool_keys(inst, 1, "", "boxIdRange = \"3100020-3100022\"\nmaxConcurrentTurns = 2\n"));
    Reconciled reconciled{s};
    std::vector<std::string> ids;
    for (int i = 0; i < 12; ++i)
        ids.push_back(
            s.submit(test::shell_turn("echo ok", ws_key(workspace(s, "ws" + std::to_string(i))))));
    DaemonProcess d(s);
    ASSERT_TRUE(s.wait_terminal(ids, 300s)) << d.log();
    for (const auto& id : ids) {
        const auto rec = s.terminal(id);
        EXPECT_EQ(rec["status"], "succeeded") << rec;
    }
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(60s), 0) << d.log();
}

// SIGHUP applies the check startup applies: more turns than the range holds beside the pool's
// idle boxes are refused, naming why, and the running value is kept (more turns failed for want
// of an id).
TEST(PoolLive, AReloadThatWouldLeaveTheTurnsNoIdsKeepsTheRunningLimit) {
    const std::string inst = test::unique_instance_id("poolhup");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"};
    DaemonSetup s(
        pool_keys(inst, 1, "", "boxIdRange = \"3100010-3100012\"\nmaxConcurrentTurns = 2\n"));
    Reconciled reconciled{s};
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 60s)) << d.log();
    const std::string started = test::read_file(s.config());
    // The config restored for the reconcile at the end however the test ends: declared after
    // `reconciled`, so it runs first.
    test::ScopeExit restore([&] { std::ofstream(s.config(), std::ios::trunc) << started; });
    std::string text = started;
    const auto at = text.find("maxConcurrentTurns = 2");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, std::string("maxConcurrentTurns = 2").size(), "maxConcurrentTurns = 5");
    std::ofstream(s.config(), std::ios::trunc) << text;
    d.signal(SIGHUP);
    ASSERT_TRUE(d.wait_for_log("reload (SIGHUP): 0 key(s) applied, 1 refused, 0 waiting", 10s))
        << d.log();
    EXPECT_THAT(d.log(), HasSubstr("run.maxConcurrentTurns 5 is refused, 2 kept: run.pool.size: 1 "
                                   "idle boxes for each image and mode (1 of them) and "
                                   "run.maxConcurrentTurns (5) need at least 6 ids, but "
                                   "run.boxIdRange holds 3"));
    EXPECT_THAT(d.log(), Not(HasSubstr("run.maxConcurrentTurns changed")));
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(60s), 0) << d.log();
}

// With a fixed run.user, a pool box is the box a cold turn gets: the same passwd and group entry,
// home and variables (docs/design.md §13.14: a pool changes when the box started, not what is in
// it). The pool box had none of them.
TEST(PoolLive, WithAFixedRunUserAWarmTurnHasTheIdentityAColdTurnHas) {
    const std::string inst = test::unique_instance_id("pooluser");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"}, turns{"radial-turn-" + inst + "-"};
    DaemonSetup s(pool_keys(inst, 1, "modes = [\"workspace-write\"]\n", "user = \"4321:4321\"\n"));
    Reconciled reconciled{s};
    const std::string ws = workspace(s, "ws");
    DaemonProcess d(s);
    ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 1; }, 60s)) << d.log();
    const std::string who =
        "id -un; id -gn; echo \"HOME=$HOME USER=$USER\"; grep -c '^[^:]*:[^:]*:4321:' /etc/passwd; "
        "test -d \"$HOME\" && test -w \"$HOME\" && echo HOME-WRITABLE";
    const std::string warm = s.submit(test::shell_turn(who, ws_key(ws)));
    ASSERT_TRUE(s.wait_terminal({warm}, 60s)) << d.log();
    // Read-only is a mode the pool does not serve: a box of its own.
    const std::string cold = s.submit(test::shell_turn(who, ws_key(ws) + "mode = \"read-only\"\n"));
    ASSERT_TRUE(s.wait_terminal({cold}, 60s)) << d.log();
    const auto w = s.terminal(warm), c = s.terminal(cold);
    ASSERT_THAT(w["label"].get<std::string>(), StartsWith("radial-pool-" + inst + "-")) << w;
    ASSERT_EQ(c["label"], "radial-turn-" + inst + "-" + cold) << c;
    EXPECT_EQ(c["status"], "succeeded") << c;
    EXPECT_EQ(w["status"], "succeeded") << w;
    const std::string cold_out = c["outputTail"]["stdout"];
    EXPECT_THAT(cold_out, HasSubstr("\n1\nHOME-WRITABLE\n"))
        << "the cold turn's identity: " << cold_out;
    EXPECT_EQ(w["outputTail"]["stdout"], cold_out);
}

// Root without CAP_SYS_ADMIN (a systemd unit's CapabilityBoundingSet) cannot mount a workspace
// into a running box: refused by name at startup, not a daemon that runs on and never makes a box.
TEST(PoolLive, APoolWithoutCapSysAdminIsRefusedByConfigCheck) {
    DaemonSetup s(pool_keys(test::unique_instance_id("poolcap"), 1));
    auto r =
        test::run_process({"setpriv", "--inh-caps", "-sys_admin", "--bounding-set", "-sys_admin",
                           "--", RADIALD_PATH, "config", "check", "--config", s.config()},
                          {}, 60s);
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_THAT(r.err, HasSubstr("run.pool.size"));
    EXPECT_THAT(r.err, HasSubstr("needs CAP_SYS_ADMIN, and radiald runs without it")) << r.err;
    // The same config, with the capability, passes: the refusal is the capability's.
    auto ok = test::run_process({RADIALD_PATH, "config", "check", "--config", s.config()}, {}, 60s);
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST(PoolLive, NothingOfTurnAIsVisibleToTurnB) {
    const std::string inst = test::unique_instance_id("poolab");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"}, turns{"radial-turn-" + inst + "-"};
    DaemonSetup s(pool_keys(inst, 2));
    Reconciled reconciled{s};
    const std::string ws_a = workspace(s, "a"), ws_b = workspace(s, "b");
    DaemonProcess d(s);
    ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 2; }, 90s)) << d.log();

    // A leaves what it can: files in /tmp, its home and its workspace, a process, its socket.
    const std::string a = s.submit(test::shell_turn(
        "echo a > /tmp/from-a; echo a > $HOME/from-a; echo a > /work/from-a; "
        "(nohup sleep 300 >/dev/null 2>&1 &); echo \"$RADIAL_TURN_TOKEN\" > /tmp/token-a; echo A",
        ws_key(ws_a)));
    ASSERT_TRUE(s.wait_terminal({a}, 60s)) << d.log();
    const auto rec_a = s.terminal(a);
    ASSERT_EQ(rec_a["status"], "succeeded") << rec_a;
    ASSERT_THAT(rec_a["label"].get<std::string>(), StartsWith("radial-pool-" + inst + "-"));

    const std::string b = s.submit(test::shell_turn(
        "for f in /tmp/from-a /tmp/token-a $HOME/from-a /work/from-a; do test -e $f && echo "
        "SEEN $f; done; pgrep -f 'sleep 300' >/dev/null && echo SEEN sleep; " // hermetic-ok: runs
                                                                              // in box B's own pid
                                                                              // namespace
        "ls /run/radial; echo B",
        ws_key(ws_b)));
    ASSERT_TRUE(s.wait_terminal({b}, 60s)) << d.log();
    const auto rec_b = s.terminal(b);
    ASSERT_EQ(rec_b["status"], "succeeded") << rec_b;
    ASSERT_THAT(rec_b["label"].get<std::string>(), StartsWith("radial-pool-" + inst + "-"));
    EXPECT_NE(rec_b["label"], rec_a["label"]) << "a pool box serves one turn";
    EXPECT_NE(rec_b["boxUser"], rec_a["boxUser"]) << "each box its own ids";
    const std::string out = rec_b["outputTail"]["stdout"];
    EXPECT_THAT(out, ::testing::Not(HasSubstr("SEEN"))) << out;
    EXPECT_THAT(out, HasSubstr("turn.sock\nB\n")) << "only B's own socket: " << out;
    EXPECT_TRUE(test::wait_until([&] { return test::box_state(rec_a["label"]) == "gone"; }, 30s))
        << "A's box is removed after its turn";
    EXPECT_TRUE(fs::exists(ws_a + "/from-a"));
    EXPECT_FALSE(fs::exists(ws_b + "/from-a"));
    EXPECT_EQ(claims(s, "hit"), 2);
}

TEST(PoolLive, AClaimRacingARefillNeverSharesABoxAndLeavesNone) {
    const std::string inst = test::unique_instance_id("poolrace");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"}, turns{"radial-turn-" + inst + "-"};
    // One idle box, four turns at once: the first claims it while the refill makes the next, the
    // others claim what the refill made or start cold.
    DaemonSetup s(pool_keys(inst, 1, "", "maxConcurrentTurns = 4\nsharedWorkspaces = true\n"));
    Reconciled reconciled{s};
    const std::string ws = workspace(s, "ws");
    DaemonProcess d(s);
    ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 1; }, 60s)) << d.log();
    std::vector<std::string> ids;
    for (int i = 0; i < 6; ++i)
        ids.push_back(s.submit(test::shell_turn("echo ran; sleep 1", ws_key(ws))));
    ASSERT_TRUE(s.wait_terminal(ids, 180s)) << d.log();
    std::set<std::string> labels;
    for (const auto& id : ids) {
        const auto rec = s.terminal(id);
        EXPECT_EQ(rec["status"], "succeeded") << rec;
        EXPECT_TRUE(labels.insert(rec["label"].get<std::string>()).second)
            << "two turns in one box: " << rec["label"];
    }
    EXPECT_TRUE(test::wait_until([&] { return claims(s, "hit") + claims(s, "miss") == 6; }, 30s))
        << s.status().dump();
    EXPECT_GE(claims(s, "hit"), 1);
    // Nothing left but the pool's one idle box.
    EXPECT_TRUE(test::wait_until(
        [&] {
            return test::boxes_with_prefix("radial-turn-" + inst + "-").empty() &&
                   test::boxes_with_prefix("radial-pool-" + inst + "-").size() == 1;
        },
        60s));
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(60s), 0) << d.log();
    EXPECT_TRUE(test::boxes_with_prefix("radial-pool-" + inst + "-").empty())
        << "a stopped daemon's idle boxes are removed";
    EXPECT_FALSE(mounted_under(s.state_dir() + "/pool"));
}

// Idle boxes that ended behind the pool's back (as an engine restart without live-restore ends
// every one) are removed at the claim, never handed out: the turn runs in a box of its own, as a
// cold turn would, and the pool makes new ones.
TEST(PoolLive, AnIdleBoxThatEndedIsNotHandedOutAndTheTurnStillRuns) {
    const std::string inst = test::unique_instance_id("poolend");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"}, turns{"radial-turn-" + inst + "-"};
    DaemonSetup s(pool_keys(inst, 2));
    Reconciled reconciled{s};
    const std::string ws = workspace(s, "ws");
    DaemonProcess d(s);
    ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 2; }, 90s)) << d.log();
    const auto idle = test::boxes_with_prefix("radial-pool-" + inst + "-");
    ASSERT_EQ(idle.size(), 2u);
    for (const auto& label : idle) {
        const auto k = test::run_process({"docker", "kill", label}, {}, 30s);
        ASSERT_EQ(k.exit_code, 0) << k.err;
    }
    for (const auto& label : idle)
        ASSERT_TRUE(test::wait_until([&] { return test::box_state(label) != "running"; }, 30s));

    const std::string id = s.submit(test::shell_turn("echo ran", ws_key(ws)));
    ASSERT_TRUE(s.wait_terminal({id}, 60s)) << d.log();
    const auto rec = s.terminal(id);
    EXPECT_EQ(rec["status"], "succeeded") << rec << d.log();
    EXPECT_EQ(rec["outputTail"]["stdout"], "ran\n") << rec;
    // Mostly the claim finds them ended (a box of its own, a miss); when the pool's own look
    // (every 10 s) came first, a box made since may serve it. Never an ended one.
    for (const auto& label : idle) EXPECT_NE(rec["label"], label) << rec;
    for (const auto& label : idle)
        EXPECT_THAT(d.log(), HasSubstr("pool box '" + label + "' has ended while idle"));
    EXPECT_EQ(claims(s, "hit") + claims(s, "miss"), 1) << s.status().dump();

    // The ended boxes are removed and replaced; the next turn is warm again.
    for (const auto& label : idle)
        EXPECT_TRUE(test::wait_until([&] { return test::box_state(label) == "gone"; }, 30s));
    ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 2; }, 90s)) << d.log();
    const std::string warm = s.submit(test::shell_turn("echo warm", ws_key(ws)));
    ASSERT_TRUE(s.wait_terminal({warm}, 60s)) << d.log();
    const auto wrec = s.terminal(warm);
    EXPECT_EQ(wrec["status"], "succeeded") << wrec;
    EXPECT_THAT(wrec["label"].get<std::string>(), StartsWith("radial-pool-" + inst + "-"));
}

// And with no turn to claim them, ended idle boxes are found and replaced long before their age
// (10 minutes here), so the turns that come are warm.
TEST(PoolLive, IdleBoxesThatEndedAreReplacedWithoutAClaim) {
    const std::string inst = test::unique_instance_id("poolrep");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"};
    DaemonSetup s(pool_keys(inst, 2));
    Reconciled reconciled{s};
    DaemonProcess d(s);
    ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 2; }, 90s)) << d.log();
    const auto idle = test::boxes_with_prefix("radial-pool-" + inst + "-");
    ASSERT_EQ(idle.size(), 2u);
    for (const auto& label : idle)
        ASSERT_EQ(test::run_process({"docker", "kill", label}, {}, 30s).exit_code, 0);
    for (const auto& label : idle)
        EXPECT_TRUE(test::wait_until([&] { return test::box_state(label) == "gone"; }, 60s))
            << label << " is " << test::box_state(label) << "\n"
            << d.log();
    EXPECT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 2; }, 90s)) << d.log();
    for (const auto& label : idle)
        EXPECT_THAT(d.log(), HasSubstr("pool box '" + label + "' has ended while idle"));
    EXPECT_EQ(claims(s, "hit") + claims(s, "miss"), 0) << s.status().dump();
}

TEST(PoolLive, ABoxPastItsAgeIsReplacedAndEndsByItselfWithRadialdDead) {
    const std::string inst = test::unique_instance_id("poolage");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"};
    DaemonSetup s(pool_keys(inst, 1, "maxAge = \"10s\"\n"));
    Reconciled reconciled{s};
    {
        DaemonProcess d(s);
        ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 1; }, 60s))
            << d.log();
        const std::string first = test::boxes_with_prefix("radial-pool-" + inst + "-").at(0);
        // Past its age less the claim margin, the pool removes it and makes another.
        ASSERT_TRUE(test::wait_until([&] { return test::box_state(first) == "gone"; }, 60s))
            << d.log();
        EXPECT_THAT(d.log(), HasSubstr("pool box '" + first + "' reached its age unclaimed"));
        EXPECT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 1; }, 60s));
        d.crash();
    }
    // With radiald dead, the box's own PID 1 ends it at its age.
    const auto left = test::boxes_with_prefix("radial-pool-" + inst + "-");
    ASSERT_EQ(left.size(), 1u);
    EXPECT_TRUE(test::wait_until([&] { return test::box_state(left[0]) != "running"; }, 60s))
        << test::box_state(left[0]);
}

// The same deadline as a cold turn's with radiald dead (docs/design.md §13.12): the exec's own
// radial-init ends the command at its timeout, and the box, idle again, ends at its idle timeout.
TEST(PoolLive, AWarmTurnsDeadlineHoldsInTheBoxWithRadialdDead) {
    const std::string inst = test::unique_instance_id("pooldead");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"};
    DaemonSetup s(pool_keys(inst, 1, "maxAge = \"10s\"\n", "stopGrace = \"1s\"\n"));
    Reconciled reconciled{s};
    const std::string ws = workspace(s, "ws");
    std::string label;
    {
        DaemonProcess d(s);
        ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 1; }, 60s))
            << d.log();
        const std::string id = s.submit(test::shell_turn("touch /work/bound; exec sleep 300",
                                                         ws_key(ws) + "timeout = \"3s\"\n"));
        ASSERT_TRUE(test::wait_until([&] { return fs::exists(ws + "/bound"); }, 60s)) << d.log();
        d.crash();
        // The box the claim named, not the one whose processes look right: on a loaded machine
        // the deadline may already have ended the command by the time anyone looks.
        label = journal_label(s, id);
    }
    ASSERT_THAT(label, StartsWith("radial-pool-" + inst + "-")) << "the turn ran in a pool box";
    // 3 s timeout + 1 s stopGrace + the kill grace, with room.
    EXPECT_TRUE(test::wait_until(
        [&] {
            return test::run_process({"docker", "top", label}).out.find("sleep 300") ==
                   std::string::npos;
        },
        20s))
        << "the command outlived its deadline with no radiald running";
    // Then idle: its PID 1 ends it at its idle timeout (maxAge).
    EXPECT_TRUE(test::wait_until([&] { return test::box_state(label) != "running"; }, 60s));
}

TEST(PoolLive, ADaemonSIGKILLedWithAHalfBoundBoxLeavesNothingAfterReconciliation) {
    const std::string inst = test::unique_instance_id("poolkill");
    test::BoxCleanup pool_boxes{"radial-pool-" + inst + "-"}, turns{"radial-turn-" + inst + "-"};
    DaemonSetup s(pool_keys(inst, 1));
    Reconciled reconciled{s};
    const std::string ws = workspace(s, "ws");
    std::string id, label;
    {
        DaemonProcess d(s);
        ASSERT_TRUE(test::wait_until([&] { return running_pool_boxes(inst) == 1; }, 60s))
            << d.log();
        id = s.submit(test::shell_turn("touch /work/bound; sleep 300", ws_key(ws)));
        ASSERT_TRUE(test::wait_until([&] { return fs::exists(ws + "/bound"); }, 60s)) << d.log();
        d.crash();
        // The claimed box by its name in the journal: the pool's refill may have a second box
        // running by now.
        label = journal_label(s, id);
    }
    // The box runs, its workspace stacked on it on the host.
    ASSERT_THAT(label, StartsWith("radial-pool-" + inst + "-"));
    EXPECT_EQ(test::box_state(label), "running");
    EXPECT_TRUE(mounted_under(s.state_dir() + "/pool"));

    const auto r = s.reconcile();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(test::boxes_with_prefix("radial-pool-" + inst + "-").empty()) << r.err;
    EXPECT_FALSE(mounted_under(s.state_dir() + "/pool")) << r.err;
    EXPECT_TRUE(fs::is_empty(s.state_dir() + "/pool"));
    const auto rec = s.terminal(id);
    ASSERT_FALSE(rec.is_null());
    EXPECT_EQ(rec["label"], label) << "the journal named the pool box the turn ran in: " << rec;
    EXPECT_NE(rec["status"], "succeeded") << rec;
    // The workspace is its owner's again.
    struct stat st {};
    ASSERT_EQ(::stat((ws + "/bound").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 1000u) << "reconciliation hands the workspace back";
}

} // namespace
} // namespace radial
