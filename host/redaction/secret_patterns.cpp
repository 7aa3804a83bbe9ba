#include "redaction/secret_patterns.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_set>

namespace radial::redaction {
namespace {

constexpr char kB64Std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char kHexUpper[] = "0123456789ABCDEF";
constexpr char kHexLower[] = "0123456789abcdef";

// Unpadded base64 of `data`: one character per started 6-bit group, so character k always
// encodes bits [6k, 6k+6) of the input (missing bits read as zero).
std::string base64_unpadded(std::string_view data) {
    std::string out;
    out.reserve((data.size() * 4 + 2) / 3);
    std::size_t i = 0;
    for (; i + 3 <= data.size(); i += 3) {
        const std::uint32_t v = (std::uint32_t(std::uint8_t(data[i])) << 16) |
                                (std::uint32_t(std::uint8_t(data[i + 1])) << 8) |
                                std::uint32_t(std::uint8_t(data[i + 2]));
        out += kB64Std[(v >> 18) & 63];
        out += kB64Std[(v >> 12) & 63];
        out += kB64Std[(v >> 6) & 63];
        out += kB64Std[v & 63];
    }
    const std::size_t rest = data.size() - i;
    if (rest > 0) {
        std::uint32_t v = std::uint32_t(std::uint8_t(data[i])) << 16;
        if (rest == 2) v |= std::uint32_t(std::uint8_t(data[i + 1])) << 8;
        out += kB64Std[(v >> 18) & 63];
        out += kB64Std[(v >> 12) & 63];
        if (rest == 2) out += kB64Std[(v >> 6) & 63];
    }
    return out;
}

// The characters of base64(prefix ++ value ++ suffix) that depend only on `value`, when the
// value starts `align` bytes into a 3-byte group. The value covers bits [8a, 8a + 8n); character
// k covers [6k, 6k + 6); keep the k whose bits lie wholly inside.
std::string base64_inner(std::string_view value, unsigned align) {
    std::string data(align, '\0');
    data.append(value);
    const std::string enc = base64_unpadded(data);
    const std::size_t first_bit = 8 * std::size_t(align);
    const std::size_t end_bit = first_bit + 8 * value.size();
    const std::size_t k0 = (first_bit + 5) / 6; // first character starting at or after the value
    const std::size_t k1 = end_bit / 6;         // one past the last character ending inside it
    if (k1 <= k0) return {};
    return enc.substr(k0, k1 - k0);
}

std::string to_base64url(std::string s) {
    for (auto& c : s) {
        if (c == '+')
            c = '-';
        else if (c == '/')
            c = '_';
    }
    return s;
}

bool is_unreserved(unsigned char c) noexcept {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

std::string url_encode(std::string_view value, bool upper, bool space_as_plus) {
    const char* hex = upper ? kHexUpper : kHexLower;
    std::string out;
    for (unsigned char c : value) {
        if (is_unreserved(c)) {
            out += static_cast<char>(c);
        } else if (c == ' ' && space_as_plus) {
            out += '+';
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 0xf];
        }
    }
    return out;
}

// Decodes one UTF-8 sequence at s[i]; returns the code point and advances i, or nullopt for an
// invalid sequence (overlong, surrogate, out of range, truncated).
std::optional<char32_t> decode_utf8(std::string_view s, std::size_t& i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c0 = b(i);
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
        if ((b(i + k) & 0xc0) != 0x80) return std::nullopt;
        cp = (cp << 6) | (b(i + k) & 0x3f);
    }
    static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return std::nullopt;
    i += len;
    return cp;
}

void append_u_escape(std::string& out, std::uint32_t unit, const char* hex) {
    out += "\\u";
    out += hex[(unit >> 12) & 0xf];
    out += hex[(unit >> 8) & 0xf];
    out += hex[(unit >> 4) & 0xf];
    out += hex[unit & 0xf];
}

struct JsonStyle {
    bool escape_slash = false;     // "\/" (PHP's json_encode)
    bool escape_non_ascii = false; // \uXXXX for every non-ASCII code point (Python's default)
    bool upper_hex = false;        // \u00E9 rather than \u00e9 (Jackson, some C libraries)
    bool html_safe = false;        // \u003c \u003e \u0026 \u2028 \u2029 (Go's encoding/json)
};

// The value as it appears between the quotes of a JSON string written in `style`, or nullopt
// when the style needs code points and the value is not valid UTF-8.
std::optional<std::string> json_escape(std::string_view value, JsonStyle style) {
    const char* hex = style.upper_hex ? kHexUpper : kHexLower;
    std::string out;
    std::size_t i = 0;
    while (i < value.size()) {
        const unsigned char c = static_cast<unsigned char>(value[i]);
        if (c >= 0x80) {
            if (!style.escape_non_ascii && !style.html_safe) {
                out += static_cast<char>(c); // raw bytes, valid UTF-8 or not
                ++i;
                continue;
            }
            const std::size_t start = i;
            const auto cp = decode_utf8(value, i);
            if (!cp) return std::nullopt;
            if (style.escape_non_ascii || *cp == 0x2028 || *cp == 0x2029) {
                if (*cp > 0xffff) {
                    const std::uint32_t v = *cp - 0x10000;
                    append_u_escape(out, 0xd800 + (v >> 10), hex);
                    append_u_escape(out, 0xdc00 + (v & 0x3ff), hex);
                } else {
                    append_u_escape(out, *cp, hex);
                }
            } else {
                out.append(value.substr(start, i - start));
            }
            continue;
        }
        ++i;
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '/': out += style.escape_slash ? "\\/" : "/"; break;
            case '<':
            case '>':
            case '&':
                if (style.html_safe)
                    append_u_escape(out, c, hex);
                else
                    out += static_cast<char>(c);
                break;
            default:
                if (c < 0x20)
                    append_u_escape(out, c, hex);
                else
                    out += static_cast<char>(c);
        }
    }
    return out;
}

} // namespace

