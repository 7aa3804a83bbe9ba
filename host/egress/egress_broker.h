// host/egress/egress_broker.h — a turn's egress broker (docs/design.md §9.7): an HTTP proxy on a
// unix socket in the turn's socket directory, which the box reaches through radial-init's loopback
// endpoint. It lets a box reach exactly the destinations of the turn's rules: CONNECT host:port
// (TLS, any protocol) and plain HTTP in absolute form; it resolves each name itself, once, and
// connects only to an address no denied range holds; it refuses a Host header or a TLS server
// name that differs from the destination; it counts bytes each way against the turn's quotas; it
// writes a receipt for every attempt; revoke() closes every connection at once; and a change the
// operator makes with `radiald policy` applies to it while it runs (reload_policy()).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "egress/egress_policy.h"
#include "egress/operator_policy.h"
#include "egress/workspace_net.h"

namespace radial::egress {

// One connection attempt, as journaled (docs/design.md §9.7).
struct Receipt {
    std::string kind;        // "CONNECT" or "HTTP"; empty when the request could not be read
    std::string destination; // "host:port" as the box asked for it
    std::string address;     // "ip:port" connected to; empty when none was
    std::string verdict;     // "allowed" or "refused"
    std::string reason;      // why it was refused, or how an allowed one ended
    // How the box's bytes came: "handed" (radial-init handed the box's connection over),
    // "relayed" (radial-init relays it: the runtime passes no descriptors) or "socket" (a client
    // of the unix socket itself). Empty when nothing was read.
    std::string via;
    std::uint64_t bytes_out = 0; // from the box
    std::uint64_t bytes_in = 0;  // to the box
    std::int64_t started_ms = 0; // Unix epoch
    std::int64_t ended_ms = 0;
    // A served connection's (kind "SERVED"): the peer turn's id, the task that reached the
    // service. Empty otherwise.
    std::string peer{};
};

struct EgressBrokerOptions {
    // The socket's absolute path; its directory must exist and be the turn's (0700, root's or the
    // box user's). Nothing may exist at the path.
    std::string unix_path;
    // The box user: the socket is chowned to it, mode 0600. Unset: mode 0666 (the directory
    // still keeps other local users out).
    std::optional<std::pair<uid_t, gid_t>> owner;
    EgressCeiling ceiling;        // the ranges, the name map and the quotas
    std::vector<AllowRule> rules; // the turn's destinations (narrow())
    // The operator's changes (operator_policy.h), applied to `rules` at start and again each time
    // the file is replaced while the broker runs; empty: none. `turn_id` picks the turn's own.
    std::string policy_path;
    std::string turn_id;
    // Where the broker keeps its ceiling's allow rules while it runs (broker_ceiling_path), for
    // `radiald policy`; removed at its revocation. Empty: nowhere.
    std::string ceiling_note;
    // Called once per attempt when it ends, from the broker's threads, one call at a time.
    std::function<void(const Receipt&)> on_receipt;
    // Called when a connection to the destination has just opened (verdict "allowed", no end
    // yet), so a record of it outlives a radiald killed before it ends. Same threads and lock.
    std::function<void(const Receipt&)> on_open;
    // Lines for the host's log (a receipt that could not be stored, the summary at revocation).
    std::function<void(const std::string&)> on_log;
    std::chrono::milliseconds head_timeout{30'000};    // for the request's head
    std::chrono::milliseconds connect_timeout{15'000}; // for the connection to the destination
    std::chrono::milliseconds hello_timeout{10'000};   // for a tunnel's first TLS bytes
    // For a tunnel whose box ended its side: the destination's silence after which it is closed.
    std::chrono::milliseconds half_closed_timeout{30'000};
    // Between boxes (docs/design.md §9.7): where offered services' sockets live
    // (<stateDir>/services), the turn's workspace identity (empty: none), the operator's
    // workspaces, and the services the turn offers (name -> port in its box). A rule for a
    // service destination (workspace_net.h) is reached through the serving turn's broker there.
    std::string services_dir{};
    std::string workspace{};
    WorkspaceNet net{};
    std::map<std::string, std::uint16_t> offers{};
};

// What `radiald config check` warns of in `ceiling` on this host (range_warnings, with this
// host's addresses as they are now).
std::vector<std::string> ceiling_warnings(const EgressCeiling& ceiling);

class EgressBroker {
public:
    // Binds and starts accepting. Throws std::runtime_error naming the path when the socket, its
    // wake pipe or its accepting thread cannot be made; a broker that failed to start leaves no
    // socket file and no descriptor open.
    explicit EgressBroker(EgressBrokerOptions options);
    // revoke().
    ~EgressBroker();
    EgressBroker(const EgressBroker&) = delete;
    EgressBroker& operator=(const EgressBroker&) = delete;

    // Stops accepting, removes the socket, closes every open connection (both ends) at once, and
    // returns once each has written its receipt ("revoked"). Idempotent. [thread-safe]
    void revoke() noexcept;

    // Reads the operator's policy again and applies it: new connections are judged by it, and
    // every open connection to a destination it no longer permits is closed at once (its receipt
    // says "revoked by radiald policy"). Called by the broker itself when the file changes. An
    // unreadable file is logged and the rules in force are kept. [thread-safe]
    void reload_policy();

    // Connections open now. [thread-safe]
    std::size_t open_connections() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace radial::egress
