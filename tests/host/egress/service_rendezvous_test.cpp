// tests/host/egress/service_rendezvous_test.cpp — services between workspaces through two real
// brokers (host/egress/service_rendezvous.h; docs/design.md §9.7 "Between boxes"): a serving
// broker whose "radial-init" (this test, on the broker's real unix socket) answers its control
// connection by connecting to a loopback server and handing the socket over, and a peer broker
// whose client asks for SERVICE.WORKSPACE.radial. Real sockets, servers on 127.0.0.1 only.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "../../support/box_descriptor_attacks.h"
#include "../../support/load_factor.h"
#include "../../support/loopback_http_server.h"
#include "../../support/temp_dir.h"
#include "broker_client.h"
#include "egress/egress_broker.h"
#include "egress/operator_policy.h"

namespace radial::egress {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

const std::string kHello = "HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n";

// `patient`: no read on it waits without end, whatever the broker does (the fake radial-init's
// control connection is not: it idles for as long as the broker lives).
int connect_unix(const std::string& path, bool patient = true) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const timeval patience{static_cast<time_t>(test::scaled(20s).count() / 1000), 0};
    if (patient) ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << path;
    return fd;
}

int connect_loopback(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
}

// Receipts one broker wrote, awaited by what they say.
struct Receipts {
    std::mutex m;
    std::condition_variable cv;
    std::vector<Receipt> all;
    void add(const Receipt& r) {
        std::lock_guard l(m);
        all.push_back(r);
        cv.notify_all();
    }
    Receipt await(const std::function<bool(const Receipt&)>& is) {
        std::unique_lock l(m);
        Receipt out;
        const bool found = cv.wait_for(l, test::scaled(20s), [&] {
            for (const auto& r : all)
                if (is(r)) {
                    out = r;
                    return true;
                }
            return false;
        });
        EXPECT_TRUE(found) << "no such receipt among " << all.size();
        return out;
    }
};

// What the fake radial-init hands over for each ask: a connection to the asked port (nullptr),
// or whatever this makes.
using Handing = std::function<int(std::uint16_t port)>;

class EgressServiceRendezvousTest : public ::testing::Test {
protected:
    EgressServiceRendezvousTest() : dir_("radial-sr") {}
    ~EgressServiceRendezvousTest() override {
        peer_.reset();
        serving_.reset();
        if (init_.joinable()) init_.join();
    }

    WorkspaceNet net(bool serving_approves, bool peer_approves) const {
        WorkspaceNet n;
        n.workspaces["backend"].path = dir_.path() + "/backend";
        n.workspaces["backend"].serve["api"] = {port_, {}};
        if (serving_approves) n.workspaces["backend"].serve["api"].peers = {"frontend"};
        n.workspaces["frontend"].path = dir_.path() + "/frontend";
        if (peer_approves) n.workspaces["frontend"].reach = {"api.backend"};
        return n;
    }
    EgressBrokerOptions options(const std::string& name, const std::string& turn,
                                const std::string& workspace, WorkspaceNet n, Receipts& into) {
        EgressBrokerOptions o;
        o.unix_path = dir_.path() + "/" + name + ".sock";
        o.turn_id = turn;
        o.workspace = workspace;
        o.net = std::move(n);
        o.services_dir = dir_.path() + "/services";
        o.on_receipt = [&into](const Receipt& r) { into.add(r); };
        o.on_open = [](const Receipt&) {};
        return o;
    }
    void serve(bool approves = true, Handing handing = nullptr) {
        auto o = options("serving", "turn-b", "backend", net(approves, true), served_);
        o.offers["api"] = port_;
        serving_ = std::make_unique<EgressBroker>(std::move(o));
        // radial-init's control connection, answered as egress_forward.c does.
        const int control = connect_unix(dir_.path() + "/serving.sock", false);
        ASSERT_EQ(::send(control, "\1", 1, MSG_NOSIGNAL), 1);
        init_ = std::thread([control, handing, this] {
            unsigned char ask[3];
            while (::recv(control, ask, 3, MSG_WAITALL) == 3) {
                const std::uint16_t port = static_cast<std::uint16_t>((ask[1] << 8) | ask[2]);
                ++asks_;
                const int fd = handing ? handing(port) : connect_loopback(port);
                test::send_with_rights(control, "K", {fd});
                ::close(fd);
            }
            ::close(control);
        });
    }
    void reach(bool approves = true, EgressCeiling ceiling = {}) {
        auto o = options("peer", "turn-f", "frontend", net(true, approves), peers_);
        o.ceiling = std::move(ceiling);
        o.rules = {parse_allow_rule(dest())};
        o.policy_path = dir_.path() + "/egress-policy.json";
        peer_ = std::make_unique<EgressBroker>(std::move(o));
    }
    std::string dest() const { return "api.backend.radial:" + std::to_string(port_); }
    std::string get() const {
        return "GET http://" + dest() + "/ HTTP/1.1\r\nHost: " + dest() + "\r\n\r\n";
    }
    std::string ask() const { return test_client::ask_broker(dir_.path() + "/peer.sock", get()); }

