// The turn socket and redaction end to end: a real HTTP client (curl) inside a real box posts to
// the socket radiald bound, over unix and over tcp; the journal holds what was accepted, redacted;
// nothing of a secret reaches the terminal, the journal or the terminal record (docs/design.md
// §10).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

// curl's HTTP status for one POST to the turn socket, whatever the transport.
const std::string kPost = R"(post() { # post TOKEN BODY
  case "$RADIAL_TURN_SOCKET" in
    unix://*) curl -s -o /dev/null -w '%{http_code}\n' --unix-socket "${RADIAL_TURN_SOCKET#unix://}" \
                -H "Authorization: Bearer $1" -H 'Content-Type: application/json' --data-binary "$2" \
                http://radial/v1/records ;;
    tcp://*) curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $1" \
                -H 'Content-Type: application/json' --data-binary "$2" \
                "http://${RADIAL_TURN_SOCKET#tcp://}/v1/records" ;;
  esac
}
)";

std::string all_text(const test::TurnRun& t, const test::RadialdSetup& s) {
    return t.result.out + t.result.err + t.record.dump() + s.records(t.record["turnId"]).dump() +
           test::read_file(s.state_dir() + "/journal.sqlite3");
}

void expect_one_accepted_record(const test::RadialdSetup& s, const test::TurnRun& t) {
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "201\n") << t.result.err;
    auto j = s.records(t.record["turnId"]);
    ASSERT_TRUE(j.is_object());
    ASSERT_EQ(j["records"].size(), 1u) << j.dump();
    EXPECT_EQ(j["records"][0]["seq"], 1);
    EXPECT_EQ(j["records"][0]["type"], "result");
    EXPECT_EQ(j["records"][0]["payload"]["answer"], 42);
    EXPECT_EQ(j["terminal"]["status"], "succeeded");
}

// The turn's record share (run.maxRecordBytesPerTurn, docs/design.md §9.6) counts what is stored:
// a record full of a short secret with a long name is stored several times larger, under its
// markers, and is refused when that passes the share — not admitted at its posted size.
TEST(TurnSocketLive, TheRecordShareCountsTheRecordAsStoredRedacted) {
    test::RadialdSetup s("maxRecordBytesPerTurn = \"64k\"\n");
    const std::string secret = "q7Zk2p";
    const std::string name = "A_SECRET_WITH_A_RATHER_LONG_NAME_FOR_ITS_MARKER";
    // 3000 copies: 18 KB posted, about 150 KB once each is "[REDACTED:<name>]".
    auto t = s.turn({"--secret", name},
                    {"sh", "-c",
                     kPost + R"(v=""; i=0; while [ $i -lt 3000 ]; do v="$v$)" + name +
                         R"("; i=$((i+1)); done
post "$RADIAL_TURN_TOKEN" "{\"type\":\"result\",\"payload\":\"$v\"}")"},
                    {{name, secret}});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "507\n") << "the record passes the share as stored";
    auto j = s.records(t.record["turnId"]);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["records"].size(), 0u) << j.dump().substr(0, 300);
}

TEST(TurnSocketLive, ABoxPostsARecordOverTheUnixSocket) {
    test::RadialdSetup s;
    auto t = s.turn(
        {}, {"sh", "-c",
             kPost + R"(post "$RADIAL_TURN_TOKEN" '{"type":"result","payload":{"answer":42}}')"});
    expect_one_accepted_record(s, t);
    // The socket and its directory are gone with the turn.
    EXPECT_FALSE(
        std::filesystem::exists(s.state_dir() + "/turns/" + t.record["turnId"].get<std::string>()));
}

