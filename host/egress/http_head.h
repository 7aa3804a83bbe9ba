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

// `text` (anything a box sent) as a receipt, an answer or the log may show it: at most `most`
// bytes (then "..."), and every byte outside printable ASCII a '?', so that neither its length
// nor an encoding makes a receipt larger than the bound. Pure; thread-safe.
std::string shown_text(std::string_view text, std::size_t most);

// A request's target as a refusal may quote it: without its query or fragment (where URLs carry
// credentials and tokens), and with user information, nothing after the scheme; each cut marked
// "...", then shown_text(…, 96). Pure; thread-safe.
std::string shown_target(std::string_view target);

// Why `raw` (text of the box's a parser refused) is refused, as a refusal may quote it:
// " (<why>)" through shown_text(…, 160), or "" when `raw` holds user information, a query or a
// fragment ('@', '?', '#'), which a parser's message may quote whole. Pure; thread-safe.
std::string shown_why(std::string_view why, std::string_view raw);

} // namespace radial::egress
