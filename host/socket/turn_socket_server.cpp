// host/socket/turn_socket_server.cpp — see turn_socket_server.h.
//
// Shape: one io_context run by one serving thread. A Listener accepts on the bound acceptor and
// hands each connection to a Session (turn_socket_session.h). Everything runs on the serving
// thread except the constructor's setup and the destructor's join, so shared state needs no locks.
#include "socket/turn_socket_server.h"

#include <errno.h>
#include <fmt/format.h>
#include <radial/internal/names.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "socket/listener_close.h"
#include "socket/peer_key.h"
#include "socket/turn_socket_session.h"

namespace radial::socket {

namespace {

using detail::describe_peer;
using detail::error_code;
using detail::ServerState;
using detail::Session;
using detail::tcp;
using detail::unix_proto;
namespace asio = boost::asio;

std::string errno_text(int err) { return ::strerror(err); }

class ListenerBase {
public:
    virtual ~ListenerBase() = default;
    virtual void start() = 0;
    virtual void stop() = 0;
};

template <class Protocol>
class Listener final : public ListenerBase {
public:
    Listener(typename Protocol::acceptor acceptor, Protocol protocol, ServerState& state)
        : acceptor_(std::move(acceptor)),
          protocol_(protocol),
          retry_(acceptor_.get_executor()),
          state_(state) {}

    void start() override { accept_next(); }

    void stop() override {
        if constexpr (std::is_same_v<Protocol, unix_proto>) {
            close_unix_listener(acceptor_);
        } else {
            error_code ignored;
            acceptor_.close(ignored);
        }
        retry_.cancel();
    }

private:
    // Waits for a pending connection, then takes it with accept4(SOCK_CLOEXEC) rather than
    // async_accept. Rationale: Asio creates accepted sockets without close-on-exec, and the host
    // spawns processes (docker, sbx) while turns run; an inherited copy would keep a connection
    // open after the host closed it, and outlive the turn.
    void accept_next() {
        acceptor_.async_wait(Protocol::acceptor::wait_read, [this](error_code ec) {
            if (state_.stopping || ec == asio::error::operation_aborted) return;
            if (!ec) {
                const int fd = ::accept4(acceptor_.native_handle(), nullptr, nullptr,
                                         SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd >= 0) {
                    typename Protocol::socket socket(acceptor_.get_executor());
                    socket.assign(protocol_, fd, ec);
                    if (ec)
                        ::close(fd); // assign failed, so the fd still has no owner
                    else
                        admit(std::move(socket));
                } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
                           errno == ECONNABORTED) {
                    return accept_next(); // the client went away, or a spurious wakeup
                } else {
                    ec = error_code(errno, boost::system::system_category());
                }
            }
            if (ec) {
                // EMFILE and the like: back off instead of spinning, and keep serving.
                state_.log.line(
                    fmt::format("accepting a turn socket connection: {}; retrying", ec.message()));
                retry_.expires_after(std::chrono::milliseconds(100));
                retry_.async_wait([this](error_code wait_ec) {
                    if (!wait_ec && !state_.stopping) accept_next();
                });
                return;
            }
            accept_next();
        });
    }

    // Every new connection is admitted: when the pending connections (those without the token
    // yet) are at their limit, one of them is evicted to make room — the oldest of the peer that
    // holds the most of them (by tcp address or unix uid). So connections that never
    // authenticate cannot keep the box out, a peer flooding the port from one address evicts its
    // own connections before the pending one of a box on another address (docs/design.md §9.6
    // says what it cannot tell apart), and only the box's own connections, which hold the token,
    // ever occupy the max_connections slots.
    void admit(typename Protocol::socket socket) {
        std::string peer = describe_peer(socket);
        std::string key = radial::socket::peer_key(socket.native_handle());
        std::erase_if(state_.sessions, [](const auto& w) { return w.expired(); });
        while (state_.pending.size() >= state_.options.max_pending_connections)
            evict_from_busiest_peer();
        auto session = std::make_shared<Session<Protocol>>(std::move(socket), state_,
                                                           std::move(peer), std::move(key));
        state_.sessions.push_back(session);
        session->start();
    }

