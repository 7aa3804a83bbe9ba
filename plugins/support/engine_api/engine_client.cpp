#include "engine_api/engine_client.h"

#include "engine_api/engine_connection.h"

namespace radial::engine_api {

using namespace detail;

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
                                "tcp://host:port (ssh:// engines are not supported)");
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

    Impl(const EngineAddress& a, asio::ssl::context* c, std::string w) : conn(a, c, std::move(w)) {
        // No limit, but not boost::none: Boost 1.74's parser compares a Content-Length with
        // the optional limit, and every length is greater than none ("body limit exceeded").
        parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    }
};

Stream::Stream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Stream::~Stream() = default;

void Stream::write(std::string_view bytes, std::chrono::milliseconds budget) {
    Impl& s = *impl_;
    if (!s.raw) throw std::logic_error("Stream::write on a stream that is not hijacked");
    error_code ec = s.conn.await(Clock::now() + budget, "writing to the stream", [&](auto handler) {
        s.conn.on_stream([&](auto& stream) {
            asio::async_write(stream, asio::buffer(bytes.data(), bytes.size()),
                              [handler](error_code e, std::size_t) mutable { handler(e); });
        });
    });
    if (ec) s.conn.fail("writing to the stream: " + s.conn.describe(ec), false);
}

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
                s.conn.on_stream([&](auto& stream) {
                    stream.async_read_some(asio::buffer(s.piece),
                                           [&n, handler](error_code e, std::size_t got) mutable {
                                               n = got;
                                               handler(e);
                                           });
                });
            });
        if (s.stopped) return s.release();
        if (n > 0) {
            chunk.assign(s.piece.data(), n);
            return true;
        }
        if (Connection::end_of_stream(ec) || !ec) return false;
        s.conn.fail("reading the stream: " + s.conn.describe(ec), false);
    }
    while (!s.parser.is_done()) {
        if (s.stopped) return s.release();
        auto& body = s.parser.get().body();
        body.data = s.piece.data();
        body.size = s.piece.size();
        error_code ec =
            s.conn.await(Clock::time_point::max(), "reading the stream", [&](auto handler) {
                // read_some: a followed body never completes.
                s.conn.on_stream([&](auto& stream) {
                    http::async_read_some(stream, s.conn.buffer, s.parser, handler);
                });
            });
        if (s.stopped) return s.release();
        if (ec == http::error::end_of_stream || Connection::end_of_stream(ec)) return false;
        if (ec && ec != http::error::need_buffer)
            s.conn.fail("reading the stream: " + s.conn.describe(ec), false);
        // Beast's read_some returns after one element of a chunked body, and a followed log
        // stream sends every record as its own chunk: the rest of what already arrived is parsed
        // here, not with a round through the io_context per record (64 MiB of 8-byte lines took
        // 90 s that way, the reader polling the socket between records). Not eager parsing: that
        // would wait for the next chunk's header before returning what arrived.
        while (body.size > 0 && s.conn.buffer.size() > 0 && !s.parser.is_done()) {
            error_code more;
            std::size_t used = s.parser.put(s.conn.buffer.data(), more);
            s.conn.buffer.consume(used);
            if (more == http::error::need_more || more == http::error::need_buffer) break;
            if (more) s.conn.fail("reading the stream: " + s.conn.describe(more), false);
            if (used == 0) break;
        }
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

struct EngineClient::TlsContext {
    asio::ssl::context ctx{asio::ssl::context::tls_client};
};

namespace {

// The OpenSSL error queue's latest reason, for messages about a file that does not load.
std::string openssl_reason(const boost::system::system_error& e) {
    unsigned long code = ERR_peek_last_error();
    ERR_clear_error();
    if (code != 0) {
        char buf[256];
        ERR_error_string_n(code, buf, sizeof buf);
        return buf;
    }
    return e.code().message();
}

// Loads `m` into a client context (docs/design.md §13.10). Throws std::invalid_argument naming the
// file and what to do.
void load_tls_material(asio::ssl::context& ctx, const EngineTls& m) {
    const std::string from = " (" + m.origin + ")";
    // TLS 1.2 at least, as dockerd itself requires.
    SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    // An engine (or a proxy in front of it) that closes without close_notify ends a stream like
    // EOF; a truncated HTTP body is still caught by the HTTP parser.
    SSL_CTX_set_options(ctx.native_handle(), SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    auto check_readable = [&](const std::string& file, const char* what) {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(file, ec))
            throw std::invalid_argument(std::string("the ") + what + " '" + file + "'" + from +
                                        " is not a readable file; put it there or fix the path");
    };
    try {
        if (!m.ca_file.empty()) {
            check_readable(m.ca_file, "CA certificate");
            ctx.load_verify_file(m.ca_file);
        } else {
            ctx.set_default_verify_paths();
        }
    } catch (const boost::system::system_error& e) {
        throw std::invalid_argument("cannot load the CA certificate '" + m.ca_file + "'" + from +
                                    ": " + openssl_reason(e) + "; it must be a PEM certificate");
    }
    if (m.cert_file.empty()) {
        // Called only when the engine asks for a certificate and there is none: noted for the
        // message (Connection::describe); the handshake goes on without one.
        SSL_CTX_set_client_cert_cb(ctx.native_handle(), [](SSL* ssl, X509**, EVP_PKEY**) {
            if (auto* c = static_cast<Connection*>(SSL_get_ex_data(ssl, connection_slot())))
                c->asked_for_client_cert = true;
            return 0;
        });
        return;
    }
    check_readable(m.cert_file, "client certificate");
    check_readable(m.key_file, "client key");
    try {
        ctx.use_certificate_chain_file(m.cert_file);
    } catch (const boost::system::system_error& e) {
        throw std::invalid_argument("cannot load the client certificate '" + m.cert_file + "'" +
                                    from + ": " + openssl_reason(e) +
                                    "; it must be a PEM certificate");
    }
    try {
        ctx.use_private_key_file(m.key_file, asio::ssl::context::pem);
    } catch (const boost::system::system_error& e) {
        throw std::invalid_argument("cannot load the client key '" + m.key_file + "'" + from +
                                    ": " + openssl_reason(e) +
                                    "; it must be the PEM private key of '" + m.cert_file + "'");
    }
    if (SSL_CTX_check_private_key(ctx.native_handle()) != 1) {
        ERR_clear_error();
        throw std::invalid_argument("the client key '" + m.key_file + "' is not the key of '" +
                                    m.cert_file + "'" + from + "; put the matching pair there");
    }
}

} // namespace

EngineClient::EngineClient(EngineAddress address, std::chrono::milliseconds call_budget)
    : address_(std::move(address)), budget_(call_budget) {
    if (address_.unix_socket || !address_.tls) return;
    tls_ = std::make_unique<TlsContext>();
    load_tls_material(tls_->ctx, *address_.tls);
}

EngineClient::~EngineClient() = default;

ApiVersion EngineClient::version() {
    {
        std::lock_guard lock(mutex_);
        if (version_) return *version_;
    }
    return negotiate(budget_);
}

ApiVersion EngineClient::probe(std::chrono::milliseconds budget) { return negotiate(budget); }

ApiVersion EngineClient::negotiate(std::chrono::milliseconds budget) {
    const auto deadline = Clock::now() + budget;
    // One unversioned GET within what is left of the budget; every failure to get an answer
    // throws, naming `what`.
    auto get = [&](const std::string& target, const std::string& what) {
        Connection conn(address_, tls_ ? &tls_->ctx : nullptr, what);
        conn.connect(deadline);
        auto req = make_request("GET", target, "", address_);
        conn.send(req, deadline);
        http::response<http::string_body> res;
        error_code ec = conn.await(deadline, "reading the answer", [&](auto handler) {
            conn.on_stream([&](auto& s) { http::async_read(s, conn.buffer, res, handler); });
        });
        if (ec) conn.fail("reading the answer: " + conn.describe(ec), false);
        return res;
    };
    // GET /_ping first, as the docker CLI negotiates: the engine answers it at once with its API
    // version in a header, where GET /version first asks containerd and the OCI runtime for
    // theirs (about 4 ms a call here, paid by every `radiald turn`). An engine whose ping names
    // no version is asked GET /version.
    std::string what = "negotiating the Engine API version: GET /_ping";
    std::optional<ApiVersion> server;
    std::string server_text, engine_version;
    int status = 0;
    {
        auto res = get("/_ping", what);
        status = res.result_int();
        if (status == 200) {
            server_text = std::string(res["API-Version"]); // field names are case-insensitive
            server = parse_api_version(server_text);
            // "Docker/20.10.24+dfsg1 (linux)": the engine's version, for the too-old message.
            std::string banner(res[http::field::server]);
            if (banner.starts_with("Docker/"))
                engine_version = banner.substr(7, banner.find(' ', 7) - 7);
        }
    }
    if (!server) {
        what = "negotiating the Engine API version: GET /version";
        auto res = get("/version", what);
        status = res.result_int();
        if (status != 200)
            throw EngineError(what + " on engine " + address_.text + ": HTTP " +
                                  std::to_string(status) + ": " + engine_message(res.body()),
                              status, false);
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
                              status, false);
    }
    if (*server < kMinApiVersion)
        throw EngineError("the Docker Engine at " + address_.text + " (version " + engine_version +
                              ") speaks Engine API " + server_text + "; radiald needs at least " +
                              kMinApiVersion.text() + " (Docker Engine 20.10); upgrade the engine",
                          status, false);
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
    Connection conn(address_, tls_ ? &tls_->ctx : nullptr, what + ": " + call_name(method, target));
    auto deadline = Clock::now() + budget;
    conn.connect(deadline);
    auto req = make_request(method, full, body, address_);
    conn.send(req, deadline);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20); // a service or task list; far above anything sane
    error_code ec = conn.await(deadline, "reading the answer", [&](auto handler) {
        conn.on_stream([&](auto& s) { http::async_read(s, conn.buffer, parser, handler); });
    });
    if (ec) conn.fail("reading the answer: " + conn.describe(ec), false);
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
                                                    const std::string& what,
                                                    const std::string& body) {
    return open(true, target, what, body);
}

