// host/egress/egress_connection.cpp — see egress_connection.h. Blocking sockets on a thread of
// their own, polled in slices of at most 200 ms, so a revocation is seen within one slice even
// while a name is being resolved or a connect is pending.
#include "egress/egress_connection.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstring>

#include "egress/tls_client_hello.h"

namespace radial::egress::detail {

namespace {

namespace ip = boost::asio::ip;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kMostHeadBytes = 16u << 10;
constexpr std::size_t kChunk = 64u << 10;
constexpr int kSliceMs = 200;

std::int64_t epoch_ms() {
    return std::chrono::duration_cast<milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

bool send_all(int fd, const char* p, std::size_t n) {
    while (n > 0) {
        const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

// Waits until `fd` has `events` or `deadline`; false on the deadline or a revocation.
bool wait_for(BrokerShared& shared, int fd, short events, Clock::time_point deadline) {
    while (!shared.revoked) {
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, kSliceMs)));
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return false;
    }
    return false;
}

// A refusal's answer to the box: a status line and one line of text saying why.
void answer(int fd, int status, const std::string& text, const std::string& why) {
    const std::string body = "radial egress: " + why + "\n";
    const std::string r = fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: "
        "close\r\n\r\n{}",
        status, text, body.size(), body);
    send_all(fd, r.data(), r.size());
}

struct Head {
    std::string method, target, version;
    std::vector<std::pair<std::string, std::string>> headers; // names lowercased
    std::string rest;                                         // bytes after the head
};

// Reads the request's head (request line and headers). Empty method when it could not be read;
// `why` then says why.
Head read_head(BrokerShared& shared, int fd, std::string& why) {
    Head h;
    std::string buf;
    const auto deadline = Clock::now() + shared.options.head_timeout;
    std::size_t end = std::string::npos;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        if (buf.size() > kMostHeadBytes) {
            why = "the request's head is over 16 KiB";
            return h;
        }
        if (!wait_for(shared, fd, POLLIN, deadline)) {
            why = shared.revoked ? "revoked at the turn's end" : "no request head in time";
            return h;
        }
        char tmp[4096];
        const ssize_t n = ::read(fd, tmp, sizeof tmp);
        if (n <= 0) {
            why = "the box closed the connection before its request";
            return h;
        }
        buf.append(tmp, static_cast<std::size_t>(n));
    }
    h.rest = buf.substr(end + 4);
    std::string_view head(buf.data(), end);
    auto line_end = head.find("\r\n");
    std::string_view line = head.substr(0, line_end);
    const auto sp1 = line.find(' '), sp2 = line.rfind(' ');
    if (sp1 == std::string_view::npos || sp2 == sp1) {
        why = "not an HTTP request line";
        return h;
    }
    h.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
    h.version = std::string(line.substr(sp2 + 1));
    std::string_view rest = line_end == std::string_view::npos ? "" : head.substr(line_end + 2);
    while (!rest.empty()) {
        const auto e = rest.find("\r\n");
        std::string_view l = rest.substr(0, e);
        rest = e == std::string_view::npos ? "" : rest.substr(e + 2);
        const auto colon = l.find(':');
        if (colon == std::string_view::npos) continue;
        std::string value(l.substr(colon + 1));
        value.erase(0, value.find_first_not_of(" \t"));
        value.erase(value.find_last_not_of(" \t") + 1);
        h.headers.emplace_back(lower(std::string(l.substr(0, colon))), value);
    }
    h.method = std::string(line.substr(0, sp1));
    return h;
}

const std::string* header(const Head& h, const std::string& name) {
    for (const auto& [n, v] : h.headers)
        if (n == name) return &v;
    return nullptr;
}

// The addresses to connect to for `host`: the ceiling's name map, or the system's resolver.
std::vector<ip::address> resolve(const EgressCeiling& ceiling, const std::string& host,
                                 std::string& why) {
    std::vector<ip::address> out;
    boost::system::error_code ec;
    if (auto literal = ip::make_address(host, ec); !ec) return {literal};
    if (auto it = ceiling.hosts.find(host); it != ceiling.hosts.end()) {
        auto a = ip::make_address(it->second, ec);
        if (!ec) out.push_back(a);
        return out;
    }
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0) {
        why = fmt::format("resolving '{}': {}", host, ::gai_strerror(rc));
        return out;
    }
    for (addrinfo* p = res; p != nullptr; p = p->ai_next) {
        char text[INET6_ADDRSTRLEN] = {};
        const void* at =
            p->ai_family == AF_INET
                ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(p->ai_addr)->sin_addr)
                : &reinterpret_cast<sockaddr_in6*>(p->ai_addr)->sin6_addr;
        if (::inet_ntop(p->ai_family, at, text, sizeof text) == nullptr) continue;
        auto a = ip::make_address(text, ec);
        if (!ec && std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
    }
    ::freeaddrinfo(res);
    return out;
}

