// host/socket/turn_socket_session.h — internal to radial_socket: one connection to a turn socket
// (docs/design.md §9). Included only by turn_socket_server.cpp; not part of the library's
// interface.
//
// A Session is a shared_ptr kept alive by its pending operations. It loops
//   read header → header-stage checks → read body → handle_request → write → next request,
// under one deadline per request, and runs on the server's serving thread only, like everything
// it shares through ServerState — so nothing here needs a lock.
#pragma once

#include <fmt/format.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <cstdint>
#include <functional>
#include <limits>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "socket/box_descriptors.h"
#include "socket/record_request_handler.h"
#include "socket/rights_taking_stream.h"
#include "socket/turn_socket_server.h"

namespace radial::socket::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using error_code = boost::system::error_code;
using unix_proto = asio::local::stream_protocol;
using tcp = asio::ip::tcp;

// Request headers above this many bytes get 431. Beast's default; a record request needs ~200.
inline constexpr std::uint32_t kHeaderLimit = 8 * 1024;
// The most bytes read but not yet parsed a connection may hold: a header, and one read beyond it.
// The body goes into the request as it is parsed, but a chunk's size line (its extensions) and a
// chunked body's trailer are kept whole until their CRLF: without a bound, one box sending either
// without end would grow radiald's memory until the request's deadline, on every connection.
inline constexpr std::size_t kReadBufferLimit = kHeaderLimit + 64 * 1024;
// After a response that closes the connection the host reads and discards at most this much of
// what the client is still sending, so the client sees the response rather than a reset.
inline constexpr std::size_t kMaxDrainBytes = 256 * 1024;

// Caps the log lines one turn can cause (docs/design.md §9: a flooding box must not fill the host's
// log). Serving thread only.
class RejectionLog {
public:
    RejectionLog(const std::function<void(std::string_view)>& sink, std::size_t cap)
        : sink_(sink), cap_(cap) {}

    void line(std::string_view text) {
        if (!sink_) return;
        if (written_ < cap_) {
            ++written_;
            sink_(text);
        } else if (written_ == cap_) {
            ++written_;
            sink_(fmt::format("further rejections not logged (limit {} lines per turn socket)",
                              cap_));
        }
    }

private:
    const std::function<void(std::string_view)>& sink_;
    std::size_t cap_;
    std::size_t written_ = 0;
};

class SessionBase {
public:
    virtual ~SessionBase() = default;
    // Closes the connection now; pending operations complete with operation_aborted.
    virtual void stop() = 0;
    // Closes a connection that has not authenticated, to make room for a newer one.
    virtual void evict() = 0;
    // Who it came from, for the pending limit's fairness (socket/peer_key.h).
    virtual const std::string& peer_key() const = 0;
};

// Why connections were closed without ever presenting the token (or over the limit), counted
// per summary window and in total.
struct RefusalCounts {
    std::uint64_t no_token = 0;   // closed, refused (401) or timed out without a valid token
    std::uint64_t evicted = 0;    // the oldest unauthenticated one, closed for a newer one
    std::uint64_t over_limit = 0; // authenticated while max_connections were already
    std::uint64_t total() const { return no_token + evicted + over_limit; }
};

// What the listener and every session share. Serving thread only once serving has started,
// except the atomic totals, which connection_stats() reads from any thread.
struct ServerState {
    ServerState(const TurnSocketOptions& opts, const RecordSink& sink)
        : options(opts),
          context{opts.token, opts.record_type, opts.max_body_bytes, &sink},
          log(opts.log_line, opts.max_logged_rejections) {}

    const TurnSocketOptions& options;
    HandlerContext context;
    RejectionLog log;
    std::size_t authenticated_connections = 0;
    // Connections that have not presented the token yet, oldest first.
    std::list<SessionBase*> pending;
    bool stopping = false;
    std::vector<std::weak_ptr<SessionBase>> sessions; // to close at shutdown

