// tests/host/socket/turn_socket_server_test.cpp — the turn socket over real sockets, spoken to by
// the real curl binary and by raw POSIX clients for the slow and misbehaving cases (docs/design.md
// §9.1-§9.6; docs/design.md §17, C-10).
#include "socket/turn_socket_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <radial/internal/unique_fd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../../support/box_descriptor_attacks.h"
#include "../../support/host_processes.h"
#include "../../support/process_runner.h"
#include "../../support/socket_owner.h"
#include "../../support/temp_dir.h"
#include "socket/turn_token.h"
#include "time/clock.h"

namespace radial::socket {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using nlohmann::json;
using radial::test::TempDir;

constexpr uid_t kBoxUid = 12345;
constexpr gid_t kBoxGid = 12345;
constexpr uid_t kOtherUid = 12346;
const std::string kRecordType = "turn.result";

internal::UniqueFd connect_unix(const std::string& path) {
    internal::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        throw std::runtime_error("connecting to '" + path + "': " + std::strerror(errno));
    return fd;
}

void send_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n <= 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
}

// Sends what it can of `bytes` to a peer that may close at any moment: false once it has (EPIPE or
// ECONNRESET), so a test that trickles bytes races nothing.
bool send_unless_closed(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) return false;
        if (n <= 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

// Reads until the peer closes or `budget` runs out. `closed` tells which happened.
std::string read_until_closed(int fd, std::chrono::milliseconds budget, bool& closed) {
    std::string got;
    const auto deadline = Clock::now() + budget;
    closed = false;
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) return got;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
        char buf[4096];
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
            closed = true;
            return got;
        }
        got.append(buf, static_cast<std::size_t>(n));
    }
}

