// plugins/support/engine_api/engine_connection.h — one HTTP/1.1 connection to the engine (unix
// socket, tcp, or tcp with TLS) and the io_context that drives it, every operation under a
// deadline; and the request every call sends. Private to engine_client.cpp.
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "engine_api/engine_client.h"

namespace radial::engine_api {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;
using GenericSocket = asio::generic::stream_protocol::socket;
using TlsStream = asio::ssl::stream<GenericSocket&>;

namespace detail {

inline std::string call_name(std::string_view method, const std::string& target) {
    std::string t = target;
    if (auto q = t.find('?'); q != std::string::npos) t.resize(q); // filters may be long
    return std::string(method) + " " + t;
}

// The SSL ex_data slot holding a connection's Connection*, for the client-certificate callback
// (asio keeps its verify callback in the app data slot).
inline int connection_slot() {
    static const int slot = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return slot;
}

inline bool is_ip_literal(const std::string& host) {
    error_code ec;
    asio::ip::make_address(host, ec);
    return !ec;
}

// How much of an answer one read(2) takes, at most (bytes).
constexpr std::size_t kReadBufferBytes = 64 * 1024;

// One connection and the io_context that drives it; every operation runs under a deadline.
struct Connection {
    // Not a concurrency hint of 1: Stream::stop() posts to this context from another thread.
    asio::io_context ioc;
    GenericSocket socket{ioc};
    // Over TLS, every read and write goes through this layer on top of `socket`; stop() still
    // shuts `socket`'s descriptor down, which ends a TLS read as it ends a plain one.
    std::optional<TlsStream> tls;
    asio::ssl::context* tls_context; // null: plain
    // The engine asked for a client certificate and there was none to send. Under TLS 1.3 the
    // engine's refusal arrives after the handshake, often as a bare reset; this says why.
    bool asked_for_client_cert = false;
    boost::beast::flat_buffer buffer;
    const EngineAddress& address;
    std::string what; // "creating ...: POST /services/create", for messages
    // The connected socket's descriptor, for Stream::stop() from another thread: shutdown(2) on
    // it ends a read in progress even while no thread runs `ioc` (the reader is busy elsewhere).
    // Guarded by fd_mutex and cleared in the same step as the close: once closed, the number can
    // belong to another thread's new socket, and a late stop() must not shut that one down.
    std::mutex fd_mutex;
    int fd_for_stop = -1;

    Connection(const EngineAddress& a, asio::ssl::context* c, std::string w)
        : tls_context(c), address(a), what(std::move(w)) {
        // Beast reads into what the buffer has room for, at least 512 bytes: from an empty buffer
        // that is 512 bytes a read(2) for the whole answer (a container's JSON, a list of them).
        buffer.reserve(kReadBufferBytes);
    }
    ~Connection() {
        close_socket();
        tls.reset(); // before `socket`, which it refers to
    }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // Every close of `socket` goes through here (see fd_for_stop).
    void close_socket() noexcept {
        std::lock_guard lock(fd_mutex);
        fd_for_stop = -1;
        error_code ignored;
        socket.close(ignored);
    }

    // Ends a read in progress on another thread; does nothing once the socket is closed.
    void shutdown_for_stop() noexcept {
        std::lock_guard lock(fd_mutex);
        if (fd_for_stop >= 0) ::shutdown(fd_for_stop, SHUT_RDWR);
    }

    [[noreturn]] void fail(const std::string& cause, bool timed_out) const {
        throw EngineError(what + " on engine " + address.text + ": " + cause, 0, timed_out);
    }

    // Runs `f` on the stream every read and write goes through: the TLS layer or the socket.
    template <class F>
    void on_stream(F&& f) {
        if (tls)
            f(*tls);
        else
            f(socket);
    }

    // A transport error as a message; a TLS failure says what it means and what to fix
    // (docs/design.md §13.10): the engine's certificate, or the client certificate it refused.
    std::string describe(const error_code& ec) const {
        if (!tls) return ec.message();
        const EngineTls& m = *address.tls;
        const std::string from = " (" + m.origin + ")";
        if (ec.category() != asio::error::get_ssl_category()) {
            bool dropped = ec == asio::error::connection_reset || ec == asio::error::eof ||
                           ec == asio::error::broken_pipe ||
                           ec == asio::ssl::error::stream_truncated;
            if (dropped && asked_for_client_cert)
                return "TLS: the engine dropped the connection (" + ec.message() +
                       "): it wants a client certificate and none was sent (no cert.pem and "
                       "key.pem" +
                       from + "); put the client certificate and key there";
            if (dropped && !m.cert_file.empty())
                return ec.message() +
                       " (over TLS: if this persists, the engine may not accept the "
                       "client certificate '" +
                       m.cert_file + "'" + from + ")";
            return ec.message();
        }
        long verify = SSL_get_verify_result(const_cast<TlsStream&>(*tls).native_handle());
        if (verify != X509_V_OK) {
            std::string why = X509_verify_cert_error_string(verify);
            if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH)
                return "TLS: the engine's certificate does not name '" + address.host + "' (" +
                       why + "); connect to a name or address the certificate lists, or reissue it";
            return "TLS: the engine's certificate failed verification (" + why + ") against " +
                   (m.ca_file.empty() ? std::string("the system's CAs (no ca.pem)")
                                      : "the CA in '" + m.ca_file + "'") +
                   from + "; use the CA that signed the engine's certificate";
        }
        std::string msg = ec.message();
        int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
        bool refused_client = reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
                              reason == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE ||
                              reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE ||
                              reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA ||
                              reason == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN ||
                              reason == SSL_R_TLSV1_ALERT_DECRYPT_ERROR;
        if (refused_client) {
            if (m.cert_file.empty())
                return "TLS: the engine refused the connection (" + msg +
                       "): it wants a client certificate and none was sent (no cert.pem and "
                       "key.pem" +
                       from + "); put the client certificate and key there";
            return "TLS: the engine refused the connection (" + msg +
                   "): it does not accept the client certificate '" + m.cert_file + "'" + from +
                   "; use a certificate signed by the CA the engine trusts (dockerd --tlscacert)";
        }
        return "TLS: " + msg + from;
    }