    // A connection of the peer's box to a held service, open once the service's first bytes came.
    int open_held() {
        const int c = connect_unix(dir_.path() + "/peer.sock");
        const std::string req = get();
        EXPECT_EQ(::send(c, req.data(), req.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(req.size()));
        std::string got;
        char buf[512];
        while (got.find("streaming") == std::string::npos) {
            pollfd p{c, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(test::scaled(20s).count())) <= 0) break;
            const ssize_t n = ::read(c, buf, sizeof buf);
            if (n <= 0) break;
            got.append(buf, static_cast<std::size_t>(n));
        }
        EXPECT_THAT(got, HasSubstr("streaming"));
        return c;
    }
    // Whether the broker ended `c` (the box's connection) in time.
    static bool ended(int c) {
        char buf[512];
        pollfd p{c, POLLIN, 0};
        const bool in_time = ::poll(&p, 1, static_cast<int>(test::scaled(10s).count())) > 0;
        const bool closed = in_time && ::read(c, buf, sizeof buf) == 0;
        ::close(c);
        return closed;
    }

    test::TempDir dir_;
    std::uint16_t port_ = 0;
    Receipts served_, peers_;
    std::unique_ptr<EgressBroker> serving_, peer_;
    std::thread init_;
    std::atomic<int> asks_{0};
};

TEST_F(EgressServiceRendezvousTest, APeerReachesTheServiceAndBothTurnsHaveReceipts) {
    test::LoopbackHttpServer service("127.0.0.1", kHello);
    port_ = service.port();
    serve();
    // A hosts entry for the service's name is never used: it is no name to resolve.
    EgressCeiling ceiling;
    ceiling.hosts["api.backend.radial"] = "127.0.0.2";
    reach(true, ceiling);
    EXPECT_THAT(ask(), HasSubstr("hello\n"));
    EXPECT_EQ(service.requests(), 1);
    EXPECT_THAT(service.received(), HasSubstr("Host: " + dest()));
    const auto mine = peers_.await([](const Receipt& r) { return r.kind == "HTTP"; });
    EXPECT_EQ(mine.verdict, "allowed") << mine.reason;
    EXPECT_EQ(mine.destination, dest());
    EXPECT_EQ(mine.address, "turn turn-b") << "the serving turn, never an address of a name";
    EXPECT_GT(mine.bytes_in, 0u);
    const auto theirs = served_.await([](const Receipt& r) { return r.kind == "SERVED"; });
    EXPECT_EQ(theirs.verdict, "allowed") << theirs.reason;
    EXPECT_EQ(theirs.peer, "turn-f") << "the task that reached the service";
    EXPECT_EQ(theirs.address, "turn turn-f (workspace frontend)");
    EXPECT_EQ(theirs.destination, dest());
    EXPECT_EQ(theirs.bytes_in, mine.bytes_in) << "the peer's counts, sent at the relay's end";
    EXPECT_EQ(theirs.bytes_out, mine.bytes_out);
    const auto control = served_.await([](const Receipt& r) { return r.kind == "CONTROL"; });
    EXPECT_EQ(control.verdict, "allowed");
}

