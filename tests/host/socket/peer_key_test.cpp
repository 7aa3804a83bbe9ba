// Whom a connection limit takes for one peer (docs/design.md §12.6): over loopback the uid that
// owns the other end, since every local user shares 127.0.0.1; a unix socket's peer uid.
#include "socket/peer_key.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <radial/internal/unique_fd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../support/socket_owner.h"

namespace radial::socket {
namespace {

class Loopback : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root: it makes another user's socket";
        ASSERT_TRUE(listener_);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ASSERT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        ASSERT_EQ(::listen(listener_.get(), 8), 0);
        socklen_t len = sizeof a;
        ASSERT_EQ(::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
        to_ = a;
    }

    // Connects (from 127.0.0.1, as the thread's sockets' owner) and returns the accepted end.
    internal::UniqueFd accepted(internal::UniqueFd& client) {
        client.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!client ||
            ::connect(client.get(), reinterpret_cast<const sockaddr*>(&to_), sizeof to_) != 0)
            return {};
        return internal::UniqueFd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    }

    internal::UniqueFd listener_{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    sockaddr_in to_{};
};

// From one address, two users: two peers. Keyed by address, a local user's flood from 127.0.0.1
// and a scraper on 127.0.0.1 were one peer, and the flood kept the scraper out.
TEST_F(Loopback, TwoUsersOnOneLoopbackAddressAreTwoPeers) {
    internal::UniqueFd as_root, as_nobody;
    const auto root_end = accepted(as_root);
    ASSERT_TRUE(root_end);
    internal::UniqueFd nobody_end;
    {
        test::SocketsOwnedBy nobody(65534);
        nobody_end = accepted(as_nobody);
    }
    ASSERT_TRUE(nobody_end);
    EXPECT_EQ(peer_key(root_end.get()), "uid 0");
    EXPECT_EQ(peer_key(nobody_end.get()), "uid 65534");
}

TEST(PeerKey, AUnixSocketsPeerIsItsUid) {
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    internal::UniqueFd a(pair[0]), b(pair[1]);
    EXPECT_EQ(peer_key(a.get()), "uid " + std::to_string(::geteuid()));
}

} // namespace
} // namespace radial::socket
