// tests/host/egress/broker_client.h — one request to an egress broker's unix socket, as a box's
// client sends it, for the tests that run a broker in a child process of their own.
#pragma once

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace radial::egress::test_client {

// Sends `request`, ends its side, and returns what the broker answered until it closed, or until
// 10 s passed without a byte (a connection let through to a destination that never answers).
inline std::string ask_broker(const std::string& socket_path, const std::string& request) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, socket_path.c_str(), socket_path.size() + 1);
    std::string out;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size())) {
        ::shutdown(fd, SHUT_WR); // the broker then ends the connection, and writes its receipt
        const timeval patience{10, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
        char buf[1024];
        for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, n);
    }
    ::close(fd);
    return out;
}

} // namespace radial::egress::test_client
