// tests/host/egress/egress_lookup_test.cpp — the broker's system lookups
// (host/egress/egress_dial.h, docs/design.md §9.7). A turn's lookups under way are capped: with a
// resolver that never answers, each connection stops waiting at its deadline, but its lookup's
// thread stays until the resolver times out, so a box asking again and again would have the host
// start threads without end. And a name is looked up as written, never completed with the search
// list. The resolver is real: in a child process with a mount namespace of its own,
// /etc/resolv.conf names a loopback address where a UDP socket of the test's receives (and answers,
// or never does).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../../support/host_processes.h"
#include "../../support/temp_dir.h"
#include "broker_client.h"
#include "egress/egress_broker.h"
#include "egress/egress_dial.h"

namespace radial::egress {
namespace {

using namespace std::chrono_literals;

// A UDP socket bound to port 53 of a loopback address of its own (127.83.x.y), kept open for the
// child's life: {fd, address}, or {-1, ""}.
std::pair<int, std::string> bind_resolver_socket() {
    for (int attempt = 0; attempt < 50; ++attempt) {
        const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(53);
        const unsigned host = (static_cast<unsigned>(::getpid()) + attempt * 7919u) % 65000u + 1;
        const std::string ip = "127.83." + std::to_string(host / 256) + "." +
                               std::to_string(host % 256 == 0 ? 1 : host % 256);
        ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
        if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return {fd, ip};
        ::close(fd);
    }
    return {-1, {}};
}

// A resolver that receives and never answers; its address, or empty.
std::string bind_silent_resolver() { return bind_resolver_socket().second; }

// In this child's mount namespace, /etc/resolv.conf names `resolver` with `extra` lines, or
// exits 2.
void use_resolver(const std::string& dir, const std::string& resolver, const char* extra) {
    const std::string conf = dir + "/resolv.conf";
    if (FILE* f = std::fopen(conf.c_str(), "w")) {
        std::fprintf(f, "nameserver %s\n%s", resolver.c_str(), extra);
        std::fclose(f);
    }
    if (::mount(conf.c_str(), "/etc/resolv.conf", nullptr, MS_BIND, nullptr) != 0)
        test::exit_removing(dir, 2);
}

// Exit codes: 2 no namespace or resolver, 3 the first lookups were not cut at the deadline, 4 the
// one beyond the cap started a lookup, 5 the slots never came back. Each reason is on stderr.
[[noreturn]] void ask_a_silent_resolver_again_and_again(const std::string& dir) {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr))
        test::exit_removing(dir, 2);
    const std::string resolver = bind_silent_resolver();
    if (resolver.empty()) test::exit_removing(dir, 2);
    use_resolver(dir, resolver, "options timeout:5 attempts:1\n");

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
            test::exit_removing(dir, 3);
        }
        std::lock_guard l(m);
        reasons.clear();
    }
    test_client::ask_broker(socket_path, request);
    if (!test::wait_until([&] { return says("lookups at once are still unanswered"); }, 10s)) {
        std::fprintf(stderr, "beyond the cap: %s\n", last_reason().c_str());
        test::exit_removing(dir, 4);
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
        test::exit_removing(dir, 5);
    }
    test::exit_removing(dir, 0);
}

TEST(EgressLookups, ASilentResolverHoldsAtMostTheTurnsMaxConnectionsLookups) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (a mount namespace)";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    test::TempDir dir("radial-egress-lookup");
    EXPECT_EXIT(ask_a_silent_resolver_again_and_again(dir.path()), ::testing::ExitedWithCode(0),
                "");
}

