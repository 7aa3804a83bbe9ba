// host/turn/output_tail.h — the end of a turn's output as the terminal record keeps it: the last
// bytes of each stream, cut on a character boundary, and how bytes that are not UTF-8 are shown.
//
// A tail is cut where the output ends, not where a character does; cutting inside a multi-byte
// character would make the record show a replacement character the box never printed. Bytes that
// are not valid UTF-8 are the box's own, and are kept as they are here; the JSON record shows each
// of them as U+FFFD and then carries the exact bytes in base64 as well (docs/usage.md, "terminal
// record").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace radial::turn {

// Appends `bytes` to `tail` and keeps at most `capacity` bytes: the last ones. When older bytes
// are dropped, the tail then starts at the next character boundary: the (at most three) UTF-8
// continuation bytes of a character cut in two are dropped too, so the tail may be up to three
// bytes shorter than `capacity`. Bytes that are not UTF-8 at all are kept. [thread-compatible]
void append_output_tail(std::string& tail, std::string_view bytes, std::size_t capacity);

// Standard base64 with padding, for bytes a JSON string cannot carry exactly. [thread-safe]
std::string base64_encode(std::string_view bytes);

} // namespace radial::turn
