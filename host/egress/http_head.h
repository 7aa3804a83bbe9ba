// host/egress/http_head.h — a request head as the egress broker accepts it (docs/design.md §9.7):
// strictly, so that no two readers (the broker and the destination) can disagree about what was
// asked — no bare CR or LF, no control bytes, no whitespace in the target, no folded lines, header
// names that are tokens, and at most one Host, Content-Length or Transfer-Encoding.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace radial::egress {

struct HttpHead {
    std::string method, target, version;
    std::vector<std::pair<std::string, std::string>> headers; // names lowercased, values trimmed
    // The value of header `name` (lowercase), or nullptr.
    const std::string* header(std::string_view name) const;
};

// Parses `head`: the request line and header lines, each ending in CRLF, without the blank line
// that ends the head. nullopt with `why` (one phrase, naming what is wrong) when it breaks a rule
// above. Pure; thread-safe.
std::optional<HttpHead> parse_request_head(std::string_view head, std::string& why);

} // namespace radial::egress