// Connects to `a`:`port` within the connect timeout; the descriptor, or -1 with `why`.
int connect_to(BrokerShared& shared, Connection& c, const ip::address& a, std::uint16_t port,
               std::string& why) {
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (a.is_v4()) {
        auto* s = reinterpret_cast<sockaddr_in*>(&ss);
        s->sin_family = AF_INET;
        s->sin_port = htons(port);
        const auto b = a.to_v4().to_bytes();
        std::memcpy(&s->sin_addr, b.data(), b.size());
        len = sizeof *s;
    } else {
        auto* s = reinterpret_cast<sockaddr_in6*>(&ss);
        s->sin6_family = AF_INET6;
        s->sin6_port = htons(port);
        const auto b = a.to_v6().to_bytes();
        std::memcpy(&s->sin6_addr, b.data(), b.size());
        len = sizeof *s;
    }
    const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        why = fmt::format("socket: {}", std::strerror(errno));
        return -1;
    }
    c.upstream = fd;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
        why = fmt::format("connecting to {}: {}", a.to_string(), std::strerror(errno));
        return -1;
    }
    if (!wait_for(shared, fd, POLLOUT, Clock::now() + shared.options.connect_timeout)) {
        why = shared.revoked ? "revoked at the turn's end"
                             : fmt::format("connecting to {}: no answer in time", a.to_string());
        return -1;
    }
    int err = 0;
    socklen_t elen = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
    if (err != 0) {
        why = fmt::format("connecting to {}: {}", a.to_string(), std::strerror(err));
        return -1;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

// Adds `n` to a per-turn total; false (and `why`) when that passes its quota.
bool count(std::atomic<std::uint64_t>& total, std::uint64_t most, std::size_t n,
           const char* direction, std::string& why) {
    if (total.fetch_add(n) + n <= most) return true;
    why = fmt::format("the turn's quota of {} bytes {} was reached; connection closed", most,
                      direction);
    return false;
}

// One direction of a relay: socket -> pipe -> socket with splice(2), so the bytes never pass
// through the broker's memory.
struct Lane {
    int from = -1, to = -1;
    int pipe[2] = {-1, -1};
    std::size_t queued = 0;
    bool open = true;
    ~Lane() {
        for (int fd : pipe)
            if (fd >= 0) ::close(fd);
    }
};

// Copies both ways until both ends closed, a quota is reached or the broker is revoked.
void relay(BrokerShared& shared, Connection& c, Receipt& r) {
    const int up = c.upstream;
    Lane lanes[2];
    lanes[0].from = c.client; // from the box
    lanes[0].to = up;
    lanes[1].from = up; // to the box
    lanes[1].to = c.client;
    for (auto& l : lanes) {
        if (::pipe2(l.pipe, O_CLOEXEC) != 0) {
            r.reason = fmt::format("broker error: pipe: {}", std::strerror(errno));
            return;
        }
        ::fcntl(l.pipe[1], F_SETPIPE_SZ, 1 << 20);
    }
    const auto& o = shared.options;
    while ((lanes[0].open || lanes[1].open) && !shared.revoked) {
        pollfd p[2] = {{lanes[0].open ? c.client : -1, POLLIN, 0},
                       {lanes[1].open ? up : -1, POLLIN, 0}};
        const int n = ::poll(p, 2, kSliceMs);
        if (n < 0 && errno != EINTR) break;
        for (int i = 0; i < 2 && n > 0; ++i) {
            if (p[i].revents == 0) continue;
            Lane& l = lanes[i];
            const ssize_t got = ::splice(l.from, nullptr, l.pipe[1], nullptr, kChunk * 16,
                                         SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (got <= 0) {
                ::shutdown(l.to, SHUT_WR);
                l.open = false;
                continue;
            }
            const auto g = static_cast<std::size_t>(got);
            std::string why;
            const bool within =
                i == 0 ? count(shared.bytes_out, o.ceiling.max_bytes_out, g, "from the box", why)
                       : count(shared.bytes_in, o.ceiling.max_bytes_in, g, "to the box", why);
            if (!within) {
                r.reason = why;
                return;
            }
            (i == 0 ? r.bytes_out : r.bytes_in) += g;
            l.queued += g;
            while (l.queued > 0) {
                const ssize_t w =
                    ::splice(l.pipe[0], nullptr, l.to, nullptr, l.queued, SPLICE_F_MOVE);
                if (w < 0 && errno == EINTR) continue;
                if (w <= 0) {
                    lanes[0].open = lanes[1].open = false;
                    break;
                }
                l.queued -= static_cast<std::size_t>(w);
            }
        }
    }
    r.reason = shared.revoked ? "revoked at the turn's end" : "closed";
}

// A CONNECT tunnel's first bytes, when they are a TLS ClientHello, must name the tunnel's host.
bool check_server_name(BrokerShared& shared, Connection& c, const std::string& host,
                       std::string& pending, Receipt& r) {
    const auto deadline = Clock::now() + shared.options.hello_timeout;
    for (;;) {
        const ClientHelloScan scan = scan_client_hello(pending);
        switch (scan.state) {
            case ClientHelloScan::State::sni:
                if (scan.server_name == host) return true;
                r.reason =
                    fmt::format("the tunnel's TLS names '{}', not '{}'", scan.server_name, host);
                return false;
            case ClientHelloScan::State::malformed:
                r.reason = "the tunnel's TLS handshake cannot be read";
                return false;
            case ClientHelloScan::State::not_tls:
            case ClientHelloScan::State::no_sni: return true;
            case ClientHelloScan::State::need_more: break;
        }
        if (!wait_for(shared, c.client, POLLIN, deadline)) {
            // A client that speaks second (it waits for the server) sends nothing first.
            if (!shared.revoked && pending.empty()) return true;
            r.reason = shared.revoked ? "revoked at the turn's end" : "no TLS handshake in time";
            return false;
        }
        char tmp[4096];
        const ssize_t n = ::read(c.client, tmp, sizeof tmp);
        if (n <= 0) {
            // Closed before a whole handshake: nothing more will come to judge or to forward.
            r.reason = "closed";
            return pending.empty();
        }
        pending.append(tmp, static_cast<std::size_t>(n));
    }
}

// Judges and opens the destination; false (with the receipt's reason) when refused.
bool open_destination(BrokerShared& shared, Connection& c, const std::string& host,
                      std::uint16_t port, Receipt& r) {
    const auto& o = shared.options;
    boost::system::error_code ec;
    ip::make_address(host, ec);
    const bool literal = !ec;
    const bool allowed = std::any_of(o.rules.begin(), o.rules.end(), [&](const AllowRule& a) {
        return literal ? a.host == host && a.port == port : matches(a, host, port);
    });
    if (!allowed) {
        r.reason = literal ? fmt::format(
                                 "an IP literal ({}) is not a destination the turn's "
                                 "egress names; ask for a host name",
                                 host)
                           : fmt::format("{} is not in the turn's egress policy", r.destination);
        return false;
    }
    std::string why;
    const auto addresses = resolve(o.ceiling, host, why);
    if (addresses.empty()) {
        r.reason = why.empty() ? fmt::format("'{}' has no address", host) : why;
        return false;
    }
    std::string refusal;
    for (const auto& a : addresses) {
        if (std::string no = address_refusal(o.ceiling, a); !no.empty()) {
            refusal = fmt::format("'{}' resolves to {}", host, no);
            continue;
        }
        r.address = a.is_v6() ? fmt::format("[{}]:{}", a.to_string(), port)
                              : fmt::format("{}:{}", a.to_string(), port);
        if (connect_to(shared, c, a, port, why) >= 0) return true;
        refusal = why;
    }
    r.reason = refusal;
    return false;
}

void finish(BrokerShared& shared, Receipt& r) {
    r.ended_ms = epoch_ms();
    shared.receipt(r);
}

} // namespace

void BrokerShared::receipt(const Receipt& r) {
    if (!options.on_receipt) return;
    std::lock_guard lock(receipt_mutex);
    try {
        options.on_receipt(r);
    } catch (...) {
        // A receipt that cannot be stored is the sink's to report; the connection is over.
    }
}

Connection::~Connection() {
    if (client >= 0) ::close(client);
    if (const int up = upstream.exchange(-1); up >= 0) ::close(up);
}

void Connection::cut() noexcept {
    if (client >= 0) ::shutdown(client, SHUT_RDWR);
    if (const int up = upstream.load(); up >= 0) ::shutdown(up, SHUT_RDWR);
}

void refuse_at_once(BrokerShared& shared, int client, const std::string& reason) noexcept {
    Receipt r;
    r.started_ms = epoch_ms();
    r.verdict = "refused";
    r.reason = reason;
    answer(client, 503, "Service Unavailable", reason);
    ::close(client);
    finish(shared, r);
}

void serve(BrokerShared& shared, Connection& c) noexcept {
    Receipt r;
    r.started_ms = epoch_ms();
    r.verdict = "refused";
    try {
        std::string why;
        Head h = read_head(shared, c.client, why);
        if (h.method.empty()) {
            r.reason = why;
            finish(shared, r);
            return;
        }
        std::string host;
        std::uint16_t port = 0;
        std::string forward; // the head sent on, for plain HTTP
        if (h.method == "CONNECT") {
            r.kind = "CONNECT";
            r.destination = h.target;
            try {
                AllowRule dest = parse_allow_rule(h.target);
                if (dest.host.starts_with("*.")) throw PolicyError("a wildcard is no destination");
                host = dest.host;
                port = dest.port;
                r.destination = dest.text();
            } catch (const PolicyError& e) {
                r.reason = fmt::format("CONNECT '{}' is not host:port ({})", h.target, e.what());
            }
        } else {
            r.kind = "HTTP";
            r.destination = h.target;
            const std::string_view t = h.target;
            const auto lt = lower(std::string(t.substr(0, 7)));
            if (lt != "http://") {
                r.reason = t.substr(0, 8) == "https://"
                               ? std::string("https goes through CONNECT, not a plain request")
                               : fmt::format("'{}' is not an absolute http:// URL", h.target);
            } else {
                const auto slash = t.find('/', 7);
                const std::string authority(t.substr(7, slash - 7));
                const std::string path(slash == std::string_view::npos ? "/" : t.substr(slash));
                try {
                    const bool has_port = authority.rfind(':') != std::string::npos &&
                                          (authority.front() != '[' || authority.back() != ']');
                    AllowRule dest = parse_allow_rule(has_port ? authority : authority + ":80");
                    host = dest.host;
                    port = dest.port;
                    r.destination = dest.text();
                    const std::string* given = header(h, "host");
                    AllowRule named =
                        given == nullptr
                            ? dest
                            : parse_allow_rule(given->rfind(':') != std::string::npos &&
                                                       given->back() != ']'
                                                   ? *given
                                                   : *given + ":80");
                    if (named.host != dest.host || named.port != dest.port) {
                        r.reason = fmt::format("the Host header names '{}', not '{}'", named.text(),
                                               dest.text());
                        host.clear();
                    }
                    forward = fmt::format("{} {} {}\r\n", h.method, path, h.version);
                    for (const auto& [n, v] : h.headers)
                        if (n != "connection" && n != "keep-alive" && n != "proxy-connection" &&
                            n != "proxy-authorization")
                            forward += n + ": " + v + "\r\n";
                    forward += "Connection: close\r\n\r\n" + h.rest;
                } catch (const PolicyError& e) {
                    r.reason = fmt::format("'{}' names no host:port ({})", h.target, e.what());
                    host.clear();
                }
            }
        }
        if (host.empty() || !open_destination(shared, c, host, port, r)) {
            answer(c.client, 403, "Forbidden", r.reason);
            finish(shared, r);
            return;
        }
        r.verdict = "allowed";
        std::string pending = h.rest;
        if (r.kind == "CONNECT") {
            const std::string ok = "HTTP/1.1 200 Connection established\r\n\r\n";
            if (!send_all(c.client, ok.data(), ok.size()) ||
                !check_server_name(shared, c, host, pending, r)) {
                if (r.reason.empty()) r.reason = "closed";
                r.verdict = r.reason == "closed" ? "allowed" : "refused";
                finish(shared, r);
                return;
            }
            forward = pending;
        }
        r.bytes_out += forward.size();
        if (!count(shared.bytes_out, shared.options.ceiling.max_bytes_out, forward.size(),
                   "from the box", r.reason) ||
            !send_all(c.upstream, forward.data(), forward.size())) {
            if (r.reason.empty()) r.reason = "the destination closed the connection";
            finish(shared, r);
            return;
        }
        relay(shared, c, r);
    } catch (const std::exception& e) {
        r.reason = fmt::format("broker error: {}", e.what());
    }
    finish(shared, r);
}

} // namespace radial::egress::detail