TEST(TurnSocketLive, ABoxPostsARecordOverTcpOnLoopback) {
    // Host networking on 127.0.0.1: the only networking tests use besides none.
    test::RadialdSetup s("turnTransport = \"tcp\"\nnetwork = \"host\"\n");
    auto t = s.turn(
        {},
        {"sh", "-c", kPost + R"(case "$RADIAL_TURN_SOCKET" in tcp://127.0.0.1:*) ;; *) exit 9;; esac
post "$RADIAL_TURN_TOKEN" '{"type":"result","payload":{"answer":42}}')"});
    expect_one_accepted_record(s, t);
}

// docs/design.md §17, C-13: a local process without the token keeps 12 connections open to the
// turn's tcp port, reopening each as soon as it is dropped, while the box posts 50 records with
// curl. All 50 are journaled; the log and the terminal record count the refused connections.
TEST(TurnSocketLive, C13_ASquatterWithoutTheTokenCannotStarveTheBox) {
    using namespace std::chrono_literals;
    test::RadialdSetup s("turnTransport = \"tcp\"\nnetwork = \"host\"\n");
    test::TempDir ws("radial-c13");
    ::chmod(ws.path().c_str(), 0777); // whatever uid the box runs as writes its port here
    // The box publishes its port, waits for the squatter, posts 50 records, then waits until
    // the test has seen the squatter's connections dropped (each wait bounded).
    const std::string script = R"(port=${RADIAL_TURN_SOCKET##*:}; echo "$port" > /work/port
n=0; while [ ! -e /work/go ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); done
ok=0
for i in $(seq 1 50); do
  c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "Authorization: Bearer $RADIAL_TURN_TOKEN" \
      -H 'Content-Type: application/json' --data-binary "{\"type\":\"result\",\"payload\":{\"i\":$i}}" \
      "http://${RADIAL_TURN_SOCKET#tcp://}/v1/records")
  [ "$c" = 201 ] && ok=$((ok+1))
done
echo "accepted=$ok"; touch /work/posted
n=0; while [ ! -e /work/stop ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); done)";
    test::TurnRun t;
    std::thread turn([&] {
        t = s.turn({"--workspace", ws.path(), "--timeout", "90s"}, {"sh", "-c", script});
    });

    auto wait_for = [](auto done, std::chrono::milliseconds budget) {
        const auto deadline = std::chrono::steady_clock::now() + budget;
        while (!done() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(20ms);
        return done();
    };
    const bool published = wait_for([&] { return !test::read_file(ws / "port").empty(); }, 60s);
    const int port = published ? std::atoi(test::read_file(ws / "port").c_str()) : 0;
    std::atomic<bool> stop{false};
    std::atomic<int> reopened{0};
    std::thread squatter([&] {
        if (port <= 0) return;
        auto open = [port] {
            int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_in addr{};
            addr.sin_family = AF_INET;
            addr.sin_port = htons(static_cast<std::uint16_t>(port));
            addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
                ::close(fd);
                fd = -1;
            }
            return fd;
        };
        std::vector<int> held(12, -1);
        while (!stop) {
            for (int& fd : held) {
                char c;
                const bool open_now =
                    fd >= 0 && ::recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK) < 0 && errno == EAGAIN;
                if (open_now) continue;
                if (fd >= 0) ::close(fd);
                fd = open();
                ++reopened;
            }
            std::this_thread::sleep_for(5ms);
        }
        for (int fd : held)
            if (fd >= 0) ::close(fd);
    });
    // The squatter holds its 12 before the box starts posting.
    wait_for([&] { return reopened >= 12; }, 10s);
    ws.write("go", "");
    wait_for([&] { return std::filesystem::exists(ws / "posted"); }, 60s);
    // Keep the turn (and the squatter) up until its connections have run into the token
    // deadline at least once.
    EXPECT_TRUE(wait_for([&] { return reopened >= 24; }, 10s)) << "reopened " << reopened;
    ws.write("stop", "");
    turn.join();
    stop = true;
    squatter.join();

    ASSERT_TRUE(published) << t.result.err;
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_THAT(t.result.out, HasSubstr("accepted=50"));
    auto j = s.records(t.record["turnId"]);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["records"].size(), 50u);
    ASSERT_TRUE(t.record.contains("connectionsRefused")) << t.record.dump();
    EXPECT_GE(t.record["connectionsRefused"].get<int>(), 12);
    EXPECT_THAT(t.result.err, ::testing::ContainsRegex(
                                  "[0-9]+ connections refused/evicted in the last [0-9]+ s"));
}