    RefusalCounts window; // since the last summary line
    std::atomic<std::uint64_t> total_no_token{0}, total_evicted{0}, total_over_limit{0};

    void count(std::uint64_t RefusalCounts::*which, std::atomic<std::uint64_t>& total) {
        ++(window.*which);
        ++total;
    }

    // One line for every refusal since the last one, whatever the cap on individual lines: a
    // squatter must never make refusals invisible. `window_seconds` is the span it covers.
    void log_summary(long long window_seconds) {
        const auto n = window.total();
        if (n == 0 || !options.log_line) return;
        options.log_line(fmt::format(
            "{} connection{} refused/evicted in the last {} s ({} without a valid token within "
            "{} ms, {} evicted for a newer connection, {} over the limit of {} authenticated "
            "connections)",
            n, n == 1 ? "" : "s", window_seconds, window.no_token, options.auth_timeout.count(),
            window.evicted, window.over_limit, options.max_connections));
        window = {};
    }
};

// The box's identity as the kernel reports it (SO_PEERCRED), for log lines.
inline std::string describe_peer(unix_proto::socket& socket) {
    struct ucred cred {};
    socklen_t len = sizeof cred;
    if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return "unix peer (credentials unavailable)";
    return fmt::format("unix peer pid {} uid {}", cred.pid, cred.uid);
}

inline std::string describe_peer(tcp::socket& socket) {
    error_code ec;
    const auto remote = socket.remote_endpoint(ec);
    if (ec) return "tcp peer (address unavailable)";
    return fmt::format("tcp peer {}:{}", remote.address().to_string(), remote.port());
}

