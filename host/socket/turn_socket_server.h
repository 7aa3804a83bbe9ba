// host/socket/turn_socket_server.h — the per-turn socket a box writes records back through
// (docs/design.md §9 and §5). It is the only write path from a turn to the
// host.
//
// One server per turn: it binds a unix socket (the box sees it through a mount) or a tcp port
// (sandbox microVMs, docs/design.md §9.1), authenticates every request with the turn's bearer
// token, lets through only records of the turn's one type, and hands each accepted record to a
// RecordSink (the journal). The HTTP decisions are in record_request_handler.h; this class is the
// I/O.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "socket/record_sink.h"
#include "socket/socket_error.h"
#include "time/clock.h"

namespace radial::socket {

// Where the socket listens (docs/design.md §9.1: unix by default, tcp where the box cannot share a
// unix socket with the host, e.g. a microVM).
enum class Transport { unix_socket, tcp };

// The longest unix socket path bind(2) accepts: sizeof(sockaddr_un::sun_path) minus the NUL.
inline constexpr std::size_t kMaxUnixPathBytes = 107;

// How one turn's socket is set up. Every limit is per server (per turn).
struct TurnSocketOptions {
    Transport transport = Transport::unix_socket;

    // unix: absolute host path of the socket, at most kMaxUnixPathBytes bytes (docs/design.md §17,
    // C-10: a longer path is refused, never truncated). Its parent directory should be a per-turn
    // directory only the host can enter until the socket is bound (the caller makes it 0700);
    // if it does not exist it is created 0700 (its own parent must exist) and removed again by
    // the destructor. Nothing may exist at the path itself.
    std::string unix_path;
    // unix: the box user. When set, the socket is chowned to it with mode 0600 and the parent
    // directory with mode 0700, after the bind, so that it — and no other local user — can
    // connect. A world-writable or sticky parent (e.g. /tmp itself) is refused rather than
    // handed to the box user.
    std::optional<std::pair<uid_t, gid_t>> unix_owner;

    // tcp: an IPv4 or IPv6 literal (no name lookup); docs/design.md §9.1 defaults to loopback.
    std::string tcp_host = "127.0.0.1";
    std::uint16_t tcp_port = 0; // 0 = an ephemeral port; port() tells which

    // The bearer token (mint_turn_token()); at least 32 characters.
    std::string token;
    // The only record type this turn may write (the requested-type-only guard): printable
    // ASCII without spaces, quotes or backslashes, e.g. "turn.result".
    std::string record_type;

    std::size_t max_body_bytes = 1 << 20; // bytes; a larger body gets 413
    // Connections that have presented the token, at once; one more that presents it gets 503.
    std::size_t max_connections = 8;
    // Connections that have not presented the token yet, at once. A new connection is always
    // accepted: at this limit the oldest pending one of the peer holding the most (by tcp
    // address or unix uid) is evicted, so connections without the token never hold a slot
    // against the box's, and a local user flooding a tcp port from one address evicts its own
    // first (one flooding from many loopback addresses is not told apart: docs/design.md §9.6).
    std::size_t max_pending_connections = 64;
    // A connection whose first request header, with the valid token, has not arrived within
    // this is dropped, however long request_timeout is.
    std::chrono::milliseconds auth_timeout{1'000};
    // How often a summary of refused and evicted connections is logged (when there were any),
    // and once more when the server stops.
    std::chrono::milliseconds summary_interval{10'000};
    // The whole request (header and body) must arrive, and the response be written, within
    // this; a slow or silent client (or an idle keep-alive connection) is dropped after it.
    std::chrono::milliseconds request_timeout{10'000};

    // Receives one line per rejected request (status, reason, peer) and per I/O failure, and
    // the refusal summaries; never the token or a payload. Called on the serving thread. Empty = no
    // logging. The lead wires it to radial::log with component "socket".
    std::function<void(std::string_view line)> log_line;
    // At most this many rejection lines per server, then one "further rejections not logged"
    // line, so a flooding box cannot fill the host's log. Summaries are not capped (they are
    // rate-limited by summary_interval).
    std::size_t max_logged_rejections = 32;

    // What summary_interval and the summaries' spans are measured by (docs/design.md §12.7); not
    // null, must outlive the server. auth_timeout and request_timeout stay on real time: they
    // bound what real peers do on real sockets.
    const time::Clock* clock = &time::system_clock();
};

// Connections closed since the server started without ever being served with the token.
struct ConnectionStats {
    std::uint64_t without_token = 0; // refused (401), closed, or past auth_timeout without it
    std::uint64_t evicted = 0;       // evicted, unauthenticated, to admit a newer connection
    std::uint64_t over_limit = 0;    // presented the token while max_connections were open
    std::uint64_t total() const noexcept { return without_token + evicted + over_limit; }
};

// A bound, serving turn socket. Construction binds and starts the serving thread; destruction
// stops it, joins the thread, closes every connection, unlinks the socket path and removes the
// directory if this server created it. Requests are served on the serving thread only, so the
// sink is called there, one call at a time.
//
// Thread-safety: address() and port() may be called from any thread. Destroying the server
// waits for a sink call in progress (the sink must not block indefinitely) but not for clients:
// pending reads and writes are cancelled. It must not be destroyed from inside the sink or
// log_line (the serving thread cannot join itself).
//
// Every descriptor it opens is close-on-exec, so processes the host spawns during the turn
// (docker, sbx) never hold a connection or the listener open.
class TurnSocketServer {
public:
    // Validates `options`, binds, applies ownership and modes, and starts serving.
    // Throws SocketError naming the address on: an empty or short token, an empty or non-plain
    // record type,
    // a zero limit, a relative unix path, a unix path over kMaxUnixPathBytes (message names the
    // path, its length and the limit), a shared parent directory with unix_owner, a tcp_host
    // that is not an IP literal, or a failed mkdir/bind/listen/chown/chmod. On a throw nothing
    // is left behind (no socket file, no created directory, no thread).
    TurnSocketServer(TurnSocketOptions options, RecordSink sink);
    ~TurnSocketServer();

    TurnSocketServer(const TurnSocketServer&) = delete;
    TurnSocketServer& operator=(const TurnSocketServer&) = delete;

    // "unix://<path>" or "tcp://<host>:<port>" with the port actually bound ("[v6]" bracketed).
    // [thread-safe]
    const std::string& address() const noexcept;

    // The bound tcp port; 0 for a unix socket. [thread-safe]
    std::uint16_t port() const noexcept;

    // Refused and evicted connections so far (also logged as summaries). [thread-safe]
    ConnectionStats connection_stats() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace radial::socket