// True when the peer has not closed `fd` (nothing to read, no EOF).
bool still_open(int fd) {
    char c;
    const ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// Records what the server hands to its sink (called on the serving thread).
struct RecordingSink {
    std::mutex mutex;
    std::vector<std::pair<std::string, std::string>> records;

    RecordSink sink() {
        return [this](std::string_view type, std::string_view payload) -> std::uint64_t {
            std::lock_guard lock(mutex);
            records.emplace_back(type, payload);
            return records.size();
        };
    }
    std::size_t count() {
        std::lock_guard lock(mutex);
        return records.size();
    }
};

// Captures log lines (called on the serving thread).
struct LogCapture {
    std::mutex mutex;
    std::vector<std::string> lines;

    std::function<void(std::string_view)> fn() {
        return [this](std::string_view line) {
            std::lock_guard lock(mutex);
            lines.emplace_back(line);
        };
    }
    std::vector<std::string> snapshot() {
        std::lock_guard lock(mutex);
        return lines;
    }
};

struct HttpReply {
    int curl_exit = -1;
    int status = 0;
    std::string headers;
    std::string body;
};

// Runs the real curl. `target` is the URL (for unix sockets the host part is ignored);
// `prefix` runs it through another program (setpriv, to change uid).
HttpReply curl(const std::vector<std::string>& args, const std::string& target,
               const std::vector<std::string>& prefix = {}) {
    std::vector<std::string> argv = prefix;
    for (const char* a :
         {"curl", "-sS", "-i", "--noproxy", "*", "--max-time", "10", "-w", "\n%{http_code}"})
        argv.push_back(a);
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(target);
    const auto r = radial::test::run_process(argv, {}, std::chrono::seconds(15));
    HttpReply reply;
    reply.curl_exit = r.exit_code;
    const auto last_nl = r.out.rfind('\n');
    if (last_nl == std::string::npos) return reply;
    reply.status = std::atoi(r.out.c_str() + last_nl + 1);
    const std::string message = r.out.substr(0, last_nl);
    // With -i a 100 Continue may precede the final response; the last header block wins.
    const auto split = message.rfind("\r\n\r\n");
    if (split == std::string::npos) return reply;
    reply.headers = message.substr(0, split);
    reply.body = message.substr(split + 4);
    return reply;
}

std::vector<std::string> post_args(const std::string& token, const std::string& body) {
    std::vector<std::string> args = {
        "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", body};
    if (!token.empty()) {
        args.push_back("-H");
        args.push_back("Authorization: Bearer " + token);
    }
    return args;
}

std::string record_body(const std::string& type, const json& payload) {
    return json{{"type", type}, {"payload", payload}}.dump();
}

class TurnSocketServerTest : public ::testing::Test {
protected:
    TempDir dir_{"radial-sock"};
    std::string token_ = mint_turn_token();
    RecordingSink recorded_;
    LogCapture log_;

    TurnSocketOptions unix_options(const std::string& path) {
        TurnSocketOptions o;
        o.transport = Transport::unix_socket;
        o.unix_path = path;
        o.token = token_;
        o.record_type = kRecordType;
        o.log_line = log_.fn();
        return o;
    }

    std::string socket_path() const { return dir_ / "t.sock"; }

    HttpReply post_unix(const std::string& path, const std::string& token, const std::string& body,
                        const std::vector<std::string>& prefix = {}) {
        auto args = post_args(token, body);
        args.insert(args.begin(), {"--unix-socket", path});
        return curl(args, "http://turn/v1/records", prefix);
    }
};

TEST_F(TurnSocketServerTest, UnixSocketAcceptsRecordsInSequence) {
    TurnSocketServer server(unix_options(socket_path()), recorded_.sink());
    EXPECT_EQ(server.address(), "unix://" + socket_path());
    EXPECT_EQ(server.port(), 0);
    for (int i = 1; i <= 3; ++i) {
        const auto r = post_unix(socket_path(), token_, record_body(kRecordType, {{"n", i}}));
        ASSERT_EQ(r.status, 201) << r.headers << "\n" << r.body;
        EXPECT_EQ(json::parse(r.body), (json{{"seq", i}}));
    }
    ASSERT_EQ(recorded_.count(), 3u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(recorded_.records[i].first, kRecordType);
        EXPECT_EQ(json::parse(recorded_.records[i].second), (json{{"n", i + 1}}));
    }
    EXPECT_TRUE(log_.snapshot().empty()) << "accepted requests are not logged";
}

TEST_F(TurnSocketServerTest, TcpSocketOnLoopbackAcceptsRecordsInSequence) {
    TurnSocketOptions o = unix_options("");
    o.transport = Transport::tcp;
    o.tcp_host = "127.0.0.1";
    o.tcp_port = 0;
    TurnSocketServer server(std::move(o), recorded_.sink());
    ASSERT_NE(server.port(), 0);
    EXPECT_EQ(server.address(), "tcp://127.0.0.1:" + std::to_string(server.port()));
    const std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/v1/records";
    for (int i = 1; i <= 3; ++i) {
        const auto r = curl(post_args(token_, record_body(kRecordType, json::array({i}))), url);
        ASSERT_EQ(r.status, 201) << r.headers << "\n" << r.body;
        EXPECT_EQ(json::parse(r.body), (json{{"seq", i}}));
    }
    ASSERT_EQ(recorded_.count(), 3u);
    EXPECT_EQ(recorded_.records[2].second, "[3]");
}

struct Refusal {
    std::string name;
    std::vector<std::string> args; // curl arguments; "@TOKEN" is replaced by the turn token
    std::string path = "/v1/records";
    int status;
    std::string header; // a header the response must carry, or empty
};

// Names the case in test output instead of dumping its bytes.
void PrintTo(const Refusal& refusal, std::ostream* os) { *os << refusal.name; }

class TurnSocketRefusal : public TurnSocketServerTest,
                          public ::testing::WithParamInterface<Refusal> {};

TEST_P(TurnSocketRefusal, IsAnsweredWithItsStatusAndNeverReachesTheSink) {
    TurnSocketOptions o = unix_options(socket_path());
    o.max_body_bytes = 1024;
    TurnSocketServer server(std::move(o), recorded_.sink());
    std::vector<std::string> args = {"--unix-socket", socket_path()};
    for (std::string a : GetParam().args) {
        if (const auto at = a.find("@TOKEN"); at != std::string::npos) a.replace(at, 6, token_);
        args.push_back(a);
    }
    const auto r = curl(args, "http://turn" + GetParam().path);
    EXPECT_EQ(r.status, GetParam().status) << r.headers << "\n" << r.body;
    const json body = json::parse(r.body);
    EXPECT_TRUE(body.at("error").is_string());
    if (!GetParam().header.empty()) {
        EXPECT_NE(r.headers.find(GetParam().header), std::string::npos) << r.headers;
    }
    EXPECT_EQ(r.body.find(token_), std::string::npos);
    EXPECT_EQ(recorded_.count(), 0u);

    const auto lines = log_.snapshot();
    ASSERT_EQ(lines.size(), 1u) << "one line per rejected request";
    EXPECT_NE(lines[0].find(std::to_string(GetParam().status)), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find("unix peer pid"), std::string::npos) << lines[0];
    EXPECT_EQ(lines[0].find(token_), std::string::npos);
    EXPECT_EQ(lines[0].find("secret-payload"), std::string::npos);
}

const std::string kGood = R"({"type":"turn.result","payload":"secret-payload"})";

INSTANTIATE_TEST_SUITE_P(
    EveryRefusal, TurnSocketRefusal,
    ::testing::Values(
        Refusal{"WrongToken",
                {"-H", "Authorization: Bearer " + std::string(64, '0'), "--data-binary", kGood},
                "/v1/records",
                401,
                "WWW-Authenticate: Bearer"},
        Refusal{
            "NoToken", {"--data-binary", kGood}, "/v1/records", 401, "WWW-Authenticate: Bearer"},
        Refusal{"WrongType",
                {"-H", "Authorization: Bearer @TOKEN", "--data-binary",
                 R"({"type":"turn.other","payload":"secret-payload"})"},
                "/v1/records",
                403,
                ""},
        Refusal{"OversizeBody",
                {"-H", "Authorization: Bearer @TOKEN", "--data-binary",
                 R"({"type":"turn.result","payload":")" + std::string(2000, 'x') + "\"}"},
                "/v1/records",
                413,
                "Connection: close"},
        Refusal{"OversizeChunkedBody",
                {"-H", "Authorization: Bearer @TOKEN", "-H", "Transfer-Encoding: chunked",
                 "--data-binary",
                 R"({"type":"turn.result","payload":")" + std::string(2000, 'x') + "\"}"},
                "/v1/records",
                413,
                "Connection: close"},
        Refusal{"MalformedJson",
                {"-H", "Authorization: Bearer @TOKEN", "--data-binary",
                 R"({"type":"turn.result","payload":"secret-payload")"},
                "/v1/records",
                400,
                ""},
        Refusal{
            "MissingPayload",
            {"-H", "Authorization: Bearer @TOKEN", "--data-binary", R"({"type":"turn.result"})"},
            "/v1/records",
            400,
            ""},
        Refusal{"MissingType",
                {"-H", "Authorization: Bearer @TOKEN", "--data-binary",
                 R"({"payload":"secret-payload"})"},
                "/v1/records",
                400,
                ""},
        Refusal{
            "GetIs405", {"-H", "Authorization: Bearer @TOKEN"}, "/v1/records", 405, "Allow: POST"},
        Refusal{"OtherPathIs404",
                {"-H", "Authorization: Bearer @TOKEN", "--data-binary", kGood},
                "/v1/journal",
                404,
                ""}),
    [](const auto& info) { return info.param.name; });

