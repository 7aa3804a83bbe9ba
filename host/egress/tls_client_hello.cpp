#include "egress/tls_client_hello.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace radial::egress {

namespace {

using State = ClientHelloScan::State;
constexpr std::size_t kMostHandshakeBytes = 64u << 10;
// Extension types of Encrypted Client Hello (0xfe0d as published, and those of the drafts clients
// shipped, 0xfe08 to 0xfe0c) and of the encrypted SNI before it, all refused (docs/design.md §9.7).
constexpr std::size_t kFirstEncryptedClientHello = 0xfe08, kEncryptedClientHello = 0xfe0d;
constexpr std::size_t kEncryptedServerName = 0xffce;

// A bounds-checked reader over the ClientHello body.
class Reader {
public:
    explicit Reader(std::string_view b) : b_(b) {}
    bool u8(std::size_t& out) { return read(1, out); }
    bool u16(std::size_t& out) { return read(2, out); }
    bool u24(std::size_t& out) { return read(3, out); }
    bool skip(std::size_t n) {
        if (b_.size() - at_ < n) return false;
        at_ += n;
        return true;
    }
    bool take(std::size_t n, std::string_view& out) {
        if (b_.size() - at_ < n) return false;
        out = b_.substr(at_, n);
        at_ += n;
        return true;
    }

private:
    bool read(std::size_t n, std::size_t& out) {
        if (b_.size() - at_ < n) return false;
        out = 0;
        for (std::size_t i = 0; i < n; ++i)
            out = (out << 8) | static_cast<std::uint8_t>(b_[at_ + i]);
        at_ += n;
        return true;
    }
    std::string_view b_;
    std::size_t at_ = 0;
};

ClientHelloScan result(State s, std::string name = {}) { return {s, std::move(name)}; }

} // namespace

ClientHelloScan read_client_hello(std::string_view body) {
    Reader r(body);
    std::size_t n = 0;
    if (!r.skip(2 + 32)) return result(State::malformed);         // version, random
    if (!r.u8(n) || !r.skip(n)) return result(State::malformed);  // session id
    if (!r.u16(n) || !r.skip(n)) return result(State::malformed); // cipher suites
    if (!r.u8(n) || !r.skip(n)) return result(State::malformed);  // compression methods
    std::size_t ext_total = 0;
    if (!r.u16(ext_total)) return result(State::no_sni); // no extensions at all
    std::string_view exts;
    if (!r.take(ext_total, exts)) return result(State::malformed);
    Reader e(exts);
    std::size_t type = 0, len = 0;
    bool seen = false, encrypted = false;
    std::optional<std::string> host;
    while (e.u16(type)) {
        std::string_view data;
        if (!e.u16(len) || !e.take(len, data)) return result(State::malformed);
        // encrypted_client_hello and the draft encrypted_server_name: the outer name is only a
        // front, and the server would act on the one inside (docs/design.md §9.7).
        if ((type >= kFirstEncryptedClientHello && type <= kEncryptedClientHello) ||
            type == kEncryptedServerName)
            encrypted = true;
        if (type != 0) continue; // server_name
        // One server_name extension with one host name, or the hello is refused: a server that
        // read another one than the broker checked would be reached under a name never judged
        // (docs/design.md §9.7).
        if (seen) return result(State::malformed);
        seen = true;
        Reader s(data);
        std::size_t list = 0, name_type = 0, name_len = 0;
        std::string_view names, name;
        if (!s.u16(list) || !s.take(list, names)) return result(State::malformed);
        Reader l(names);
        while (l.u8(name_type)) {
            if (!l.u16(name_len) || !l.take(name_len, name)) return result(State::malformed);
            if (name_type != 0) continue; // host_name
            if (host) return result(State::malformed);
            host.emplace(name);
            std::transform(host->begin(), host->end(), host->begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        }
    }
    if (encrypted) return result(State::encrypted);
    return host ? result(State::sni, std::move(*host)) : result(State::no_sni);
}

ClientHelloScan scan_client_hello(std::string_view bytes) {
    std::string handshake;
    std::size_t at = 0;
    while (true) {
        if (bytes.size() - at < 5) {
            // Not enough for a record header: is what came so far a handshake record at all?
            if (at < bytes.size() && static_cast<std::uint8_t>(bytes[at]) != 22)
                return result(State::not_tls);
            return result(State::need_more);
        }
        const auto type = static_cast<std::uint8_t>(bytes[at]);
        const auto major = static_cast<std::uint8_t>(bytes[at + 1]);
        if (type != 22 || major != 3) return result(at == 0 ? State::not_tls : State::malformed);
        const std::size_t len = (static_cast<std::uint8_t>(bytes[at + 3]) << 8) |
                                static_cast<std::uint8_t>(bytes[at + 4]);
        if (len == 0 || len > (16u << 10) + 2048) return result(State::malformed);
        if (bytes.size() - at - 5 < len) return result(State::need_more);
        handshake.append(bytes.substr(at + 5, len));
        at += 5 + len;
        if (handshake.size() >= 4) {
            if (static_cast<std::uint8_t>(handshake[0]) != 1) return result(State::malformed);
            const std::size_t body = (static_cast<std::uint8_t>(handshake[1]) << 16) |
                                     (static_cast<std::uint8_t>(handshake[2]) << 8) |
                                     static_cast<std::uint8_t>(handshake[3]);
            if (body > kMostHandshakeBytes) return result(State::malformed);
            if (handshake.size() >= 4 + body)
                return read_client_hello(std::string_view(handshake).substr(4, body));
        }
        if (handshake.size() > kMostHandshakeBytes) return result(State::malformed);
    }
}

} // namespace radial::egress