TEST(TurnSocketLive, RejectedRequestsReachNothing) {
    test::RadialdSetup s;
    auto t = s.turn({}, {"sh", "-c", kPost + R"(
post wrong-token '{"type":"result","payload":1}'
post '' '{"type":"result","payload":1}'
post "$RADIAL_TURN_TOKEN" '{"type":"other","payload":1}'
{ printf '{"type":"result","payload":"'; head -c 2000000 /dev/zero | tr '\0' a; printf '"}'; } > /tmp/big
post "$RADIAL_TURN_TOKEN" @/tmp/big
post "$RADIAL_TURN_TOKEN" '{"type":"result",'
post "$RADIAL_TURN_TOKEN" '{"type":"result"}'
)"});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "401\n401\n403\n413\n400\n400\n");
    auto j = s.records(t.record["turnId"]);
    EXPECT_TRUE(j["records"].empty()) << j.dump();
}

TEST(TurnSocketLive, TheRecordTypeFlagSetsTheOnlyTypeAccepted) {
    test::RadialdSetup s;
    auto t = s.turn({"--record-type", "review"}, {"sh", "-c", kPost + R"(
post "$RADIAL_TURN_TOKEN" '{"type":"result","payload":1}'
post "$RADIAL_TURN_TOKEN" '{"type":"review","payload":{"answer":42}}')"});
    EXPECT_EQ(t.result.out, "403\n201\n");
    auto j = s.records(t.record["turnId"]);
    ASSERT_EQ(j["records"].size(), 1u);
    EXPECT_EQ(j["records"][0]["type"], "review");
}

TEST(TurnSocketLive, TurnsListsTheTurnWithItsStatus) {
    test::RadialdSetup s;
    auto t = s.turn({"--turn-id", "listed-1"}, {"sh", "-c", "exit 4"});
    auto r = test::run_process({RADIALD_PATH, "turns", "--config", s.config()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, ::testing::ContainsRegex("listed-1 +turn +finished +failed +0 "));
}

// docs/design.md §10.2: a secret printed in pieces with pauses, base64-encoded and inside a JSON
// string, and posted as a record, is masked everywhere the host emits or stores.
TEST(RedactionLive, ASecretInPiecesEncodedAndPostedIsMaskedEverywhere) {
    test::RadialdSetup s;
    const std::string key = std::string("sk-ab") + "cdef0123456789XYZ";
    auto t = s.turn({"--secret", "MODEL_KEY"}, {"sh", "-c", kPost + R"(
printf 'key=%.5s' "$MODEL_KEY"; sleep 1; printf '%s\n' "${MODEL_KEY#?????}"
printf '%s' "$MODEL_KEY" | base64
printf 'x%s' "$MODEL_KEY" | base64
printf 'xy%s' "$MODEL_KEY" | base64
printf '{"k":"%s"}\n' "$MODEL_KEY" >&2
post "$RADIAL_TURN_TOKEN" "{\"type\":\"result\",\"payload\":{\"leak\":\"$MODEL_KEY\"}}" >/dev/null
)"},
                    {{"MODEL_KEY", key}});
    ASSERT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_THAT(t.result.out, HasSubstr("key=[REDACTED:MODEL_KEY]\n"));
    EXPECT_THAT(t.result.err, HasSubstr("{\"k\":\"[REDACTED:MODEL_KEY]\"}"));
    auto everything = all_text(t, s);
    EXPECT_THAT(everything, Not(HasSubstr(key)));
    for (const char* encoded : {"c2stYWJjZGVmMDEyMzQ1Njc4OVhZWg", "eHNrLWFiY2RlZjAxMjM0NTY3ODlYWV",
                                "eHlzay1hYmNkZWYwMTIzNDU2Nzg5WFla"})
        EXPECT_THAT(everything, Not(HasSubstr(std::string(encoded).substr(4, 20)))) << encoded;
    auto j = s.records(t.record["turnId"]);
    ASSERT_EQ(j["records"].size(), 1u);
    EXPECT_EQ(j["records"][0]["payload"]["leak"], "[REDACTED:MODEL_KEY]");
}

// C-01: a secret split across two writes is emitted as one marker, and nothing of it early.
TEST(RedactionLive, C01_SecretSplitAcrossTwoWrites) {
    test::RadialdSetup s;
    auto t = s.turn(
        {"--secret", "API_KEY", "--secret", "SHORT"},
        {"sh", "-c",
         "s=$API_KEY; printf 'tok=%.6s' \"$s\"; sleep 1; printf '%s end\\n' \"${s#??????}\""},
        {{"API_KEY", "Zq8-wX41-pL0k"}, {"SHORT", "Zq8-wX41"}});
    EXPECT_EQ(t.result.exit_code, 0) << t.result.err;
    EXPECT_EQ(t.result.out, "tok=[REDACTED:API_KEY] end\n");
    auto flushed = s.turn({"--secret", "API_KEY"}, {"sh", "-c", "printf 'Zq8-'"},
                          {{"API_KEY", "Zq8-wX41-pL0k"}});
    EXPECT_EQ(flushed.result.out, "Zq8-");
}

TEST(RedactionLive, ATooShortSecretIsRefusedWithoutItsValue) {
    test::RadialdSetup s;
    auto t = s.turn({"--secret", "TINY"}, {"true"}, {{"TINY", "abc"}});
    EXPECT_EQ(t.result.exit_code, 125);
    EXPECT_THAT(t.result.err, HasSubstr("TINY"));
    EXPECT_THAT(t.result.err, Not(HasSubstr("abc")));
}

// C-10: a state directory whose natural socket path would exceed sun_path fails the turn before
// its box starts, with a message naming the limit; nothing is bound at a truncated path.
TEST(TurnSocketLive, C10_ALongStateDirectoryFailsBeforeTheBoxStarts) {
    test::TempDir base("radial-c10");
    std::string state = base.path() + "/" + std::string(90, 'a');
    test::RadialdSetup s("", "");
    auto cfg = s.dir().write("long.toml", "[run]\nstateDir = \"" + state + "\"\n");
    auto r = test::run_process({RADIALD_PATH, "turn", "--config", cfg, "--image", RADIAL_TEST_IMAGE,
                                "--record-file", s.dir() / "c10.json", "--turn-id", "c10", "--",
                                "sh", "-c", "echo box-ran"});
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.out, Not(HasSubstr("box-ran")));
    EXPECT_THAT(r.err, HasSubstr("107"));
    auto rec = nlohmann::json::parse(test::read_file(s.dir() / "c10.json"));
    EXPECT_EQ(rec["status"], "error");
    EXPECT_THAT(rec["error"].get<std::string>(), HasSubstr("107"));
    auto ps = test::run_process({"docker", "ps", "-aq", "--filter",
                                 "label=radial.label=" + rec["label"].get<std::string>()});
    EXPECT_EQ(ps.out, "");
}

} // namespace
} // namespace radial