std::vector<Pattern> derive_patterns(const SecretSet& secrets) {
    std::vector<Pattern> patterns;
    std::unordered_set<std::string> seen;
    const auto keep = [&](std::string bytes, std::size_t secret, Encoding enc) {
        // A derived pattern shorter than the minimum (possible only when the set allows values
        // shorter than 6 bytes) would redact ordinary text, which is what the minimum prevents.
        if (bytes.size() < secrets.min_length() || !seen.insert(bytes).second) return;
        patterns.push_back(Pattern{std::move(bytes), secret, enc});
    };

    // The escapings JSON encoders commonly write; identical results collapse into one pattern.
    static constexpr JsonStyle kJsonStyles[] = {
        {},                                               // minimal: JS, nlohmann, serde_json
        {.escape_slash = true},                           // PHP with JSON_UNESCAPED_UNICODE
        {.escape_non_ascii = true},                       // Python's ensure_ascii
        {.escape_non_ascii = true, .upper_hex = true},    // the same, upper-case hex
        {.escape_slash = true, .escape_non_ascii = true}, // PHP's default
        {.upper_hex = true},                              // controls as \u001F
        {.html_safe = true},                              // Go's encoding/json
    };

    for (std::size_t s = 0; s < secrets.size(); ++s) {
        const std::string& v = secrets.secrets()[s].value;
        keep(v, s, Encoding::raw);
        for (unsigned align = 0; align < 3; ++align) {
            std::string inner = base64_inner(v, align);
            keep(inner, s, Encoding::base64);
            keep(to_base64url(std::move(inner)), s, Encoding::base64url);
        }
        keep(url_encode(v, true, false), s, Encoding::url);
        keep(url_encode(v, false, false), s, Encoding::url);
        keep(url_encode(v, true, true), s, Encoding::url);
        keep(url_encode(v, false, true), s, Encoding::url);
        for (const auto& style : kJsonStyles)
            if (auto j = json_escape(v, style)) keep(std::move(*j), s, Encoding::json);
    }
    return patterns;
}

} // namespace radial::redaction
