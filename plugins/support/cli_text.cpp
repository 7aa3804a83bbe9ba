#include "support/cli_text.h"

#include <algorithm>

namespace radial::plugin_support {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

// Cobra-style CLIs (docker, sbx) close an error with a pointer to --help; it is never the cause.
bool is_help_hint(std::string_view line) {
    return line.starts_with("Run '") && line.find(" --help'") != std::string_view::npos &&
           (line.ends_with("for more information") || line.ends_with("for more information.") ||
            line.ends_with("for usage") || line.ends_with("for usage."));
}

} // namespace

std::string cli_message(std::string_view text, std::size_t max_bytes) {
    std::string out;
    while (!text.empty()) {
        std::size_t end = text.find('\n');
        std::string_view line = trim(text.substr(0, end));
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        if (line.empty() || is_help_hint(line)) continue;
        if (!out.empty()) out += " / ";
        out += line;
    }
    if (out.size() > max_bytes) out = "..." + out.substr(out.size() - max_bytes);
    return out;
}

std::string first_cli_line(std::string_view text, std::string_view fallback) {
    while (!text.empty()) {
        std::size_t end = text.find('\n');
        std::string_view line = trim(text.substr(0, end));
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        if (!line.empty() && !is_help_hint(line)) return std::string(line);
    }
    return std::string(fallback);
}

std::string argv_for_log(const std::vector<std::string>& argv) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (const auto& a : argv) {
        if (!out.empty()) out += ' ';
        bool control =
            std::any_of(a.begin(), a.end(), [](unsigned char c) { return c < ' ' || c == 0x7f; });
        bool plain = !a.empty() &&
                     a.find_first_of(" \t'\"\\$`;&|<>()*?[]#~{}") == std::string::npos && !control;
        if (plain) {
            out += a;
        } else if (!control) {
            out += '\'';
            for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
            out += '\'';
        } else {
            out += "$'";
            for (unsigned char c : a) {
                if (c == '\n')
                    out += "\\n";
                else if (c == '\t')
                    out += "\\t";
                else if (c == '\\' || c == '\'')
                    out += std::string("\\") + char(c);
                else if (c < ' ' || c == 0x7f)
                    out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
                else
                    out += char(c);
            }
            out += '\'';
        }
    }
    return out;
}

} // namespace radial::plugin_support
