#include "redaction/secret_patterns.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "redaction/decoded_forms.h"
#include "text/utf8.h"

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

// Every byte of `value` as two digits of `digits` ("0123456789abcdef" or its upper case).
std::string hex_encoded(std::string_view value, const char* digits) {
    std::string out;
    out.reserve(value.size() * 2);
    for (const unsigned char c : value) {
        out += digits[c >> 4];
        out += digits[c & 0xf];
    }
    return out;
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

using text::decode_utf8;

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

constexpr std::string_view kWhitespace = " \t\r\n\v\f";

std::string_view trim_left(std::string_view s) {
    const auto b = s.find_first_not_of(kWhitespace);
    return b == std::string_view::npos ? std::string_view{} : s.substr(b);
}

std::string_view trim_right(std::string_view s) {
    const auto e = s.find_last_not_of(kWhitespace);
    return e == std::string_view::npos ? std::string_view{} : s.substr(0, e + 1);
}

// Without trailing "\n", "\r\n" or "\r" (however many): what `$(cat file)`, `read` and most
// line-oriented tools keep of a value stored with line endings.
std::string_view trim_line_endings(std::string_view s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

// The body of a value wrapped in one pair of matching quotes, or nullopt.
std::optional<std::string_view> unquote(std::string_view s) {
    if (s.size() < 2 || s.front() != s.back()) return std::nullopt;
    if (s.front() != '"' && s.front() != '\'' && s.front() != '`') return std::nullopt;
    return s.substr(1, s.size() - 2);
}

// A double-quoted body as a shell or a language reads it: \X becomes X.
std::string unescape_backslashes(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        out += s[i];
    }
    return out;
}

// Each byte of `s` found in `special` preceded by a backslash.
std::string backslash_escape(std::string_view s, std::string_view special) {
    std::string out;
    for (char c : s) {
        if (special.find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
    return out;
}

// The body of a shell single-quoted string: ' written as '\'' (bash's set -x, Python's
// shlex.quote, most "copy as shell" features).
std::string shell_single_quoted(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    return out;
}

// The body of a string literal as C, Go, Rust (quote = '"') or Python's repr (quote = '\'')
// print it: \\ \n \r \t, the quote escaped, other control bytes and DEL as \xNN.
std::string c_escaped(std::string_view s, char quote) {
    std::string out;
    for (unsigned char c : s) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c == static_cast<unsigned char>(quote)) {
                    out += '\\';
                    out += static_cast<char>(c);
                } else if (c < 0x20 || c == 0x7f) {
                    out += "\\x";
                    out += kHexLower[c >> 4];
                    out += kHexLower[c & 0xf];
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out;
}

// The body of a shell single-quoted string with ' written as '"'"' (busybox ash's set -x,
// Python's shlex.quote).
std::string shell_single_quoted_dq(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (c == '\'')
            out += "'\"'\"'";
        else
            out += c;
    }
    return out;
}

enum class AnsiC { bash, mksh, zsh };

// The body of a shell's $'…' string as its set -x prints it: bash writes ' as \', mksh as
// \047; both name \a \b \f \n \r \t \v, write ESC as \E and other control bytes and DEL as
// octal \NNN. zsh writes ' as \', names \n and \t, and every other control byte as \C-X
// (X the byte ^ 0x40, DEL as \C-?). Bytes from 0x80 up are kept.
std::string ansi_c_quoted(std::string_view s, AnsiC shell) {
    std::string out;
    for (unsigned char c : s) {
        const char* named = nullptr;
        switch (c) {
            case '\'': named = shell == AnsiC::mksh ? "\\047" : "\\'"; break;
            case '\\': named = "\\\\"; break;
            case '\n': named = "\\n"; break;
            case '\t': named = "\\t"; break;
            case '\a': named = shell == AnsiC::zsh ? nullptr : "\\a"; break;
            case '\b': named = shell == AnsiC::zsh ? nullptr : "\\b"; break;
            case '\f': named = shell == AnsiC::zsh ? nullptr : "\\f"; break;
            case '\r': named = shell == AnsiC::zsh ? nullptr : "\\r"; break;
            case '\v': named = shell == AnsiC::zsh ? nullptr : "\\v"; break;
            case 0x1b: named = shell == AnsiC::zsh ? nullptr : "\\E"; break;
            default: break;
        }
        if (named != nullptr) {
            out += named;
        } else if (c < 0x20 || c == 0x7f) {
            if (shell == AnsiC::zsh) {
                out += "\\C-";
                out += static_cast<char>(c == 0x7f ? '?' : c ^ 0x40);
            } else {
                out += '\\';
                out += static_cast<char>('0' + (c >> 6));
                out += static_cast<char>('0' + ((c >> 3) & 7));
                out += static_cast<char>('0' + (c & 7));
            }
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

// The body of a string as Rust's Debug prints it: \\ \" \n \r \t, NUL as \0, other control
// characters and DEL as \u{N} (lower-case hex, no leading zeros).
std::string rust_debug_escaped(std::string_view s) {
    std::string out;
    for (unsigned char c : s) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '"': out += "\\\""; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\0': out += "\\0"; break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    char buf[12];
                    std::snprintf(buf, sizeof buf, "\\u{%x}", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out;
}

// Each line of a multi-line value that is a form of its own (Form::line, kMinLineForm).
std::vector<std::string_view> identifying_lines(std::string_view v) {
    std::vector<std::string_view> lines;
    if (v.find('\n') == std::string_view::npos) return lines;
    std::size_t start = 0;
    while (start <= v.size()) {
        std::size_t end = v.find('\n', start);
        if (end == std::string_view::npos) end = v.size();
        std::string_view line = trim_right(trim_left(v.substr(start, end - start)));
        const bool armor = line.starts_with("-----") && line.ends_with("-----");
        if (line.size() >= kMinLineForm && !armor) lines.push_back(line);
        start = end + 1;
    }
    return lines;
}

// The code points of `value`, or nullopt when it is not valid UTF-8.
std::optional<std::vector<std::uint32_t>> code_points(std::string_view value) {
    std::vector<std::uint32_t> cps;
    std::size_t i = 0;
    while (i < value.size()) {
        const unsigned char c = static_cast<unsigned char>(value[i]);
        if (c < 0x80) {
            cps.push_back(c);
            ++i;
            continue;
        }
        const auto cp = decode_utf8(value, i);
        if (!cp) return std::nullopt;
        cps.push_back(*cp);
    }
    return cps;
}

// The value with & < > " as named character references and ' as `apostrophe` (html.escape,
// most template engines); other bytes as they are.
std::string markup_escaped(std::string_view value, std::string_view apostrophe) {
    std::string out;
    for (char c : value) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += apostrophe; break;
            default: out += c;
        }
    }
    return out;
}

// Every code point as a numeric reference ("&#%u;", "&#x%x;", "&#x%X;") or a braced escape
// ("\\u{%x}"); with `only_unprintable`, printable ASCII stays as it is.
std::string each_code_point(const std::vector<std::uint32_t>& cps, const char* format,
                            bool only_unprintable = false) {
    std::string out;
    char buf[24];
    for (std::uint32_t cp : cps) {
        if (only_unprintable && cp >= 0x20 && cp < 0x7f) {
            out += static_cast<char>(cp);
            continue;
        }
        std::snprintf(buf, sizeof buf, format, cp);
        out += buf;
    }
    return out;
}

} // namespace

std::vector<std::pair<std::string, Form>> derive_forms(const std::string& value) {
    std::vector<std::pair<std::string, Form>> forms;
    const auto add = [&](std::string_view f, Form form) {
        if (f.empty()) return;
        for (const auto& [have, _] : forms)
            if (have == f) return;
        forms.emplace_back(std::string(f), form);
    };
    add(value, Form::exact);
    const std::string_view v = value;
    for (std::string_view t :
         {trim_left(trim_right(v)), trim_right(v), trim_left(v), trim_line_endings(v)})
        add(t, Form::trimmed);
    // Quotes inside surrounding whitespace, and whitespace inside the quotes.
    const std::size_t bases = forms.size();
    for (std::size_t i = 0; i < bases; ++i) {
        const std::string base = forms[i].first;
        if (auto body = unquote(base)) {
            add(*body, Form::unquoted);
            add(trim_left(trim_right(*body)), Form::unquoted);
            if (base.front() == '"') add(unescape_backslashes(*body), Form::unquoted);
        }
    }
    // Each line of a multi-line value, as tools that print it line by line show it.
    for (std::string_view line : identifying_lines(v)) add(line, Form::line);
    // Each form so far as shells and languages re-quote it when they echo or trace it.
    const std::size_t plain = forms.size();
    for (std::size_t i = 0; i < plain; ++i) {
        const std::string f = forms[i].first;
        add(shell_single_quoted(f), Form::requoted);
        add(shell_single_quoted_dq(f), Form::requoted);
        add(backslash_escape(f, " !\"#$&'()*,;<>?[\\]^`{|}~"), Form::requoted); // printf %q
        add(backslash_escape(f, "\\\"$`"), Form::requoted);                     // the body of "…"
        for (AnsiC shell : {AnsiC::bash, AnsiC::mksh, AnsiC::zsh})
            add(ansi_c_quoted(f, shell), Form::requoted);
        add(c_escaped(f, '"'), Form::escaped);
        add(c_escaped(f, '\''), Form::escaped);
        add(rust_debug_escaped(f), Form::escaped);
    }
    // The bytes radiald itself would write as the value: its escapes read, its base64 decoded.
    for (const std::string& bytes : decoded_forms(v)) add(bytes, Form::decoded);
    // The value with its ASCII letters folded, as a host folds a name it reads case-insensitively
    // (the egress broker's receipts, docs/design.md §9.7) and tools print hex.
    std::vector<std::string> as_given_and_folded = {value, value, value};
    for (char& c : as_given_and_folded[1])
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (char& c : as_given_and_folded[2])
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    add(as_given_and_folded[1], Form::cased);
    add(as_given_and_folded[2], Form::cased);
    // Each of those with its bytes outside printable ASCII as '?', as the egress broker quotes
    // what a box sent (egress/http_head.h, shown_text; docs/design.md §9.7): a value with
    // non-ASCII letters or a tab would otherwise stand there nearly whole.
    for (std::string& shown : as_given_and_folded) {
        for (char& c : shown)
            if (const auto u = static_cast<unsigned char>(c); u < 0x20 || u > 0x7e) c = '?';
        add(shown, Form::shown);
    }
    return forms;
}

std::vector<Pattern> derive_patterns(const SecretSet& secrets) {
    std::vector<Pattern> patterns;
    std::unordered_set<std::string> seen;
    Form form = Form::exact;
    const auto keep = [&](std::string bytes, std::size_t secret, Encoding enc) {
        // A derived pattern shorter than the minimum (a trimmed or unquoted form, or any pattern
        // when the set allows values shorter than 6 bytes) would redact ordinary text, which is
        // what the minimum prevents.
        // A shown form is mostly '?' for a value of non-ASCII letters: it must keep as many bytes
        // of its own as any pattern has, or a run of question marks would be masked.
        if (form == Form::shown &&
            static_cast<std::size_t>(std::count_if(bytes.begin(), bytes.end(), [](char c) {
                return c != '?';
            })) < secrets.min_length())
            return;
        if (bytes.size() < secrets.min_length() || !seen.insert(bytes).second) return;
        patterns.push_back(Pattern{std::move(bytes), secret, enc, form});
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

    for (std::size_t s = 0; s < secrets.size(); ++s)
        for (const auto& [v, f] : derive_forms(secrets.secrets()[s].value)) {
            if (f == Form::decoded && secrets.secrets()[s].chosen_by_box) continue;
            form = f;
            keep(v, s, Encoding::raw);
            // Bytes, not a text a tool re-encodes: their own encodings would be the value again.
            if (f == Form::decoded || f == Form::cased || f == Form::shown) continue;
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
            for (const char* apostrophe : {"&#x27;", "&#39;", "&apos;"})
                keep(markup_escaped(v, apostrophe), s, Encoding::markup);
            if (auto cps = code_points(v)) {
                for (const char* format : {"&#%u;", "&#x%x;", "&#x%X;"})
                    keep(each_code_point(*cps, format), s, Encoding::markup);
                keep(each_code_point(*cps, "\\u{%x}", true), s, Encoding::braces);
                keep(each_code_point(*cps, "\\u{%x}"), s, Encoding::braces);
            }
            // A value hex-encoded is one a snapshot would otherwise carry out unseen (a box's
            // `od` or `xxd -p` of it into a file), as much as output a reader decodes.
            keep(hex_encoded(v, "0123456789abcdef"), s, Encoding::hex);
            keep(hex_encoded(v, "0123456789ABCDEF"), s, Encoding::hex);
        }
    return patterns;
}

} // namespace radial::redaction
