// Tests of socket/listener_close.h: a unix listener's close is not held by what a peer queued
// on a connection the listener never accepted (docs/design.md §9.6).
#include "socket/listener_close.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <chrono>
#include <string>

#include "../../support/box_descriptor_attacks.h"
#include "../../support/temp_dir.h"

namespace radial::socket::listener_close_test {
namespace {

using namespace std::chrono_literals;
using local = boost::asio::local::stream_protocol;

int connect_to(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    path.copy(a.sun_path, sizeof a.sun_path - 1);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
}

// A peer connects, and before the listener ever accepts it, sends bytes with a lingering socket
// attached: the listener's close returns well within the linger (120 s).
TEST(ListenerClose, AConnectionNeverAcceptedHoldsNotTheListenersClose) {
    test::TempDir dir("radial-lc");
    const std::string path = dir / "l.sock";
    boost::asio::io_context ioc;
    local::acceptor acceptor(ioc, local::endpoint(path));
    const int peer = connect_to(path);
    ASSERT_GE(peer, 0);
    EXPECT_TRUE(test::stops_within_beside_a_queued_linger(
        peer, "G", [&] { close_unix_listener(acceptor); }, 60s))
        << "the listener's close waited out the linger queued on a connection never accepted";
    EXPECT_FALSE(acceptor.is_open());
    char byte = 0;
    const ssize_t got = ::recv(peer, &byte, 1, MSG_DONTWAIT);
    const int err = errno;
    EXPECT_TRUE(got == 0 || (got < 0 && err == ECONNRESET))
        << "the connection did not end with the listener: recv gave " << got << ", errno " << err;
    ::close(peer);
}

} // namespace
} // namespace radial::socket::listener_close_test
