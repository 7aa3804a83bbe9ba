// host/egress/service_rendezvous.h — services between workspaces' boxes (docs/design.md §9.7,
// "Between boxes"). The serving side: a turn that offers services claims
// `<services_dir>/<workspace>/<service>.sock` (root's, 0600, in 0700 directories; an flock on
// `<service>.lock` beside it makes a second live offer fail, naming the turn that holds it), takes
// one control connection from its box's radial-init, and for each peer broker that connects
// re-checks the edge, asks radial-init for a connection to the service's loopback port, checks
// what it hands over as a handed box socket is checked, and passes it to the peer broker. The peer
// side: dial_service() reaches that socket and gets the served socket to relay to. Private to
// host/egress.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "egress/workspace_net.h"

namespace radial::egress {
struct Receipt;
}

namespace radial::egress::detail {

struct BrokerShared;

// A turn's offered services. Owned by its broker; every method is [thread-safe].
class ServiceOffers {
public:
    // Claims and binds every service of shared.options.offers and starts accepting peers.
    // Throws std::runtime_error naming the service (and the turn serving it, when another live
    // turn does) or the path that could not be made.
    explicit ServiceOffers(BrokerShared& shared);
    // stop().
    ~ServiceOffers();
    ServiceOffers(const ServiceOffers&) = delete;
    ServiceOffers& operator=(const ServiceOffers&) = delete;

    // Takes `fd`, a connection to the broker's socket whose first byte (still unread) is
    // kControl, as radial-init's control connection. False, `fd` left to the caller, with `why`
    // when one was taken already (one per turn, even once it is gone) or the broker is stopping.
    // A peer that comes before it waits for it (bounded).
    bool take_control(int fd, std::string& why);

    // Stops accepting, removes the sockets, shuts down every served connection (the peer's
    // relay ends at once), waits for their receipts, closes the control connection. Idempotent.
    void stop() noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// A served connection as the peer broker holds it.
struct ServedSocket {
    int socket = -1;       // the serving box's connection to its service (a handed box socket)
    int rendezvous = -1;   // to the serving broker, open for the life of the relay
    std::string served_by; // the serving turn's id
};

// Connects to the turn serving `name`, says who asks (the peer's turn and workspace), and
// returns the served socket. False with `why` when no turn serves it, the serving broker refused
// (its own judgment of the edge, its box's answer) or nothing came within `timeout_ms`.
bool dial_service(BrokerShared& shared, const ServiceName& name, ServedSocket& out,
                  std::string& why);

// At the end of the relay over `s`: whether the serving turn ended it (revocation), then sends
// the receipt's counts to the serving broker and closes the rendezvous. Never throws.
bool served_side_revoked(const ServedSocket& s) noexcept;
void end_rendezvous(ServedSocket& s, const Receipt& r) noexcept;

} // namespace radial::egress::detail
