#include "egress/egress_dial.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <radial/internal/unique_fd.h>
#include <resolv.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace radial::egress::detail {

namespace {

namespace ip = boost::asio::ip;
// Real time: deadlines for real peers on real sockets (docs/design.md §12.7).
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
constexpr auto kSlice = milliseconds(200);

// The address in `sa` (AF_INET or AF_INET6); nullopt for any other family.
std::optional<ip::address> address_of(const sockaddr* sa) {
    char text[INET6_ADDRSTRLEN] = {};
    const int family = sa->sa_family;
    if (family != AF_INET && family != AF_INET6) return std::nullopt;
    const void* at =
        family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(sa)->sin_addr)
            : &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
    if (::inet_ntop(family, at, text, sizeof text) == nullptr) return std::nullopt;
    boost::system::error_code ec;
    auto a = ip::make_address(text, ec);
    if (ec) return std::nullopt;
    return a;
}

std::vector<ip::address> addresses_of(const addrinfo* res) {
    std::vector<ip::address> out;
    for (const addrinfo* p = res; p != nullptr; p = p->ai_next)
        if (auto a = address_of(p->ai_addr);
            a && std::find(out.begin(), out.end(), *a) == out.end())
            out.push_back(*a);
    return out;
}

// One system lookup, shared between the thread that makes it and the one that waits for it; the
// waiter may leave first, the lookup then finishes on its own.
struct Lookup {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::vector<ip::address> out;
    std::string why;
};

// The name a box asks for is the name looked up, never one resolv.conf's search list (or
// LOCALDOMAIN) completes after a miss, nor a HOSTALIASES alias: the policy judged that name, and
// `pypi.org` answered as `pypi.org.corp.example` would reach a host no rule names
// (docs/design.md §9.7). The options are the calling thread's own resolver state (each lookup has
// a thread of its own); glibc (2.26 on) keeps options an application changed after res_init.
// False when the resolver state could not be made (then nothing is looked up).
bool ask_as_written() {
    if (::res_init() != 0) return false;
    _res.options &= ~static_cast<decltype(_res.options)>(RES_DNSRCH | RES_DEFNAMES);
    _res.options |= RES_NOALIASES;
    return true;
}

} // namespace

std::optional<std::vector<ip::address>> own_addresses() {
    std::vector<ip::address> out;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return std::nullopt;
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next)
        if (i->ifa_addr != nullptr)
            if (auto a = address_of(i->ifa_addr)) out.push_back(*a);
    ::freeifaddrs(list);
    return out;
}

std::vector<ip::address> resolve_until(const EgressCeiling& ceiling, const std::string& host,
                                       Clock::time_point deadline, const std::atomic<bool>& revoked,
                                       LookupsInFlight& lookups, std::string& why) {
    boost::system::error_code ec;
    if (auto literal = ip::make_address(host, ec); !ec) return {literal};
    if (auto it = ceiling.hosts.find(host); it != ceiling.hosts.end()) {
        auto a = ip::make_address(it->second, ec);
        if (ec) return {};
        return {a};
    }
    // A slot first, given back by the lookup's thread when the resolver answered.
    auto in_flight = lookups.count;
    for (std::size_t n = in_flight->load();;) {
        if (n >= lookups.most) {
            why = fmt::format(
                "resolving '{}': the turn's {} lookups at once are still unanswered "
                "(run.egress.maxConnections)",
                host, lookups.most);
            return {};
        }
        if (in_flight->compare_exchange_weak(n, n + 1)) break;
    }
    auto lookup = std::make_shared<Lookup>();
    try {
        std::thread([lookup, host, in_flight] {
            addrinfo hints{};
            hints.ai_socktype = SOCK_STREAM;
            addrinfo* res = nullptr;
            std::vector<ip::address> out;
            std::string why;
            if (!ask_as_written()) {
                why = fmt::format(
                    "resolving '{}': the resolver's settings could not be read "
                    "(/etc/resolv.conf)",
                    host);
            } else if (const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0) {
                why = fmt::format("resolving '{}': {}", host, ::gai_strerror(rc));
            } else {
                out = addresses_of(res);
                ::freeaddrinfo(res);
            }
            --*in_flight;
            std::lock_guard l(lookup->m);
            lookup->out = std::move(out);
            lookup->why = std::move(why);
            lookup->done = true;
            lookup->cv.notify_all();
        }).detach();
    } catch (const std::system_error& e) {
        --*in_flight;
        why = fmt::format("resolving '{}': no thread for the lookup ({})", host, e.what());
        return {};
    }
    std::unique_lock l(lookup->m);
    while (!lookup->done) {
        if (revoked) {
            why = "revoked at the turn's end";
            return {};
        }
        if (Clock::now() >= deadline) {
            why = fmt::format("resolving '{}': no answer in time", host);
            return {};
        }
        lookup->cv.wait_for(l, kSlice);
    }
    why = lookup->why;
    return lookup->out;
}