TEST_F(TurnSocketServerTest, ThrowingSinkIs500AndTheServerKeepsServing) {
    int calls = 0;
    TurnSocketServer server(unix_options(socket_path()),
                            [&calls](std::string_view, std::string_view) -> std::uint64_t {
                                if (++calls == 1) throw std::runtime_error("disk /srv/j full");
                                return 99;
                            });
    const auto first = post_unix(socket_path(), token_, kGood);
    EXPECT_EQ(first.status, 500);
    EXPECT_EQ(first.body.find("/srv/j"), std::string::npos);
    const auto second = post_unix(socket_path(), token_, kGood);
    EXPECT_EQ(second.status, 201);
    EXPECT_EQ(json::parse(second.body), (json{{"seq", 99}}));
}

TEST_F(TurnSocketServerTest, ExpectContinueIsAnsweredWithoutCurlsOneSecondWait) {
    TurnSocketServer server(unix_options(socket_path()), recorded_.sink());
    auto args = post_args(token_, record_body(kRecordType, std::string(4000, 'y')));
    args.insert(args.end(), {"-H", "Expect: 100-continue", "--unix-socket", socket_path()});
    const auto start = Clock::now();
    const auto r = curl(args, "http://turn/v1/records");
    EXPECT_EQ(r.status, 201) << r.headers;
    EXPECT_LT(Clock::now() - start, 900ms) << "curl waited for a 100 Continue that never came";
    EXPECT_EQ(recorded_.count(), 1u);
}

TEST_F(TurnSocketServerTest, PipelinedRequestsOnOneConnectionAreAllServed) {
    TurnSocketServer server(unix_options(socket_path()), recorded_.sink());
    const std::string body = record_body(kRecordType, 1);
    std::string request = "POST /v1/records HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " +
                          token_ + "\r\nContent-Length: " + std::to_string(body.size()) +
                          "\r\n\r\n" + body;
    auto fd = connect_unix(socket_path());
    send_all(fd.get(), request + request + request);
    ::shutdown(fd.get(), SHUT_WR);
    bool closed = false;
    const std::string got = read_until_closed(fd.get(), 3000ms, closed);
    EXPECT_TRUE(closed);
    std::size_t created = 0;
    for (auto at = got.find("HTTP/1.1 201"); at != std::string::npos;
         at = got.find("HTTP/1.1 201", at + 1))
        ++created;
    EXPECT_EQ(created, 3u) << got;
    EXPECT_EQ(recorded_.count(), 3u);
}

TEST_F(TurnSocketServerTest, UnauthenticatedClientIsAnsweredBeforeSendingItsBody) {
    TurnSocketServer server(unix_options(socket_path()), recorded_.sink());
    auto fd = connect_unix(socket_path());
    // Announces a body it never sends: the answer must not wait for (or buffer) it.
    send_all(fd.get(), "POST /v1/records HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n");
    bool closed = false;
    const std::string got = read_until_closed(fd.get(), 2000ms, closed);
    EXPECT_EQ(got.rfind("HTTP/1.1 401", 0), 0u) << got;
    EXPECT_NE(got.find("Connection: close"), std::string::npos);
}

TEST_F(TurnSocketServerTest, AnnouncedOversizeBodyIsRefusedBeforeItIsSent) {
    TurnSocketServer server(unix_options(socket_path()), recorded_.sink());
    auto fd = connect_unix(socket_path());
    send_all(fd.get(), "POST /v1/records HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + token_ +
                           "\r\nContent-Length: 10000000\r\n\r\n");
    bool closed = false;
    const std::string got = read_until_closed(fd.get(), 2000ms, closed);
    EXPECT_EQ(got.rfind("HTTP/1.1 413", 0), 0u) << got;
    EXPECT_EQ(recorded_.count(), 0u);
}

// Over a real socket: an unsupported Transfer-Encoding is 501 and closes the connection; a
// duplicate key is 400; a record is stored as posted, keys in their order.
TEST_F(TurnSocketServerTest, StrictProtocolOverTheWire) {
    TurnSocketServer server(unix_options(socket_path()), recorded_.sink());
    auto fd = connect_unix(socket_path());
    send_all(fd.get(), "POST /v1/records HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + token_ +
                           "\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nxxxxx\r\n0\r\n\r\n");
    bool closed = false;
    const std::string got = read_until_closed(fd.get(), 2000ms, closed);
    EXPECT_EQ(got.rfind("HTTP/1.1 501", 0), 0u) << got;
    EXPECT_TRUE(closed);
    EXPECT_EQ(post_unix(socket_path(), token_, R"({"type":"turn.result","payload":{"a":1,"a":2}})")
                  .status,
              400);
    EXPECT_EQ(recorded_.count(), 0u);
    ASSERT_EQ(post_unix(socket_path(), token_,
                        R"({"type":"turn.result","payload":{"z":1, "a":[1.50,2E1]}})")
                  .status,
              201);
    ASSERT_EQ(recorded_.count(), 1u);
    EXPECT_EQ(recorded_.records[0].second, R"({"z":1,"a":[1.5,20.0]})");
}

// A chunk's size line (its extensions) and a chunked body's trailer are held whole until their
// CRLF: one sent without end is refused once it passes the read buffer's bound, not kept growing
// in radiald's memory until the request's deadline.
TEST_F(TurnSocketServerTest, AChunkSizeLineOrTrailerWithoutEndIs400) {
    TurnSocketServer server(unix_options(socket_path()), recorded_.sink());
    for (const std::string& start : {std::string("1;x="), std::string("0\r\nX-Trailer: ")}) {
        auto fd = connect_unix(socket_path());
        send_all(fd.get(), "POST /v1/records HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " +
                               token_ + "\r\nTransfer-Encoding: chunked\r\n\r\n" + start);
        const std::string endless(1 << 16, 'a');
        for (int i = 0; i < 32 && send_unless_closed(fd.get(), endless); ++i) {
        }
        bool closed = false;
        const std::string got = read_until_closed(fd.get(), 30000ms, closed);
        EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << start << ": " << got.substr(0, 200);
        EXPECT_NE(got.find("chunk size line or trailer over the limit"), std::string::npos)
            << got.substr(0, 300);
        EXPECT_TRUE(closed);
    }
    EXPECT_EQ(recorded_.count(), 0u);
}

