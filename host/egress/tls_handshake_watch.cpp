// host/egress/tls_handshake_watch.cpp — see tls_handshake_watch.h.
#include "egress/tls_handshake_watch.h"

#include <fmt/format.h>

#include <utility>

#include "egress/http_head.h"
#include "egress/tls_client_hello.h"

namespace radial::egress::detail {

namespace {

constexpr unsigned char kChangeCipherSpec = 20, kAlert = 21, kHandshake = 22, kApplicationData = 23;
constexpr unsigned char kClientHello = 1, kServerHello = 2;
constexpr std::size_t kMostHandshakeBytes = 64u << 10;
// The largest record payload TLS 1.2 allows (2^14 plus its expansion); TLS 1.3 allows less.
constexpr std::size_t kMostRecordBytes = (16u << 10) + 2048;
// The random of a ServerHello that is a HelloRetryRequest: SHA-256 of "HelloRetryRequest".
constexpr std::string_view kHelloRetryRandom =
    "\xcf\x21\xad\x74\xe5\x9a\x61\x11\xbe\x1d\x8c\x02\x1e\x65\xb8\x91"
    "\xc2\xa2\x11\x16\x7a\xbb\x8c\x5e\x07\x9e\x09\xe2\xc8\xa8\x33\x9c";
const std::string kUnreadable = "the tunnel's TLS handshake cannot be read";

// Whole handshake messages of `buffer` (fragments of the records' payloads joined), handed to
// `each(type, body)`; what is not whole yet stays in `buffer`. False when a message is over
// 64 KiB or `each` returned false. Stops, true, once `*done` (the rest is encrypted or the
// watch's no more: a server's Certificate may share the ServerHello's record, and be larger).
template <class Each>
bool messages(std::string& buffer, Each&& each, const bool* done = nullptr) {
    std::size_t at = 0;
    bool ok = true;
    while (ok && !(done != nullptr && *done) && buffer.size() - at >= 4) {
        const std::size_t len = (static_cast<unsigned char>(buffer[at + 1]) << 16) |
                                (static_cast<unsigned char>(buffer[at + 2]) << 8) |
                                static_cast<unsigned char>(buffer[at + 3]);
        if (len > kMostHandshakeBytes) {
            ok = false;
            break;
        }
        if (buffer.size() - at - 4 < len) break;
        ok = each(static_cast<unsigned char>(buffer[at]),
                  std::string_view(buffer).substr(at + 4, len));
        at += 4 + len;
    }
    buffer.erase(0, at);
    return ok;
}

} // namespace

bool TlsRecords::valid_header(unsigned char type, unsigned char major, std::size_t len) {
    if (type < kChangeCipherSpec || type > kApplicationData || major != 3) return false;
    // Only application data may be empty (TLS 1.2 allows it, TLS 1.3 pads with it).
    return len <= kMostRecordBytes && (len > 0 || type == kApplicationData);
}

TlsHandshakeWatch::TlsHandshakeWatch(std::string host, bool literal)
    : host_(std::move(host)), literal_(literal) {}

bool TlsHandshakeWatch::refuse(std::string why) {
    if (why_.empty()) why_ = std::move(why);
    return false;
}

bool TlsHandshakeWatch::from_box(std::string_view bytes) {
    if (over_) return true;
    if (!why_.empty()) return false;
    if (!box_started_ && !bytes.empty()) {
        box_started_ = true;
        if (static_cast<unsigned char>(bytes.front()) != kHandshake)
            return refuse(
                "the tunnel does not start with TLS; a tunnel carries TLS only (plain http:// "
                "goes as a plain request, whose Host is checked)");
    }
    if (!box_records_.feed(
            bytes,
            [this](unsigned char type, std::string_view payload) {
                return box_record(type, payload);
            },
            [] { return false; }))
        return refuse(kUnreadable);
    return true;
}

bool TlsHandshakeWatch::box_record(unsigned char type, std::string_view payload) {
    if (type != kHandshake) {
        // Before the first hello, and inside a handshake message, nothing else may come: a
        // server would not read a hello the watch reads, or read one it does not.
        if (hellos_ == 0 || !box_handshake_.empty()) return refuse(kUnreadable);
        // A change_cipher_spec (middlebox compatibility), an alert, or early data, which a
        // server that asked for another hello skips unread.
        return true;
    }
    box_handshake_.append(payload);
    return messages(box_handshake_, [this](unsigned char msg, std::string_view body) {
        // Before the server's hello, every handshake message of the box's is a ClientHello.
        if (msg != kClientHello) return refuse(kUnreadable);
        return box_hello(body);
    });
}

bool TlsHandshakeWatch::box_hello(std::string_view body) {
    ++hellos_;
    const ClientHelloScan scan = read_client_hello(body);
    std::string why;
    switch (scan.state) {
        case ClientHelloScan::State::sni:
            if (scan.server_name == host_) return true;
            why = fmt::format("the tunnel's TLS names '{}', not '{}'",
                              shown_text(scan.server_name, 96), host_);
            break;
        case ClientHelloScan::State::no_sni:
            if (literal_) return true;
            why = fmt::format("the tunnel's TLS names no server; it must name '{}'", host_);
            break;
        case ClientHelloScan::State::encrypted:
            why =
                "the tunnel's TLS offers Encrypted Client Hello, whose inner server name the "
                "broker cannot check; turn ECH off in the client (Chromium sends a placeholder "
                "one: --disable-features=EncryptedClientHello)";
            break;
        default: why = kUnreadable; break;
    }
    // A later hello: the one a server reads after its HelloRetryRequest, and serves.
    if (hellos_ > 1)
        why += fmt::format(" in ClientHello #{}{}", hellos_,
                           retries_ > 0 ? " (after the destination's HelloRetryRequest)" : "");
    return refuse(std::move(why));
}

bool TlsHandshakeWatch::from_destination(std::string_view bytes) {
    if (over_) return true;
    if (!why_.empty()) return false;
    if (!destination_records_.feed(
            bytes,
            [this](unsigned char type, std::string_view payload) {
                return destination_record(type, payload);
            },
            [this] { return over_; }))
        return refuse(
            "the destination's answer in the tunnel is no TLS handshake the broker can "
            "follow");
    return true;
}

bool TlsHandshakeWatch::destination_record(unsigned char type, std::string_view payload) {
    if (type == kAlert || (type == kChangeCipherSpec && destination_handshake_.empty()))
        return true;
    if (type != kHandshake) return false;
    destination_handshake_.append(payload);
    return messages(
        destination_handshake_,
        [this](unsigned char msg, std::string_view body) {
            if (msg != kServerHello || body.size() < 2 + kHelloRetryRandom.size()) return false;
            if (body.substr(2, kHelloRetryRandom.size()) == kHelloRetryRandom)
                ++retries_; // the box sends another hello, judged as the first
            else
                over_ = true;
            return true;
        },
        &over_);
}

} // namespace radial::egress::detail