bool in_host_ranges(const ip::address& plain) {
    if (plain.is_unspecified() || plain.is_loopback()) return true;
    // 0.0.0.0/8 ("this network"): 0.0.0.0 itself is taken by connect(2) for this host, and no
    // address of the block is a destination elsewhere.
    if (plain.is_v4())
        return plain.to_v4().to_bytes()[0] == 0 || plain.to_v4().to_bytes()[0] == 127;
    return false;
}

std::optional<bool> routed_locally(const ip::address& plain, int* error) {
    int ignored = 0;
    int& why = error != nullptr ? *error : ignored;
    why = 0;
    const internal::UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
    if (!fd) {
        why = errno;
        return std::nullopt;
    }
    const timeval wait{1, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    struct {
        nlmsghdr head;
        rtmsg route;
        char attrs[64];
    } ask{};
    const bool v4 = plain.is_v4();
    ask.head.nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
    ask.head.nlmsg_type = RTM_GETROUTE;
    ask.head.nlmsg_flags = NLM_F_REQUEST;
    ask.head.nlmsg_seq = 1;
    ask.route.rtm_family = v4 ? AF_INET : AF_INET6;
    ask.route.rtm_dst_len = v4 ? 32 : 128;
    auto* attr =
        reinterpret_cast<rtattr*>(reinterpret_cast<char*>(&ask) + NLMSG_ALIGN(ask.head.nlmsg_len));
    attr->rta_type = RTA_DST;
    if (v4) {
        const auto b = plain.to_v4().to_bytes();
        attr->rta_len = RTA_LENGTH(b.size());
        std::memcpy(RTA_DATA(attr), b.data(), b.size());
    } else {
        const auto b = plain.to_v6().to_bytes();
        attr->rta_len = RTA_LENGTH(b.size());
        std::memcpy(RTA_DATA(attr), b.data(), b.size());
    }
    ask.head.nlmsg_len = NLMSG_ALIGN(ask.head.nlmsg_len) + RTA_ALIGN(attr->rta_len);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(fd.get(), &ask, ask.head.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel),
                 sizeof kernel) < 0) {
        why = errno;
        return std::nullopt;
    }
    alignas(nlmsghdr) char answer[8192];
    const ssize_t got = ::recv(fd.get(), answer, sizeof answer, 0);
    if (got < 0) {
        why = errno;
        return std::nullopt;
    }
    int left = static_cast<int>(got);
    for (auto* h = reinterpret_cast<nlmsghdr*>(answer); NLMSG_OK(h, left);
         h = NLMSG_NEXT(h, left)) {
        if (h->nlmsg_seq != 1) continue;
        if (h->nlmsg_type == NLMSG_ERROR) {
            // No route to it (ENETUNREACH and the like): not this host; anything else unknown.
            const auto* e = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
            if (e->error == -ENETUNREACH || e->error == -EHOSTUNREACH) return false;
            why = -e->error;
            return std::nullopt;
        }
        if (h->nlmsg_type == RTM_NEWROUTE)
            return static_cast<const rtmsg*>(NLMSG_DATA(h))->rtm_type == RTN_LOCAL;
    }
    why = EPROTO;
    return std::nullopt;
}

