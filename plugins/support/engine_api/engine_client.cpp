#include "engine_api/engine_client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace radial::engine_api {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;
using GenericSocket = asio::generic::stream_protocol::socket;

namespace {

std::string call_name(std::string_view method, const std::string& target) {
    std::string t = target;
    if (auto q = t.find('?'); q != std::string::npos) t.resize(q); // filters may be long
    return std::string(method) + " " + t;
}

// One connection and the io_context that drives it; every operation runs under a deadline.
struct Connection {
    // Not a concurrency hint of 1: Stream::stop() posts to this context from another thread.
    asio::io_context ioc;
    GenericSocket socket{ioc};
    boost::beast::flat_buffer buffer;
    const EngineAddress& address;
    std::string what; // "creating ...: POST /services/create", for messages
    // The connected socket's descriptor, for Stream::stop() from another thread: shutdown(2) on
    // it ends a read in progress even while no thread runs `ioc` (the reader is busy elsewhere).
    // Guarded by fd_mutex and cleared in the same step as the close: once closed, the number can
    // belong to another thread's new socket, and a late stop() must not shut that one down.
    std::mutex fd_mutex;
    int fd_for_stop = -1;

    Connection(const EngineAddress& a, std::string w) : address(a), what(std::move(w)) {}
    ~Connection() { close_socket(); }
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
            if (!last) return;
            close_socket();
        }
        std::string fix = address.unix_socket
                              ? "; is dockerd running, and may this user open the socket (group "
                                "docker)?"
                              : "; is dockerd listening there?";
        fail("cannot connect: " + last.message() + fix, false);
    }

    void send(http::request<http::string_body>& req, Clock::time_point deadline) {
        error_code ec = await(deadline, "sending the request",
                              [&](auto handler) { http::async_write(socket, req, handler); });
        if (ec) fail("sending the request: " + ec.message(), false);
    }
};

http::request<http::string_body> make_request(std::string_view method, const std::string& target,
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

} // namespace

EngineAddress parse_engine_address(std::string_view text) {
    EngineAddress a;
    a.text = std::string(text);
    if (text.starts_with("unix://")) {
        a.unix_socket = true;
        a.path = std::string(text.substr(7));
        if (a.path.empty() || a.path.front() != '/')
            throw std::invalid_argument("'" + a.text +
                                        "' names no absolute socket path; give e.g. "
                                        "unix:///var/run/docker.sock");
        return a;
    }
    if (text.starts_with("tcp://")) {
        a.unix_socket = false;
        std::string_view rest = text.substr(6);
        if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
        auto colon = rest.rfind(':');
        if (colon == std::string_view::npos || colon == 0 || colon + 1 == rest.size())
            throw std::invalid_argument("'" + a.text +
                                        "' names no host and port; give e.g. tcp://127.0.0.1:2375");
        a.host = std::string(rest.substr(0, colon));
        if (a.host.size() > 2 && a.host.front() == '[' && a.host.back() == ']')
            a.host = a.host.substr(1, a.host.size() - 2);
        a.port = std::string(rest.substr(colon + 1));
        for (char c : a.port)
            if (c < '0' || c > '9')
                throw std::invalid_argument("'" + a.text + "' has a port that is not a number");
        return a;
    }
    throw std::invalid_argument("'" + a.text +
                                "' is not an engine address; give unix:///var/run/docker.sock or "
                                "tcp://host:port (TLS engines are not supported)");
}

std::optional<ApiVersion> parse_api_version(std::string_view text) noexcept {
    auto dot = text.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == text.size()) return std::nullopt;
    ApiVersion v;
    auto digits = [](std::string_view s, int& out) {
        if (s.size() > 6) return false;
        out = 0;
        for (char c : s) {
            if (c < '0' || c > '9') return false;
            out = out * 10 + (c - '0');
        }
        return true;
    };
    if (!digits(text.substr(0, dot), v.major) || !digits(text.substr(dot + 1), v.minor))
        return std::nullopt;
    return v;
}

struct Stream::Impl {
    Connection conn;
    // A stopped stream gives its connection back at the next read, not when it is destroyed.
    bool release() noexcept {
        conn.close_socket();
        return false;
    }
    http::response_parser<http::buffer_body> parser;
    std::atomic<bool> stopped{false};
    bool raw = false; // a hijacked connection: the bytes after the header are the body
    std::vector<char> piece = std::vector<char>(64u << 10);

    Impl(const EngineAddress& a, std::string w) : conn(a, std::move(w)) {
        parser.body_limit(boost::none);
    }
};

Stream::Stream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Stream::~Stream() = default;

