// tests/host/egress/egress_own_address_test.cpp — an address this host gains while a turn's broker
// runs is the host's too (host/egress/egress_dial.h, docs/design.md §9.7): a name the turn may
// reach that resolves to it is refused, as one resolving to an address the host had at the start.
// In a child process with a network namespace of its own, whose loopback interface gets a public
// address after the broker started.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "../../support/host_processes.h"
#include "../../support/temp_dir.h"
#include "broker_client.h"
#include "egress/egress_broker.h"

namespace radial::egress {
namespace {

using namespace std::chrono_literals;

constexpr const char* kGained = "93.184.216.34"; // public: no default range denies it

// A TCP listener on every address of the namespace; its port, or 0.
int listen_anywhere(int& fd) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 8) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
        return 0;
    return ntohs(a.sin_port);
}

// Exit codes: 2 no namespace, listener or address; 3 no receipt; 4 not refused as the host's.
[[noreturn]] void reach_an_address_gained_mid_turn(const std::string& dir) {
    if (::unshare(CLONE_NEWNET) != 0 || std::system("ip link set lo up") != 0)
        test::exit_removing(dir, 2);
    int listener = -1;
    const int port = listen_anywhere(listener);
    if (port == 0) test::exit_removing(dir, 2);
    const std::string dest = "pub.test:" + std::to_string(port);
    std::mutex m;
    std::vector<Receipt> receipts;
    EgressCeiling ceiling;
    ceiling.hosts["pub.test"] = kGained;
    ceiling.allow.push_back(parse_allow_rule(dest));
    const std::string socket_path = dir + "/egress.sock";
    EgressBrokerOptions o;
    o.unix_path = socket_path;
    o.rules = narrow(ceiling, {dest});
    o.ceiling = std::move(ceiling);
    o.turn_id = "turn-1";
    o.on_receipt = [&](const Receipt& r) {
        std::lock_guard l(m);
        receipts.push_back(r);
    };
    EgressBroker broker(std::move(o));
    // The host gains the address after its broker started.
    if (std::system((std::string("ip addr add ") + kGained + "/32 dev lo").c_str()) != 0)
        test::exit_removing(dir, 2);
    test_client::ask_broker(socket_path,
                            "GET http://" + dest + "/ HTTP/1.1\r\nHost: " + dest + "\r\n\r\n");
    if (!test::wait_until(
            [&] {
                std::lock_guard l(m);
                return !receipts.empty();
            },
            10s)) {
        std::fprintf(stderr, "no receipt: the connection was let through and stays open\n");
        test::exit_removing(dir, 3);
    }
    std::lock_guard l(m);
    const Receipt& r = receipts.front();
    if (r.verdict != "refused" || r.reason.find("an address of this host") == std::string::npos) {
        std::fprintf(stderr, "%s: %s\n", r.verdict.c_str(), r.reason.c_str());
        test::exit_removing(dir, 4);
    }
    test::exit_removing(dir, 0);
}

TEST(EgressOwnAddress, AnAddressTheHostGainsMidTurnIsRefusedAsTheHosts) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root: a network namespace needs root";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    test::TempDir dir("radial-egress-own");
    EXPECT_EXIT(reach_an_address_gained_mid_turn(dir.path()), ::testing::ExitedWithCode(0), "");
}

} // namespace
} // namespace radial::egress