TEST_F(TurnSocketServerTest, GarbageIsAnswered400AndClosed) {
    TurnSocketServer server(unix_options(socket_path()), recorded_.sink());
    auto fd = connect_unix(socket_path());
    send_all(fd.get(), "\x01\x02 not http at all\r\n\r\n");
    bool closed = false;
    const std::string got = read_until_closed(fd.get(), 2000ms, closed);
    EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got;
    EXPECT_TRUE(closed);
}

TEST_F(TurnSocketServerTest, DestroyedServerLeavesNothingAndANewTokenRefusesTheOld) {
    const std::string turn_dir = dir_ / "turn-1";
    const std::string path = turn_dir + "/t.sock";
    const std::string old_token = token_;
    {
        TurnSocketServer server(unix_options(path), recorded_.sink());
        EXPECT_TRUE(std::filesystem::exists(path));
        EXPECT_EQ(post_unix(path, old_token, kGood).status, 201);
    }
    EXPECT_FALSE(std::filesystem::exists(path)) << "socket path left behind";
    EXPECT_FALSE(std::filesystem::exists(turn_dir)) << "the directory it created was left behind";

    token_ = mint_turn_token();
    ASSERT_NE(token_, old_token);
    TurnSocketServer next(unix_options(path), recorded_.sink());
    EXPECT_EQ(post_unix(path, old_token, kGood).status, 401);
    EXPECT_EQ(post_unix(path, token_, kGood).status, 201);
    EXPECT_EQ(recorded_.count(), 2u);
}

TEST_F(TurnSocketServerTest, CallerMadeDirectoryIsKeptAndOnlyTheSocketRemoved) {
    const std::string turn_dir = dir_ / "turn-2";
    ASSERT_EQ(::mkdir(turn_dir.c_str(), 0700), 0);
    { TurnSocketServer server(unix_options(turn_dir + "/t.sock"), recorded_.sink()); }
    EXPECT_TRUE(std::filesystem::is_directory(turn_dir));
    EXPECT_FALSE(std::filesystem::exists(turn_dir + "/t.sock"));
}