    // Evicts the oldest pending connection of the peer that holds the most of them (ties: the
    // peer whose oldest is oldest). It removes itself from the list.
    void evict_from_busiest_peer() {
        std::map<std::string, std::size_t> held;
        for (const auto* s : state_.pending) ++held[s->peer_key()];
        std::size_t most = 0;
        for (const auto& [key, n] : held) most = std::max(most, n);
        for (auto* s : state_.pending)
            if (held[s->peer_key()] == most) {
                s->evict();
                return;
            }
    }

    typename Protocol::acceptor acceptor_;
    Protocol protocol_;
    asio::steady_timer retry_;
    ServerState& state_;
};

// Opens `acceptor` on a socket created close-on-exec and non-blocking (see Listener).
template <class Acceptor, class Protocol>
error_code open_cloexec(Acceptor& acceptor, const Protocol& protocol) {
    const int fd = ::socket(protocol.family(), protocol.type() | SOCK_CLOEXEC | SOCK_NONBLOCK,
                            protocol.protocol());
    if (fd < 0) return error_code(errno, boost::system::system_category());
    error_code ec;
    acceptor.assign(protocol, fd, ec);
    if (ec) ::close(fd); // not adopted: still ours to close
    return ec;
}

std::string parent_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == 0 ? std::string("/") : path.substr(0, slash);
}

} // namespace

// Removes what the constructor created on disk, whether it completes or throws.
struct UnixPathCleanup {
    std::string socket_path;
    bool socket_bound = false;
    dev_t socket_dev = 0;
    ino_t socket_ino = 0;
    std::string created_dir; // empty unless this server made it
    const std::function<void(std::string_view)>* log_line = nullptr;

    UnixPathCleanup() = default;
    UnixPathCleanup(const UnixPathCleanup&) = delete;
    UnixPathCleanup& operator=(const UnixPathCleanup&) = delete;

    ~UnixPathCleanup() {
        if (socket_bound) {
            // Unlink only our own socket: the directory may belong to the box user by now, and
            // whatever it put at the path is not ours to delete.
            struct stat st {};
            if (::lstat(socket_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) &&
                st.st_dev == socket_dev && st.st_ino == socket_ino)
                ::unlink(socket_path.c_str());
        }
        if (!created_dir.empty() && ::rmdir(created_dir.c_str()) != 0 && errno != ENOENT) {
            const int err = errno;
            if (log_line && *log_line)
                (*log_line)(fmt::format(
                    "removing turn socket directory '{}': {}; the box left files in it, "
                    "remove it by hand",
                    created_dir, errno_text(err)));
        }
    }
};

struct TurnSocketServer::Impl {
    TurnSocketOptions options;
    RecordSink sink;
    std::string address;
    std::uint16_t port = 0;
    UnixPathCleanup cleanup; // destroyed after everything below has closed its sockets
    ServerState state;       // outlives the io_context: sessions touch it as they die
    asio::io_context ioc{1};
    std::unique_ptr<ListenerBase> listener;
    asio::steady_timer summary_timer{ioc};
    time::SteadyPoint last_summary; // on options.clock, as is next_summary
    time::SteadyPoint next_summary;
    std::thread thread;

    Impl(TurnSocketOptions opts, RecordSink record_sink)
        : options(std::move(opts)), sink(std::move(record_sink)), state(options, sink) {
        validate();
        if (options.transport == Transport::unix_socket)
            bind_unix();
        else
            bind_tcp();
        listener->start();
        last_summary = options.clock->steady();
        schedule_summary();
        // Every request runs here; a handler exception (only std::bad_alloc is possible) is
        // logged and serving resumes rather than leaving the turn without its socket.
        thread = std::thread([this] {
            for (;;) {
                try {
                    ioc.run();
                    return;
                } catch (const std::exception& e) {
                    state.log.line(fmt::format("serving turn socket '{}': {}", address, e.what()));
                }
            }
        });
    }

    ~Impl() {
        if (thread.joinable()) {
            // Close the acceptor and every connection on the serving thread (their only user),
            // then stop the loop: handlers still queued are destroyed, never run.
            asio::post(ioc, [this] {
                state.stopping = true;
                summary_timer.cancel();
                log_summary();
                listener->stop();
                for (auto& weak : state.sessions)
                    if (auto session = weak.lock()) session->stop();
                ioc.stop();
            });
            thread.join();
        }
        // The bounded closes of connections that still held bytes end within about a second:
        // none is left mid-exit when the process ends (box_descriptors.h).
        await_box_socket_closes(std::chrono::seconds(2));
    }

