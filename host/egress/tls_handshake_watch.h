// host/egress/tls_handshake_watch.h — the part of a tunnel's TLS handshake that travels in the
// clear, both ways, so that every ClientHello the box sends is judged and not only the first: a
// TLS 1.3 server that answers with a HelloRetryRequest reads a second ClientHello, in the clear
// too, and serves the name that one gives (docs/design.md §9.7). The watch lasts until the
// destination's ServerHello that is no HelloRetryRequest: after it the server reads no hello.
// Private to host/egress.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace radial::egress::detail {

// TLS records as they arrive, in pieces of any size: each whole record's type and payload.
class TlsRecords {
public:
    // Whole records of `bytes` (with what came before), handed to `each(type, payload)` in order,
    // until `done()`: what follows is not read. False when the bytes are no TLS records (a type
    // outside 20..23, a major version not 3, a length no record has) or `each` returned false. At
    // most one record is kept between calls.
    template <class Each, class Done>
    bool feed(std::string_view bytes, Each&& each, Done&& done) {
        pending_.append(bytes);
        std::size_t at = 0;
        bool ok = true;
        while (ok && !done() && pending_.size() - at >= 5) {
            const auto type = static_cast<unsigned char>(pending_[at]);
            const std::size_t len = (static_cast<unsigned char>(pending_[at + 3]) << 8) |
                                    static_cast<unsigned char>(pending_[at + 4]);
            if (!valid_header(type, static_cast<unsigned char>(pending_[at + 1]), len)) {
                ok = false;
                break;
            }
            if (pending_.size() - at - 5 < len) break;
            ok = each(type, std::string_view(pending_).substr(at + 5, len));
            at += 5 + len;
        }
        pending_.erase(0, at);
        return ok;
    }

private:
    static bool valid_header(unsigned char type, unsigned char major, std::size_t len);
    std::string pending_;
};

class TlsHandshakeWatch {
public:
    // `host`: the tunnel's, lowercase; `literal`: an IP literal (a hello may then name none).
    TlsHandshakeWatch(std::string host, bool literal);

    // The box's bytes, before they go on: false when they may not (why() says why), because a
    // ClientHello among them names another server than `host`, none, or offers Encrypted Client
    // Hello, or because they are no TLS the watch can follow.
    bool from_box(std::string_view bytes);
    // The destination's bytes: false when they are no TLS handshake the watch can follow.
    bool from_destination(std::string_view bytes);
    // Whether the box's first ClientHello is whole and was judged.
    bool first_hello_judged() const { return hellos_ > 0; }
    // Whether the destination's ServerHello (no HelloRetryRequest) came: the watch is over.
    bool over() const { return over_; }
    const std::string& why() const { return why_; }

private:
    bool refuse(std::string why);
    bool box_record(unsigned char type, std::string_view payload);
    bool box_hello(std::string_view body);
    bool destination_record(unsigned char type, std::string_view payload);

    std::string host_;
    bool literal_ = false;
    TlsRecords box_records_, destination_records_;
    std::string box_handshake_, destination_handshake_; // a handshake message not yet whole
    std::size_t hellos_ = 0;                            // the box's ClientHellos judged
    std::size_t retries_ = 0;                           // HelloRetryRequests seen
    bool box_started_ = false;                          // a byte of the box's came
    bool over_ = false;
    std::string why_;
};

} // namespace radial::egress::detail