bool Stream::read(std::string& chunk) {
    Impl& s = *impl_;
    chunk.clear();
    if (s.raw) {
        if (s.stopped) return s.release();
        if (s.conn.buffer.size() > 0) { // read past the header together with it
            auto data = s.conn.buffer.data();
            chunk.assign(static_cast<const char*>(data.data()), data.size());
            s.conn.buffer.consume(data.size());
            return true;
        }
        std::size_t n = 0;
        error_code ec =
            s.conn.await(Clock::time_point::max(), "reading the stream", [&](auto handler) {
                s.conn.socket.async_read_some(asio::buffer(s.piece),
                                              [&n, handler](error_code e, std::size_t got) mutable {
                                                  n = got;
                                                  handler(e);
                                              });
            });
        if (s.stopped) return s.release();
        if (n > 0) {
            chunk.assign(s.piece.data(), n);
            return true;
        }
        if (ec == asio::error::eof || !ec) return false;
        s.conn.fail("reading the stream: " + ec.message(), false);
    }
    while (!s.parser.is_done()) {
        if (s.stopped) return s.release();
        auto& body = s.parser.get().body();
        body.data = s.piece.data();
        body.size = s.piece.size();
        error_code ec =
            s.conn.await(Clock::time_point::max(), "reading the stream", [&](auto handler) {
                // read_some: a followed body never completes.
                http::async_read_some(s.conn.socket, s.conn.buffer, s.parser, handler);
            });
        if (s.stopped) return s.release();
        if (ec == http::error::end_of_stream || ec == asio::error::eof) return false;
        if (ec && ec != http::error::need_buffer)
            s.conn.fail("reading the stream: " + ec.message(), false);
        std::size_t n = s.piece.size() - body.size;
        if (n > 0) {
            chunk.assign(s.piece.data(), n);
            return true;
        }
    }
    return false;
}

void Stream::stop() noexcept {
    Impl& s = *impl_;
    s.stopped = true;
    // The socket stays open (its owner closes it); shutting it down makes the peer see the end
    // and wakes a blocked read at once. A second stop() after the close is a no-op.
    s.conn.shutdown_for_stop();
    try {
        asio::post(s.conn.ioc, [&s] { s.conn.close_socket(); });
    } catch (...) {
        // post only throws on allocation failure; `stopped` still ends the next read.
    }
}

EngineClient::EngineClient(EngineAddress address, std::chrono::milliseconds call_budget)
    : address_(std::move(address)), budget_(call_budget) {}

ApiVersion EngineClient::version() {
    {
        std::lock_guard lock(mutex_);
        if (version_) return *version_;
    }
    return negotiate(budget_);
}

ApiVersion EngineClient::probe(std::chrono::milliseconds budget) { return negotiate(budget); }

ApiVersion EngineClient::negotiate(std::chrono::milliseconds budget) {
    std::string what = "negotiating the Engine API version: GET /version";
    Connection conn(address_, what);
    auto deadline = Clock::now() + budget;
    conn.connect(deadline);
    auto req = make_request("GET", "/version", "", address_);
    conn.send(req, deadline);
    http::response<http::string_body> res;
    error_code ec = conn.await(deadline, "reading the answer", [&](auto handler) {
        http::async_read(conn.socket, conn.buffer, res, handler);
    });
    if (ec) conn.fail("reading the answer: " + ec.message(), false);
    if (res.result_int() != 200)
        throw EngineError(what + " on engine " + address_.text + ": HTTP " +
                              std::to_string(res.result_int()) + ": " + engine_message(res.body()),
                          res.result_int(), false);
    std::optional<ApiVersion> server;
    std::string server_text, engine_version;
    try {
        auto j = nlohmann::json::parse(res.body());
        server_text = j.value("ApiVersion", "");
        engine_version = j.value("Version", "");
        server = parse_api_version(server_text);
    } catch (const nlohmann::json::exception&) {
    }
    if (!server)
        throw EngineError(what + " on engine " + address_.text +
                              ": the answer names no ApiVersion; is that a Docker Engine?",
                          res.result_int(), false);
    if (*server < kMinApiVersion)
        throw EngineError("the Docker Engine at " + address_.text + " (version " + engine_version +
                              ") speaks Engine API " + server_text + "; radiald needs at least " +
                              kMinApiVersion.text() + " (Docker Engine 20.10); upgrade the engine",
                          res.result_int(), false);
    ApiVersion chosen = std::min(*server, kMaxApiVersion);
    std::lock_guard lock(mutex_);
    version_ = chosen;
    return chosen;
}

std::string EngineClient::versioned(const std::string& target) {
    return "/v" + version().text() + target;
}

Response EngineClient::request(std::string_view method, const std::string& target,
                               const std::string& body, const std::string& what) {
    return request(method, target, body, what, budget_);
}

