// host/text/exact_json.h — writing a parsed JSON document back as the value it was posted as
// (docs/design.md §9.5). nlohmann's parser reads "-0" as a signed integer zero (and "0" as an
// unsigned one) and its writer prints both as "0": the sign a box posted would be lost. This
// writer is nlohmann's, byte for byte, but for that one case. Header-only, for documents that were
// parsed (a document built in code holds signed zeros that were never "-0"): the records a box
// posts. Bytes that are not UTF-8 are replaced, never thrown on.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace radial::text {

namespace detail {
template <class Json>
void dump_exact(const Json& j, int indent, int level, std::string& out) {
    auto newline = [&](int at) {
        if (indent < 0) return;
        out.push_back('\n');
        out.append(static_cast<std::size_t>(indent * at), ' ');
    };
    if (j.is_object() || j.is_array()) {
        const bool object = j.is_object();
        if (j.empty()) {
            out += object ? "{}" : "[]";
            return;
        }
        out.push_back(object ? '{' : '[');
        bool first = true;
        for (auto it = j.begin(); it != j.end(); ++it) {
            if (!first) out.push_back(',');
            first = false;
            newline(level + 1);
            if (object) {
                out += Json(it.key()).dump(-1, ' ', false, Json::error_handler_t::replace);
                out += indent < 0 ? ":" : ": ";
            }
            dump_exact(it.value(), indent, level + 1, out);
        }
        newline(level);
        out.push_back(object ? '}' : ']');
    } else if (j.is_number_integer() && !j.is_number_unsigned() &&
               j.template get<std::int64_t>() == 0) {
        out += "-0"; // only the parser makes a signed zero: it read "-0"
    } else {
        out += j.dump(-1, ' ', false, Json::error_handler_t::replace);
    }
}
} // namespace detail

// JSON text `dumped` (as dump_exact or nlohmann write it: raw UTF-8 in strings) with DEL and the C1
// controls (U+0080..U+009F, which terminals read as CSI, OSC, …) written as \u escapes: the same
// JSON value, safe to print to a terminal (docs/design.md §14.7). A box posts what it likes;
// nlohmann escapes only C0. Outside strings dumped JSON has neither. [thread-safe]
inline std::string for_terminal(std::string_view dumped) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(dumped.size());
    for (std::size_t i = 0; i < dumped.size(); ++i) {
        const auto c = static_cast<unsigned char>(dumped[i]);
        const auto next = i + 1 < dumped.size() ? static_cast<unsigned char>(dumped[i + 1]) : 0;
        if (c == 0x7f || (c == 0xc2 && next >= 0x80 && next <= 0x9f)) {
            const unsigned cp = c == 0x7f ? 0x7fu : next;
            out += "\\u00";
            out += kHex[cp >> 4];
            out += kHex[cp & 0xf];
            if (c == 0xc2) ++i;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

// `j` as nlohmann's dump(indent) writes it, but with a parsed "-0" kept as "-0". [thread-safe]
template <class Json>
std::string dump_exact(const Json& j, int indent = -1) {
    std::string out;
    detail::dump_exact(j, indent, 0, out);
    return out;
}

} // namespace radial::text
