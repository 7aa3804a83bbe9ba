// host/egress/plain_request.h — a plain HTTP request through the egress broker (docs/design.md
// §9.7): where it goes, and the head sent on. Private to host/egress.
#pragma once

#include <cstdint>
#include <string>

#include "egress/egress_broker.h"
#include "egress/egress_policy.h"
#include "egress/http_head.h"

namespace radial::egress::detail {

// The destination of a plain request: its absolute http:// target, with the Host header (when
// given) naming the same host and port. `forward` gets the head sent on: origin-form, the Host
// written from the target, hop-by-hop headers dropped, `Connection: close`; `body` the
// Content-Length (0 without one). False, with the receipt's reason, for anything else — a body
// in chunks among it: its end cannot be known without parsing it, and one request per connection
// is what keeps a second, unjudged one from riding it. Pure.
bool plain_request(const HttpHead& h, AllowRule& dest, std::string& forward, std::uint64_t& body,
                   Receipt& r);

} // namespace radial::egress::detail
