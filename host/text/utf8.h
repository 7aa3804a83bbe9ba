// host/text/utf8.h — decoding UTF-8 strictly, for every place that must tell characters from bytes
// (redaction's code-point escapes, the output tail's cut). Header-only and standard library only,
// so the self-contained redaction library can use it too.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace radial::text {

// Whether `c` is a UTF-8 continuation byte (10xxxxxx). [thread-safe]
constexpr bool is_utf8_continuation(char c) noexcept {
    return (static_cast<unsigned char>(c) & 0xc0) == 0x80;
}

// Decodes the UTF-8 sequence at s[i]: returns its code point and advances i past it, or returns
// nullopt (i unchanged) for an invalid sequence: a stray continuation byte, an overlong form, a
// surrogate, a code point above U+10FFFF, or a sequence cut short by the end of `s`. i < s.size().
// [thread-safe]
inline std::optional<char32_t> decode_utf8(std::string_view s, std::size_t& i) noexcept {
    const auto c0 = static_cast<unsigned char>(s[i]);
    std::size_t len;
    char32_t cp;
    if (c0 < 0x80) {
        ++i;
        return c0;
    } else if ((c0 & 0xe0) == 0xc0) {
        len = 2;
        cp = c0 & 0x1f;
    } else if ((c0 & 0xf0) == 0xe0) {
        len = 3;
        cp = c0 & 0x0f;
    } else if ((c0 & 0xf8) == 0xf0) {
        len = 4;
        cp = c0 & 0x07;
    } else {
        return std::nullopt;
    }
    if (i + len > s.size()) return std::nullopt;
    for (std::size_t k = 1; k < len; ++k) {
        if (!is_utf8_continuation(s[i + k])) return std::nullopt;
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    }
    static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return std::nullopt;
    i += len;
    return cp;
}

// Whether all of `s` is well-formed UTF-8. [thread-safe]
inline bool is_valid_utf8(std::string_view s) noexcept {
    for (std::size_t i = 0; i < s.size();)
        if (!decode_utf8(s, i)) return false;
    return true;
}

// The longest prefix of `s` of at most `max_bytes` bytes that does not end inside a UTF-8
// character, for messages that quote the start of some text. [thread-safe]
inline std::string_view utf8_prefix(std::string_view s, std::size_t max_bytes) noexcept {
    if (s.size() <= max_bytes) return s;
    std::size_t end = max_bytes;
    // At most three continuation bytes follow a lead byte; back off over them, not further.
    for (int k = 0; k < 3 && end > 0 && is_utf8_continuation(s[end]); ++k) --end;
    if (is_utf8_continuation(s[end])) end = max_bytes; // not UTF-8 here: cut where asked
    return s.substr(0, end);
}

} // namespace radial::text