std::string dial_refusal(const EgressCeiling& ceiling, const std::vector<ip::address>& own,
                         const ip::address& a) {
    // Compared unmapped: ::ffff:a.b.c.d reaches the same IPv4 host as a.b.c.d. Only an
    // allowRanges entry naming the address alone opens it: a wide range allowed for a network
    // does not also open the host itself (docs/design.md §9.7).
    const ip::address plain = unmapped(a);
    const bool named_alone =
        std::any_of(ceiling.allow_ranges.begin(), ceiling.allow_ranges.end(),
                    [&](const AddressRange& r) { return r.single() && r.contains(plain); });
    // A denied range's own words first (the operator's rule names it best).
    if (std::string no = address_refusal(ceiling, a); !no.empty()) return no;
    // Not only the interfaces' addresses: the kernel delivers the whole loopback block, 0.0.0.0,
    // :: and any local route (an AnyIP range) to this host too, and a wide allowRanges entry (a
    // DNS answer of 0.0.0.0 under 0.0.0.0/0) must not reach a service listening on loopback.
    // A kernel that cannot be asked counts as saying "this host" (docs/design.md §9.7).
    if (named_alone) return {};
    int why = 0;
    if (!in_host_ranges(plain) &&
        std::none_of(own.begin(), own.end(),
                     [&](const ip::address& mine) { return unmapped(mine) == plain; })) {
        const auto local = routed_locally(plain, &why);
        if (!local)
            return fmt::format(
                "{} cannot be told apart from this host's own addresses: asking the kernel's "
                "routes failed ({}), and a box reaches no address that may be this host's",
                a.to_string(), std::strerror(why));
        if (!*local) return {};
    }
    return fmt::format(
        "{} is an address of this host, which no box reaches unless run.egress.allowRanges "
        "names it alone ({}/{})",
        a.to_string(), plain.to_string(), plain.is_v4() ? 32 : 128);
}

int connect_until(const ip::address& a, std::uint16_t port, Clock::time_point deadline,
                  const std::atomic<bool>& revoked, std::atomic<int>& upstream, std::string& why) {
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (a.is_v4()) {
        auto* s = reinterpret_cast<sockaddr_in*>(&ss);
        s->sin_family = AF_INET;
        s->sin_port = htons(port);
        const auto b = a.to_v4().to_bytes();
        std::memcpy(&s->sin_addr, b.data(), b.size());
        len = sizeof *s;
    } else {
        auto* s = reinterpret_cast<sockaddr_in6*>(&ss);
        s->sin6_family = AF_INET6;
        s->sin6_port = htons(port);
        const auto b = a.to_v6().to_bytes();
        std::memcpy(&s->sin6_addr, b.data(), b.size());
        len = sizeof *s;
    }
    const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        why = fmt::format("socket: {}", std::strerror(errno));
        return -1;
    }
    upstream = fd;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
        why = fmt::format("connecting to {}: {}", a.to_string(), std::strerror(errno));
        return -1;
    }
    for (;;) {
        if (revoked) {
            why = "revoked at the turn's end";
            return -1;
        }
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            why = fmt::format("connecting to {}: no answer in time", a.to_string());
            return -1;
        }
        pollfd p{fd, POLLOUT, 0};
        if (::poll(&p, 1, static_cast<int>(std::min(left, kSlice).count())) > 0) break;
    }
    int err = 0;
    socklen_t elen = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
    if (err != 0) {
        why = fmt::format("connecting to {}: {}", a.to_string(), std::strerror(err));
        return -1;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

} // namespace radial::egress::detail
