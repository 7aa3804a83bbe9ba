// Brokered egress end to end (docs/design.md §9.7): the real radiald, the docker runtime, a box
// with no network whose curl reaches servers this test starts on 127.0.0.0/8 through radiald's
// broker and radial-init's loopback endpoint, with run.egress.hosts standing in for DNS. LIVE:
// needs dockerd and the test_image fixture. No packet leaves the machine.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "../../support/loopback_http_server.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "session_fixture.h"

namespace radial {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string egress_table(const std::string& port) {
    return "[run.egress]\nallow = [\"pkg.test:" + port + "\", \"inside.test:" + port +
           "\"]\nallowRanges = [\"127.0.0.2/32\"]\n"
           "hosts = { \"pkg.test\" = \"127.0.0.2\", \"inside.test\" = \"127.0.0.3\", "
           "\"other.test\" = \"127.0.0.2\" }\n";
}

std::vector<nlohmann::json> receipts(const test::RadialdSetup& s, const nlohmann::json& record) {
    std::vector<nlohmann::json> out;
    const auto j = s.records(record["turnId"].get<std::string>());
    if (j.is_null()) return out;
    for (const auto& r : j["records"])
        if (r["type"] == "radial.egress") out.push_back(r["payload"]);
    return out;
}

const std::string kHello = "HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n";

TEST(EgressLive, ANamedDestinationIsReachedByOrdinaryCurlAndNothingElseIs) {
    test::LoopbackHttpServer up_("127.0.0.2", kHello);
    const std::string port = std::to_string(up_.port());
    test::RadialdSetup s("", egress_table(port));
    const std::string url = "http://pkg.test:" + port + "/simple";
    auto t = s.turn({"--egress", "pkg.test:" + port, "--egress", "inside.test:" + port},
                    {"sh", "-c",
                     "curl -s " + url + "; curl -sp " + url +
                         "; curl -s -o /dev/null -w '%{http_code}\\n' http://other.test:" + port +
                         "/; curl -s -o /dev/null -w '%{http_code}\\n' "
                         "http://inside.test:" +
                         port +
                         "/; curl -s -o /dev/null -w "
                         "'%{http_code}\\n' http://127.0.0.2:" +
                         port + "/"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "hello\n403\n403\n403\n")
        << "plain HTTP goes through; a tunnel carrying plain HTTP (whose Host the broker would "
           "not see), another name, a name resolving to a denied range and an IP literal do not";
    EXPECT_EQ(up_.requests(), 1);
    // Each receipt is journaled when its connection ends, on that connection's thread, so two
    // that end close together (a refusal answered, the next request already made) may be
    // journaled in either order: they are found by what they say, not by place.
    const auto rs = receipts(s, t.record);
    ASSERT_EQ(rs.size(), 5u) << s.records(t.record["turnId"]).dump();
    auto one = [&](const std::function<bool(const nlohmann::json&)>& is) {
        const auto n = std::count_if(rs.begin(), rs.end(), is);
        EXPECT_EQ(n, 1) << s.records(t.record["turnId"]).dump();
        const auto it = std::find_if(rs.begin(), rs.end(), is);
        return it == rs.end() ? nlohmann::json::object() : *it;
    };
    auto says = [](const nlohmann::json& r, const char* text) {
        return r.value("reason", "").find(text) != std::string::npos;
    };
    const auto allowed = one([](const auto& r) { return r["verdict"] == "allowed"; });
    EXPECT_EQ(allowed["via"], "handed") << "radial-init hands runc's box connection over";
    EXPECT_EQ(allowed["address"], "127.0.0.2:" + port);
    EXPECT_GT(allowed.value("bytesIn", std::uint64_t{0}), 0u);
    const auto tunnel = one([](const auto& r) { return r["kind"] == "CONNECT"; });
    EXPECT_EQ(tunnel["verdict"], "refused");
    EXPECT_TRUE(says(tunnel, "does not start with TLS")) << tunnel.dump();
    EXPECT_EQ(std::count_if(rs.begin(), rs.end(),
                            [](const auto& r) { return r["verdict"] == "refused"; }),
              4);
    one([&](const auto& r) { return says(r, "127.0.0.3"); });
    one([&](const auto& r) { return says(r, "an IP literal (127.0.0.2)"); });
}

// Under gVisor too: the box's loopback endpoint and the unix socket mount work in runsc.
TEST(EgressLive, UnderGvisorANamedDestinationIsReached) {
    auto engine = test::run_process({"docker", "info", "--format", "{{json .Runtimes}}"});
    ASSERT_NE(engine.out.find("runsc"), std::string::npos)
        << "the engine does not list runsc; scripts/setup.sh --with-gvisor registers it";
    test::LoopbackHttpServer up_("127.0.0.2", kHello);
    const std::string port = std::to_string(up_.port());
    test::RadialdSetup s("", egress_table(port) + "[run.docker]\nociRuntime = \"runsc\"\n");
    auto t = s.turn({"--egress", "pkg.test:" + port},
                    {"sh", "-c", "curl -s http://pkg.test:" + port + "/"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "hello\n");
    EXPECT_EQ(up_.requests(), 1);
    const auto rs = receipts(s, t.record);
    ASSERT_EQ(rs.size(), 1u);
    EXPECT_EQ(rs[0]["via"], "relayed") << "gVisor's sockets cannot be handed to the host";
}

// A session's turns each get their own broker (and each exec its own endpoint), turn after turn;
// each turn's step of the session's manifest, which names its snapshots, says what it could reach
// (docs/design.md §13.12).
TEST(EgressLive, EachTurnOfASessionGetsItsOwnBroker) {
    test::LoopbackHttpServer up_("127.0.0.2", kHello);
    const std::string port = std::to_string(up_.port());
    test::RadialdSetup s("", egress_table(port));
    test::Session session(s, {});
    ASSERT_EQ(session.created.exit_code, 0) << session.created.err;
    for (int i = 0; i < 3; ++i) {
        auto t = s.turn({"--session", session.id, "--egress", "pkg.test:" + port},
                        {"sh", "-c", "curl -s http://pkg.test:" + port + "/"});
        EXPECT_EQ(t.result.exit_code, 0) << i << ": " << t.result.err;
        EXPECT_EQ(t.result.out, "hello\n") << i;
        EXPECT_EQ(receipts(s, t.record).size(), 1u) << i;
    }
    auto without =
        s.turn({"--session", session.id}, {"sh", "-c",
                                           "echo \"[$HTTP_PROXY]\"; curl -s --max-time 5 "
                                           "http://127.0.0.2:" +
                                               port + "/; echo rc=$?"});
    EXPECT_THAT(without.result.out, ::testing::StartsWith("[]\n"));
    EXPECT_EQ(up_.requests(), 3) << "a turn without egress reached nothing";
    const auto rec =
        nlohmann::json::parse(test::read_file(s.state_dir() + "/sessions/" + session.id + ".json"));
    const auto& manifest = rec.at("manifest");
    ASSERT_EQ(manifest.size(), 4u) << rec.dump();
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(manifest[i].value("egress", nlohmann::json::array()).size(), 2u) << rec.dump();
        EXPECT_EQ(manifest[i]["egress"][0], "pkg.test:" + port);
        EXPECT_THAT(manifest[i]["egress"][1].get<std::string>(),
                    ::testing::StartsWith("ceiling sha256:"));
    }
    EXPECT_FALSE(manifest[3].contains("egress")) << rec.dump();
}

TEST(EgressLive, WithoutEgressTheBoxHasNoRouteOut) {
    test::LoopbackHttpServer up_("127.0.0.2", kHello);
    const std::string port = std::to_string(up_.port());
    test::RadialdSetup s("", egress_table(port));
    auto t = s.turn({}, {"sh", "-c",
                         "echo \"[$HTTP_PROXY]\"; curl -s --max-time 5 http://127.0.0.2:" + port +
                             "/; echo rc=$?"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_THAT(t.result.out, ::testing::StartsWith("[]\n"));
    EXPECT_THAT(t.result.out, ::testing::Not(HasSubstr("hello")));
    EXPECT_EQ(up_.requests(), 0);
}

// The broker folds the case of the names the box asks for (URL host, CONNECT target, Host
// header); a mixed-case secret the box spells into one (curl https://$TOKEN.example) reaches the
// receipts folded, and is masked there as the value is (Form::cased, docs/design.md §9.7).
TEST(EgressLive, ASecretTheBoxSpellsIntoAHostNameIsMaskedInItsReceiptsFolded) {
    test::LoopbackHttpServer up_("127.0.0.2", kHello);
    const std::string port = std::to_string(up_.port());
    test::RadialdSetup s("", egress_table(port));
    const std::string secret = "Zq8wX41pL0kSECRETvalue77";
    auto t = s.turn(
        {"--egress", "pkg.test:" + port, "--secret", "EG_SECRET"},
        {"sh", "-c",
         "curl -s -o /dev/null http://$EG_SECRET.pkg.test:" + port +
             "/; curl -s -o /dev/null -H \"Host: $EG_SECRET\" http://pkg.test:" + port +
             "/; curl -sp -o /dev/null https://$EG_SECRET.pkg.test:" + port + "/; echo done"},
        {{"EG_SECRET", secret}});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "done\n") << t.result.err;
    const auto rs = receipts(s, t.record);
    ASSERT_EQ(rs.size(), 3u) << s.records(t.record["turnId"]).dump();
    std::string folded = secret;
    for (char& c : folded) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& r : rs) {
        EXPECT_EQ(r["verdict"], "refused") << r.dump();
        EXPECT_THAT(r.dump(), ::testing::Not(HasSubstr(folded))) << r.dump();
        EXPECT_THAT(r.dump(), HasSubstr("[REDACTED:EG_SECRET]")) << r.dump();
    }
}

// A receipt quotes what the box sent cut (at a query, a fragment, user information, a length)
// and with each byte outside printable ASCII as '?': no part of a secret reaches it whichever of
// those bytes the secret holds — a '#' or '?' (its start, before the cut), an '@' (its end, after
// the user information), non-ASCII letters or a tab (Form::shown) (docs/design.md §9.7).
TEST(EgressLive, NoPartOfASecretReachesAReceiptWhereverTheBrokerCutsOrReplaces) {
    test::LoopbackHttpServer up_("127.0.0.2", kHello);
    const std::string port = std::to_string(up_.port());
    test::RadialdSetup s("", egress_table(port));
    const std::vector<std::pair<std::string, std::string>> secrets = {
        {"EG_HASH", "Pa55w0rdXy7Qz9#kLmN"},
        {"EG_QUERY", "tok3nValue9?a=bcdefg"},
        {"EG_AT", "adm1nPassw0rd@corpvault"},
        {"EG_UML", "p\xc3\xa4ssw\xc3\xb6rd-geheim\t99"}};
    std::vector<std::string> flags = {"--egress", "pkg.test:" + port};
    for (const auto& [name, _] : secrets) flags.insert(flags.end(), {"--secret", name});
    auto t = s.turn(flags,
                    {"sh", "-c",
                     "r() { printf '%s\\r\\n\\r\\n' \"$1\" | nc 127.0.0.1 3128 >/dev/null; }; "
                     "r \"GET /$EG_HASH HTTP/1.1\"; r \"GET /$EG_QUERY HTTP/1.1\"; "
                     "r \"CONNECT $EG_AT:443 HTTP/1.1\"; r \"GET ftp://$EG_AT/ HTTP/1.1\"; "
                     "r \"GET /$EG_UML HTTP/1.1\"; "
                     "r \"GET http://pkg.test:" +
                         port + "/ HTTP/1.1\r\nHost: $EG_UML.test\"; echo done"},
                    {secrets.begin(), secrets.end()});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "done\n") << t.result.err;
    const auto rs = receipts(s, t.record);
    ASSERT_EQ(rs.size(), 6u) << s.records(t.record["turnId"]).dump();
    // The longest stretch of each secret's bytes that may show is shorter than any word of it
    // kept by a cut: its first 6 bytes, its last 6 — as the value is and as the broker shows it.
    for (const auto& r : rs) {
        EXPECT_EQ(r["verdict"], "refused") << r.dump();
        const std::string text =
            r["destination"].get<std::string>() + " " + r["reason"].get<std::string>();
        for (const auto& [name, value] : secrets) {
            std::string shown = value;
            for (char& c : shown)
                if (const auto u = static_cast<unsigned char>(c); u < 0x20 || u > 0x7e) c = '?';
            for (const std::string& v : {value, shown}) {
                EXPECT_THAT(text, ::testing::Not(HasSubstr(v.substr(0, 6))))
                    << name << ": " << text;
                EXPECT_THAT(text, ::testing::Not(HasSubstr(v.substr(v.size() - 6))))
                    << name << ": " << text;
            }
        }
    }
}

TEST(EgressLive, ADestinationOutsideTheCeilingIsRefusedBeforeAnyBox) {
    test::LoopbackHttpServer up_("127.0.0.2", kHello);
    const std::string port = std::to_string(up_.port());
    test::RadialdSetup s("", egress_table(port));
    auto t = s.turn({"--egress", "pypi.org:443"}, {"true"});
    EXPECT_EQ(t.result.exit_code, 125);
    EXPECT_THAT(t.result.err, HasSubstr("egress 'pypi.org:443' is outside what run.egress.allow"));
}

TEST(EgressLive, TheTurnsEndClosesALongLivedConnection) {
    test::LoopbackHttpServer up_("127.0.0.2", "HTTP/1.0 200 OK\r\n\r\nstreaming\n", true);
    const std::string port = std::to_string(up_.port());
    test::RadialdSetup s("", egress_table(port));
    auto t = s.turn({"--egress", "pkg.test:" + port, "--timeout", "3s"},
                    {"sh", "-c", "curl -sN http://pkg.test:" + port + "/stream; sleep 600"});
    EXPECT_EQ(t.record["status"], "timed_out") << t.result.err;
    EXPECT_TRUE(up_.peer_closed_within(30s)) << "the broker closed the destination's side";
    const auto rs = receipts(s, t.record);
    ASSERT_EQ(rs.size(), 1u);
    EXPECT_EQ(rs[0]["verdict"], "allowed");
    // The connection was journaled when it opened too (radial.egress.open), before its receipt:
    // what survives a radiald killed while it was open.
    const auto j = s.records(t.record["turnId"]);
    std::vector<std::string> types;
    for (const auto& r : j["records"]) types.push_back(r["type"]);
    EXPECT_EQ(types, (std::vector<std::string>{"radial.egress.open", "radial.egress"}));
}

// A connection beyond run.egress.maxConnections is refused by the broker before radial-init's
// hand-over is read: the box's client still gets the broker's whole 503, first byte included.
TEST(EgressLive, AConnectionBeyondTheCapGetsTheBrokersWhole503) {
    test::LoopbackHttpServer held("127.0.0.2", "HTTP/1.0 200 OK\r\n\r\nstreaming\n", true);
    const std::string port = std::to_string(held.port());
    test::RadialdSetup s("", egress_table(port) + "maxConnections = 1\n");
    const std::string url = "http://pkg.test:" + port;
    auto t = s.turn({"--egress", "pkg.test:" + port},
                    {"sh", "-c",
                     "curl -sN " + url +
                         "/stream > /tmp/held & "
                         "until grep -q streaming /tmp/held; do sleep 0.1; done; "
                         "curl -s -D - -o /dev/null " +
                         url + "/second | head -n 1; kill $!"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_THAT(t.result.out, HasSubstr("HTTP/1.1 503 Service Unavailable")) << t.result.err;
    const auto rs = receipts(s, t.record);
    ASSERT_EQ(rs.size(), 2u) << s.records(t.record["turnId"]).dump();
    int refused = 0;
    for (const auto& r : rs)
        if (r["verdict"] == "refused") {
            ++refused;
            EXPECT_THAT(r["reason"].get<std::string>(), HasSubstr("run.egress.maxConnections"));
        }
    EXPECT_EQ(refused, 1);
}

// `radiald policy` while turns run (docs/design.md §9.7): a deny for every turn closes a running
// turn's open connection at once and refuses its next request; a turn naming a denied
// destination is refused before its box; lifting the deny lets the next turn through; and a
// destination added for one running turn (within the ceiling) is reached by it.
TEST(EgressLive, RadialdPolicyChangesWhatARunningTurnReaches) {
    test::LoopbackHttpServer held("127.0.0.2", "HTTP/1.0 200 OK\r\n\r\nstreaming\n", true);
    test::LoopbackHttpServer up_("127.0.0.2", kHello);
    const std::string hp = std::to_string(held.port()), port = std::to_string(up_.port());
    test::RadialdSetup s("", "[run.egress]\nallow = [\"pkg.test:" + port +
                                 "\", \"stream.test:" + hp + "\", \"late.test:" + port +
                                 "\"]\nallowRanges = [\"127.0.0.2/32\"]\nhosts = { \"pkg.test\" = "
                                 "\"127.0.0.2\", \"stream.test\" = \"127.0.0.2\", \"late.test\" "
                                 "= \"127.0.0.2\" }\n");
    auto policy = [&](std::vector<std::string> args) {
        args.insert(args.begin(), {RADIALD_PATH, "policy"});
        args.insert(args.begin() + 3, {"--config", s.config()});
        return test::run_process(args);
    };
    const std::string url = "http://pkg.test:" + port + "/";
    test::TurnRun t;
    std::thread turn([&] {
        t = s.turn({"--egress", "pkg.test:" + port, "--egress", "stream.test:" + hp, "--egress",
                    "late.test:" + port, "--timeout", "120s"},
                   {"sh", "-c",
                    "curl -sN http://stream.test:" + hp + "/ >/dev/null & curl -s " + url +
                        "; for i in $(seq 600); do c=$(curl -s -o /dev/null -w '%{http_code}' " +
                        url + "); [ \"$c\" = 403 ] && { echo denied; break; }; sleep 0.1; done"});
    });
    // Both connections are open once each server has its request.
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while ((held.requests() < 1 || up_.requests() < 1) &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(50ms);
    ASSERT_GE(held.requests(), 1);
    auto denied = policy({"deny", "stream.test:" + hp, "pkg.test:" + port});
    EXPECT_EQ(denied.exit_code, 0) << denied.err;
    EXPECT_TRUE(held.peer_closed_within(30s)) << "the open connection was closed at once";
    turn.join();
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "hello\ndenied\n");
    const auto rs = receipts(s, t.record);
    bool revoked = false, refused = false;
    for (const auto& r : rs) {
        const auto why = r["reason"].get<std::string>();
        revoked |= why.find("revoked by radiald policy: stream.test:" + hp) != std::string::npos;
        refused |= why.find("denied by the operator") != std::string::npos;
    }
    EXPECT_TRUE(revoked && refused) << s.records(t.record["turnId"]).dump();

    auto ls = policy({"ls", "--json"});
    EXPECT_EQ(ls.exit_code, 0) << ls.err;
    EXPECT_THAT(ls.out, HasSubstr("\"pkg.test:" + port + "\""));
    auto before = s.turn({"--egress", "pkg.test:" + port}, {"true"});
    EXPECT_NE(before.result.exit_code, 0);
    EXPECT_THAT(before.result.err, HasSubstr("denied to every turn by the operator"));
    EXPECT_EQ(policy({"allow", "pkg.test:" + port}).exit_code, 0);
    auto after = s.turn({"--egress", "pkg.test:" + port}, {"curl", "-s", url});
    EXPECT_EQ(after.result.out, "hello\n") << after.result.err;

    // Added for one running turn: it polls late.test until it answers.
    std::thread late([&] {
        t = s.turn({"--egress", "pkg.test:" + port, "--timeout", "120s"},
                   {"sh", "-c",
                    "for i in $(seq 600); do curl -sf http://late.test:" + port +
                        "/ && break; sleep 0.1; done"});
    });
    // The id of the turn running now (the one started last), once `radiald turns` lists it.
    const auto started_turn = [&](std::chrono::steady_clock::time_point until) {
        std::string found;
        while (found.empty() && std::chrono::steady_clock::now() < until) {
            auto turns =
                test::run_process({RADIALD_PATH, "turns", "--config", s.config(), "--json"});
            std::istringstream lines(turns.out);
            for (std::string line; std::getline(lines, line);) {
                const auto j = nlohmann::json::parse(line, nullptr, false);
                if (j.is_object() && j.value("state", "") == "started")
                    found = j.value("turnId", "");
            }
            if (found.empty()) std::this_thread::sleep_for(100ms);
        }
        return found;
    };
    const std::string id = started_turn(deadline + 60s);
    ASSERT_FALSE(id.empty());
    auto outside = policy({"allow", "--turn", id, "elsewhere.test:443"});
    EXPECT_NE(outside.exit_code, 0);
    EXPECT_THAT(outside.err, HasSubstr("run.egress.allow"));
    // The turn's broker keeps the ceiling its turn started with: one widened in the file since
    // bounds nothing that runs, and an addition within the new one only was said to be made.
    const std::string started_with = test::read_file(s.config());
    {
        std::string widened = started_with;
        const std::string last = "\"late.test:" + port + "\"]";
        ASSERT_NE(widened.find(last), std::string::npos) << widened;
        widened.replace(widened.find(last), last.size(),
                        "\"late.test:" + port + "\", \"new.test:" + port + "\"]");
        std::ofstream(s.config(), std::ios::trunc) << widened;
    }
    auto beyond = policy({"allow", "--turn", id, "new.test:" + port});
    EXPECT_NE(beyond.exit_code, 0) << "said to be added: " << beyond.out;
    EXPECT_THAT(beyond.err, HasSubstr("the ceiling turn " + id + " started with"));
    auto kept = policy({"ls"});
    EXPECT_THAT(kept.out,
                HasSubstr("turn " + id + ": its broker keeps the ceiling it started with"))
        << kept.out;
    std::ofstream(s.config(), std::ios::trunc) << started_with;
    auto added = policy({"allow", "--turn", id, "late.test:" + port});
    EXPECT_EQ(added.exit_code, 0) << added.err;
    late.join();
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "hello\n");
    EXPECT_FALSE(std::filesystem::exists(s.state_dir() + "/egress-brokers/" + id + ".json"))
        << "an ended turn's broker left its ceiling";

    // A running turn without egress has no broker: an addition to it is kept (a broker not yet
    // started would apply it) and said to reach nothing now, not "may now reach".
    test::TempDir ws("radial-policy-ws");
    ASSERT_EQ(::chmod(ws.path().c_str(), 0755), 0); // root's: the box only looks into it
    std::thread plain([&] {
        t = s.turn({"--workspace", ws.path(), "--timeout", "120s"},
                   {"sh", "-c",
                    "for i in $(seq 1200); do [ -e /work/stop ] && break; sleep 0.1; "
                    "done"});
    });
    const std::string plain_id = started_turn(deadline + 120s);
    EXPECT_FALSE(plain_id.empty());
    if (!plain_id.empty()) {
        auto nothing = policy({"allow", "--turn", plain_id, "late.test:" + port});
        EXPECT_EQ(nothing.exit_code, 0) << nothing.err;
        EXPECT_THAT(nothing.out, HasSubstr("kept for its egress broker, which does not run now"));
        EXPECT_THAT(nothing.out, Not(HasSubstr("may now reach")));
    }
    std::ofstream(ws / "stop") << "";
    plain.join();
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;

    // Denying again what is denied changes nothing, and logs nothing.
    EXPECT_EQ(policy({"deny", "stream.test:" + hp}).exit_code, 0);
    // Each change made, and only those, has its line in the policy's log: when, who, what.
    std::vector<nlohmann::json> events;
    std::istringstream log(test::read_file(s.state_dir() + "/egress-policy-events.jsonl"));
    for (std::string line; std::getline(log, line);) events.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(events.size(), 4u);
    EXPECT_EQ(events[0]["change"], "deny");
    EXPECT_EQ(events[0]["rules"], nlohmann::json::array({"stream.test:" + hp, "pkg.test:" + port}));
    EXPECT_TRUE(events[0]["turn"].is_null());
    EXPECT_EQ(events[0]["uid"], ::getuid());
    EXPECT_EQ(events[1]["change"], "allow");
    EXPECT_EQ(events[1]["rules"], nlohmann::json::array({"pkg.test:" + port}));
    EXPECT_EQ(events[2]["change"], "allow");
    EXPECT_EQ(events[2]["turn"], id);
    EXPECT_EQ(events[3]["turn"], plain_id);
    for (const auto& e : events) EXPECT_TRUE(e["at"].is_string()) << e;
}

} // namespace
} // namespace radial
