// host/egress/egress_connection.h — one connection of the egress broker (egress_broker.h): read
// the request's head, judge the destination, connect, relay, count and write the receipt.
// Private to host/egress.
#pragma once

#include <atomic>
#include <boost/asio/ip/address.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "egress/egress_broker.h"
#include "egress/egress_dial.h"

namespace radial::egress::detail {

class ServiceOffers;

// What every connection of one broker shares.
struct BrokerShared {
    EgressBrokerOptions options;
    std::atomic<bool> revoked{false};
    std::atomic<std::uint64_t> bytes_out{0}, bytes_in{0}; // the turn's totals
    std::atomic<std::uint64_t> empty_connections{0};      // closed before sending a byte
    LookupsInFlight lookups; // most: the ceiling's max_connections, set by the broker
    // The rules in force (the turn's, with the operator's changes), and each connection's
    // destination: one lock, so a change either judges a connection or sees its destination.
    std::mutex policy_mutex;
    TurnEgressRules rules;
    std::mutex receipt_mutex; // one on_receipt call at a time, and the counts below
    std::size_t unopened_stored = 0, openings_stored = 0, receipts_dropped = 0, receipts_failed = 0;
    // Which of the two caps a receipt counts towards, or none (the end of a connection whose
    // opening was stored): refusals cannot use up what records the connections that opened.
    enum class Cap { unopened, openings, none };
    // Stores the receipt of an attempt that opened nothing (at most kMostReceipts per turn;
    // beyond, counted), one at a time.
    void receipt(const Receipt& r);
    // The same for a connection just opened to its destination (options.on_open, at most
    // kMostReceipts openings per turn); whether it was stored.
    bool opened(const Receipt& r);
    // Stores `r` through `to` within `cap`. Whether it was stored.
    bool store(const std::function<void(const Receipt&)>& to, const Receipt& r, Cap cap);
    // The services the turn offers (service_rendezvous.h); null when it offers none. Last, so
    // it stops before the rest of what its threads use goes.
    std::shared_ptr<ServiceOffers> offers;
};

// Receipts a turn journals of attempts that opened nothing, and openings of connections each;
// beyond, they are counted and summarised in the log.
inline constexpr std::size_t kMostReceipts = 1000;
// The most bytes of a receipt's destination (a DNS name, its port and brackets) and reason.
inline constexpr std::size_t kMostShownDestination = 270, kMostShownReason = 640;

// One box connection; its descriptors are closed by the destructor. `client` is the broker's
// socket connection until a hand-over replaces it with the box's own (box_stream.h). Every close
// of either descriptor before the destructor, and every cut(), holds fd_mutex, so a cut never
// shuts a number that was closed and reused meanwhile.
struct Connection {
    std::atomic<int> client{-1};
    std::atomic<int> upstream{-1};
    // A service destination's: the rendezvous with the serving broker, open for the relay's
    // life, and the upstream is then a box's socket (closed as one, box_stream.h).
    std::atomic<int> rendezvous{-1};
    std::atomic<bool> upstream_from_box{false};
    std::mutex fd_mutex;
    std::atomic<bool> done{false};
    std::atomic<bool> policy_revoked{false}; // closed because the operator's policy denies it now
    // The destination asked for, once read (under BrokerShared::policy_mutex).
    std::string host;
    std::uint16_t port = 0;
    bool literal = false;
    // The address it reached (unmapped, as an IP-literal rule spells it), once connected (under
    // BrokerShared::policy_mutex): an operator's deny of that address:port closes it too.
    std::string address;
    ~Connection();
    // Ends both directions now (revocation); the serving thread then finishes.
    void cut() noexcept;
    // Makes `fd` the client descriptor and closes the one it replaces.
    void replace_client(int fd) noexcept;
    // Closes the destination's descriptor of a failed connect, before the next address is tried.
    void close_upstream() noexcept;
};

// Whether `dest` is still permitted to `c` (not revoked, the rules in force name it, and no deny
// rule names the address it reached).
bool still_permitted(BrokerShared& shared, const Connection& c, const AllowRule& dest,
                     bool literal);

// Whether `c`'s destination is one `rules` no longer permit (under shared.policy_mutex).
bool denied_now(const BrokerShared& shared, const Connection& c);

// Serves `c` to its end and writes its receipt. Never throws.
void serve(BrokerShared& shared, Connection& c) noexcept;

// Answers a connection refused before its head was read (too many at once) and writes its
// receipt. Never throws.
void refuse_at_once(BrokerShared& shared, int client, const std::string& reason) noexcept;

} // namespace radial::egress::detail
