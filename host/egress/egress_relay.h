// host/egress/egress_relay.h — the bytes of an allowed connection, both ways, with splice(2), and
// the turn's quotas they are taken from (docs/design.md §9.7).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "egress/egress_connection.h"
#include "egress/tls_handshake_watch.h"

namespace radial::egress::detail {

// How often a blocked relay or head read looks at revocation, in ms.
inline constexpr int kRelaySliceMs = 200;
// relay()'s `limit_out` when the box may send without end (a tunnel).
inline constexpr std::uint64_t kUnlimitedBody = ~std::uint64_t{0};

// Takes up to `want` bytes of a per-turn quota of `most` bytes, `total` of which are taken: what
// a lane may move, taken before it moves it, so that no read passes the quota, whatever runs
// beside it. Returns how many were taken; 0 when the quota is spent. [thread-safe]
std::size_t take_quota(std::atomic<std::uint64_t>& total, std::uint64_t most,
                       std::size_t want) noexcept;

// Gives back `n` bytes taken and not moved. [thread-safe]
void give_back_quota(std::atomic<std::uint64_t>& total, std::size_t n) noexcept;

// Relays between the box (c.client) and the destination (c.upstream) until both ends closed, a
// quota is spent or the broker or the policy revoked the connection; r.reason says which. At most
// `limit_out` more bytes go from the box to the destination (a plain request's body): what the box
// sends beyond them is never read. The receipt's bytes are those written to the other end. Each
// quota is taken before the bytes are read (take_quota), so a breach delivers exactly what the
// quota had left and then closes the connection. A tunnel's `watch` (its first ClientHello judged)
// reads both ways until it is over, each read before it goes on; a box's hello it refuses closes
// the connection, the receipt "refused" with its why(). Blocking; one thread per connection.
void relay(BrokerShared& shared, Connection& c, Receipt& r, std::uint64_t limit_out,
           TlsHandshakeWatch* watch = nullptr);

} // namespace radial::egress::detail
