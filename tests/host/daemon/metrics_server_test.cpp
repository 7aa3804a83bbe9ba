// The metrics endpoint (docs/design.md §12.6) with real sockets: GET /metrics on a unix socket and
// on a loopback port, 404 elsewhere, and clients that do not behave — one that sends half a
// request and stalls does not keep a second from its answer, is dropped at the deadline, and
// connections beyond the limit are closed at once.
#include "daemon/metrics_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <radial/internal/unique_fd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <vector>

#include "../../support/box_descriptor_attacks.h"
#include "../../support/host_processes.h"
#include "../../support/socket_owner.h"
#include "../../support/temp_dir.h"
#include "daemon/metrics_endpoint_keeper.h"

namespace radial {
namespace {
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A connected client socket; closed by the destructor.
class Client {
public:
    static Client unix_socket(const std::string& path) {
        Client c(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::memcpy(a.sun_path, path.data(), path.size());
        c.connected_ = ::connect(c.fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
        return c;
    }
    // From `source` (an address of 127.0.0.0/8), to 127.0.0.1.
    static Client tcp(std::uint16_t port, const char* source = "127.0.0.1") {
        Client c(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_in from{};
        from.sin_family = AF_INET;
        ::inet_pton(AF_INET, source, &from.sin_addr);
        if (::bind(c.fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) return c;
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        c.connected_ = ::connect(c.fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
        return c;
    }
    Client(Client&& o) noexcept : fd_(std::exchange(o.fd_, -1)), connected_(o.connected_) {}
    ~Client() {
        if (fd_ >= 0) ::close(fd_);
    }
    bool connected() const { return connected_; }
    int fd() const { return fd_; }
    void send(const std::string& bytes) const {
        ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(bytes.size()));
    }
    // Everything until the server closes, or nullopt when it has not closed within `budget`.
    std::optional<std::string> read_to_end(std::chrono::milliseconds budget) const {
        std::string out;
        const auto end = std::chrono::steady_clock::now() + budget;
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                end - std::chrono::steady_clock::now());
            if (left.count() <= 0) return std::nullopt;
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
            char buf[4096];
            const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
            if (n <= 0) return out; // EOF (or a reset: closed either way)
            out.append(buf, static_cast<std::size_t>(n));
        }
    }

    // True while the server has not closed the connection (nothing to read, no EOF).
    bool still_open() const {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 0) == 0) return true;
        char c;
        return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
    }

private:
    explicit Client(int fd) : fd_(fd) {}
    int fd_;
    bool connected_ = false;
};

std::string get(const std::string& path) {
    return "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
}

daemon::MetricsServerOptions unix_options(const std::string& path) {
    daemon::MetricsServerOptions o;
    o.endpoint.kind = config::MetricsEndpoint::Kind::unix_socket;
    o.endpoint.path = path;
    o.render = [] { return std::string("radiald_test_total 42\n"); };
    return o;
}

TEST(MetricsServer, AnswersGetMetricsOnAUnixSocketInTheTextFormatAndOtherPathsWith404) {
    test::TempDir dir("radial-ms");
    const std::string path = dir / "metrics.sock";
    {
        daemon::MetricsServer server(unix_options(path));
        EXPECT_EQ(server.address(), "unix:" + path);
        EXPECT_EQ(server.port(), 0);
        struct stat st {};
        ASSERT_EQ(::lstat(path.c_str(), &st), 0);
        EXPECT_TRUE(S_ISSOCK(st.st_mode));
        EXPECT_EQ(st.st_mode & 0777, 0660u);

        auto c = Client::unix_socket(path);
        ASSERT_TRUE(c.connected());
        c.send(get("/metrics"));
        auto r = c.read_to_end(30s);
        ASSERT_TRUE(r);
        EXPECT_THAT(*r, StartsWith("HTTP/1.1 200 OK\r\n"));
        EXPECT_THAT(*r, HasSubstr("Content-Type: text/plain; version=0.0.4"));
        EXPECT_THAT(*r, HasSubstr("\r\n\r\nradiald_test_total 42\n"));

        auto other = Client::unix_socket(path);
        other.send(get("/"));
        r = other.read_to_end(30s);
        ASSERT_TRUE(r);
        EXPECT_THAT(*r, StartsWith("HTTP/1.1 404 Not Found\r\n"));

        auto post = Client::unix_socket(path);
        post.send("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
        r = post.read_to_end(30s);
        ASSERT_TRUE(r);
        EXPECT_THAT(*r, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
    }
    // The socket goes with the server.
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(MetricsServer, AnswersOnALoopbackPort) {
    daemon::MetricsServerOptions o;
    o.endpoint.kind = config::MetricsEndpoint::Kind::tcp;
    o.endpoint.host = "127.0.0.1";
    o.endpoint.port = 0; // ephemeral
    o.render = [] { return std::string("radiald_tcp 1\n"); };
    daemon::MetricsServer server(o);
    ASSERT_NE(server.port(), 0);
    EXPECT_EQ(server.address(), "127.0.0.1:" + std::to_string(server.port()));
    auto c = Client::tcp(server.port());
    ASSERT_TRUE(c.connected());
    c.send(get("/metrics?x=1"));
    auto r = c.read_to_end(30s);
    ASSERT_TRUE(r);
    EXPECT_THAT(*r, StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_THAT(*r, HasSubstr("radiald_tcp 1\n"));
}

TEST(MetricsServer, AStalledClientDoesNotBlockAnother) {
    test::TempDir dir("radial-ms");
    auto o = unix_options(dir / "metrics.sock");
    o.request_timeout = 120s; // far beyond the wait below: only the server's design can pass
    std::atomic<int> renders{0};
    o.render = [&] {
        ++renders;
        return std::string("ok 1\n");
    };
    daemon::MetricsServer server(o);
    auto stalled = Client::unix_socket(dir / "metrics.sock");
    ASSERT_TRUE(stalled.connected());
    stalled.send("GET /metr"); // and nothing more
    auto second = Client::unix_socket(dir / "metrics.sock");
    second.send(get("/metrics"));
    auto r = second.read_to_end(60s);
    ASSERT_TRUE(r);
    EXPECT_THAT(*r, HasSubstr("ok 1\n"));
    EXPECT_EQ(renders.load(), 1);
    // Answered while the stalled one still holds its connection.
    EXPECT_TRUE(stalled.still_open());
}

TEST(MetricsServer, AStalledClientIsDroppedUnansweredAtItsDeadline) {
    test::TempDir dir("radial-ms");
    auto o = unix_options(dir / "metrics.sock");
    o.request_timeout = 300ms;
    daemon::MetricsServer server(o);
    auto stalled = Client::unix_socket(dir / "metrics.sock");
    ASSERT_TRUE(stalled.connected());
    stalled.send("GET /metrics HTTP/1.1\r\nHost: x\r\n"); // the header never ends
    auto dropped = stalled.read_to_end(60s);
    ASSERT_TRUE(dropped) << "still open long after its deadline";
    EXPECT_EQ(*dropped, "");
}

TEST(MetricsServer, ConnectionsBeyondTheLimitAreClosedAtOnceAndAnOversizedHeaderIsDropped) {
    test::TempDir dir("radial-ms");
    auto o = unix_options(dir / "metrics.sock");
    o.max_connections = 1;
    o.max_request_bytes = 256;
    o.request_timeout = 60s;
    daemon::MetricsServer server(o);
    auto holder = Client::unix_socket(dir / "metrics.sock");
    holder.send("GET /metrics HTTP/1.1\r\n"); // holds the one slot
    auto extra = Client::unix_socket(dir / "metrics.sock");
    auto r = extra.read_to_end(30s); // closed long before the 60 s deadline
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, "");
    // Once the slot is free, the next one is served.
    holder.send("X-Big: " + std::string(400, 'a') + "\r\n\r\n"); // over max_request_bytes
    r = holder.read_to_end(30s);
    ASSERT_TRUE(r);
    EXPECT_THAT(*r, Not(HasSubstr("200 OK")));
    ASSERT_TRUE(test::wait_until(
        [&] {
            auto c = Client::unix_socket(dir / "metrics.sock");
            c.send(get("/metrics"));
            auto a = c.read_to_end(30s);
            return a && a->find("200 OK") != std::string::npos;
        },
        30s));
}

// A local user holding every slot with idle connections keeps only its own newcomers out: a
// scraper, even from the same loopback address, takes the place of the hog's oldest connection
// and is answered (keyed by address, the hog's 127.0.0.1 kept it out).
TEST(MetricsServer, APeerHoldingEverySlotCannotKeepAnotherPeerOut) {
    daemon::MetricsServerOptions o;
    o.endpoint.kind = config::MetricsEndpoint::Kind::tcp;
    o.endpoint.host = "127.0.0.1";
    o.endpoint.port = 0;
    o.max_connections = 2;
    o.request_timeout = 60s;
    o.render = [] { return std::string("radiald_fair 1\n"); };
    daemon::MetricsServer server(o);
    std::optional<test::SocketsOwnedBy> hog(65534); // a local user's sockets
    auto first = Client::tcp(server.port()), second = Client::tcp(server.port());
    ASSERT_TRUE(first.connected() && second.connected());
    first.send("GET /metrics HTTP/1.1\r\n"); // both hold a slot, never finishing a request
    second.send("GET /metrics HTTP/1.1\r\n");
    auto more = Client::tcp(server.port());
    hog.reset();
    auto r = more.read_to_end(30s);
    ASSERT_TRUE(r) << "the hog's newcomer was let in";
    EXPECT_EQ(*r, "");
    // The scraper: root, from the hog's own address (a peer over loopback is its uid).
    auto scraper = Client::tcp(server.port());
    ASSERT_TRUE(scraper.connected());
    scraper.send(get("/metrics"));
    r = scraper.read_to_end(30s);
    ASSERT_TRUE(r);
    EXPECT_THAT(*r, HasSubstr("200 OK"));
    EXPECT_THAT(*r, HasSubstr("radiald_fair 1\n"));
    EXPECT_TRUE(first.read_to_end(30s).has_value())
        << "the hog's oldest connection was not closed for the scraper";
    EXPECT_TRUE(second.still_open());
}

// A client of the unix endpoint (the group may connect) attaches a lingering socket to its
// request (SCM_RIGHTS): the server takes it and closes it with its bound, so it is answered, and
// its stop (radiald's) is not held by the linger the client chose.
TEST(MetricsServer, DescriptorsAClientAttachesHoldNoThreadOfTheServer) {
    test::TempDir dir("radial-ms");
    auto [reader, lingering] = test::lingering_pair();
    ASSERT_GE(lingering, 0);
    auto o = unix_options(dir / "metrics.sock");
    auto server = std::make_unique<daemon::MetricsServer>(o);
    auto c = Client::unix_socket(dir / "metrics.sock");
    ASSERT_TRUE(c.connected());
    test::send_with_rights(c.fd(), get("/metrics"), {lingering});
    ::close(lingering);
    auto r = c.read_to_end(60s);
    ASSERT_TRUE(r) << "no answer within 60 s: the read that took the request waited out the linger";
    EXPECT_THAT(*r, HasSubstr("200 OK"));
    ::close(reader);
    // One whose bytes the server has not read when it stops.
    auto unread = Client::unix_socket(dir / "metrics.sock");
    EXPECT_TRUE(test::stops_within_beside_a_queued_linger(
        unread.fd(), "G", [&] { server.reset(); }, 60s))
        << "the server's stop waited on the client's linger (120 s)";
}

TEST(MetricsServer, ReplacesAStaleSocketButRefusesALiveOneOrAnotherFile) {
    test::TempDir dir("radial-ms");
    const std::string path = dir / "metrics.sock";
    // A stale socket: bound, then its owner gone (closed without unlinking).
    {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::memcpy(a.sun_path, path.data(), path.size());
        ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
        ::close(fd);
    }
    daemon::MetricsServer first(unix_options(path));
    try {
        daemon::MetricsServer second(unix_options(path));
        ADD_FAILURE() << "a second server took a live socket";
    } catch (const daemon::MetricsServerError& e) {
        EXPECT_THAT(e.what(), HasSubstr("run.metrics"));
        EXPECT_THAT(e.what(), HasSubstr("another process serves on that socket"));
    }
    auto c = Client::unix_socket(path); // the first still serves
    c.send(get("/metrics"));
    auto r = c.read_to_end(30s);
    ASSERT_TRUE(r);
    EXPECT_THAT(*r, HasSubstr("200 OK"));

    const std::string file = dir.write("plain", "not a socket");
    try {
        daemon::MetricsServer s(unix_options(file));
        ADD_FAILURE() << "served over a regular file";
    } catch (const daemon::MetricsServerError& e) {
        EXPECT_THAT(e.what(), HasSubstr("is not a socket"));
    }
    EXPECT_EQ(test::read_file(file), "not a socket"); // left alone
    try {
        daemon::MetricsServer s(unix_options(dir / "missing/m.sock"));
        ADD_FAILURE() << "bound in a missing directory";
    } catch (const daemon::MetricsServerError& e) {
        EXPECT_THAT(e.what(), HasSubstr("create the socket's directory first"));
    }
}

// A live socket whose listener accepts nothing (its backlog full) is still live: the probe does
// not wait on it (a blocking connect held the daemon's start for as long), and never removes it.
TEST(MetricsServer, ASocketWhoseBacklogIsFullIsLiveAndLeftAlone) {
    test::TempDir dir("radial-ms");
    const std::string path = dir / "metrics.sock";
    const internal::UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.data(), path.size());
    ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    ASSERT_EQ(::listen(listener.get(), 0), 0);
    std::vector<internal::UniqueFd> waiting;
    for (int i = 0; i < 64; ++i) {
        internal::UniqueFd c(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        if (::connect(c.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
            ASSERT_EQ(errno, EAGAIN) << "the backlog should fill: " << std::strerror(errno);
            break;
        }
        waiting.push_back(std::move(c));
    }
    try {
        daemon::MetricsServer s(unix_options(path));
        ADD_FAILURE() << "took a socket another process listens on";
    } catch (const daemon::MetricsServerError& e) {
        EXPECT_THAT(e.what(), HasSubstr("another process serves on that socket"));
    }
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0) << "the live socket was removed";
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
}

TEST(MetricsServer, RefusesAPortAnotherProcessHolds) {
    daemon::MetricsServerOptions o;
    o.endpoint.kind = config::MetricsEndpoint::Kind::tcp;
    o.endpoint.host = "127.0.0.1";
    o.render = [] { return std::string(); };
    daemon::MetricsServer first(o);
    o.endpoint.port = first.port();
    try {
        daemon::MetricsServer second(o);
        ADD_FAILURE() << "two servers on one port";
    } catch (const daemon::MetricsServerError& e) {
        EXPECT_THAT(e.what(), HasSubstr("run.metrics"));
        EXPECT_THAT(e.what(), HasSubstr(std::to_string(first.port())));
    }
}

// A port another process held at the daemon's start kept the daemon from starting at all: any
// local user could stop every turn by listening there first. The keeper serves
// nothing meanwhile, and serves the port once it is free.
TEST(MetricsEndpointKeeper, ServesAPortOnceTheProcessHoldingItLetsGo) {
    daemon::MetricsServerOptions o;
    o.endpoint.kind = config::MetricsEndpoint::Kind::tcp;
    o.endpoint.host = "127.0.0.1";
    o.render = [] { return std::string("radiald_test_total 7\n"); };
    std::optional<daemon::MetricsServer> squatter(std::in_place, o);
    o.endpoint.port = squatter->port();
    daemon::MetricsEndpointKeeper keeper(o, 50ms);
    EXPECT_FALSE(keeper.address()) << "served a port another process holds";
    squatter.reset();
    ASSERT_TRUE(test::wait_until([&] { return keeper.address().has_value(); }, 30s));
    EXPECT_EQ(*keeper.address(), "127.0.0.1:" + std::to_string(o.endpoint.port));
    auto c = Client::tcp(o.endpoint.port);
    ASSERT_TRUE(c.connected());
    c.send(get("/metrics"));
    auto r = c.read_to_end(30s);
    ASSERT_TRUE(r);
    EXPECT_THAT(*r, HasSubstr("radiald_test_total 7"));
}

TEST(MetricsEndpointKeeper, ServesAtOnceWhenItCanAndStopsWhenDestroyed) {
    test::TempDir dir("radial-mk");
    const std::string path = dir / "metrics.sock";
    {
        daemon::MetricsEndpointKeeper keeper(unix_options(path));
        EXPECT_EQ(keeper.address(), "unix:" + path);
    }
    EXPECT_FALSE(std::filesystem::exists(path)) << "the socket outlived its keeper";
}

} // namespace
} // namespace radial
