// host/egress/egress_connection.cpp — see egress_connection.h. Blocking sockets on a thread of
// their own, polled in slices of at most 200 ms, so a revocation is seen within one slice while
// the head is read, the name resolved (egress_dial.h), the connect pending or bytes relayed.
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
#include <optional>

#include "egress/box_stream.h"
#include "egress/egress_dial.h"
#include "egress/egress_relay.h"
#include "egress/http_head.h"
#include "egress/plain_request.h"
#include "egress/service_rendezvous.h"
#include "egress/tls_handshake_watch.h"

namespace radial::egress::detail {

namespace {

namespace ip = boost::asio::ip;
// Real time: deadlines for real peers on real sockets (docs/design.md §12.7).
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kMostHeadBytes = 16u << 10;

// Real time: the egress broker takes no clock yet (docs/design.md §12.7).
std::int64_t epoch_ms() {
    return std::chrono::duration_cast<milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
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
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, kRelaySliceMs)));
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

// Reads the request's head (up to its blank line) into `head`, and what came after it into
// `rest`. False with `why` when it could not be read.
bool read_head(BrokerShared& shared, int fd, std::string& head, std::string& rest,
               std::string& why) {
    std::string buf;
    const auto deadline = Clock::now() + shared.options.head_timeout;
    std::size_t end = std::string::npos;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        if (buf.size() > kMostHeadBytes) {
            why = "the request's head is over 16 KiB";
            return false;
        }
        // A line ended by a bare LF would never end the head; it is refused at once.
        for (std::size_t i = buf.find('\n'); i != std::string::npos; i = buf.find('\n', i + 1))
            if (i == 0 || buf[i - 1] != '\r') {
                why = "a bare LF in the request head";
                return false;
            }
        if (!wait_for(shared, fd, POLLIN, deadline)) {
            why = shared.revoked ? "revoked at the turn's end" : "no request head in time";
            return false;
        }
        char tmp[4096];
        const ssize_t n = recv_from_box(fd, tmp, sizeof tmp);
        if (n <= 0) {
            why = buf.empty() ? "" : "the box closed the connection inside its request head";
            return false;
        }
        buf.append(tmp, static_cast<std::size_t>(n));
    }
    // The last read may have brought the blank line past the limit: the head is judged by its
    // own size, not by how much had come before that read.
    if (end + 4 > kMostHeadBytes) {
        why = "the request's head is over 16 KiB";
        return false;
    }
    head = buf.substr(0, end + 2); // the last header line keeps its CRLF
    rest = buf.substr(end + 4);
    return true;
}

// A tunnel carries TLS to the host it was opened to: its first bytes must be a ClientHello whose
// server name is that host (one without a name only for an IP-literal destination). Anything else
// — another protocol, whose requests the broker cannot read, or nothing within the hello timeout —
// is refused, and so is a hello offering Encrypted Client Hello, whose outer name is only a front
// for the one inside. The watch judges every later hello the same (relay() goes on feeding it).
// Fronting inside TLS (another name in the encrypted Host) is out of its sight.
bool check_server_name(BrokerShared& shared, Connection& c, TlsHandshakeWatch& watch,
                       std::string& pending, Receipt& r) {
    const auto deadline = Clock::now() + shared.options.hello_timeout;
    std::string_view fresh = pending;
    char tmp[4096];
    for (;;) {
        if (!watch.from_box(fresh)) {
            r.reason = watch.why();
            return false;
        }
        if (watch.first_hello_judged()) return true;
        if (!wait_for(shared, c.client, POLLIN, deadline)) {
            r.reason = shared.revoked ? "revoked at the turn's end" : "no TLS handshake in time";
            return false;
        }
        const ssize_t n = recv_from_box(c.client, tmp, sizeof tmp);
        if (n <= 0) {
            r.reason = "closed before its TLS handshake";
            return false;
        }
        pending.append(tmp, static_cast<std::size_t>(n));
        fresh = std::string_view(tmp, static_cast<std::size_t>(n));
    }
}

