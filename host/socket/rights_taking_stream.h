// host/socket/rights_taking_stream.h — a connection a box (or any local peer) writes to, as an
// HTTP reader reads it: the turn socket's, the metrics endpoint's. The peer may attach descriptors
// to its bytes (SCM_RIGHTS); a plain read(2) would leave them to the kernel to drop on the
// reading thread, where the last close of a socket the peer set to linger holds that thread for
// as long as the peer likes. Each read here is a recv_from_box (socket/box_descriptors.h), which
// takes them and closes them with its bound. Writes go to the socket as they are. One thread at a
// time, as the socket.
#pragma once

#include <sys/socket.h>

#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>
#include <cerrno>
#include <cstddef>
#include <utility>

#include "socket/box_descriptors.h"

namespace radial::socket::detail {

// An AsyncReadStream and AsyncWriteStream over `Socket` (an asio stream socket the caller owns,
// which must outlive it).
template <class Socket>
class RightsTakingStream {
public:
    using executor_type = typename Socket::executor_type;

    explicit RightsTakingStream(Socket& socket) : socket_(socket) {}
    executor_type get_executor() { return socket_.get_executor(); }

    // Completes once bytes came (into the first buffer of `buffers`), at the stream's end
    // (asio::error::eof), or with the socket's error; never inline.
    template <class MutableBuffers, class Token>
    auto async_read_some(const MutableBuffers& buffers, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
            [this](auto handler, const MutableBuffers& b) {
                wait_then_read(std::move(handler), b);
            },
            token, buffers);
    }

    template <class ConstBuffers, class Token>
    auto async_write_some(const ConstBuffers& buffers, Token&& token) {
        return socket_.async_write_some(buffers, std::forward<Token>(token));
    }

private:
    template <class Handler, class MutableBuffers>
    void wait_then_read(Handler handler, const MutableBuffers& buffers) {
        socket_.async_wait(Socket::wait_read, [this, handler = std::move(handler),
                                               buffers](boost::system::error_code ec) mutable {
            if (ec) return handler(ec, std::size_t{0});
            const boost::asio::mutable_buffer first = *boost::asio::buffer_sequence_begin(buffers);
            if (first.size() == 0) return handler(boost::system::error_code{}, std::size_t{0});
            const ssize_t n =
                recv_from_box(socket_.native_handle(), first.data(), first.size(), MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                return wait_then_read(std::move(handler), buffers);
            if (n < 0)
                return handler(boost::system::error_code(errno, boost::system::system_category()),
                               std::size_t{0});
            if (n == 0) return handler(boost::asio::error::eof, std::size_t{0});
            handler(boost::system::error_code{}, static_cast<std::size_t>(n));
        });
    }

    Socket& socket_;
};

} // namespace radial::socket::detail