Response EngineClient::request(std::string_view method, const std::string& target,
                               const std::string& body, const std::string& what,
                               std::chrono::milliseconds budget) {
    std::string full = versioned(target);
    Connection conn(address_, what + ": " + call_name(method, target));
    auto deadline = Clock::now() + budget;
    conn.connect(deadline);
    auto req = make_request(method, full, body, address_);
    conn.send(req, deadline);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20); // a service or task list; far above anything sane
    error_code ec = conn.await(deadline, "reading the answer", [&](auto handler) {
        http::async_read(conn.socket, conn.buffer, parser, handler);
    });
    if (ec) conn.fail("reading the answer: " + ec.message(), false);
    Response r;
    r.status = parser.get().result_int();
    r.body = std::move(parser.get().body());
    return r;
}

nlohmann::json EngineClient::call(std::string_view method, const std::string& target,
                                  const nlohmann::json* body, const std::string& what) {
    Response r = request(method, target, body ? body->dump() : std::string(), what);
    if (r.status < 200 || r.status > 299)
        throw EngineError(what + ": " + call_name(method, target) + " on engine " + address_.text +
                              " answered HTTP " + std::to_string(r.status) + ": " +
                              engine_message(r.body),
                          r.status, false);
    if (r.body.empty()) return nullptr;
    try {
        return nlohmann::json::parse(r.body);
    } catch (const nlohmann::json::exception& e) {
        throw EngineError(what + ": " + call_name(method, target) + " on engine " + address_.text +
                              " answered with a body that is not JSON: " + e.what(),
                          r.status, false);
    }
}

std::unique_ptr<Stream> EngineClient::open_stream(const std::string& target,
                                                  const std::string& what) {
    return open(false, target, what);
}

std::unique_ptr<Stream> EngineClient::open_hijacked(const std::string& target,
                                                    const std::string& what) {
    return open(true, target, what);
}

std::unique_ptr<Stream> EngineClient::open(bool hijack, const std::string& target,
                                           const std::string& what) {
    std::string full = versioned(target);
    const char* method = hijack ? "POST" : "GET";
    auto impl = std::make_unique<Stream::Impl>(address_, what + ": " + call_name(method, target));
    auto deadline = Clock::now() + budget_;
    impl->conn.connect(deadline);
    auto req = make_request(method, full, "", address_);
    if (hijack) {
        // What the docker CLI sends for attach: the engine answers 101 and hands the connection
        // over to the container's streams.
        req.set(http::field::connection, "Upgrade");
        req.set(http::field::upgrade, "tcp");
    }
    impl->conn.send(req, deadline);
    error_code ec = impl->conn.await(deadline, "reading the answer's header", [&](auto handler) {
        http::async_read_header(impl->conn.socket, impl->conn.buffer, impl->parser, handler);
    });
    if (ec) impl->conn.fail("reading the answer's header: " + ec.message(), false);
    unsigned status = impl->parser.get().result_int();
    if ((status < 200 || status > 299) && !(hijack && status == 101)) {
        // The error body is small and complete; read it for the engine's message.
        http::response_parser<http::string_body> rest(std::move(impl->parser));
        std::string message;
        if (!impl->conn.await(deadline, "reading the error", [&](auto handler) {
                http::async_read(impl->conn.socket, impl->conn.buffer, rest, handler);
            }))
            message = engine_message(rest.get().body());
        throw EngineError(what + ": " + method + " " + target.substr(0, target.find('?')) +
                              " on engine " + address_.text + " answered HTTP " +
                              std::to_string(status) + (message.empty() ? "" : ": " + message),
                          status, false);
    }
    impl->raw = hijack;
    return std::make_unique<Stream>(std::move(impl));
}

std::string engine_message(std::string_view body) {
    try {
        auto j = nlohmann::json::parse(body);
        if (j.is_object() && j.contains("message") && j["message"].is_string())
            return j["message"].get<std::string>();
    } catch (const nlohmann::json::exception&) {
    }
    std::string s(body.substr(0, 500));
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s.empty() ? "(no message)" : s;
}

std::string url_encode(std::string_view s) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out;
}

std::string base64_encode(std::string_view bytes) {
    static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        unsigned v = (unsigned char)bytes[i] << 16 | (unsigned char)bytes[i + 1] << 8 |
                     (unsigned char)bytes[i + 2];
        out += {abc[v >> 18], abc[(v >> 12) & 63], abc[(v >> 6) & 63], abc[v & 63]};
    }
    if (std::size_t left = bytes.size() - i; left > 0) {
        unsigned v = (unsigned char)bytes[i] << 16;
        if (left == 2) v |= (unsigned char)bytes[i + 1] << 8;
        out += abc[v >> 18];
        out += abc[(v >> 12) & 63];
        out += left == 2 ? abc[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

} // namespace radial::engine_api