// Records the destination `c` asks for and judges it by the rules in force, in one step under the
// policy lock (operator_policy.h): a change of policy after it sees the destination.
bool named_by_rules(BrokerShared& shared, Connection& c, const std::string& host,
                    std::uint16_t port, bool literal) {
    std::lock_guard lock(shared.policy_mutex);
    c.host = host;
    c.port = port;
    c.literal = literal;
    return shared.rules.permits(host, port, literal);
}

// The addresses of `host` no denied range holds (resolved once); empty, with the receipt's reason,
// when there is none.
std::vector<ip::address> allowed_addresses(BrokerShared& shared, const std::string& host,
                                           std::uint16_t port, Receipt& r) {
    const auto& o = shared.options;
    std::string why;
    const auto addresses = resolve_until(o.ceiling, host, Clock::now() + o.connect_timeout,
                                         shared.revoked, shared.lookups, why);
    if (addresses.empty()) r.reason = why.empty() ? fmt::format("'{}' has no address", host) : why;
    std::vector<ip::address> out;
    if (addresses.empty()) return out;
    // Now, not at the turn's start: an address the host gained since is the host's too.
    const auto own = own_addresses();
    if (!own) {
        r.reason = fmt::format(
            "this host's own addresses cannot be listed ({}), so no address of "
            "'{}' can be told apart from them",
            std::strerror(errno), host);
        return out;
    }
    for (const auto& a : addresses) {
        bool denied = false;
        {
            std::lock_guard lock(shared.policy_mutex);
            denied = shared.rules.denies(unmapped(a).to_string(), port, true);
        }
        if (denied)
            r.reason = fmt::format(
                "'{}' resolves to {}, and {}:{} is denied by the operator "
                "(radiald policy)",
                host, a.to_string(), unmapped(a).to_string(), port);
        else if (std::string no = dial_refusal(o.ceiling, *own, a); !no.empty())
            r.reason = fmt::format("'{}' resolves to {}; {}", host, a.to_string(), no);
        else
            out.push_back(a);
    }
    return out;
}

// Connects to the first of `addresses` that answers; false (with the receipt's reason) when none.
bool open_destination(BrokerShared& shared, Connection& c,
                      const std::vector<ip::address>& addresses, std::uint16_t port, Receipt& r) {
    const auto deadline = Clock::now() + shared.options.connect_timeout;
    for (const auto& a : addresses) {
        r.address = a.is_v6() ? fmt::format("[{}]:{}", a.to_string(), port)
                              : fmt::format("{}:{}", a.to_string(), port);
        std::string why;
        if (connect_until(a, port, deadline, shared.revoked, c.upstream, why) >= 0) {
            std::lock_guard lock(shared.policy_mutex);
            c.address = unmapped(a).to_string();
            return true;
        }
        c.close_upstream(); // a failed address's socket is not kept while the next is tried
        r.reason = why;
    }
    return false;
}

// Reaches a service of another workspace through the broker of the turn serving it
// (service_rendezvous.h): never resolved, the edge judged by this turn's config first.
bool open_service(BrokerShared& shared, Connection& c, const AllowRule& dest, Receipt& r) {
    const auto name = parse_service_host(dest.host);
    if (!name) {
        r.reason = fmt::format("{} is under the reserved suffix '{}' but is no SERVICE.WORKSPACE",
                               dest.text(), kServiceSuffix);
        return false;
    }
    if (std::string why =
            edge_refusal(shared.options.net, shared.options.workspace, *name, dest.port);
        !why.empty()) {
        r.reason = why;
        return false;
    }
    ServedSocket s;
    std::string why;
    if (!dial_service(shared, *name, s, why)) {
        if (s.rendezvous >= 0) ::close(s.rendezvous);
        r.reason = why;
        return false;
    }
    {
        std::lock_guard lock(c.fd_mutex);
        c.upstream_from_box = true;
        c.upstream = s.socket;
        c.rendezvous = s.rendezvous;
    }
    r.address = "turn " + s.served_by;
    return true;
}

