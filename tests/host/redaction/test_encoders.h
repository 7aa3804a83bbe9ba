// tests/host/redaction/test_encoders.h — encoders written independently of
// host/redaction/secret_patterns.cpp, so tests plant what a real program would print (a whole
// base64 blob, a whole URL query) rather than the patterns the redactor derived itself.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace radial::redaction::test {

// RFC 4648 base64 with '=' padding; `url_safe` uses the "-_" alphabet (RFC 4648 §5).
inline std::string base64(std::string_view in, bool url_safe = false) {
    const char* alphabet = url_safe
                               ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                               : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::uint32_t acc = 0;
    int bits = 0;
    for (unsigned char c : in) {
        acc = (acc << 8) | c;
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out += alphabet[(acc >> bits) & 63];
        }
    }
    if (bits > 0) out += alphabet[(acc << (6 - bits)) & 63];
    while (out.size() % 4 != 0) out += '=';
    return out;
}

// Percent-encoding as encodeURIComponent does it, with a choice of hex case, and optionally
// HTML-form style ('+' for space).
inline std::string percent_encode(std::string_view in, bool upper = true,
                                  bool space_as_plus = false) {
    const char* hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    std::string out;
    for (unsigned char c : in) {
        const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                                (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                                c == '~';
        if (unreserved) {
            out += static_cast<char>(c);
        } else if (space_as_plus && c == ' ') {
            out += '+';
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

} // namespace radial::redaction::test