// A serving broker that takes no connection (its radiald stopped, not killed) lets its backlog
// fill: the peer's dial then waits a bounded time and refuses, rather than holding the box's
// connection, and the peer turn's end, for good.
TEST_F(EgressServiceRendezvousTest, AServingBrokerThatTakesNoConnectionHoldsNoPeer) {
    port_ = 8080;
    std::filesystem::create_directories(dir_.path() + "/services/backend");
    const std::string path = dir_.path() + "/services/backend/api.sock";
    const int listening = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    ASSERT_EQ(::bind(listening, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(listening, 0), 0);
    std::vector<int> queued;
    for (int i = 0; i < 64; ++i) {
        const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            ::close(c);
            break;
        }
        queued.push_back(c);
    }
    ASSERT_LT(queued.size(), 64u) << "the backlog never filled";
    reach();
    (void)ask();
    const auto r = peers_.await([](const Receipt& r) { return r.kind == "HTTP"; });
    EXPECT_EQ(r.verdict, "refused");
    EXPECT_THAT(r.reason, HasSubstr("takes no connection now")) << r.reason;
    peer_->revoke(); // returns: nothing of the peer waits on the rendezvous
    for (const int c : queued) ::close(c);
    ::close(listening);
}

TEST_F(EgressServiceRendezvousTest, WithoutThePeersApprovalItsBrokerRefusesBeforeAnyRendezvous) {
    test::LoopbackHttpServer service("127.0.0.1", kHello);
    port_ = service.port();
    serve();
    reach(false); // the box asks anyway
    EXPECT_THAT(ask(), HasSubstr("403"));
    const auto r = peers_.await([](const Receipt& r) { return r.kind == "HTTP"; });
    EXPECT_EQ(r.verdict, "refused");
    EXPECT_THAT(r.reason, HasSubstr("run.workspaces.frontend.reach does not name 'api.backend'"));
    EXPECT_EQ(asks_, 0);
    EXPECT_EQ(service.requests(), 0);
}

TEST_F(EgressServiceRendezvousTest, WithoutTheServingSidesApprovalItsBrokerRefusesThePeer) {
    test::LoopbackHttpServer service("127.0.0.1", kHello);
    port_ = service.port();
    serve(false); // the serving turn's own config does not name frontend
    reach(true);  // the peer's does
    EXPECT_THAT(ask(), HasSubstr("403"));
    const auto r = peers_.await([](const Receipt& r) { return r.kind == "HTTP"; });
    EXPECT_EQ(r.verdict, "refused");
    EXPECT_THAT(r.reason, HasSubstr("the serving turn refused"));
    const auto s = served_.await([](const Receipt& r) { return r.kind == "SERVED"; });
    EXPECT_EQ(s.verdict, "refused");
    EXPECT_THAT(s.reason, HasSubstr("serve.api.peers does not name 'frontend'"));
    EXPECT_EQ(asks_, 0) << "the serving box was never asked";
    EXPECT_EQ(service.requests(), 0);
}

