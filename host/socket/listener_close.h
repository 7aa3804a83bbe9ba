// host/socket/listener_close.h — closing a unix listener a box (or any local peer) may connect
// to: the turn socket's, the metrics endpoint's.
#pragma once

#include <boost/system/error_code.hpp>

#include "socket/box_descriptors.h"

namespace radial::socket {

// Closes `acceptor`, an asio unix stream acceptor. Connections never accepted go with it, and the
// descriptors their peers queued on them (SCM_RIGHTS) are dropped by that close, among them
// perhaps a socket set to linger: so the close is bounded as a box's socket's (bounded_close).
// Its pending operations are cancelled first. Call it on the thread that runs the acceptor's
// handlers, or once none run. Never throws.
template <class Acceptor>
void close_unix_listener(Acceptor& acceptor) noexcept {
    boost::system::error_code ignored;
    acceptor.cancel(ignored);
    const int fd = acceptor.release(ignored);
    if (!ignored) return bounded_close(fd);
    acceptor.close(ignored);
}

} // namespace radial::socket
