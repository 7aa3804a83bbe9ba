// tests/support/box_descriptor_attacks.h — what a hostile box can do to a socket of radiald's
// that it writes to: attach descriptors to its bytes (SCM_RIGHTS), among them a socket that
// lingers, whose last close waits out its linger (socket/box_descriptors.h). Test-only.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <utility>
#include <vector>

namespace radial::test {

// Sends `bytes` on `unix_fd` with `fds` attached (SCM_RIGHTS), as anything in the box may.
inline void send_with_rights(int unix_fd, std::string bytes, const std::vector<int>& fds) {
    iovec iov{bytes.data(), bytes.size()};
    std::vector<char> control(CMSG_SPACE(sizeof(int) * std::max<std::size_t>(fds.size(), 1)));
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds.empty()) {
        msg.msg_control = control.data();
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ASSERT_EQ(::sendmsg(unix_fd, &msg, MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

// A connected pair on 127.0.0.1, as a box's curl and radial-init's endpoint hold it.
inline std::pair<int, int> loopback_pair() {
    const int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(l, 1), 0);
    ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
    const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    const int accepted = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    ::close(l);
    return {client, accepted};
}

// A loopback pair whose second end lingers 120 s (kLongLinger) with data its peer (the first,
// which reads nothing) has no room for: its last close would wait out the linger. -1 for the
// second when the linger cannot be set.
inline constexpr linger kLongLinger{1, 120};
inline std::pair<int, int> lingering_pair() {
    auto [reader, lingering] = loopback_pair();
    const int small = 1024;
    ::setsockopt(reader, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    ::fcntl(lingering, F_SETFL, O_NONBLOCK);
    const std::string junk(64 << 10, 'x');
    while (::send(lingering, junk.data(), junk.size(), MSG_NOSIGNAL) > 0) {
    }
    if (::setsockopt(lingering, SOL_SOCKET, SO_LINGER, &kLongLinger, sizeof kLongLinger) != 0) {
        ::close(lingering);
        lingering = -1;
    }
    return {reader, lingering};
}

// Sends `bytes` with a lingering socket attached on `fd` (a connection to a server of radiald's
// that reads nothing more), then has `stop` (the server's end) run: whether it returned within
// `budget`, well below the 120 s linger. `stop` is waited for either way.
template <class Stop>
bool stops_within_beside_a_queued_linger(int fd, const std::string& bytes, Stop stop,
                                         std::chrono::seconds budget) {
    auto [reader, lingering] = lingering_pair();
    EXPECT_GE(lingering, 0);
    send_with_rights(fd, bytes, {lingering});
    ::close(lingering);
    auto stopped = std::async(std::launch::async, std::move(stop));
    const bool in_time = stopped.wait_for(budget) == std::future_status::ready;
    stopped.wait();
    ::close(reader);
    return in_time;
}

} // namespace radial::test
