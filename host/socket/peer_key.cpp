// host/socket/peer_key.cpp — see peer_key.h.
#include "socket/peer_key.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <radial/internal/unique_fd.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

namespace radial::socket {
namespace {

// The port (network order) and the address's bytes of an inet or inet6 socket address.
std::pair<in_port_t, std::string_view> port_and_address(const sockaddr_storage& a) {
    if (a.ss_family == AF_INET) {
        const auto& in = reinterpret_cast<const sockaddr_in&>(a);
        return {in.sin_port, {reinterpret_cast<const char*>(&in.sin_addr), sizeof in.sin_addr}};
    }
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    return {in6.sin6_port, {reinterpret_cast<const char*>(&in6.sin6_addr), sizeof in6.sin6_addr}};
}

// The owner of the tcp socket at the other end of a connection from this host: the one whose own
// address is `peer` and whose peer is `local`, asked of the kernel's socket table of this network
// namespace (NETLINK_SOCK_DIAG, an exact lookup). nullopt when the kernel does not say.
std::optional<uid_t> local_peer_uid(const sockaddr_storage& peer, const sockaddr_storage& local) {
    const internal::UniqueFd nl(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
    if (!nl) return std::nullopt;
    const timeval wait{1, 0}; // the kernel answers at once; never hang an accept on it
    ::setsockopt(nl.get(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    struct {
        nlmsghdr head;
        inet_diag_req_v2 req;
    } ask{};
    ask.head.nlmsg_len = sizeof ask;
    ask.head.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    ask.head.nlmsg_flags = NLM_F_REQUEST;
    ask.req.sdiag_family = static_cast<std::uint8_t>(peer.ss_family);
    ask.req.sdiag_protocol = IPPROTO_TCP;
    ask.req.idiag_states = ~0u;
    ask.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    ask.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    const auto [sport, src] = port_and_address(peer);
    const auto [dport, dst] = port_and_address(local);
    ask.req.id.idiag_sport = sport;
    ask.req.id.idiag_dport = dport;
    std::memcpy(ask.req.id.idiag_src, src.data(), src.size());
    std::memcpy(ask.req.id.idiag_dst, dst.data(), dst.size());
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(nl.get(), &ask, sizeof ask, 0, reinterpret_cast<sockaddr*>(&kernel),
                 sizeof kernel) != static_cast<ssize_t>(sizeof ask))
        return std::nullopt;
    alignas(nlmsghdr) char buf[8192];
    const ssize_t n = ::recv(nl.get(), buf, sizeof buf, 0);
    if (n < static_cast<ssize_t>(NLMSG_LENGTH(sizeof(inet_diag_msg)))) return std::nullopt;
    const auto* head = reinterpret_cast<const nlmsghdr*>(buf);
    if (head->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
        head->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg)) ||
        head->nlmsg_len > static_cast<std::uint32_t>(n))
        return std::nullopt;
    const auto* msg = static_cast<const inet_diag_msg*>(NLMSG_DATA(head));
    return static_cast<uid_t>(msg->idiag_uid);
}

} // namespace

std::string peer_key(int fd) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
        (a.ss_family == AF_INET || a.ss_family == AF_INET6)) {
        // A connection from this host (its other end in the kernel's table here): every local
        // user may use any local address, 127.0.0.1 above all, so the peer is the user who owns
        // the other end, as on a unix socket (docs/design.md §12.6). A box on a network of its
        // own is not found here and is told by its address.
        sockaddr_storage local{};
        socklen_t local_len = sizeof local;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) == 0 &&
            local.ss_family == a.ss_family)
            if (const auto uid = local_peer_uid(a, local)) return "uid " + std::to_string(*uid);
        char text[INET6_ADDRSTRLEN] = {};
        const void* addr =
            a.ss_family == AF_INET6
                ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&a)->sin6_addr)
                : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&a)->sin_addr);
        return ::inet_ntop(a.ss_family, addr, text, sizeof text) != nullptr ? text : "";
    }
    struct ucred cred {};
    socklen_t clen = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
        return "uid " + std::to_string(cred.uid);
    return {};
}

} // namespace radial::socket