template <class Protocol>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Protocol>> {
public:
    using Socket = typename Protocol::socket;

    Session(Socket socket, ServerState& state, std::string peer, std::string key)
        : socket_(std::move(socket)),
          timer_(socket_.get_executor()),
          auth_timer_(socket_.get_executor()),
          state_(state),
          peer_(std::move(peer)),
          key_(std::move(key)) {}

    ~Session() override {
        // Only reached without finish() when the io_context is torn down at shutdown.
        if (!finished_) release_slot();
    }

    // Joins the pending connections (the listener has made room) and starts reading. The token
    // must arrive within auth_timeout, whatever request_timeout allows.
    void start() {
        pending_pos_ = state_.pending.insert(state_.pending.end(), this);
        in_pending_ = true;
        auth_timer_.expires_after(state_.options.auth_timeout);
        auth_timer_.async_wait([self = this->shared_from_this()](error_code ec) {
            if (ec || self->finished_ || self->authenticated_) return;
            self->finish();
        });
        read_next();
    }

    void stop() override { finish(); }

    const std::string& peer_key() const override { return key_; }

    void evict() override {
        if (finished_) return;
        counted_ = true;
        state_.count(&RefusalCounts::evicted, state_.total_evicted);
        finish();
    }

private:
    // Leaves the pending list or gives back the authenticated slot, exactly once.
    void release_slot() {
        if (in_pending_) {
            state_.pending.erase(pending_pos_);
            in_pending_ = false;
        }
        if (authenticated_) --state_.authenticated_connections;
    }

    // Called for the first request header that carries the token: the connection moves from the
    // pending list to an authenticated slot, if one is free. False when it was refused instead.
    bool authenticate() {
        if (state_.authenticated_connections >= state_.options.max_connections) {
            counted_ = true;
            state_.count(&RefusalCounts::over_limit, state_.total_over_limit);
            const unsigned version = parser_->get().version() == 10 ? 10 : 11;
            reply_and_close(make_error_result(
                http::status::service_unavailable,
                fmt::format("{} connections with the turn token are already open; close one or "
                            "reuse it",
                            state_.options.max_connections),
                version, false));
            return false;
        }
        state_.pending.erase(pending_pos_);
        in_pending_ = false;
        authenticated_ = true;
        ++state_.authenticated_connections;
        auth_timer_.cancel();
        return true;
    }

    // Each request gets its own deadline covering header, body and response (docs/design.md §9:
    // slow and silent clients are dropped). The generation makes a stale expiry harmless.
    void arm_deadline() {
        const std::uint64_t generation = ++deadline_generation_;
        timer_.expires_after(state_.options.request_timeout);
        timer_.async_wait([self = this->shared_from_this(), generation](error_code ec) {
            if (ec || generation != self->deadline_generation_ || self->finished_) return;
            // Already answered and logged; or an idle keep-alive connection, which is normal
            // client behaviour and not worth a line.
            // A connection without the token is counted in the summary, not logged one by one.
            if (self->lingering_ || !self->authenticated_ ||
                (self->served_ > 0 && self->buffer_.size() == 0))
                return self->finish();
            self->state_.log.line(
                fmt::format("dropped connection from {}: no complete request within {} ms",
                            self->peer_, self->state_.options.request_timeout.count()));
            self->finish();
        });
    }

    void read_next() {
        parser_.emplace();
        parser_->header_limit(kHeaderLimit);
        // No limit while the header is read: the header-stage check answers 401 before 413, and
        // Beast 1.74 compares Content-Length against an unset limit as if it were exceeded.
        // Content-Length bodies are bounded by that check, chunked ones by the limit set below.
        parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
        arm_deadline();
        http::async_read_header(
            stream_, buffer_, *parser_,
            [self = this->shared_from_this()](error_code ec, std::size_t) { self->on_header(ec); });
    }

    void on_header(error_code ec) {
        if (finished_) return;
        if (ec) return on_read_error(ec);
        if (!authenticated_ && presents_valid_token(parser_->get(), state_.context) &&
            !authenticate())
            return;
        const auto announced = parser_->content_length();
        std::optional<std::uint64_t> content_length;
        if (announced) content_length = *announced;
        if (auto rejected = check_request_header(parser_->get(), content_length, state_.context))
            return reply_and_close(std::move(*rejected));
        parser_->body_limit(state_.options.max_body_bytes);
        const auto expect = parser_->get()[http::field::expect];
        if (beast::iequals(expect, "100-continue")) {
            // The client waits for this before sending its body (curl does for large bodies).
            interim_ = {};
            interim_.result(http::status::continue_);
            interim_.version(parser_->get().version());
            http::async_write(socket_, interim_,
                              [self = this->shared_from_this()](error_code ec, std::size_t) {
                                  if (self->finished_) return;
                                  if (ec) return self->finish();
                                  self->read_body();
                              });
            return;
        }
        read_body();
    }

    void read_body() {
        http::async_read(
            stream_, buffer_, *parser_,
            [self = this->shared_from_this()](error_code ec, std::size_t) { self->on_body(ec); });
    }

    void on_body(error_code ec) {
        if (finished_) return;
        if (ec) return on_read_error(ec);
        result_ = handle_request(parser_->get(), state_.context);
        ++served_;
        if (!result_.reason.empty()) log_rejection(result_);
        http::async_write(socket_, result_.response,
                          [self = this->shared_from_this()](error_code ec, std::size_t) {
                              if (self->finished_) return;
                              if (ec) return self->finish();
                              if (!self->result_.response.keep_alive()) return self->linger();
                              self->read_next();
                          });
    }

    void on_read_error(error_code ec) {
        const unsigned version = parser_->get().version() == 10 ? 10 : 11;
        if (ec == http::error::body_limit)
            return reply_and_close(
                make_error_result(http::status::payload_too_large,
                                  fmt::format("request body over the limit of {} bytes",
                                              state_.options.max_body_bytes),
                                  version, false));
        if (ec == http::error::header_limit)
            return reply_and_close(make_error_result(
                http::status::request_header_fields_too_large,
                fmt::format("request header over the limit of {} bytes", kHeaderLimit), version,
                false));
        if (ec == http::error::buffer_overflow)
            return reply_and_close(
                make_error_result(http::status::bad_request,
                                  fmt::format("a chunk size line or trailer over the limit of {} "
                                              "bytes",
                                              kReadBufferLimit),
                                  version, false));
        // end_of_stream: the client closed between requests; partial_message: it went away
        // mid-request. Neither can read an answer.
        if (ec == http::error::end_of_stream || ec == http::error::partial_message) return finish();
        if (ec.category() == http::make_error_code(http::error::bad_method).category())
            return reply_and_close(make_error_result(http::status::bad_request,
                                                     "malformed HTTP/1.1 request", version, false));
        finish(); // a socket error or our own cancellation: nobody to answer
    }

    void log_rejection(const HandlerResult& result) {
        state_.log.line(fmt::format("rejected request from {}: {} {}", peer_,
                                    result.response.result_int(), result.reason));
    }

    void reply_and_close(HandlerResult result) {
        log_rejection(result);
        result_ = std::move(result);
        result_.response.keep_alive(false);
        http::async_write(socket_, result_.response,
                          [self = this->shared_from_this()](error_code ec, std::size_t) {
                              if (self->finished_) return;
                              if (ec) return self->finish();
                              self->linger();
                          });
    }

    // Closing with unread input makes TCP send a reset, which can destroy the response before
    // the client reads it; so half-close and discard what still arrives (bounded in bytes, and
    // in time by the request deadline), then close.
    void linger() {
        lingering_ = true;
        error_code ignored;
        socket_.shutdown(Socket::shutdown_send, ignored);
        drain();
    }

    void drain() {
        stream_.async_read_some(asio::buffer(scratch_),
                                [self = this->shared_from_this()](error_code ec, std::size_t n) {
                                    if (self->finished_) return;
                                    self->drained_ += n;
                                    if (ec || self->drained_ > kMaxDrainBytes)
                                        return self->finish();
                                    self->drain();
                                });
    }

    void finish() {
        if (finished_) return;
        finished_ = true;
        if (!authenticated_ && !counted_ && !state_.stopping)
            state_.count(&RefusalCounts::no_token, state_.total_no_token);
        error_code ignored;
        socket_.shutdown(Socket::shutdown_both, ignored);
        close_socket();
        timer_.cancel();
        auth_timer_.cancel();
        release_slot();
    }

    // A unix socket may hold descriptors the box queued and nobody read: its close would drop
    // them here, so it is closed as a box's connection (box_descriptors.h). A tcp socket carries
    // none.
    void close_socket() {
        error_code ignored;
        if constexpr (std::is_same_v<Protocol, unix_proto>) {
            socket_.cancel(ignored);
            const int fd = socket_.release(ignored);
            if (!ignored) return close_box_connection(fd);
        }
        socket_.close(ignored);
    }

    Socket socket_;
    RightsTakingStream<Socket> stream_{socket_};
    asio::steady_timer timer_;
    asio::steady_timer auth_timer_;
    ServerState& state_;
    std::string peer_;
    std::string key_; // peer_key(): whom the pending limit counts it against
    beast::flat_buffer buffer_{kReadBufferLimit};
    std::optional<http::request_parser<http::string_body>> parser_;
    http::response<http::empty_body> interim_;
    HandlerResult result_; // kept here: async_write needs it alive until completion
    std::array<char, 4096> scratch_{};
    std::size_t drained_ = 0;
    std::uint64_t deadline_generation_ = 0;
    std::uint64_t served_ = 0; // requests answered on this connection
    std::list<SessionBase*>::iterator pending_pos_;
    bool in_pending_ = false;
    bool authenticated_ = false;
    bool counted_ = false; // already counted as evicted or over the limit
    bool lingering_ = false;
    bool finished_ = false;
};

} // namespace radial::socket::detail