TEST_F(TurnSocketServerTest, SocketIsMode0600EvenWithoutAnOwner) {
    TurnSocketServer server(unix_options(socket_path()), recorded_.sink());
    struct stat st {};
    ASSERT_EQ(::lstat(socket_path().c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(TurnSocketServerTest, OnlyTheBoxUserCanConnect) {
    ASSERT_EQ(::geteuid(), 0u) << "this test hands the socket to another uid; run it as root";
    // Let other uids traverse the test's private directory, as /run would for the real host.
    ASSERT_EQ(::chmod(dir_.path().c_str(), 0711), 0);
    const std::string turn_dir = dir_ / "turn-3";
    const std::string path = turn_dir + "/t.sock";
    TurnSocketOptions o = unix_options(path);
    o.unix_owner = std::make_pair(kBoxUid, kBoxGid);
    TurnSocketServer server(std::move(o), recorded_.sink());

    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    EXPECT_EQ(st.st_uid, kBoxUid);
    EXPECT_EQ(st.st_gid, kBoxGid);
    ASSERT_EQ(::lstat(turn_dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    EXPECT_EQ(st.st_uid, kBoxUid);
    EXPECT_EQ(st.st_gid, kBoxGid);

    auto as = [](uid_t uid) {
        return std::vector<std::string>{"setpriv", "--reuid",           std::to_string(uid),
                                        "--regid", std::to_string(uid), "--clear-groups"};
    };
    const auto other = post_unix(path, token_, kGood, as(kOtherUid));
    EXPECT_NE(other.curl_exit, 0) << "uid " << kOtherUid << " connected: " << other.headers;
    EXPECT_EQ(other.status, 0);
    EXPECT_EQ(recorded_.count(), 0u);

    const auto box = post_unix(path, token_, kGood, as(kBoxUid));
    EXPECT_EQ(box.curl_exit, 0);
    EXPECT_EQ(box.status, 201);
    EXPECT_EQ(recorded_.count(), 1u);
}

TEST_F(TurnSocketServerTest, SharedDirectoryIsNotHandedToTheBoxUser) {
    TurnSocketOptions o = unix_options("/tmp/radial-socket-test-" + token_.substr(0, 8));
    o.unix_owner = std::make_pair(kBoxUid, kBoxGid);
    try {
        TurnSocketServer server(std::move(o), recorded_.sink());
        FAIL() << "bound a socket whose directory is /tmp";
    } catch (const SocketError& e) {
        EXPECT_NE(std::string(e.what()).find("'/tmp' is shared"), std::string::npos) << e.what();
    }
    struct stat st {};
    ASSERT_EQ(::stat("/tmp", &st), 0);
    EXPECT_EQ(st.st_uid, 0u) << "/tmp was chowned";
}

// docs/design.md §17, C-10: a state directory of /tmp/ + 90 'a's makes the natural socket path too
// long.
TEST_F(TurnSocketServerTest, PathOverTheSunPathLimitIsRefusedNotTruncated) {
    // 90 bytes after /tmp/, unique to this run: the check that nothing was made there must not see
    // another run's directory.
    std::string state_dir = "/tmp/radial-c10-" + token_.substr(0, 12) + "-";
    state_dir.resize(5 + 90, 'a');
    const std::string path = state_dir + "/turns/7/turn.sock";
    ASSERT_GT(path.size(), 107u);
    try {
        TurnSocketServer server(unix_options(path), recorded_.sink());
        FAIL() << "bound a " << path.size() << "-byte unix socket path";
    } catch (const SocketError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "binding turn socket 'unix://" + path + "': the path is " +
                      std::to_string(path.size()) +
                      " bytes, over the unix socket limit of 107 bytes (sun_path); use a shorter "
                      "state directory so the per-turn socket path fits");
    }
    EXPECT_FALSE(std::filesystem::exists(state_dir));
}

TEST_F(TurnSocketServerTest, PathOfExactly107BytesBindsAnd108IsRefused) {
    std::string path = dir_.path() + "/";
    path += std::string(107 - path.size(), 's');
    ASSERT_EQ(path.size(), 107u);
    {
        TurnSocketServer server(unix_options(path), recorded_.sink());
        EXPECT_EQ(post_unix(path, token_, kGood).status, 201);
    }
    EXPECT_THROW(TurnSocketServer(unix_options(path + "s"), recorded_.sink()), SocketError);
}

TEST_F(TurnSocketServerTest, InvalidOptionsAreRefusedWithTheirReason) {
    auto refusal = [this](TurnSocketOptions o) {
        try {
            TurnSocketServer server(std::move(o), recorded_.sink());
        } catch (const SocketError& e) {
            return std::string(e.what());
        }
        return std::string("(accepted)");
    };
    auto o = unix_options("relative/t.sock");
    EXPECT_NE(refusal(o).find("not absolute"), std::string::npos);
    o = unix_options(socket_path());
    o.token = "short";
    EXPECT_NE(refusal(o).find("shorter than 32"), std::string::npos);
    o = unix_options(socket_path());
    o.record_type = "";
    EXPECT_NE(refusal(o).find("no record type"), std::string::npos);
    o = unix_options(socket_path());
    o.record_type = "turn result";
    EXPECT_NE(refusal(o).find("plain identifier"), std::string::npos);
    o = unix_options(socket_path());
    o.max_connections = 0;
    EXPECT_NE(refusal(o).find("must all be positive"), std::string::npos);
    o = unix_options("");
    o.transport = Transport::tcp;
    o.tcp_host = "localhost";
    EXPECT_EQ(refusal(o),
              "binding turn socket 'tcp://localhost:0': 'localhost' is not an IP address; set "
              "run.turnSocketHost to an IPv4 or IPv6 literal such as 127.0.0.1");
}

TEST_F(TurnSocketServerTest, OccupiedPathIsRefusedAndLeftAlone) {
    TurnSocketServer first(unix_options(socket_path()), recorded_.sink());
    try {
        TurnSocketServer second(unix_options(socket_path()), recorded_.sink());
        FAIL() << "bound over a live socket";
    } catch (const SocketError& e) {
        EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
    }
    EXPECT_EQ(post_unix(socket_path(), token_, kGood).status, 201) << "first server disturbed";
}

TEST_F(TurnSocketServerTest, OccupiedTcpPortIsRefusedNamingTheAddress) {
    TurnSocketOptions o = unix_options("");
    o.transport = Transport::tcp;
    TurnSocketServer first(o, recorded_.sink());
    o.tcp_port = first.port();
    try {
        TurnSocketServer second(std::move(o), recorded_.sink());
        FAIL() << "bound a port in use";
    } catch (const SocketError& e) {
        EXPECT_NE(std::string(e.what()).find("tcp://127.0.0.1:" + std::to_string(first.port())),
                  std::string::npos)
            << e.what();
    }
}

// A connection that has not presented the token within auth_timeout is dropped, however long
// request_timeout is; it is counted, and summarised, not logged line by line.
TEST_F(TurnSocketServerTest, SilentClientIsDroppedAfterTheAuthTimeout) {
    TurnSocketOptions o = unix_options(socket_path());
    o.auth_timeout = 300ms; // request_timeout stays 10 s
    std::optional<TurnSocketServer> server;
    server.emplace(std::move(o), recorded_.sink());
    auto fd = connect_unix(socket_path());
    const auto start = Clock::now();
    bool closed = false;
    read_until_closed(fd.get(), 3000ms, closed);
    const auto took = Clock::now() - start;
    EXPECT_TRUE(closed);
    EXPECT_GE(took, 250ms);
    EXPECT_LT(took, 1500ms);
    EXPECT_TRUE(log_.snapshot().empty()) << "no line per connection";
    EXPECT_EQ(server->connection_stats().without_token, 1u);
    server.reset();
    const auto lines = log_.snapshot();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0],
              "1 connection refused/evicted in the last 1 s (1 without a valid token within 300 "
              "ms, 0 evicted for a newer connection, 0 over the limit of 8 authenticated "
              "connections)");
}

// An authenticated connection that stalls mid-body is still bounded by request_timeout.
TEST_F(TurnSocketServerTest, AuthenticatedClientStallingMidBodyIsDroppedAfterTheRequestTimeout) {
    TurnSocketOptions o = unix_options(socket_path());
    o.request_timeout = 300ms;
    TurnSocketServer server(std::move(o), recorded_.sink());
    auto fd = connect_unix(socket_path());
    const auto start = Clock::now();
    send_all(fd.get(), "POST /v1/records HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + token_ +
                           "\r\nContent-Length: 100\r\n\r\n{");
    bool closed = false;
    read_until_closed(fd.get(), 3000ms, closed);
    const auto took = Clock::now() - start;
    EXPECT_TRUE(closed);
    EXPECT_GE(took, 250ms);
    EXPECT_LT(took, 1500ms);
    const auto lines = log_.snapshot();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("no complete request within 300 ms"), std::string::npos) << lines[0];
    EXPECT_EQ(server.connection_stats().total(), 0u) << "the box's own connection is no refusal";
}

TEST_F(TurnSocketServerTest, HalfAHeaderIsDroppedAfterTheRequestTimeout) {
    TurnSocketOptions o = unix_options(socket_path());
    o.request_timeout = 300ms;
    TurnSocketServer server(std::move(o), recorded_.sink());
    auto fd = connect_unix(socket_path());
    const auto start = Clock::now();
    send_all(fd.get(), "POST /v1/records HTTP/1.1\r\nHost: t\r\nAuthorization: Bea");
    // Trickling bytes does not extend the deadline: it covers the whole request.
    for (int i = 0; i < 3; ++i) {
        std::this_thread::sleep_for(100ms);
        // The server may close between any two bytes: that is the outcome awaited below.
        if (!send_unless_closed(fd.get(), "r")) break;
    }
    bool closed = false;
    read_until_closed(fd.get(), 3000ms, closed);
    const auto took = Clock::now() - start;
    EXPECT_TRUE(closed);
    EXPECT_GE(took, 250ms);
    EXPECT_LT(took, 1500ms);
}

TEST_F(TurnSocketServerTest, GoodClientIsServedWhileSilentClientsHang) {
    TurnSocketOptions o = unix_options(socket_path());
    o.max_connections = 1;
    o.auth_timeout = 10s;
    TurnSocketServer server(std::move(o), recorded_.sink());
    std::vector<internal::UniqueFd> silent;
    for (int i = 0; i < 3; ++i) silent.push_back(connect_unix(socket_path()));
    const auto start = Clock::now();
    EXPECT_EQ(post_unix(socket_path(), token_, kGood).status, 201);
    EXPECT_LT(Clock::now() - start, 2s);
    for (auto& fd : silent) EXPECT_TRUE(still_open(fd.get()));
}

// Connections without the token never hold a slot against one with it: at the limit of pending
// connections the oldest is evicted, and the new one is always admitted.
TEST_F(TurnSocketServerTest, ThePendingLimitEvictsTheOldestNeverRefusesTheNewest) {
    TurnSocketOptions o = unix_options(socket_path());
    o.max_pending_connections = 2;
    o.auth_timeout = 10s;
    TurnSocketServer server(std::move(o), recorded_.sink());
    auto a = connect_unix(socket_path());
    auto b = connect_unix(socket_path());
    auto c = connect_unix(socket_path());
    bool closed = false;
    read_until_closed(a.get(), 2000ms, closed);
    EXPECT_TRUE(closed) << "the oldest pending connection was kept";
    EXPECT_TRUE(still_open(b.get()));
    EXPECT_TRUE(still_open(c.get()));
    EXPECT_EQ(post_unix(socket_path(), token_, kGood).status, 201);
    EXPECT_EQ(server.connection_stats().evicted, 2u) << "a, then b for curl's connection";
    EXPECT_TRUE(still_open(c.get()));
}

// On tcp any local user can reach the port: a flood of connections that never authenticate
// evicts the flooding peer's own pending connections first, never the box's one, which still gets
// its record in. (Evicting the oldest pending one let the flood close the box's connection before
// its request was read.) Over loopback a peer is the uid owning the other end, so the flood and
// the box share 127.0.0.1 here and are still told apart.
TEST_F(TurnSocketServerTest, APeerFloodingATcpPortEvictsItsOwnPendingConnectionsFirst) {
    TurnSocketOptions o = unix_options("");
    o.transport = Transport::tcp;
    o.tcp_host = "127.0.0.1";
    o.tcp_port = 0;
    o.max_pending_connections = 4;
    o.auth_timeout = 10s;
    TurnSocketServer server(std::move(o), recorded_.sink());
    auto connect_from = [&](const char* source) {
        internal::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_in from{};
        from.sin_family = AF_INET;
        ::inet_pton(AF_INET, source, &from.sin_addr);
        if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&from), sizeof from) != 0)
            throw std::runtime_error(std::string("bind: ") + std::strerror(errno));
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(server.port());
        ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
        if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&to), sizeof to) != 0)
            throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
        return fd;
    };
    auto box = connect_from("127.0.0.1");
    std::vector<internal::UniqueFd> flood;
    {
        // A local user's, from 127.0.0.1 (a peer over loopback is its uid: peer_key.h).
        test::SocketsOwnedBy local_user(65534);
        for (int i = 0; i < 12; ++i) flood.push_back(connect_from("127.0.0.1"));
    }
    // Each connection is admitted in turn: the last of the flood is in when 9 have been evicted.
    ASSERT_TRUE(test::wait_until([&] { return server.connection_stats().evicted >= 9; }, 30s))
        << server.connection_stats().evicted;
    EXPECT_TRUE(still_open(box.get())) << "the box's pending connection was evicted by the flood";
    const std::string body = record_body(kRecordType, 1);
    send_all(box.get(), "POST /v1/records HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + token_ +
                            "\r\nContent-Type: application/json\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
    bool closed = false;
    const std::string got = read_until_closed(box.get(), 10000ms, closed);
    EXPECT_EQ(got.rfind("HTTP/1.1 201", 0), 0u) << got;
    EXPECT_EQ(recorded_.count(), 1u);
}