// radial-init's control connection (a turn that offers services): handed to the turn's offers,
// or refused. The receipt says which.
void take_control(BrokerShared& shared, Connection& c, Receipt& r) {
    r.kind = "CONTROL";
    if (!shared.offers) {
        r.reason = "refused: a control connection, but the turn offers no service";
        return;
    }
    std::lock_guard lock(c.fd_mutex);
    if (!shared.offers->take_control(c.client, r.reason)) return;
    c.client = -1; // the offers own it now
    r.verdict = "allowed";
    r.reason = "radial-init's control connection for the turn's offered services";
}

void finish(BrokerShared& shared, Receipt& r) {
    r.ended_ms = epoch_ms();
    shared.receipt(r);
}

} // namespace

void BrokerShared::receipt(const Receipt& r) { store(options.on_receipt, r, Cap::unopened); }

bool BrokerShared::opened(const Receipt& r) { return store(options.on_open, r, Cap::openings); }

bool BrokerShared::store(const std::function<void(const Receipt&)>& to, const Receipt& r, Cap cap) {
    if (!to) return false;
    std::lock_guard lock(receipt_mutex);
    std::size_t* stored = cap == Cap::unopened   ? &unopened_stored
                          : cap == Cap::openings ? &openings_stored
                                                 : nullptr;
    if (stored != nullptr && *stored >= kMostReceipts) {
        ++receipts_dropped;
        return false;
    }
    if (stored != nullptr) ++*stored;
    try {
        // A receipt's size is bounded whatever the box sent (a 16 KiB target, a 64 KiB server
        // name), so that its caps bound what a turn's receipts take of the journal.
        Receipt bounded = r;
        bounded.destination = shown_text(r.destination, kMostShownDestination);
        bounded.reason = shown_text(r.reason, kMostShownReason);
        to(bounded);
        return true;
    } catch (const std::exception& e) {
        // Said once, then counted: a full journal must not become a flood of log lines.
        if (receipts_failed++ == 0 && options.on_log)
            options.on_log(fmt::format("an egress receipt could not be stored: {}", e.what()));
        return false;
    }
}

Connection::~Connection() {
    close_box_socket(client.exchange(-1));
    if (const int up = upstream.exchange(-1); up >= 0) {
        if (upstream_from_box)
            close_box_socket(up);
        else
            ::close(up);
    }
    if (const int rv = rendezvous.exchange(-1); rv >= 0) ::close(rv);
}

void Connection::replace_client(int fd) noexcept {
    std::lock_guard lock(fd_mutex);
    close_box_socket(client.exchange(fd));
}

void Connection::close_upstream() noexcept {
    std::lock_guard lock(fd_mutex);
    if (const int fd = upstream.exchange(-1); fd >= 0) ::close(fd);
}

void Connection::cut() noexcept {
    std::lock_guard lock(fd_mutex);
    if (const int fd = client.load(); fd >= 0) ::shutdown(fd, SHUT_RDWR);
    if (const int up = upstream.load(); up >= 0) ::shutdown(up, SHUT_RDWR);
}

void refuse_at_once(BrokerShared& shared, int client, const std::string& reason) noexcept {
    Receipt r;
    r.started_ms = epoch_ms();
    r.verdict = "refused";
    r.reason = reason;
    answer(client, 503, "Service Unavailable", reason);
    close_box_socket(client); // descriptors the box queued on it are dropped by that close
    finish(shared, r);
}

