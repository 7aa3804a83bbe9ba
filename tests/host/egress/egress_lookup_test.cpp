// tests/host/egress/egress_lookup_test.cpp — a turn's system lookups under way are capped
// (host/egress/egress_dial.h, docs/design.md §9.7): with a resolver that never answers, each
// connection stops waiting at its deadline, but its lookup's thread stays until the resolver
// times out, so a box asking again and again would have the host start threads without end. The
// resolver is real: in a child process with a mount namespace of its own, /etc/resolv.conf names
// a loopback address where a UDP socket of the test's receives and never answers.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
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

// A UDP socket on port 53 of a loopback address of its own (127.83.x.y), which never answers;
// its address, or empty.
std::string bind_silent_resolver() {
    for (int attempt = 0; attempt < 50; ++attempt) {
        const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(53);
        const unsigned host = (static_cast<unsigned>(::getpid()) + attempt * 7919u) % 65000u + 1;
        const std::string ip = "127.83." + std::to_string(host / 256) + "." +
                               std::to_string(host % 256 == 0 ? 1 : host % 256);
        ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
        if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return ip; // kept open
        ::close(fd);
    }
    return {};
}

// Exit codes: 2 no namespace or resolver, 3 the first lookups were not cut at the deadline, 4 the
// one beyond the cap started a lookup, 5 the slots never came back. Each reason is on stderr.
[[noreturn]] void ask_a_silent_resolver_again_and_again(const std::string& dir) {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr))
        std::_Exit(2);
    const std::string resolver = bind_silent_resolver();
    if (resolver.empty()) std::_Exit(2);
    const std::string conf = dir + "/resolv.conf";
    if (FILE* f = std::fopen(conf.c_str(), "w")) {
        std::fprintf(f, "nameserver %s\noptions timeout:5 attempts:1\n", resolver.c_str());
        std::fclose(f);
    }
    if (::mount(conf.c_str(), "/etc/resolv.conf", nullptr, MS_BIND, nullptr) != 0) std::_Exit(2);

    std::mutex m;
    std::vector<std::string> reasons;
    EgressCeiling ceiling;
    ceiling.allow.push_back(parse_allow_rule("slow.test:80"));
    ceiling.max_connections = 2;
    const std::string socket_path = dir + "/egress.sock";
    EgressBrokerOptions o;
    o.unix_path = socket_path;
    o.rules = narrow(ceiling, {"slow.test:80"});
    o.ceiling = std::move(ceiling);
    o.connect_timeout = 200ms; // well inside the resolver's 5 s
    o.turn_id = "turn-1";
    o.on_receipt = [&](const Receipt& r) {
        std::lock_guard l(m);
        reasons.push_back(r.reason);
    };
    EgressBroker broker(std::move(o));
    const std::string request = "GET http://slow.test/ HTTP/1.1\r\nHost: slow.test\r\n\r\n";
    auto last_reason = [&] {
        std::lock_guard l(m);
        return reasons.empty() ? std::string() : reasons.back();
    };
    auto says = [&](const char* what) { return last_reason().find(what) != std::string::npos; };
    for (int i = 0; i < 2; ++i) {
        test_client::ask_broker(socket_path, request);
        if (!test::wait_until([&] { return says("no answer in time"); }, 10s)) {
            std::fprintf(stderr, "lookup %d: %s\n", i + 1, last_reason().c_str());
            std::_Exit(3);
        }
        std::lock_guard l(m);
        reasons.clear();
    }
    test_client::ask_broker(socket_path, request);
    if (!test::wait_until([&] { return says("lookups at once are still unanswered"); }, 10s)) {
        std::fprintf(stderr, "beyond the cap: %s\n", last_reason().c_str());
        std::_Exit(4);
    }
    // The resolver's timeout ends both lookups and their slots come back: a lookup starts again.
    const bool back = test::wait_until(
        [&] {
            {
                std::lock_guard l(m);
                reasons.clear();
            }
            test_client::ask_broker(socket_path, request);
            return test::wait_until([&] { return !last_reason().empty(); }, 10s) &&
                   !says("lookups at once");
        },
        60s);
    if (!back) {
        std::fprintf(stderr, "after the resolver's timeout: %s\n", last_reason().c_str());
        std::_Exit(5);
    }
    std::_Exit(0);
}

TEST(EgressLookups, ASilentResolverHoldsAtMostTheTurnsMaxConnectionsLookups) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (a mount namespace)";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    test::TempDir dir("radial-egress-lookup");
    EXPECT_EXIT(ask_a_silent_resolver_again_and_again(dir.path()), ::testing::ExitedWithCode(0),
                "");
}

} // namespace
} // namespace radial::egress
