// host/text/printable.h — text made safe for a terminal or a log line (docs/design.md §14.7):
// every control character and every byte that is not UTF-8 is written as an escape, so a name a
// box or a request controls (a file name with ESC sequences, a carriage return) cannot move the
// cursor, recolour, retitle or forge a line of what radiald prints. Header-only.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "text/utf8.h"

namespace radial::text {

// `s` with C0 controls but tab, DEL and C1 controls (U+0080..U+009F) written as "\xNN" (C1 as
// "\u{NNNN}"), and each byte of an invalid UTF-8 sequence as "\xNN". Newlines are escaped too:
// callers that want them folded do so first. Everything else is kept byte for byte.
// [thread-safe]
inline std::string printable(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    char buf[16];
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t at = i;
        const auto cp = decode_utf8(s, i);
        if (!cp) {
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(s[at]));
            out += buf;
            i = at + 1;
        } else if ((*cp < 0x20 && *cp != '\t') || *cp == 0x7f) {
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(*cp));
            out += buf;
        } else if (*cp >= 0x80 && *cp <= 0x9f) {
            std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(*cp));
            out += buf;
        } else {
            out.append(s.substr(at, i - at));
        }
    }
    return out;
}

} // namespace radial::text