    // Every summary_interval, one line for the refusals since the previous one (if any).
    void schedule_summary() {
        next_summary = options.clock->steady() + options.summary_interval;
        await_summary();
    }

    // The timer runs on real time and the interval on options.clock: it fires when the clock
    // says it may be due (at once for the system clock, in slices for a test's ManualClock) and
    // is set again while it is not.
    void await_summary() {
        summary_timer.expires_after(options.clock->poll_timeout(next_summary));
        summary_timer.async_wait([this](error_code ec) {
            if (ec || state.stopping) return;
            if (options.clock->steady() < next_summary) return await_summary();
            log_summary();
            schedule_summary();
        });
    }

    void log_summary() {
        const auto now = options.clock->steady();
        const auto span = std::chrono::ceil<std::chrono::seconds>(now - last_summary).count();
        last_summary = now;
        state.log_summary(std::max<long long>(span, 1));
    }

    [[noreturn]] void fail(std::string_view what) const {
        throw SocketError(fmt::format("binding turn socket '{}': {}", address, what));
    }

    void validate() {
        address = options.transport == Transport::unix_socket
                      ? "unix://" + options.unix_path
                      : fmt::format("tcp://{}:{}", options.tcp_host, options.tcp_port);
        if (options.token.size() < 32)
            fail(
                "the bearer token is shorter than 32 characters; mint it with "
                "mint_turn_token()");
        if (options.record_type.empty())
            fail("no record type is set; set the one type this turn may write");
        // It is compared with client JSON and named in 403 answers, so keep it a plain word: the
        // request's own rule (radial/internal/names.h), not a looser one of this layer.
        if (!internal::is_record_type(options.record_type))
            fail(
                "the record type is not 1 to 64 characters of A-Z, a-z, 0-9 and . _ : / -; use a "
                "plain identifier such as 'turn.result'");
        if (options.clock == nullptr) fail("no clock is set; leave the default, the system clock");
        if (options.max_body_bytes == 0 || options.max_connections == 0 ||
            options.max_pending_connections == 0 || options.request_timeout.count() <= 0 ||
            options.auth_timeout.count() <= 0 || options.summary_interval.count() <= 0 ||
            options.max_logged_rejections == 0)
            fail(
                "max_body_bytes, max_connections, max_pending_connections, request_timeout, "
                "auth_timeout, summary_interval and max_logged_rejections must all be positive");
    }

