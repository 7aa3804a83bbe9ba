// host/socket/peer_key.cpp — see peer_key.h.
#include "socket/peer_key.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace radial::socket {

std::string peer_key(int fd) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
        (a.ss_family == AF_INET || a.ss_family == AF_INET6)) {
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