// The box writes to its turn socket, and may attach descriptors to its bytes (SCM_RIGHTS): among
// them a socket set to linger with data its peer never reads. Left to the kernel, they were
// dropped on the serving thread by the read that took the bytes, or by the close of a connection
// with them queued, and that thread then waited out the linger: no answer, and the turn's end
// (which stops the server and joins that thread) held for as long as the box liked.
TEST_F(TurnSocketServerTest, DescriptorsTheBoxAttachesToItsRequestHoldNoThreadOfTheServer) {
    auto [reader, lingering] = test::lingering_pair();
    ASSERT_GE(lingering, 0);
    auto server = std::make_unique<TurnSocketServer>(unix_options(socket_path()), recorded_.sink());
    const std::string body = record_body(kRecordType, 1);
    auto answered = connect_unix(socket_path());
    test::send_with_rights(answered.get(),
                           "POST /v1/records HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " +
                               token_ + "\r\nContent-Type: application/json\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body,
                           {lingering});
    ::close(lingering); // the server holds the last reference now
    bool closed = false;
    const std::string got = read_until_closed(answered.get(), 60000ms, closed);
    EXPECT_EQ(got.rfind("HTTP/1.1 201", 0), 0u)
        << "no answer within 60 s: the read that took the request waited out the linger";
    ::close(reader);
    // Bytes the server never reads, their descriptor queued when it stops.
    auto unread = connect_unix(socket_path());
    EXPECT_TRUE(test::stops_within_beside_a_queued_linger(
        unread.get(), "P", [&] { server.reset(); }, 60s))
        << "stopping the server waited on the box's linger (120 s)";
}