namespace {

// Replaces the broker's socket connection by the box's own when radial-init hands it over
// (box_stream.h). False, with why, when the hand-over was refused or the broker revoked first.
bool take_stream(BrokerShared& shared, Connection& c, std::string& why, std::string& via) {
    const int stream = take_box_stream(c.client, Clock::now() + shared.options.head_timeout,
                                       shared.revoked, why, via);
    if (stream < 0) {
        if (why.empty())
            why = shared.revoked ? "revoked at the turn's end" : "no request in time";
        else
            why = "refused: " + why;
        return false;
    }
    if (stream != c.client) c.replace_client(stream);
    // A revocation that cut the old descriptor before the exchange is seen here.
    if (shared.revoked) {
        why = "revoked at the turn's end";
        return false;
    }
    return true;
}

bool quota_spent(const BrokerShared& shared) {
    const auto& c = shared.options.ceiling;
    return shared.bytes_in >= c.max_bytes_in || shared.bytes_out >= c.max_bytes_out;
}

// serve() up to the receipt: false when there is none to write (nothing was sent).
bool serve_until_receipt(BrokerShared& shared, Connection& c, Receipt& r, bool& opened) {
    try {
        std::string raw, rest, why;
        if (!take_stream(shared, c, why, r.via)) {
            r.reason = why;
            return true;
        }
        if (r.via == "control") {
            take_control(shared, c, r);
            return true;
        }
        if (!read_head(shared, c.client, raw, rest, why)) {
            r.reason = why;
            // A connection that sent nothing at all is counted, not journaled: a box opening and
            // closing connections must not fill the journal.
            if (why.empty()) {
                ++shared.empty_connections;
                return false;
            }
            return true;
        }
        std::optional<HttpHead> h = parse_request_head(raw.substr(0, raw.size() - 2), why);
        if (!h) {
            r.reason = "refused: " + why;
            answer(c.client, 400, "Bad Request", r.reason);
            return true;
        }
        r.kind = h->method == "CONNECT" ? "CONNECT" : "HTTP";
        r.destination = shown_target(h->target); // the parsed host:port once it is one
        AllowRule dest;
        std::string forward;
        std::uint64_t body = kUnlimitedBody;
        bool judged = false;
        if (h->method == "CONNECT") {
            try {
                dest = parse_allow_rule(h->target);
                if (dest.host.starts_with("*.")) throw PolicyError("a wildcard is no destination");
                r.destination = dest.text();
                judged = true;
            } catch (const PolicyError& e) {
                // e.what() quotes the target whole: only when it carries no user information.
                r.reason =
                    h->target.find('@') != std::string::npos
                        ? fmt::format(
                              "CONNECT '{}' carries user information; a tunnel "
                              "names host:port only",
                              shown_target(h->target))
                        : fmt::format("CONNECT '{}' is not host:port{}", shown_target(h->target),
                                      shown_why(e.what(), h->target));
            }
        } else {
            judged = plain_request(*h, dest, forward, body, r);
        }
        boost::system::error_code ec;
        ip::make_address(dest.host, ec);
        const bool literal = judged && !ec;
        if (judged && !named_by_rules(shared, c, dest.host, dest.port, literal)) {
            judged = false;
            std::lock_guard lock(shared.policy_mutex);
            r.reason =
                shared.rules.denies(dest.host, dest.port, literal)
                    ? fmt::format("{} is denied by the operator (radiald policy)", dest.text())
                : literal ? fmt::format(
                                "an IP literal ({}) is not a destination the turn's "
                                "egress names; ask for a host name",
                                dest.host)
                          : fmt::format("{} is not in the turn's egress policy", dest.text());
        }
        if (judged && quota_spent(shared)) {
            judged = false;
            r.reason = "the turn's egress quota is spent (run.egress.maxBytesIn / maxBytesOut)";
        }
        std::vector<ip::address> addresses;
        std::optional<TlsHandshakeWatch> watch; // a tunnel's
        // A service of another workspace is never resolved (docs/design.md §9.7).
        const bool service = judged && is_service_host(dest.host);
        if (judged && !service) {
            addresses = allowed_addresses(shared, dest.host, dest.port, r);
            judged = !addresses.empty();
        }
        if (!judged) {
            answer(c.client, 403, "Forbidden", r.reason);
            return true;
        }
        if (r.kind == "CONNECT") {
            // Judged before anything is connected: the hello first, then the destination.
            const std::string ok = "HTTP/1.1 200 Connection established\r\n\r\n";
            watch.emplace(dest.host, literal);
            if (!send_all(c.client, ok.data(), ok.size()) ||
                !check_server_name(shared, c, *watch, rest, r)) {
                if (r.reason.empty()) r.reason = "closed";
                return true;
            }
            forward = std::move(rest);
        } else {
            // The body that came with the head, up to its length; nothing after it is sent.
            const std::size_t take =
                static_cast<std::size_t>(std::min<std::uint64_t>(body, rest.size()));
            forward += rest.substr(0, take);
            body -= take;
        }
        if (service ? !open_service(shared, c, dest, r)
                    : !open_destination(shared, c, addresses, dest.port, r)) {
            if (r.kind == "HTTP") answer(c.client, 403, "Forbidden", r.reason);
            return true;
        }
        // A policy change during the resolution or the connect: judged again before any byte.
        if (!still_permitted(shared, c, dest, literal)) {
            r.reason = fmt::format("revoked by radiald policy: {} is denied now", dest.text());
            if (r.kind == "HTTP") answer(c.client, 403, "Forbidden", r.reason);
            return true;
        }
        r.verdict = "allowed";
        opened = shared.opened(r); // kept if radiald dies before the connection ends
        if (!opened && shared.options.on_open) {
            // Its opening could not be journaled (the turn's kMostReceipts openings are stored,
            // or the journal failed): nothing goes out that no receipt names.
            r.verdict = "refused";
            r.reason = fmt::format(
                "the turn's receipts of opened connections cannot take one more (at most {} per "
                "turn, or the journal failed); connection refused",
                kMostReceipts);
            if (r.kind == "HTTP") answer(c.client, 503, "Service Unavailable", r.reason);
            return true;
        }
        // The receipt counts what reached the destination: nothing when the quota or the send
        // stopped it.
        const std::uint64_t most_out = shared.options.ceiling.max_bytes_out;
        if (const std::size_t taken = take_quota(shared.bytes_out, most_out, forward.size());
            taken < forward.size()) {
            give_back_quota(shared.bytes_out, taken); // all or nothing: a head is not cut
            r.reason = fmt::format(
                "the turn's quota of {} bytes from the box was reached; connection closed",
                most_out);
            return true;
        }
        if (!send_all(c.upstream, forward.data(), forward.size())) {
            if (r.reason.empty()) r.reason = "the destination closed the connection";
            return true;
        }
        r.bytes_out += forward.size();
        relay(shared, c, r, body, watch ? &*watch : nullptr);
    } catch (const std::exception& e) {
        r.reason = fmt::format("broker error: {}", e.what());
    }
    return true;
}

} // namespace

