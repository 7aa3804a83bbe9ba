// host/egress/tls_client_hello.h — the server name a TLS client asks for (SNI), read from the
// first bytes a box sends through a CONNECT tunnel, so that the broker can refuse a tunnel whose
// TLS names another host than the one it was opened to (docs/design.md §9.7).
#pragma once

#include <string>
#include <string_view>

namespace radial::egress {

struct ClientHelloScan {
    enum class State {
        need_more, // a TLS handshake record that has not fully arrived yet
        not_tls,   // the bytes are not a TLS handshake (some other protocol in the tunnel)
        malformed, // a TLS handshake record whose ClientHello cannot be read
        no_sni,    // a ClientHello without a server_name extension
        sni,       // a ClientHello naming `server_name`
        encrypted, // a ClientHello offering Encrypted Client Hello (or the older encrypted SNI):
                   // the name the server acts on is inside, out of the broker's sight
    };
    State state = State::need_more;
    std::string server_name; // with State::sni, lowercase
};

// Scans `bytes`, the first bytes of a tunnel: TLS records of type handshake (22), whose payloads
// are joined until the ClientHello (handshake type 1) is whole, at most 64 KiB. Pure; thread-safe.
ClientHelloScan scan_client_hello(std::string_view bytes);

// The same for one whole ClientHello body (after its 4-byte handshake header). Pure; thread-safe.
ClientHelloScan read_client_hello(std::string_view body);

} // namespace radial::egress