// Only max_connections connections may hold the token at once; one more is answered 503.
TEST_F(TurnSocketServerTest, AnAuthenticatedConnectionOverTheLimitIs503) {
    TurnSocketOptions o = unix_options(socket_path());
    o.max_connections = 1;
    TurnSocketServer server(std::move(o), recorded_.sink());
    const std::string body = record_body(kRecordType, 1);
    const std::string request = "POST /v1/records HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " +
                                token_ + "\r\nContent-Length: " + std::to_string(body.size()) +
                                "\r\n\r\n" + body;
    auto first = connect_unix(socket_path());
    send_all(first.get(), request);
    std::string got;
    char buf[512];
    while (got.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(first.get(), buf, sizeof buf, 0);
        ASSERT_GT(n, 0);
        got.append(buf, static_cast<std::size_t>(n));
    }
    ASSERT_EQ(got.rfind("HTTP/1.1 201", 0), 0u) << got; // kept alive: it holds the one slot
    auto second = connect_unix(socket_path());
    send_all(second.get(), request);
    bool closed = false;
    got = read_until_closed(second.get(), 2000ms, closed);
    EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
    EXPECT_TRUE(closed);
    EXPECT_EQ(server.connection_stats().over_limit, 1u);
    first.reset(); // the slot frees once the client leaves
    int status = 0;
    for (int attempt = 0; attempt < 20 && status != 201; ++attempt) {
        status = post_unix(socket_path(), token_, kGood).status;
        if (status != 201) std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(status, 201);
}

// Refusals stay visible after the per-line cap is spent: one summary per interval, timed by the
// injected clock (docs/design.md §12.7), so the test advances it instead of waiting.
TEST_F(TurnSocketServerTest, RefusalsAreSummarisedPerIntervalBeyondTheLineCap) {
    time::ManualClock clock;
    TurnSocketOptions o = unix_options(socket_path());
    o.max_logged_rejections = 1;
    o.summary_interval = 10s;
    o.clock = &clock;
    TurnSocketServer server(std::move(o), recorded_.sink());
    for (int i = 0; i < 3; ++i) EXPECT_EQ(post_unix(socket_path(), "", kGood).status, 401);
    auto summaries = [this] {
        std::vector<std::string> got;
        for (const auto& l : log_.snapshot())
            if (l.find("refused/evicted") != std::string::npos) got.push_back(l);
        return got;
    };
    // Each refusal is counted as its connection closes: wait for that event, not for time.
    for (const auto until = Clock::now() + 20s;
         server.connection_stats().without_token < 3 && Clock::now() < until;)
        std::this_thread::sleep_for(10ms);
    ASSERT_EQ(server.connection_stats().without_token, 3u);
    // However long that took in real time, the clock has not moved: no interval has ended.
    EXPECT_TRUE(summaries().empty()) << ::testing::PrintToString(summaries());
    clock.advance(10s);
    for (const auto until = Clock::now() + 20s; summaries().empty() && Clock::now() < until;)
        std::this_thread::sleep_for(10ms);
    ASSERT_EQ(summaries().size(), 1u) << ::testing::PrintToString(summaries());
    EXPECT_EQ(summaries()[0].rfind("3 connections refused/evicted in the last 10 s (3 without a "
                                   "valid token within 1000 ms",
                                   0),
              0u)
        << summaries()[0];
    // The next interval's line covers only what came after the last one.
    EXPECT_EQ(post_unix(socket_path(), "", kGood).status, 401);
    for (const auto until = Clock::now() + 20s;
         server.connection_stats().without_token < 4 && Clock::now() < until;)
        std::this_thread::sleep_for(10ms);
    clock.advance(10s);
    for (const auto until = Clock::now() + 20s; summaries().size() < 2 && Clock::now() < until;)
        std::this_thread::sleep_for(10ms);
    ASSERT_EQ(summaries().size(), 2u) << ::testing::PrintToString(summaries());
    EXPECT_EQ(summaries()[1].rfind("1 connection refused/evicted in the last 10 s (1 without", 0),
              0u)
        << summaries()[1];
}

// docs/design.md §17, C-13: a local process without the token keeps 12 connections open to the tcp
// turn socket, reopening each as soon as it is dropped, while the box posts 50 records: all 50 are
// accepted, and the refusals are counted and summarised.
TEST_F(TurnSocketServerTest, C13_ASquatterWithoutTheTokenCannotStarveTheBox) {
    TurnSocketOptions o = unix_options("");
    o.transport = Transport::tcp;
    o.summary_interval = 500ms;
    TurnSocketServer server(std::move(o), recorded_.sink());
    const std::uint16_t port = server.port();
    std::atomic<bool> stop{false};
    std::atomic<int> reopened{0};
    std::thread squatter([&] {
        auto open = [port] {
            internal::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
            sockaddr_in addr{};
            addr.sin_family = AF_INET;
            addr.sin_port = htons(port);
            addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
                fd.reset();
            return fd;
        };
        std::vector<internal::UniqueFd> held(12);
        while (!stop) {
            for (auto& fd : held)
                if (fd.get() < 0 || !still_open(fd.get())) {
                    fd = open();
                    ++reopened;
                }
            std::this_thread::sleep_for(5ms);
        }
    });
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/v1/records";
    int accepted = 0;
    const auto start = Clock::now();
    // Long enough that the squatter's connections run into the token deadline several times.
    for (int i = 0; i < 50 || Clock::now() - start < 2500ms; ++i) {
        if (i >= 50) {
            std::this_thread::sleep_for(50ms);
            continue;
        }
        if (curl(post_args(token_, record_body(kRecordType, i)), url).status == 201) ++accepted;
    }
    stop = true;
    squatter.join();
    EXPECT_EQ(accepted, 50);
    EXPECT_EQ(recorded_.count(), 50u);
    EXPECT_GE(reopened.load(), 24) << "the squatter's connections were dropped and reopened";
    EXPECT_GE(server.connection_stats().total(), 12u);
    const auto lines = log_.snapshot();
    EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
        return l.find("connections refused/evicted in the last") != std::string::npos;
    })) << "no summary line";
}

