#include "daemon/metrics_server.h"

#include <fmt/format.h>
#include <radial/internal/unique_fd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cerrno>
#include <cstring>
#include <list>
#include <map>
#include <optional>
#include <thread>

#include "fs/socket_file_access.h"
#include "log/logger.h"
#include "socket/box_descriptors.h"
#include "socket/listener_close.h"
#include "socket/peer_key.h"
#include "socket/rights_taking_stream.h"

namespace radial::daemon {

namespace {
namespace asio = boost::asio;
namespace http = boost::beast::http;
using error_code = boost::system::error_code;
using local = asio::local::stream_protocol;
using tcp = asio::ip::tcp;

// A connection as the limit sees it: whom it came from, and how to close it.
class Slot {
public:
    virtual ~Slot() = default;
    virtual void close() = 0;
};

// What every connection shares; touched on the server's thread only.
struct Shared {
    const MetricsServerOptions& options;
    bool stopping = false;
    struct Held {
        std::string peer; // socket/peer_key.h: a uid, or the address of a peer beyond this host
        Slot* slot;
        bool closed = false;
    };
    std::list<Held> held; // the open connections, oldest first

    std::size_t open() const {
        return static_cast<std::size_t>(
            std::count_if(held.begin(), held.end(), [](const Held& h) { return !h.closed; }));
    }
    // At the limit: whether a newcomer from `peer` may come in, having closed the oldest
    // connection of the peer holding the most when that is another peer. A peer holding as many
    // as any other is refused its newcomer, so a local user holding every slot with idle
    // connections cannot keep a scraper from another address or uid out.
    bool make_room_for(const std::string& peer) {
        std::map<std::string, std::size_t> count;
        for (const auto& h : held)
            if (!h.closed) ++count[h.peer];
        std::size_t most = 0;
        for (const auto& [p, n] : count) most = std::max(most, n);
        if (count[peer] >= most) return false;
        for (auto& h : held)
            if (!h.closed && count[h.peer] == most) {
                h.slot->close();
                return true;
            }
        return false;
    }
};

// One connection: one request, one response, then closed (see the header for the bounds).
template <class Socket>
class Connection : public Slot, public std::enable_shared_from_this<Connection<Socket>> {
public:
    Connection(Socket socket, Shared& shared, std::string peer)
        : socket_(std::move(socket)),
          deadline_(socket_.get_executor()),
          buffer_(shared.options.max_request_bytes),
          shared_(shared),
          held_(shared.held.insert(shared.held.end(), {std::move(peer), this})) {
        parser_.header_limit(static_cast<std::uint32_t>(shared.options.max_request_bytes));
        parser_.body_limit(0);
    }
    ~Connection() override {
        if (socket_.is_open()) close_socket(); // the server's end: handlers destroyed unrun
        shared_.held.erase(held_);
    }

    void start() {
        deadline_.expires_after(shared_.options.request_timeout);
        // The timer holds only a weak reference: a finished connection is not kept for it.
        deadline_.async_wait([weak = this->weak_from_this()](error_code ec) {
            if (auto self = weak.lock(); self && !ec) self->close();
        });
        http::async_read(
            stream_, buffer_, parser_,
            [self = this->shared_from_this()](error_code ec, std::size_t) { self->on_read(ec); });
    }

private:
    void on_read(error_code ec) {
        if (ec || shared_.stopping) return close(); // a malformed, oversized or abandoned request
        const auto& req = parser_.get();
        std::string_view target(req.target().data(), req.target().size());
        target = target.substr(0, target.find('?'));
        res_.version(11);
        res_.keep_alive(false);
        if (target != "/metrics") {
            res_.result(http::status::not_found);
            res_.set(http::field::content_type, "text/plain; charset=utf-8");
            res_.body() = "not found: the metrics are at /metrics\n";
        } else if (req.method() != http::verb::get && req.method() != http::verb::head) {
            res_.result(http::status::method_not_allowed);
            res_.set(http::field::allow, "GET, HEAD");
        } else {
            res_.result(http::status::ok);
            res_.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
            try {
                res_.body() = shared_.options.render();
            } catch (const std::exception& e) {
                res_.result(http::status::internal_server_error);
                res_.body() = std::string(e.what()) + "\n";
            }
            if (req.method() == http::verb::head) {
                res_.content_length(res_.body().size());
                res_.body().clear();
            }
        }
        if (req.method() != http::verb::head) res_.prepare_payload();
        http::async_write(
            socket_, res_,
            [self = this->shared_from_this()](error_code, std::size_t) { self->close(); });
    }

    void close() override {
        held_->closed = true; // its slot is free now, though its handlers have yet to end
        deadline_.cancel();
        close_socket();
    }

