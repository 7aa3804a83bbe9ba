#include "egress/http_head.h"

#include <algorithm>
#include <cctype>

namespace radial::egress {

namespace {

bool token_char(unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

} // namespace

std::string shown_text(std::string_view text, std::size_t most) {
    const bool cut = text.size() > most;
    std::string out(text.substr(0, most));
    for (char& c : out)
        if (const auto u = static_cast<unsigned char>(c); u < 0x20 || u > 0x7e) c = '?';
    if (cut) out += "...";
    return out;
}

std::string shown_target(std::string_view target) {
    // Each cut is marked "...": the receipt's redaction leaves out, before a mark, the bytes that
    // could begin a secret (redaction/cut_text.h), so a secret holding a '?' or '#' shows not its
    // start either (docs/design.md §9.7).
    const auto query = target.find_first_of("?#");
    const std::string_view t = target.substr(0, query);
    const std::string_view cut = query == std::string_view::npos ? "" : "...";
    const auto scheme = t.find("://");
    const std::size_t from = scheme == std::string_view::npos ? 0 : scheme + 3;
    // Without a scheme the target is an authority (CONNECT's) whole: user information may hold a
    // '/', which ends only a URL's authority.
    const std::string_view authority =
        scheme == std::string_view::npos ? t : t.substr(from, t.find('/', from) - from);
    // With user information nothing after the scheme is shown: where it ends is a guess (a
    // password may hold an '@' or a '/'), and what follows a guess may be the end of a secret,
    // which no hold-back covers.
    if (authority.find('@') != std::string_view::npos)
        return shown_text(std::string(t.substr(0, from)) + "...", 96);
    return shown_text(std::string(t) + std::string(cut), 96);
}

std::string shown_why(std::string_view why, std::string_view raw) {
    if (raw.find_first_of("@?#") != std::string_view::npos) return {};
    return " (" + shown_text(why, 160) + ")";
}

const std::string* HttpHead::header(std::string_view name) const {
    for (const auto& [n, v] : headers)
        if (n == name) return &v;
    return nullptr;
}

std::optional<HttpHead> parse_request_head(std::string_view head, std::string& why) {
    for (std::size_t i = 0; i < head.size(); ++i) {
        const auto c = static_cast<unsigned char>(head[i]);
        if (c == '\r' && (i + 1 >= head.size() || head[i + 1] != '\n')) {
            why = "a bare CR in the request head";
            return std::nullopt;
        }
        if (c == '\n' && (i == 0 || head[i - 1] != '\r')) {
            why = "a bare LF in the request head";
            return std::nullopt;
        }
        if ((c < 0x20 && c != '\r' && c != '\n' && c != '\t') || c == 0x7f) {
            why = "a control byte in the request head";
            return std::nullopt;
        }
    }
    HttpHead h;
    auto end = head.find("\r\n");
    const std::string_view line = head.substr(0, end);
    const auto sp1 = line.find(' ');
    const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
        line.find(' ', sp2 + 1) != std::string_view::npos ||
        line.find('\t') != std::string_view::npos) {
        why = "not a request line (METHOD TARGET VERSION, single spaces)";
        return std::nullopt;
    }
    h.method = std::string(line.substr(0, sp1));
    h.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
    h.version = std::string(line.substr(sp2 + 1));
    if (h.method.empty() || !std::all_of(h.method.begin(), h.method.end(),
                                         [](unsigned char c) { return token_char(c); })) {
        why = "the method is not a token";
        return std::nullopt;
    }
    if (h.target.empty() || (h.version != "HTTP/1.1" && h.version != "HTTP/1.0")) {
        why = "not an HTTP/1.0 or HTTP/1.1 request";
        return std::nullopt;
    }
    std::string_view rest = end == std::string_view::npos ? "" : head.substr(end + 2);
    while (!rest.empty()) {
        const auto e = rest.find("\r\n");
        const std::string_view l = rest.substr(0, e);
        rest = e == std::string_view::npos ? "" : rest.substr(e + 2);
        if (l.empty()) continue;
        if (l.front() == ' ' || l.front() == '\t') {
            why = "a folded header line";
            return std::nullopt;
        }
        const auto colon = l.find(':');
        if (colon == 0 || colon == std::string_view::npos ||
            !std::all_of(l.begin(), l.begin() + static_cast<std::ptrdiff_t>(colon),
                         [](unsigned char c) { return token_char(c); })) {
            why = "a header name that is not a token";
            return std::nullopt;
        }
        std::string name(l.substr(0, colon));
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        std::string value(l.substr(colon + 1));
        value.erase(0, value.find_first_not_of(" \t"));
        value.erase(value.find_last_not_of(" \t") + 1);
        for (const char* once : {"host", "content-length", "transfer-encoding"})
            if (name == once && h.header(once) != nullptr) {
                why = "more than one " + name + " header";
                return std::nullopt;
            }
        h.headers.emplace_back(std::move(name), std::move(value));
    }
    return h;
}

} // namespace radial::egress
