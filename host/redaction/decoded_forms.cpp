#include "redaction/decoded_forms.h"

#include <cstdint>
#include <cstring>
#include <optional>

namespace radial::redaction {
namespace {

constexpr char kBase64Alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The bytes whose standard base64 has `value` (letters, digits, + and /, then at most two '=')
// inside it, starting `offset` characters into a 4-character group: the bytes all of whose bits
// come from the value's characters. Empty when the value is not such text. radiald's records and
// output log write bytes that are not UTF-8 in base64 (docs/design.md §10.2), so a box that
// prints these bytes would have them written as the value itself.
std::string base64_source(std::string_view value, unsigned offset) {
    while (!value.empty() && value.back() == '=') value.remove_suffix(1);
    std::uint32_t bits = 0;
    unsigned have = 0;
    std::string out;
    // The characters before the value in its group read as zeros; the bytes they touch are the
    // first `offset` of the decoded group, and are dropped below.
    const auto push = [&](unsigned six) {
        bits = (bits << 6) | six;
        have += 6;
        if (have >= 8) {
            have -= 8;
            out += static_cast<char>((bits >> have) & 0xff);
        }
    };
    for (unsigned i = 0; i < offset; ++i) push(0);
    for (char c : value) {
        const char* at = std::strchr(kBase64Alphabet, c);
        if (c == '\0' || at == nullptr) return {};
        push(static_cast<unsigned>(at - kBase64Alphabet));
    }
    // A byte touched by a leading zero character is not the value's alone.
    return out.size() > offset ? out.substr(offset) : std::string();
}

// `cp` in UTF-8 (a lone surrogate as its three bytes, as a lenient decoder writes it).
void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xc0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        out += static_cast<char>(0xe0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    }
}

// The value with C and JSON escapes read (\n \t \r \b \f \v \a \0 \\ \" \' \/ \xNN \u00NN
// and \uNNNN as UTF-8), or empty when it has none: radiald writes a box's control bytes that way
// in its records and logs (JSON strings, printable()), so a box printing the read bytes would have
// them written as the value itself.
std::string escapes_read(std::string_view v) {
    if (v.find('\\') == std::string_view::npos) return {};
    std::string out;
    const auto hex = [&](std::size_t at, std::size_t n) -> std::optional<unsigned> {
        if (at + n > v.size()) return std::nullopt;
        unsigned x = 0;
        for (std::size_t i = at; i < at + n; ++i) {
            const char c = v[i];
            const int d = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
            if (d < 0) return std::nullopt;
            x = x * 16 + static_cast<unsigned>(d);
        }
        return x;
    };
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] != '\\' || i + 1 == v.size()) {
            out += v[i];
            continue;
        }
        const char e = v[++i];
        switch (e) {
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'v': out += '\v'; break;
            case 'a': out += '\a'; break;
            case '0': out += '\0'; break;
            case 'x':
                if (auto x = hex(i + 1, 2)) {
                    out += static_cast<char>(*x);
                    i += 2;
                } else {
                    out += "\\x";
                }
                break;
            case 'u':
                if (auto x = hex(i + 1, 4)) {
                    append_utf8(out, *x);
                    i += 4;
                } else {
                    out += "\\u";
                }
                break;
            default: out += e; break; // \\ \" \' \/ and any other: the character itself
        }
    }
    return out;
}

} // namespace

std::vector<std::string> decoded_forms(std::string_view value) {
    std::vector<std::string> out;
    if (std::string read = escapes_read(value); !read.empty()) out.push_back(std::move(read));
    for (unsigned offset = 0; offset < 4; ++offset)
        if (std::string bytes = base64_source(value, offset); !bytes.empty())
            out.push_back(std::move(bytes));
    return out;
}

} // namespace radial::redaction