// Answers every query on `fd`, for ever: a name under `corp.test` has the A record 127.0.0.9 (and
// no AAAA record), every other name does not exist (NXDOMAIN). Runs on a thread of the child.
void answer_corp_test_names(int fd) {
    for (;;) {
        unsigned char q[512];
        sockaddr_storage from{};
        socklen_t from_len = sizeof from;
        const ssize_t n =
            ::recvfrom(fd, q, sizeof q, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
        if (n < 12) continue;
        std::string name;
        std::size_t at = 12;
        while (at < static_cast<std::size_t>(n) && q[at] != 0 &&
               at + q[at] < static_cast<std::size_t>(n)) {
            if (!name.empty()) name += '.';
            for (unsigned i = 1; i <= q[at]; ++i)
                name += static_cast<char>(std::tolower(q[at + i]));
            at += q[at] + 1u;
        }
        const std::size_t question_end = at + 5; // the root label, then type and class
        if (question_end > static_cast<std::size_t>(n)) continue;
        const bool known = name.size() > 10 && name.ends_with(".corp.test");
        const bool a_record = known && q[at + 1] == 0 && q[at + 2] == 1;
        std::vector<unsigned char> r(q, q + question_end);
        r[2] = 0x81;                // a response; recursion desired
        r[3] = known ? 0x80 : 0x83; // recursion available; NOERROR or NXDOMAIN
        r[4] = 0, r[5] = 1, r[6] = 0, r[7] = a_record ? 1 : 0;
        r[8] = r[9] = r[10] = r[11] = 0; // no authority, no additional records
        if (a_record) r.insert(r.end(), {0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 9});
        ::sendto(fd, r.data(), r.size(), 0, reinterpret_cast<sockaddr*>(&from), from_len);
    }
}

// Exit codes: 2 no namespace or resolver, 3 a name of the resolver's own did not resolve (the
// set-up is broken), 4 a dotted name was completed with the search list, 5 a bare name was, 6
// /etc/hosts was not read. Each reason is on stderr.
[[noreturn]] void ask_for_names_the_search_list_would_complete(const std::string& dir) {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr))
        test::exit_removing(dir, 2);
    const auto [fd, resolver] = bind_resolver_socket();
    if (fd < 0) test::exit_removing(dir, 2);
    std::thread(answer_corp_test_names, fd).detach();
    use_resolver(dir, resolver, "search corp.test\noptions timeout:2 attempts:2\n");
    // glibc's own lookups, whatever this host's nsswitch.conf asks (nss-resolve, nscd).
    const std::string nss = dir + "/nsswitch.conf";
    if (FILE* f = std::fopen(nss.c_str(), "w")) {
        std::fputs("hosts: files dns\n", f);
        std::fclose(f);
    }
    if (::mount(nss.c_str(), "/etc/nsswitch.conf", nullptr, MS_BIND, nullptr) != 0)
        test::exit_removing(dir, 2);

    EgressCeiling ceiling;
    detail::LookupsInFlight lookups;
    const std::atomic<bool> revoked{false};
    auto resolve = [&](const std::string& name) {
        std::string why;
        auto out = detail::resolve_until(ceiling, name, std::chrono::steady_clock::now() + 20s,
                                         revoked, lookups, why);
        std::string text;
        for (const auto& a : out) text += a.to_string() + " ";
        std::fprintf(stderr, "%s: [%s] %s\n", name.c_str(), text.c_str(), why.c_str());
        return text;
    };
    if (resolve("pypi.test.corp.test") != "127.0.0.9 ") test::exit_removing(dir, 3);
    if (!resolve("pypi.test").empty()) test::exit_removing(dir, 4);
    if (!resolve("db").empty()) test::exit_removing(dir, 5);
    if (resolve("localhost").empty()) test::exit_removing(dir, 6);
    test::exit_removing(dir, 0);
}

// A box's name is looked up as the box wrote it: a miss is not retried with resolv.conf's search
// suffixes, which would connect `pypi.test` to `pypi.test.corp.test`, a host no rule names.
TEST(EgressLookups, ANameIsNeverCompletedWithTheResolversSearchList) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (a mount namespace)";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    test::TempDir dir("radial-egress-search");
    EXPECT_EXIT(ask_for_names_the_search_list_would_complete(dir.path()),
                ::testing::ExitedWithCode(0), "");
}

} // namespace
} // namespace radial::egress
