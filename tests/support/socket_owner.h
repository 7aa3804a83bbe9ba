// tests/support/socket_owner.h — sockets that belong to another local user, made by this test
// process (root): a hostile local user's connections to a loopback port, without a process of
// that user.
#pragma once

#include <sys/fsuid.h>
#include <sys/types.h>

namespace radial::test {

// While it lives, sockets this thread makes belong to `uid` (the kernel gives a socket its
// maker's filesystem uid, which setfsuid(2) changes for the calling thread alone). Needs root.
class SocketsOwnedBy {
public:
    explicit SocketsOwnedBy(uid_t uid) : before_(static_cast<uid_t>(::setfsuid(uid))) {}
    ~SocketsOwnedBy() { ::setfsuid(before_); }
    SocketsOwnedBy(const SocketsOwnedBy&) = delete;
    SocketsOwnedBy& operator=(const SocketsOwnedBy&) = delete;

private:
    uid_t before_;
};

} // namespace radial::test