TEST_F(TurnSocketServerTest, DestructionIsNotDelayedByHangingClients) {
    std::vector<internal::UniqueFd> clients;
    std::optional<TurnSocketServer> server;
    server.emplace(unix_options(socket_path()), recorded_.sink()); // request_timeout 10 s
    for (int i = 0; i < 4; ++i) clients.push_back(connect_unix(socket_path()));
    send_all(clients.back().get(), "POST /v1/records HTTP/1.1\r\nHost: t\r\n");
    std::this_thread::sleep_for(100ms); // let the server accept them all
    const auto start = Clock::now();
    server.reset();
    EXPECT_LT(Clock::now() - start, 1s);
    for (auto& fd : clients) {
        bool closed = false;
        read_until_closed(fd.get(), 1000ms, closed);
        EXPECT_TRUE(closed) << "a connection outlived the server";
    }
    EXPECT_FALSE(std::filesystem::exists(socket_path()));
}

// Sockets the host process holds, by fd, with whether each is close-on-exec.
std::vector<std::pair<int, bool>> open_sockets() {
    std::vector<std::pair<int, bool>> found;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        const auto target = std::filesystem::read_symlink(entry.path(), ec);
        if (ec || !target.string().starts_with("socket:")) continue;
        const int fd = std::stoi(entry.path().filename().string());
        const int flags = ::fcntl(fd, F_GETFD);
        if (flags >= 0) found.emplace_back(fd, (flags & FD_CLOEXEC) != 0);
    }
    return found;
}

TEST_F(TurnSocketServerTest, NoDescriptorLeaksIntoSpawnedProcesses) {
    const auto before = open_sockets();
    TurnSocketOptions o = unix_options("");
    o.transport = Transport::tcp;
    TurnSocketServer tcp_server(std::move(o), recorded_.sink());
    TurnSocketServer unix_server(unix_options(socket_path()), recorded_.sink());
    // A served request proves the connection has been accepted and is held open (keep-alive).
    auto client = connect_unix(socket_path());
    const std::string body = record_body(kRecordType, 1);
    send_all(client.get(), "POST /v1/records HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " +
                               token_ + "\r\nContent-Length: " + std::to_string(body.size()) +
                               "\r\n\r\n" + body);
    std::string got;
    char buf[512];
    while (got.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(client.get(), buf, sizeof buf, 0);
        ASSERT_GT(n, 0);
        got.append(buf, static_cast<std::size_t>(n));
    }
    ASSERT_EQ(got.rfind("HTTP/1.1 201", 0), 0u) << got;

    const auto after = open_sockets();
    // Listener (tcp), listener (unix), our client and the server's end of it.
    EXPECT_GE(after.size(), before.size() + 4);
    for (const auto& [fd, cloexec] : after) EXPECT_TRUE(cloexec) << "socket fd " << fd;
}

TEST_F(TurnSocketServerTest, IdleKeepAliveConnectionIsClosedWithoutALogLine) {
    TurnSocketOptions o = unix_options(socket_path());
    o.request_timeout = 200ms;
    TurnSocketServer server(std::move(o), recorded_.sink());
    auto fd = connect_unix(socket_path());
    const std::string body = record_body(kRecordType, 1);
    send_all(fd.get(), "POST /v1/records HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + token_ +
                           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                           body);
    bool closed = false;
    const std::string got = read_until_closed(fd.get(), 2000ms, closed);
    EXPECT_EQ(got.rfind("HTTP/1.1 201", 0), 0u) << got;
    EXPECT_TRUE(closed) << "an idle keep-alive connection is closed after request_timeout";
    EXPECT_TRUE(log_.snapshot().empty());
}

TEST_F(TurnSocketServerTest, RejectionFloodIsLoggedUpToTheCapThenOnce) {
    TurnSocketOptions o = unix_options(socket_path());
    o.max_logged_rejections = 5;
    TurnSocketServer server(std::move(o), recorded_.sink());
    for (int i = 0; i < 12; ++i) {
        auto fd = connect_unix(socket_path());
        send_all(fd.get(),
                 "POST /v1/records HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer "
                 "nope\r\nContent-Length: 0\r\n\r\n");
        bool closed = false;
        const std::string got = read_until_closed(fd.get(), 2000ms, closed);
        ASSERT_EQ(got.rfind("HTTP/1.1 401", 0), 0u) << got;
    }
    const auto lines = log_.snapshot();
    ASSERT_EQ(lines.size(), 6u);
    for (int i = 0; i < 5; ++i)
        EXPECT_NE(lines[i].find(": 401 missing or wrong bearer token"), std::string::npos)
            << lines[i];
    EXPECT_EQ(lines[5], "further rejections not logged (limit 5 lines per turn socket)");
}

} // namespace
} // namespace radial::socket