TEST_F(EgressServiceRendezvousTest, ASecondLiveOfferIsRefusedAndAStaleSocketReplaced) {
    port_ = 8080;
    // A dead server's socket file (nobody holds its lock) is replaced.
    ::mkdir((dir_.path() + "/services").c_str(), 0700);
    ::mkdir((dir_.path() + "/services/backend").c_str(), 0700);
    {
        const int stale = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        const std::string p = dir_.path() + "/services/backend/api.sock";
        std::memcpy(a.sun_path, p.c_str(), p.size() + 1);
        ASSERT_EQ(::bind(stale, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        ::close(stale);
    }
    serve();
    auto o = options("second", "turn-b2", "backend", net(true, true), served_);
    o.offers["api"] = port_;
    try {
        EgressBroker second(std::move(o));
        ADD_FAILURE() << "a second offer of backend's api started";
    } catch (const std::runtime_error& e) {
        EXPECT_THAT(e.what(), HasSubstr("service 'api' of workspace 'backend' is offered by turn "
                                        "'turn-b' already"));
    }
    EXPECT_NE(::access((dir_.path() + "/second.sock").c_str(), F_OK), 0)
        << "a broker that failed to start leaves no socket";
    struct stat st {};
    ASSERT_EQ(::stat((dir_.path() + "/services/backend").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(::stat((dir_.path() + "/services/backend/api.sock").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    // Once the first turn ends, the service may be offered again.
    serving_.reset();
    init_.join();
    auto again = options("again", "turn-b3", "backend", net(true, true), served_);
    again.offers["api"] = port_;
    EXPECT_NO_THROW(EgressBroker{std::move(again)});
}

TEST_F(EgressServiceRendezvousTest, TheServingTurnsEndClosesAPeersLiveConnection) {
    test::LoopbackHttpServer service("127.0.0.1", "HTTP/1.0 200 OK\r\n\r\nstreaming", true);
    port_ = service.port();
    serve();
    reach();
    const int c = connect_unix(dir_.path() + "/peer.sock");
    const std::string req = get();
    ASSERT_EQ(::send(c, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    std::string got;
    char buf[512];
    while (got.find("streaming") == std::string::npos) {
        pollfd p{c, POLLIN, 0};
        ASSERT_GT(::poll(&p, 1, static_cast<int>(test::scaled(20s).count())), 0) << got;
        const ssize_t n = ::read(c, buf, sizeof buf);
        ASSERT_GT(n, 0) << got;
        got.append(buf, static_cast<std::size_t>(n));
    }
    serving_->revoke(); // the serving turn ends
    EXPECT_TRUE(service.peer_closed_within(10s)) << "the served socket was shut down";
    pollfd p{c, POLLIN, 0};
    ASSERT_GT(::poll(&p, 1, static_cast<int>(test::scaled(10s).count())), 0);
    EXPECT_EQ(::read(c, buf, sizeof buf), 0) << "the peer's box sees its connection end";
    ::close(c);
    const auto mine = peers_.await([](const Receipt& r) { return r.kind == "HTTP"; });
    EXPECT_EQ(mine.verdict, "allowed");
    EXPECT_EQ(mine.reason, "revoked: the serving turn ended");
    const auto theirs = served_.await([](const Receipt& r) { return r.kind == "SERVED"; });
    EXPECT_THAT(theirs.reason, HasSubstr("revoked at the turn's end"));
    EXPECT_GT(theirs.bytes_in, 0u) << "the peer's counts reached it before it journaled";
}

// The peer's turn ends: its broker shuts the served socket down, the service sees the end.
TEST_F(EgressServiceRendezvousTest, ThePeersEndClosesTheServedSocket) {
    test::LoopbackHttpServer service("127.0.0.1", "HTTP/1.0 200 OK\r\n\r\nstreaming", true);
    port_ = service.port();
    serve();
    reach();
    const int c = open_held();
    peer_->revoke();
    EXPECT_TRUE(service.peer_closed_within(10s)) << "the served socket was shut down";
    EXPECT_TRUE(ended(c));
    const auto theirs = served_.await([](const Receipt& r) { return r.kind == "SERVED"; });
    EXPECT_EQ(theirs.verdict, "allowed");
    EXPECT_GT(theirs.bytes_in, 0u) << "the peer's counts, sent as its relay ended";
}

// `radiald policy deny api.backend.radial:P` closes a served connection like any destination.
TEST_F(EgressServiceRendezvousTest, TheOperatorsDenyClosesAServedConnection) {
    test::LoopbackHttpServer service("127.0.0.1", "HTTP/1.0 200 OK\r\n\r\nstreaming", true);
    port_ = service.port();
    serve();
    reach();
    const int c = open_held();
    OperatorPolicy policy;
    policy.deny.push_back(parse_allow_rule(dest()));
    write_operator_policy(dir_.path() + "/egress-policy.json", policy);
    peer_->reload_policy();
    EXPECT_TRUE(ended(c));
    EXPECT_TRUE(service.peer_closed_within(10s)) << "the served socket was shut down";
    const auto mine = peers_.await([](const Receipt& r) { return r.kind == "HTTP"; });
    EXPECT_EQ(mine.reason, "revoked by radiald policy: " + dest() + " is denied now");
    EXPECT_THAT(ask(), HasSubstr("403")) << "and a new connection is refused";
}

TEST_F(EgressServiceRendezvousTest, ABoxHandingAnythingButItsLoopbackConnectionIsRefused) {
    test::LoopbackHttpServer service("127.0.0.1", kHello);
    port_ = service.port();
    test::LoopbackHttpServer other("127.0.0.1", kHello);
    std::vector<std::pair<std::string, Handing>> cases{
        {"the handed descriptor is no socket",
         [](std::uint16_t) {
             int p[2];
             EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
             ::close(p[1]);
             return p[0];
         }},
        {"the handed socket is not TCP",
         [](std::uint16_t) {
             int s[2];
             EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), 0);
             ::close(s[1]);
             return s[0];
         }},
        {"not connected to port",
         [&other](std::uint16_t) { return connect_loopback(other.port()); }},
    };
    for (const auto& [why, handing] : cases) {
        serve(true, handing);
        reach();
        EXPECT_THAT(ask(), HasSubstr("403")) << why;
        const auto s = served_.await([](const Receipt& r) { return r.kind == "SERVED"; });
        EXPECT_EQ(s.verdict, "refused") << why;
        EXPECT_THAT(s.reason, HasSubstr("the serving box handed a socket that was refused"));
        EXPECT_THAT(s.reason, HasSubstr(why));
        peer_.reset();
        serving_.reset();
        init_.join();
        served_.all.clear();
        peers_.all.clear();
    }
    EXPECT_EQ(service.requests(), 0);
    EXPECT_EQ(other.received(), "") << "no byte of the peer's reached what the box handed";
}

TEST_F(EgressServiceRendezvousTest, OnlyAnOfferingTurnTakesOneControlConnection) {
    port_ = 8080;
    // A turn that offers nothing: its box's 0x01 is refused and closed.
    reach();
    int c = connect_unix(dir_.path() + "/peer.sock");
    ASSERT_EQ(::send(c, "\1P\x1f\x90", 4, MSG_NOSIGNAL), 4);
    char b = 0;
    EXPECT_EQ(::recv(c, &b, 1, 0), 0) << "closed without an answer";
    ::close(c);
    auto r = peers_.await([](const Receipt& r) { return r.kind == "CONTROL"; });
    EXPECT_EQ(r.verdict, "refused");
    EXPECT_THAT(r.reason, HasSubstr("the turn offers no service"));
    // An offering turn takes one (its radial-init's, this test's above); a second is refused.
    serve();
    served_.await([](const Receipt& r) { return r.kind == "CONTROL" && r.verdict == "allowed"; });
    c = connect_unix(dir_.path() + "/serving.sock");
    ASSERT_EQ(::send(c, "\1", 1, MSG_NOSIGNAL), 1);
    EXPECT_EQ(::recv(c, &b, 1, 0), 0);
    ::close(c);
    r = served_.await(
        [](const Receipt& r) { return r.kind == "CONTROL" && r.verdict == "refused"; });
    EXPECT_THAT(r.reason, HasSubstr("a second control connection"));
}

} // namespace
} // namespace radial::egress
