// host/socket/record_sink.h — where the turn socket puts an accepted record (the journal), kept
// apart from the HTTP decisions (record_request_handler.h) so that the server's header, and every
// host header that names a transport, compiles without Boost.Beast.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace radial::socket {

// Stores one accepted record and returns its sequence number in the turn journal.
// `type` is the turn's record type; `payload_json` is the payload re-serialised as compact JSON
// (valid UTF-8, keys in posted order, the same value as posted); both are borrowed for the call
// only. May throw: the client then gets a 500 with a generic message and the exception text goes
// nowhere. The server calls it on its serving thread, one call at a time (never concurrently with
// itself).
using RecordSink =
    std::function<std::uint64_t(std::string_view type, std::string_view payload_json)>;

} // namespace radial::socket
