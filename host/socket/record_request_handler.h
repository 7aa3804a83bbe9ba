// host/socket/record_request_handler.h — what the turn socket answers to one HTTP request,
// as pure functions of the request and the turn's settings (docs/design.md §9 and §5).
//
// No sockets here: the server (turn_socket_server.h) reads bytes and writes the response these
// functions build, so the whole decision table is unit-testable and fuzzable without I/O.
//
// Protocol: `POST /v1/records`, `Authorization: Bearer <token>`, body
// `{"type": "<string>", "payload": <any JSON>}`. Checks, in order, first failure wins:
//   header stage (before any body byte is read):
//     target is not exactly /v1/records                  → 404
//     method is not POST                                  → 405, `Allow: POST`
//     Authorization is not `Bearer <the token>`           → 401, `WWW-Authenticate: Bearer`
//     Transfer-Encoding other than one plain `chunked`    → 501
//     Content-Length above max_body_bytes                 → 413
//   body stage:
//     (a chunked body over max_body_bytes                 → 413, enforced by the reader)
//     not JSON, nested deeper than kMaxJsonDepth, more than kMaxObjectKeys keys in one
//     object, a duplicate key in any object, a number
//     the stored record could not hold exactly (beyond a 64-bit float's range or digits),
//     not an object, no string "type", no "payload"       → 400
//     "type" is not the turn's record type                → 403 (requested-type-only guard)
//     the sink throws socket::StorageError (disk full)    → 507, the record was not kept
//     the sink throws anything else                       → 500, generic message
//     otherwise the sink stores the record                → 201 {"seq": N}
// Every error body is `{"error": "<reason>"}`. No response or reason ever contains the token,
// the payload or any other client-supplied text. What reaches the sink is the posted payload
// value itself: keys in their posted order, every number as posted (in its shortest form).
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "socket/record_sink.h"

namespace radial::socket {

namespace http = boost::beast::http;

// The only request target the socket serves.
inline constexpr std::string_view kRecordsTarget = "/v1/records";

// JSON bodies nested deeper than this are refused with 400.
// Rationale: parsing is iterative, but re-serialising the payload for the sink recurses once per
// level, so an unbounded depth (a 1 MiB body of '[') would let a box overflow the host's stack.
inline constexpr int kMaxJsonDepth = 64;

// Objects with more keys than this are refused with 400.
// Rationale: the stored record keeps the posted key order, whose objects find a key by a linear
// search, so building one object costs the square of its keys: a 1 MiB body of 100 000 short
// keys would hold radiald's CPU for seconds, outside the box's own limits, before any check of
// its type. Records are an agent's results, not key-value stores of that size.
inline constexpr std::size_t kMaxObjectKeys = 1024;

// The settings of one turn that decide a request's fate. Borrowed: everything pointed to must
// outlive the call.
struct HandlerContext {
    std::string_view token;       // the turn's bearer token; an empty token refuses everyone
    std::string_view record_type; // the only "type" this turn may write
    std::size_t max_body_bytes = 1 << 20; // bodies above this many bytes get 413
    const RecordSink* sink = nullptr; // called once per accepted record; null behaves as a throw
};

// A response plus the reason it was given, for the one log line per rejected request.
struct HandlerResult {
    http::response<http::string_body> response;
    // Empty for 201. Otherwise the text also sent as "error": fixed wording plus at most the
    // configured limits, so it is safe to log (no token, no payload, no client-supplied bytes).
    std::string reason;
};

// Whether the header carries `Authorization: Bearer <the turn's token>` (constant-time compare).
// The server uses it to admit a connection before it answers the request. [thread-safe]
bool presents_valid_token(const http::request_header<>& header, const HandlerContext& context);

// The header-stage checks (404, 405, 401, 501, 413-by-length), run as soon as the request header
// has arrived and before any body byte is read, so an unauthenticated client can never make the
// host buffer a body. `content_length` is the announced Content-Length, if any (chunked bodies are
// bounded by the reader instead). Returns the rejection, or nullopt when the body may be read.
// A rejection always carries `Connection: close`: its body, if any, was never read, so the stream
// cannot be used for another request. Never throws except std::bad_alloc. [thread-safe]
std::optional<HandlerResult> check_request_header(const http::request_header<>& header,
                                                  std::optional<std::uint64_t> content_length,
                                                  const HandlerContext& context);

// The whole decision for a fully read request: the header-stage checks (with the body's actual
// size as its length), then the body checks, then — only if every check passed — one call to the
// sink. Body-stage responses keep the connection alive when the request allows it.
// Never throws except std::bad_alloc; a throwing sink becomes a 507 (StorageError) or a 500.
// [thread-safe if the sink is]
HandlerResult handle_request(const http::request<http::string_body>& request,
                             const HandlerContext& context);

// A `{"error": reason}` response with the given status, HTTP version and keep-alive, and the
// status-specific header (`Allow: POST` for 405, `WWW-Authenticate: Bearer` for 401). Used by
// the server for rejections that happen below the HTTP layer (malformed request, body over the
// limit while reading a chunked body). [thread-safe]
HandlerResult make_error_result(http::status status, std::string reason, unsigned version,
                                bool keep_alive);

} // namespace radial::socket
