// host/socket/peer_key.h — whom a connection limit treats as one peer (docs/design.md §9.6,
// §12.6): the turn socket's pending connections and the metrics endpoint's slots are shared out
// by it, so that one peer holding them all evicts its own first. Thread-safe.
#pragma once

#include <string>

namespace radial::socket {

// A connected socket's peer: "uid N" for a unix socket, and for a tcp connection from this host
// the uid owning its other end (asked of the kernel through NETLINK_SOCK_DIAG: every local user
// may connect from 127.0.0.1 or any other local address, so an address tells no one apart); the
// address (any port) of any other tcp peer (a box on a network of its own), or of one the kernel
// does not answer for; "" when it cannot be told. Never throws but std::bad_alloc; blocks at most
// a second on the kernel's answer.
std::string peer_key(int fd);

} // namespace radial::socket