    // A unix peer may have queued descriptors nobody read: closed as a box's connection is
    // (socket/box_descriptors.h), never left for the close to drop on this thread.
    void close_socket() {
        error_code ignored;
        socket_.cancel(ignored);
        const int fd = socket_.release(ignored);
        if (!ignored) return radial::socket::close_box_connection(fd);
        socket_.close(ignored);
    }

    Socket socket_;
    // Reads take the descriptors a unix peer attaches (socket/rights_taking_stream.h).
    radial::socket::detail::RightsTakingStream<Socket> stream_{socket_};
    asio::steady_timer deadline_;
    boost::beast::flat_buffer buffer_;
    http::request_parser<http::empty_body> parser_;
    http::response<http::string_body> res_;
    Shared& shared_;
    std::list<Shared::Held>::iterator held_;
};

// Accepts with accept4(SOCK_CLOEXEC) rather than async_accept, as the turn socket does
// (socket/turn_socket_server.cpp): the daemon spawns docker and sbx, which must not inherit a
// connection.
template <class Protocol>
class Listener {
public:
    Listener(asio::io_context& ioc, Protocol protocol, Shared& shared)
        : acceptor_(ioc), protocol_(protocol), retry_(ioc), shared_(shared) {}
    typename Protocol::acceptor& acceptor() { return acceptor_; }

    void accept_next() {
        acceptor_.async_wait(Protocol::acceptor::wait_read, [this](error_code ec) {
            if (shared_.stopping || ec == asio::error::operation_aborted) return;
            if (!ec) {
                const int fd = ::accept4(acceptor_.native_handle(), nullptr, nullptr,
                                         SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd >= 0) {
                    std::string peer = radial::socket::peer_key(fd);
                    if (shared_.open() >= shared_.options.max_connections &&
                        !shared_.make_room_for(peer)) {
                        // Full, and its peer holds the most: it waits for nothing.
                        radial::socket::close_box_connection(fd);
                    } else {
                        typename Protocol::socket socket(acceptor_.get_executor());
                        socket.assign(protocol_, fd, ec);
                        if (ec)
                            ::close(fd);
                        else
                            std::make_shared<Connection<typename Protocol::socket>>(
                                std::move(socket), shared_, std::move(peer))
                                ->start();
                    }
                } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                           errno != ECONNABORTED) {
                    ec = error_code(errno, boost::system::system_category());
                }
            }
            if (ec) {
                // EMFILE and the like: back off instead of spinning, and keep serving.
                log::warn("daemon", "metrics: accepting a connection: {}; retrying", ec.message());
                retry_.expires_after(std::chrono::milliseconds(100));
                retry_.async_wait([this](error_code wait_ec) {
                    if (!wait_ec && !shared_.stopping) accept_next();
                });
                return;
            }
            accept_next();
        });
    }

    void open(const typename Protocol::endpoint& endpoint, const std::string& what) {
        const int fd = ::socket(protocol_.family(), protocol_.type() | SOCK_CLOEXEC | SOCK_NONBLOCK,
                                protocol_.protocol());
        if (fd < 0) fail(what, error_code(errno, boost::system::system_category()));
        error_code ec;
        acceptor_.assign(protocol_, fd, ec);
        if (ec) {
            ::close(fd);
            fail(what, ec);
        }
        if constexpr (std::is_same_v<Protocol, tcp>)
            acceptor_.set_option(typename tcp::acceptor::reuse_address(true), ec);
        if (!ec) acceptor_.bind(endpoint, ec);
        if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
        if (ec) fail(what, ec);
    }

    [[noreturn]] static void fail(const std::string& what, error_code ec) {
        throw MetricsServerError(
            fmt::format("run.metrics: cannot serve the metrics on '{}': {}; {}", what, ec.message(),
                        ec == boost::system::errc::address_in_use
                            ? "another process listens there: pick another address or stop it"
                        : ec == boost::system::errc::no_such_file_or_directory
                            ? "create the socket's directory first"
                            : "pick an address radiald may listen on"));
    }