    // Whether `ec` ends a stream the normal way: EOF, also over TLS without close_notify.
    static bool end_of_stream(const error_code& ec) {
        return ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
    }

    // Starts an operation with `start(handler)`, runs it until `deadline`, closes the socket and
    // throws when the deadline passes first. Returns the operation's error code.
    template <class Start>
    error_code await(Clock::time_point deadline, const char* step, Start start) {
        bool done = false;
        error_code result;
        start([&](error_code ec, auto&&...) {
            result = ec;
            done = true;
        });
        ioc.restart();
        if (deadline == Clock::time_point::max())
            ioc.run();
        else
            ioc.run_until(deadline);
        if (!done) {
            close_socket();
            ioc.restart();
            ioc.run(); // lets the cancelled operation complete before its state goes away
            fail(std::string("no answer while ") + step + " within the call's budget", true);
        }
        return result;
    }

    void open(int family) {
        // SOCK_CLOEXEC: a process the host forks meanwhile must not inherit the engine socket.
        int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) fail(std::string("socket: ") + std::strerror(errno), false);
        error_code ec;
        std::lock_guard lock(fd_mutex);
        socket.assign(asio::generic::stream_protocol(family, SOCK_STREAM), fd, ec);
        if (ec) {
            ::close(fd);
            fail("socket: " + ec.message(), false);
        }
        fd_for_stop = fd;
    }

    void connect(Clock::time_point deadline) {
        std::vector<asio::generic::stream_protocol::endpoint> endpoints;
        if (address.unix_socket) {
            endpoints.emplace_back(asio::local::stream_protocol::endpoint(address.path));
        } else {
            asio::ip::tcp::resolver resolver(ioc);
            asio::ip::tcp::resolver::results_type results;
            error_code ec = await(deadline, "resolving the engine's host", [&](auto handler) {
                resolver.async_resolve(address.host, address.port,
                                       [&, handler](error_code e, auto r) mutable {
                                           results = r;
                                           handler(e);
                                       });
            });
            if (ec) fail("resolving '" + address.host + "': " + ec.message(), false);
            for (const auto& r : results) endpoints.emplace_back(r.endpoint());
        }
        error_code last;
        for (const auto& ep : endpoints) {
            open(ep.protocol().family());
            last = await(deadline, "connecting",
                         [&](auto handler) { socket.async_connect(ep, handler); });
            if (!last) return handshake(deadline);
            close_socket();
        }
        std::string fix = address.unix_socket
                              ? "; is dockerd running, and may this user open the socket (group "
                                "docker)?"
                              : "; is dockerd listening there?";
        fail("cannot connect: " + last.message() + fix, false);
    }

    // Over TLS: the handshake, verifying the engine's certificate (chain and name) unless the
    // context says SkipTLSVerify (docs/design.md §13.10). Plain: nothing.
    void handshake(Clock::time_point deadline) {
        if (tls_context == nullptr) return;
        tls.emplace(socket, *tls_context);
        SSL* ssl = tls->native_handle();
        SSL_set_ex_data(ssl, connection_slot(), this);
        if (address.tls->skip_verify) {
            tls->set_verify_mode(asio::ssl::verify_none);
        } else {
            tls->set_verify_mode(asio::ssl::verify_peer);
            X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
            bool named = is_ip_literal(address.host)
                             ? X509_VERIFY_PARAM_set1_ip_asc(param, address.host.c_str()) == 1
                             : SSL_set1_host(ssl, address.host.c_str()) == 1;
            if (!named) fail("TLS: cannot check the engine's name '" + address.host + "'", false);
        }
        if (!is_ip_literal(address.host)) SSL_set_tlsext_host_name(ssl, address.host.c_str());
        error_code ec = await(deadline, "the TLS handshake", [&](auto handler) {
            tls->async_handshake(asio::ssl::stream_base::client, handler);
        });
        if (ec) fail("the TLS handshake: " + describe(ec), false);
    }

    void send(http::request<http::string_body>& req, Clock::time_point deadline) {
        error_code ec = await(deadline, "sending the request", [&](auto handler) {
            on_stream([&](auto& s) { http::async_write(s, req, handler); });
        });
        if (ec) fail("sending the request: " + describe(ec), false);
    }
};

inline http::request<http::string_body> make_request(std::string_view method,
                                                     const std::string& target,
                                                     const std::string& body,
                                                     const EngineAddress& address) {
    http::request<http::string_body> req;
    req.method(http::string_to_verb(boost::beast::string_view(method.data(), method.size())));
    req.target(target);
    req.version(11);
    // The engine ignores Host on its unix socket, but HTTP/1.1 requires one.
    req.set(http::field::host, address.unix_socket ? "docker" : address.host);
    req.set(http::field::user_agent, "radiald-engine-api");
    req.keep_alive(false);
    if (!body.empty()) {
        req.set(http::field::content_type, "application/json");
        req.body() = body;
    }
    req.prepare_payload();
    return req;
}

} // namespace detail

} // namespace radial::engine_api
