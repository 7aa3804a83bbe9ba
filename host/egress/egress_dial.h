// host/egress/egress_dial.h — how the egress broker reaches a destination it has judged
// (docs/design.md §9.7): the name resolved once (the ceiling's map, else the system resolver on a
// thread of its own, so a resolver that never answers cannot hold the broker past its deadline
// or a revocation), every address checked, and a connect bounded the same way. Private to
// host/egress.
#pragma once

#include <atomic>
#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "egress/egress_policy.h"

namespace radial::egress::detail {

// The addresses of this host's own interfaces (getifaddrs), which no box reaches unless an
// entry of the ceiling's allowRanges names the address alone (/32, /128): a DNS answer pointing
// at the host itself is refused even when the address is public. Read for each connection, so an
// address the host gains during a turn is the host's too. nullopt (errno set) when they cannot be
// listed: the caller then refuses.
std::optional<std::vector<boost::asio::ip::address>> own_addresses();

// A broker's system lookups still under way, each on a thread of its own, also those whose
// connection stopped waiting (a lookup cannot be cancelled): at most `most` at once, so a box
// asking again and again for a name whose resolver never answers cannot make the host start
// threads without end. Shared with the lookups' threads, which may outlive the broker.
struct LookupsInFlight {
    std::shared_ptr<std::atomic<std::size_t>> count = std::make_shared<std::atomic<std::size_t>>(0);
    std::size_t most = 16;
};

// The addresses of `host` (an IP literal, a name of the ceiling's map, or a name the system
// resolves), within `deadline` and while `revoked` is false. Empty with `why` otherwise, also when
// `lookups` are at their most.
std::vector<boost::asio::ip::address> resolve_until(const EgressCeiling& ceiling,
                                                    const std::string& host,
                                                    std::chrono::steady_clock::time_point deadline,
                                                    const std::atomic<bool>& revoked,
                                                    LookupsInFlight& lookups, std::string& why);

// Whether `plain` (unmapped) lies in a block the kernel keeps for this host whatever its
// interfaces: unspecified, 0.0.0.0/8, 127.0.0.0/8, ::1.
bool in_host_ranges(const boost::asio::ip::address& plain);

// Whether the kernel routes `plain` (unmapped) to this host itself (RTM_GETROUTE answering
// RTN_LOCAL: an interface's address, or a local route); false when it has no route to it; nullopt
// when it cannot be asked, with its errno in `*error` when given.
std::optional<bool> routed_locally(const boost::asio::ip::address& plain, int* error = nullptr);

// Why no box may reach `a`, or empty: address_refusal's answer, then this host (`own`, the blocks
// of in_host_ranges, or what routed_locally says — unknown counts as this host) unless an
// allowRanges entry names the address alone.
std::string dial_refusal(const EgressCeiling& ceiling,
                         const std::vector<boost::asio::ip::address>& own,
                         const boost::asio::ip::address& a);

// A connected blocking socket to `a`:`port`, made within `deadline` and while `revoked` is false;
// stored in `upstream` as soon as it exists (so a revocation can shut it). -1 with `why`.
int connect_until(const boost::asio::ip::address& a, std::uint16_t port,
                  std::chrono::steady_clock::time_point deadline, const std::atomic<bool>& revoked,
                  std::atomic<int>& upstream, std::string& why);

} // namespace radial::egress::detail