    void stop() {
        if constexpr (std::is_same_v<Protocol, local>) {
            radial::socket::close_unix_listener(acceptor_);
        } else {
            error_code ignored;
            acceptor_.close(ignored);
        }
        retry_.cancel();
    }

private:
    typename Protocol::acceptor acceptor_;
    Protocol protocol_;
    asio::steady_timer retry_;
    Shared& shared_;
};

// A unix socket path is free when nothing is there or a socket nobody accepts on (a daemon that
// was killed); anything else is refused, never removed.
void clear_unix_path(const std::string& path, const std::string& what) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;
    if (!S_ISSOCK(st.st_mode))
        throw MetricsServerError(fmt::format(
            "run.metrics: cannot serve the metrics on '{}': '{}' exists and is not a socket; "
            "remove it or name another path",
            what, path));
    // Non-blocking: a listener whose backlog is full would hold a blocking connect, and so the
    // daemon's start, for as long as it does not accept (EAGAIN says it is alive). Only a refusal
    // says nobody listens; anything else is not known, and the socket is left as it is.
    const internal::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd)
        throw MetricsServerError(
            fmt::format("run.metrics: cannot serve the metrics on '{}': a socket to probe '{}': {}",
                        what, path, std::strerror(errno)));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    const int rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    const int err = rc == 0 ? 0 : errno;
    if (rc == 0 || err == EAGAIN || err == EINPROGRESS)
        throw MetricsServerError(fmt::format(
            "run.metrics: cannot serve the metrics on '{}': another process serves on that "
            "socket; stop it or name another path",
            what));
    if (err != ECONNREFUSED)
        throw MetricsServerError(fmt::format(
            "run.metrics: cannot serve the metrics on '{}': cannot tell whether a process serves "
            "on '{}' ({}); remove it if none does, or name another path",
            what, path, std::strerror(err)));
    ::unlink(path.c_str());
}

} // namespace

struct MetricsServer::Impl {
    MetricsServerOptions options;
    std::string address;
    std::uint16_t port = 0;
    dev_t socket_dev = 0; // the unix socket we bound, unlinked only if still ours
    ino_t socket_ino = 0;
    Shared shared{options, false, {}};
    asio::io_context ioc{1};
    std::unique_ptr<Listener<local>> unix_listener;
    std::unique_ptr<Listener<tcp>> tcp_listener;
    std::thread thread;

    void unlink_ours() const {
        if (options.endpoint.kind != config::MetricsEndpoint::Kind::unix_socket || socket_ino == 0)
            return;
        struct stat st {};
        if (::lstat(options.endpoint.path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) &&
            st.st_dev == socket_dev && st.st_ino == socket_ino)
            ::unlink(options.endpoint.path.c_str());
    }
};

void MetricsServerOptions::check() const {
    if (!render || max_connections == 0 || max_request_bytes == 0)
        throw MetricsServerError("metrics server: no render function or a zero limit");
}

MetricsServer::MetricsServer(MetricsServerOptions options) : impl_(std::make_unique<Impl>()) {
    auto& m = *impl_;
    m.options = std::move(options);
    const auto& e = m.options.endpoint;
    const std::string what = config::to_string(e);
    m.options.check();
    try {
        if (e.kind == config::MetricsEndpoint::Kind::unix_socket) {
            clear_unix_path(e.path, what);
            m.unix_listener = std::make_unique<Listener<local>>(m.ioc, local(), m.shared);
            m.unix_listener->open(local::endpoint(e.path), what);
            struct stat st {};
            if (::lstat(e.path.c_str(), &st) == 0) {
                m.socket_dev = st.st_dev;
                m.socket_ino = st.st_ino;
            }
            // Through the file bound, never a link put at its name since (a directory others
            // may write).
            if (const auto why = fs_util::set_socket_file_access(e.path, 0660, std::nullopt);
                !why.empty())
                throw MetricsServerError(
                    fmt::format("run.metrics: cannot serve the metrics on '{}': {}", what, why));
            m.address = what;
            m.unix_listener->accept_next();
        } else {
            error_code ec;
            const auto addr = asio::ip::make_address(e.host, ec);
            if (ec) Listener<tcp>::fail(what, ec);
            m.tcp_listener = std::make_unique<Listener<tcp>>(
                m.ioc, addr.is_v4() ? tcp::v4() : tcp::v6(), m.shared);
            m.tcp_listener->open(tcp::endpoint(addr, e.port), what);
            m.port = m.tcp_listener->acceptor().local_endpoint(ec).port();
            config::MetricsEndpoint bound = e;
            bound.port = m.port;
            m.address = config::to_string(bound);
            m.tcp_listener->accept_next();
        }
    } catch (...) {
        impl_->unlink_ours();
        throw;
    }
    m.thread = std::thread([&m] {
        for (;;) {
            try {
                m.ioc.run();
                return;
            } catch (const std::exception& ex) {
                // A handler threw (bad_alloc): the endpoint keeps serving the next scrape.
                log::error("daemon", "metrics: serving a scrape: {}", ex.what());
            }
        }
    });
}

MetricsServer::~MetricsServer() {
    auto& m = *impl_;
    // Connections still open are dropped: their handlers are destroyed with the io_context,
    // before `shared`, which they point into.
    m.ioc.stop();
    if (m.thread.joinable()) m.thread.join();
    m.shared.stopping = true;
    if (m.unix_listener) m.unix_listener->stop();
    if (m.tcp_listener) m.tcp_listener->stop();
    m.unlink_ours();
    radial::socket::await_box_socket_closes(std::chrono::seconds(2));
}

const std::string& MetricsServer::address() const noexcept { return impl_->address; }

std::uint16_t MetricsServer::port() const noexcept { return impl_->port; }

} // namespace radial::daemon