    void bind_unix() {
        const std::string& path = options.unix_path;
        if (path.empty() || path.front() != '/')
            fail("the unix socket path is not absolute; give an absolute host path");
        if (path.find('\0') != std::string::npos) fail("the unix socket path contains a NUL byte");
        if (path.back() == '/') fail("the unix socket path names a directory; add a file name");
        if (path.size() > kMaxUnixPathBytes)
            fail(
                fmt::format("the path is {} bytes, over the unix socket limit of {} bytes "
                            "(sun_path); use a shorter state directory so the per-turn socket "
                            "path fits",
                            path.size(), kMaxUnixPathBytes));

        const std::string dir = parent_of(path);
        cleanup.log_line = &options.log_line;
        struct stat st {};
        if (::lstat(dir.c_str(), &st) != 0) {
            if (errno != ENOENT)
                fail(fmt::format("inspecting its directory '{}': {}", dir, errno_text(errno)));
            if (::mkdir(dir.c_str(), 0700) != 0)
                fail(
                    fmt::format("creating its directory '{}': {}; create the parent directory "
                                "first",
                                dir, errno_text(errno)));
            cleanup.created_dir = dir;
            if (::lstat(dir.c_str(), &st) != 0)
                fail(fmt::format("inspecting its directory '{}': {}", dir, errno_text(errno)));
        } else if (!S_ISDIR(st.st_mode)) {
            fail(fmt::format("'{}' is not a directory; give each turn its own socket directory",
                             dir));
        }
        // Before the socket is handed to the box user, the directory is the host's alone: one
        // the box user (or anyone else) owns could hold a link where the chmod below looks.
        if (options.unix_owner && st.st_uid != ::geteuid())
            fail(
                fmt::format("its directory '{}' belongs to uid {}, not to radiald; give each "
                            "turn a socket directory of radiald's own",
                            dir, st.st_uid));
        if (options.unix_owner && (st.st_mode & (S_IWOTH | S_ISVTX)))
            fail(
                fmt::format("its directory '{}' is shared (mode {:o}) and would be handed to the "
                            "box user; give each turn its own 0700 socket directory",
                            dir, st.st_mode & 07777));

        unix_proto::acceptor acceptor(ioc);
        error_code ec = open_cloexec(acceptor, unix_proto());
        if (!ec) acceptor.bind(unix_proto::endpoint(path), ec);
        if (ec == asio::error::address_in_use)
            fail(
                "the path already exists; remove the stale socket or use a fresh per-turn "
                "directory");
        if (ec) fail(ec.message());
        // From here on the file is ours to remove, whatever fails next.
        struct stat sock {};
        if (::lstat(path.c_str(), &sock) != 0)
            fail(fmt::format("inspecting the bound socket: {}", errno_text(errno)));
        cleanup.socket_path = path;
        cleanup.socket_dev = sock.st_dev;
        cleanup.socket_ino = sock.st_ino;
        cleanup.socket_bound = true;

        // The directory is still the host's alone, so nobody can swap the path under these calls;
        // only afterwards is the directory handed to the box user.
        if (::chmod(path.c_str(), 0600) != 0)
            fail(fmt::format("setting mode 0600 on the socket: {}", errno_text(errno)));
        if (options.unix_owner) {
            const auto [uid, gid] = *options.unix_owner;
            if (::lchown(path.c_str(), uid, gid) != 0)
                fail(
                    fmt::format("handing the socket to uid {} gid {}: {}; radiald must run as "
                                "root (or hold CAP_CHOWN) to hand the socket to the box user",
                                uid, gid, errno_text(errno)));
            if (::chmod(dir.c_str(), 0700) != 0)
                fail(fmt::format("setting mode 0700 on '{}': {}", dir, errno_text(errno)));
            if (::lchown(dir.c_str(), uid, gid) != 0)
                fail(
                    fmt::format("handing '{}' to uid {} gid {}: {}; radiald must run as root "
                                "(or hold CAP_CHOWN)",
                                dir, uid, gid, errno_text(errno)));
        }
        acceptor.listen(asio::socket_base::max_listen_connections, ec);
        if (ec) fail(fmt::format("listening: {}", ec.message()));
        listener = std::make_unique<Listener<unix_proto>>(std::move(acceptor), unix_proto(), state);
    }

    void bind_tcp() {
        error_code ec;
        const auto ip = asio::ip::make_address(options.tcp_host, ec);
        if (ec)
            fail(
                fmt::format("'{}' is not an IP address; set run.turnSocketHost to an IPv4 or "
                            "IPv6 literal such as 127.0.0.1",
                            options.tcp_host));
        const tcp::endpoint endpoint(ip, options.tcp_port);
        tcp::acceptor acceptor(ioc);
        ec = open_cloexec(acceptor, endpoint.protocol());
        // Lets a fixed port be rebound while an earlier turn's connections sit in TIME_WAIT.
        if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
        if (!ec) acceptor.bind(endpoint, ec);
        if (ec == asio::error::address_in_use)
            fail("the port is in use; choose another port, or 0 for an ephemeral one");
        if (ec) fail(ec.message());
        acceptor.listen(asio::socket_base::max_listen_connections, ec);
        if (ec) fail(fmt::format("listening: {}", ec.message()));
        port = acceptor.local_endpoint(ec).port();
        if (ec) fail(fmt::format("reading the bound port: {}", ec.message()));
        address = ip.is_v6() ? fmt::format("tcp://[{}]:{}", ip.to_string(), port)
                             : fmt::format("tcp://{}:{}", ip.to_string(), port);
        listener = std::make_unique<Listener<tcp>>(std::move(acceptor), endpoint.protocol(), state);
    }
};

TurnSocketServer::TurnSocketServer(TurnSocketOptions options, RecordSink sink)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(sink))) {}

TurnSocketServer::~TurnSocketServer() = default;

const std::string& TurnSocketServer::address() const noexcept { return impl_->address; }

std::uint16_t TurnSocketServer::port() const noexcept { return impl_->port; }

ConnectionStats TurnSocketServer::connection_stats() const noexcept {
    ConnectionStats stats;
    stats.without_token = impl_->state.total_no_token.load();
    stats.evicted = impl_->state.total_evicted.load();
    stats.over_limit = impl_->state.total_over_limit.load();
    return stats;
}

} // namespace radial::socket
