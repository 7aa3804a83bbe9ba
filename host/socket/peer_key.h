// host/socket/peer_key.h — whom a connection limit treats as one peer (docs/design.md §9.6,
// §12.6): the turn socket's pending connections and the metrics endpoint's slots are shared out
// by it, so that one peer holding them all evicts its own first. Thread-safe.
#pragma once

#include <string>

namespace radial::socket {

// A connected socket's peer: its address (any port) for tcp, "uid N" for a unix socket; "" when
// it cannot be told. Never throws but std::bad_alloc.
std::string peer_key(int fd);

} // namespace radial::socket