void serve(BrokerShared& shared, Connection& c) noexcept {
    Receipt r;
    r.started_ms = epoch_ms();
    r.verdict = "refused";
    bool opened = false;
    if (!serve_until_receipt(shared, c, r, opened)) return;
    if (const int rv = c.rendezvous.exchange(-1); rv >= 0) {
        ServedSocket s{-1, rv, {}};
        if (served_side_revoked(s)) r.reason = "revoked: the serving turn ended";
        end_rendezvous(s, r);
    }
    if (c.policy_revoked) {
        try {
            r.reason = fmt::format("revoked by radiald policy: {} is denied now", r.destination);
        } catch (...) {
        }
    }
    r.ended_ms = epoch_ms();
    // The end of a connection whose opening was journaled is journaled too, beyond the caps: a
    // box cannot hide how a connection it opened ended behind a flood of attempts.
    shared.store(shared.options.on_receipt, r,
                 opened ? BrokerShared::Cap::none : BrokerShared::Cap::unopened);
}

bool still_permitted(BrokerShared& shared, const Connection& c, const AllowRule& dest,
                     bool literal) {
    std::lock_guard lock(shared.policy_mutex);
    return !c.policy_revoked && shared.rules.permits(dest.host, dest.port, literal) &&
           (c.address.empty() || !shared.rules.denies(c.address, c.port, true));
}

bool denied_now(const BrokerShared& shared, const Connection& c) {
    // An IP-literal deny names the address a name led to as well: `radiald policy deny
    // 10.1.2.3:443` closes a connection made to a name resolving there (docs/design.md §9.7).
    return !c.host.empty() &&
           (!shared.rules.permits(c.host, c.port, c.literal) ||
            (!c.address.empty() && shared.rules.denies(c.address, c.port, true)));
}

} // namespace radial::egress::detail
