// Services between workspaces end to end (docs/design.md §9.7, "Between boxes"): two real
// `radiald turn` processes sharing one state directory, the docker runtime with radial-init; a
// backend turn offers its box's loopback service, a frontend turn's plain curl reaches it through
// both brokers (HTTP_PROXY, the reserved name api.backend.radial), and both journals hold the
// receipts. LIVE: needs dockerd and the test image (busybox httpd and nc). Loopback only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "../../support/load_factor.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "session_fixture.h"

// A named namespace: a unity batch holds radiald_egress_live_test.cpp's helpers beside these.
namespace radial::edges_live {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// backend serves api (port 8080) to the peers `peers`; frontend reaches `reach`.
std::string workspaces(const test::TempDir& ws, const std::string& peers,
                       const std::string& reach) {
    return "[run.workspaces.backend]\npath = \"" + ws.path() +
           "/backend\"\nserve = { api = { port = 8080, peers = [" + peers +
           "] } }\n[run.workspaces.frontend]\npath = \"" + ws.path() + "/frontend\"\nreach = [" +
           reach + "]\n";
}

std::vector<nlohmann::json> turn_receipts(const test::RadialdSetup& s, const std::string& turn) {
    std::vector<nlohmann::json> out;
    const auto j = s.records(turn);
    if (j.is_null()) return out;
    for (const auto& r : j["records"])
        if (r["type"] == "radial.egress") out.push_back(r["payload"]);
    return out;
}

// Waits (bounded) until `path` exists: an event the other process makes.
bool appears(const std::string& path, std::chrono::seconds budget = 60s) {
    const auto deadline = std::chrono::steady_clock::now() + test::scaled(budget);
    while (std::chrono::steady_clock::now() < deadline) {
        if (std::filesystem::exists(path)) return true;
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

struct Workspaces {
    test::TempDir ws{"radial-ws"};
    Workspaces() {
        std::filesystem::create_directories(ws.path() + "/backend");
        std::filesystem::create_directories(ws.path() + "/frontend");
        // The box user writes the backend's flags.
        std::filesystem::permissions(ws.path() + "/backend", std::filesystem::perms::all);
    }
    std::string backend() const { return ws.path() + "/backend"; }
    std::string frontend() const { return ws.path() + "/frontend"; }
};

// Tells the backend's box to end (the flag its command waits for): at once with now(), and
// however the test ends before the turns are awaited.
struct EndBackend {
    std::string flag;
    void now() const { std::ofstream(flag) << "done\n"; }
    ~EndBackend() { now(); }
};

// The backend's box: httpd on its loopback only, until the test says it is done.
const std::string kBackendHttpd =
    "mkdir -p /tmp/www && echo hi-from-backend > /tmp/www/index.html && "
    "httpd -f -p 127.0.0.1:8080 -h /tmp/www & "
    "while [ ! -e /work/done ]; do sleep 0.1; done; echo backend-done";

// The backend's turn (id backend-1), offering api, running `command` in the background.
std::future<test::TurnRun> serve_backend(const test::RadialdSetup& s, const Workspaces& w,
                                         const std::string& command) {
    return std::async(std::launch::async, [&s, &w, command] {
        return s.turn({"--workspace", w.backend(), "--offer", "api", "--turn-id", "backend-1"},
                      {"sh", "-c", command});
    });
}

// The frontend's box: its httpd peer may not listen yet, so it asks again until it answers
// (bounded).
const std::string kReachUntilServed =
    "i=0; until curl -sf http://api.backend.radial:8080/; do i=$((i+1)); "
    "[ $i -gt 200 ] && exit 7; sleep 0.1; done";

TEST(EgressEdgesLive, AFrontendTurnsCurlReachesABackendTurnsServiceAndBothJournalIt) {
    Workspaces w;
    test::RadialdSetup s("", workspaces(w.ws, "\"frontend\"", "\"api.backend\""));
    auto backend = serve_backend(s, w, kBackendHttpd);
    EndBackend end_backend{w.backend() + "/done"};
    ASSERT_TRUE(appears(s.state_dir() + "/services/backend/api.sock"))
        << "the backend's broker claimed its service";
    auto front = s.turn({"--workspace", w.frontend(), "--egress", "api.backend.radial:8080",
                         "--turn-id", "frontend-1"},
                        {"sh", "-c", kReachUntilServed});
    end_backend.now();
    const auto back = backend.get();
    EXPECT_EQ(front.result.exit_code, 0) << front.result.err;
    EXPECT_EQ(front.result.out, "hi-from-backend\n");
    EXPECT_EQ(back.result.exit_code, 0) << back.result.err;
    EXPECT_THAT(back.result.out, HasSubstr("backend-done"));

    const auto mine = turn_receipts(s, "frontend-1");
    const auto allowed = std::find_if(mine.begin(), mine.end(),
                                      [](const auto& r) { return r["verdict"] == "allowed"; });
    ASSERT_NE(allowed, mine.end()) << s.records("frontend-1").dump();
    EXPECT_EQ((*allowed)["destination"], "api.backend.radial:8080");
    EXPECT_EQ((*allowed)["address"], "turn backend-1");
    EXPECT_EQ((*allowed)["via"], "handed");
    const auto theirs = turn_receipts(s, "backend-1");
    const auto served = std::find_if(theirs.begin(), theirs.end(), [](const auto& r) {
        return r["kind"] == "SERVED" && r["verdict"] == "allowed";
    });
    ASSERT_NE(served, theirs.end()) << s.records("backend-1").dump();
    EXPECT_EQ((*served)["peer"], "frontend-1");
    EXPECT_EQ((*served)["destination"], "api.backend.radial:8080");
    EXPECT_EQ((*served)["bytesIn"], (*allowed)["bytesIn"]);
    EXPECT_GT((*served)["bytesIn"].get<std::uint64_t>(), 0u);
    EXPECT_FALSE(std::filesystem::exists(s.state_dir() + "/services/backend/api.sock"))
        << "the offer ends with its turn";
}

// The serving turn's end closes a live connection of the peer at once; while it serves, a
// second offer of the same service is refused naming it. The serving box ends first (its
// service's socket closes with it) and its broker is revoked after, so the peer's receipt says
// either; the broker's revocation alone is EgressServiceRendezvousTest's.
TEST(EgressEdgesLive, TheServingTurnsEndClosesThePeersLiveConnection) {
    Workspaces w;
    // Side by side on one workspace: the second offer meets the offer, not the workspace's lock.
    test::RadialdSetup s("sharedWorkspaces = true",
                         workspaces(w.ws, "\"frontend\"", "\"api.backend\""));
    // nc takes one connection and never answers: the peer's request stays open.
    auto backend = serve_backend(s, w,
                                 "nc -l -p 8080 > /work/got & "
                                 "until grep -q GET /work/got 2>/dev/null; do sleep 0.1; done; "
                                 "touch /work/live; while [ ! -e /work/done ]; do sleep 0.1; done");
    EndBackend end_early{w.backend() + "/done"}; // before the frontend's turn starts
    ASSERT_TRUE(appears(s.state_dir() + "/services/backend/api.sock"));
    auto frontend = std::async(std::launch::async, [&] {
        return s.turn({"--workspace", w.frontend(), "--egress", "api.backend.radial:8080",
                       "--turn-id", "frontend-1"},
                      {"sh", "-c",
                       "i=0; until [ $i -gt 200 ]; do curl -sf http://api.backend.radial:8080/; "
                       "rc=$?; [ $rc -ne 56 ] && [ $rc -ne 22 ] && break; i=$((i+1)); "
                       "sleep 0.1; done; echo rc=$rc"});
    });
    EndBackend end_backend{w.backend() + "/done"};
    ASSERT_TRUE(appears(w.backend() + "/live")) << "the peer's request reached the backend";
    auto second = s.turn({"--workspace", w.backend(), "--offer", "api"}, {"true"});
    EXPECT_NE(second.result.exit_code, 0);
    EXPECT_THAT(second.result.err,
                HasSubstr("service 'api' of workspace 'backend' is offered by turn 'backend-1'"));
    end_backend.now();
    const auto back = backend.get();
    const auto front = frontend.get();
    EXPECT_EQ(back.result.exit_code, 0) << back.result.err;
    EXPECT_THAT(front.result.out, HasSubstr("rc=52")) << "curl: the connection ended, no reply";
    const auto mine = turn_receipts(s, "frontend-1");
    const auto cut = std::find_if(mine.begin(), mine.end(),
                                  [](const auto& r) { return r["verdict"] == "allowed"; });
    ASSERT_NE(cut, mine.end()) << s.records("frontend-1").dump();
    EXPECT_THAT((*cut)["reason"].get<std::string>(),
                ::testing::AnyOf("revoked: the serving turn ended", "closed"));
    EXPECT_GT((*cut)["bytesOut"].get<std::uint64_t>(), 0u);
    const auto theirs = turn_receipts(s, "backend-1");
    const auto served = std::find_if(theirs.begin(), theirs.end(), [](const auto& r) {
        return r["kind"] == "SERVED" && r["verdict"] == "allowed";
    });
    ASSERT_NE(served, theirs.end()) << s.records("backend-1").dump();
    EXPECT_EQ((*served)["peer"], "frontend-1");
    EXPECT_EQ((*served)["bytesOut"], (*cut)["bytesOut"]);
}

// A session's turn has its session's workspace as its identity: it reaches what that workspace's
// edges name, through the broker of that turn.
TEST(EgressEdgesLive, ASessionsTurnReachesAServiceAsItsSessionsWorkspace) {
    Workspaces w;
    test::RadialdSetup s("", workspaces(w.ws, "\"frontend\"", "\"api.backend\""));
    auto backend = serve_backend(s, w, kBackendHttpd);
    EndBackend end_backend{w.backend() + "/done"};
    ASSERT_TRUE(appears(s.state_dir() + "/services/backend/api.sock"));
    test::Session session(s, {"--workspace", w.frontend()});
    ASSERT_EQ(session.created.exit_code, 0) << session.created.err;
    auto t = s.turn(
        {"--session", session.id, "--egress", "api.backend.radial:8080", "--turn-id", "frontend-1"},
        {"sh", "-c", kReachUntilServed});
    end_backend.now();
    EXPECT_EQ(backend.get().result.exit_code, 0);
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "hi-from-backend\n");
    const auto theirs = turn_receipts(s, "backend-1");
    EXPECT_TRUE(std::any_of(theirs.begin(), theirs.end(), [](const auto& r) {
        return r["kind"] == "SERVED" && r["verdict"] == "allowed" && r["peer"] == "frontend-1";
    })) << s.records("backend-1").dump();
}

// No edge unless both workspaces approve it: each side alone is refused before any box, naming
// the key that is missing; so is an offer of a service the workspace does not serve.
TEST(EgressEdgesLive, EachSideAloneIsRefusedBeforeAnyBox) {
    Workspaces w;
    const std::vector<std::string> peer{"--workspace", w.frontend(), "--egress",
                                        "api.backend.radial:8080"};
    {
        test::RadialdSetup s("", workspaces(w.ws, "", "\"api.backend\""));
        auto t = s.turn(peer, {"true"});
        EXPECT_NE(t.result.exit_code, 0);
        EXPECT_THAT(t.result.err,
                    HasSubstr("run.workspaces.backend.serve.api.peers does not name 'frontend'"));
    }
    {
        test::RadialdSetup s("", workspaces(w.ws, "\"frontend\"", ""));
        auto t = s.turn(peer, {"true"});
        EXPECT_NE(t.result.exit_code, 0);
        EXPECT_THAT(t.result.err,
                    HasSubstr("run.workspaces.frontend.reach does not name 'api.backend'"));
        auto offer = s.turn({"--workspace", w.frontend(), "--offer", "api"}, {"true"});
        EXPECT_NE(offer.result.exit_code, 0);
        EXPECT_THAT(offer.result.err,
                    HasSubstr("offer 'api': run.workspaces.frontend.serve has no such service"));
    }
}

} // namespace radial::edges_live
