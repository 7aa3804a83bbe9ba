#include "cli_text.h"

namespace radial::docker {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

bool is_help_hint(std::string_view line) {
    return line.starts_with("Run 'docker") && line.ends_with("for more information");
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

} // namespace radial::docker