std::unique_ptr<Stream> EngineClient::open(bool hijack, const std::string& target,
                                           const std::string& what, const std::string& body) {
    std::string full = versioned(target);
    const char* method = hijack ? "POST" : "GET";
    auto impl = std::make_unique<Stream::Impl>(address_, tls_ ? &tls_->ctx : nullptr,
                                               what + ": " + call_name(method, target));
    auto deadline = Clock::now() + budget_;
    impl->conn.connect(deadline);
    auto req = make_request(method, full, body, address_);
    if (hijack) {
        // What the docker CLI sends for attach: the engine answers 101 and hands the connection
        // over to the container's streams.
        req.set(http::field::connection, "Upgrade");
        req.set(http::field::upgrade, "tcp");
    }
    impl->conn.send(req, deadline);
    error_code ec = impl->conn.await(deadline, "reading the answer's header", [&](auto handler) {
        impl->conn.on_stream(
            [&](auto& s) { http::async_read_header(s, impl->conn.buffer, impl->parser, handler); });
    });
    if (ec) impl->conn.fail("reading the answer's header: " + impl->conn.describe(ec), false);
    unsigned status = impl->parser.get().result_int();
    if ((status < 200 || status > 299) && !(hijack && status == 101)) {
        // The error body is small and complete; read it for the engine's message.
        http::response_parser<http::string_body> rest(std::move(impl->parser));
        std::string message;
        if (!impl->conn.await(deadline, "reading the error", [&](auto handler) {
                impl->conn.on_stream(
                    [&](auto& s) { http::async_read(s, impl->conn.buffer, rest, handler); });
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
