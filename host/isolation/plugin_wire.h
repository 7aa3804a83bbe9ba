// host/isolation/plugin_wire.h — the channel between radiald and a runtime plugin's host process
// under run.pluginIsolation = "process" (docs/design.md §5.13).
//
// Every call into the plugin travels on a stream socket of its own (a socketpair whose one end is
// handed to the plugin host over its control socket with SCM_RIGHTS), as frames: one type byte,
// a little-endian 32-bit length, the payload. The request and the reply are CBOR (nlohmann-json):
// CBOR carries a string's bytes as they are, so an env value or a path that is not UTF-8 crosses
// unchanged. Sink calls (errors, names, dispositions, output, changes) travel as frames of their
// own while the call runs; output and change frames are acknowledged, since their sinks answer.
#pragma once

#include <radial/internal/unique_fd.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <radial/container_spec.hpp>
#include <radial/host/runtime_descriptor.hpp>
#include <string>
#include <string_view>

namespace radial::isolation {

// Frame types. Radiald → host: request, ack. Host → radiald: the rest.
enum FrameType : char {
    kRequest = 'Q',     // CBOR {"call": name, ...arguments}
    kAck = 'A',         // one byte: 0 go on, 1 stop (the sink's answer)
    kError = 'E',       // CBOR {"code", "key", "message"}: an error sink report
    kName = 'N',        // one byte naming the sink (0, 1), then the name
    kDisposition = 'D', // CBOR {"field", "disposition", "note"}
    kOutput = 'O',      // the stream id (4 bytes, LSB first), then the bytes; answered by kAck
    kChangeEntry = 'C', // 4 bytes kind (LE), then the path; answered by kAck
    kChangeData = 'd',  // the bytes; answered by kAck
    kReturn = 'R',      // CBOR {"status", ...results}: the call returned
    kLog = 'L',         // control socket only: one byte level, then the line
};

// One frame as read.
struct Frame {
    char type = 0;
    std::string payload;
};

// The longest payload a frame may carry; a longer length means the peer is broken.
inline constexpr std::uint32_t kMaxFramePayload = 64u << 20;

// `v` as the wire writes every number: 4 bytes, least significant first (a frame's length, a
// stream id, a change's kind).
inline std::string wire_u32(std::uint32_t v) {
    std::string out(4, '\0');
    for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    return out;
}
// The number wire_u32 wrote at the start of `bytes`, which holds at least 4.
inline std::uint32_t read_wire_u32(std::string_view bytes) {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
    return v;
}

// Writes one frame whole (retrying short writes, MSG_NOSIGNAL). False when the peer is gone.
// Thread-safety: one writer per socket at a time.
bool write_frame(int fd, char type, std::string_view payload);

// Reads one frame. False at end of stream, on a read error, or on a length over
// kMaxFramePayload. Thread-safety: one reader per socket at a time.
bool read_frame(int fd, Frame& out);

// Sends `fd_to_pass` over the unix socket `sock` with SCM_RIGHTS (one byte of data with it).
// False when the peer is gone.
bool send_fd(int sock, int fd_to_pass);

// Receives one descriptor sent by send_fd; an invalid UniqueFd at end of stream or when the
// message carried none. The descriptor arrives close-on-exec.
internal::UniqueFd receive_fd(int sock);

// CBOR encodings of what crosses: a ContainerSpec (every field, the chained additions included),
// and a plugin's config section. Decoding throws nlohmann::json::exception on a malformed value.
nlohmann::json spec_to_json(const ContainerSpec& spec);
ContainerSpec spec_from_json(const nlohmann::json& j);
nlohmann::json config_to_json(const host::ConfigSection& section);
host::ConfigSection config_from_json(const nlohmann::json& j);

std::string to_cbor(const nlohmann::json& j);
// What one CBOR payload may hold: replies and sink frames are flat, a spec a few levels deep.
inline constexpr std::size_t kMaxCborDepth = 32;
inline constexpr std::size_t kMaxCborItems = 1u << 20;
// The document `bytes` holds. Throws std::runtime_error when it is malformed, nested deeper than
// kMaxCborDepth or holds more than kMaxCborItems values: the peer (a plugin's host process) is
// broken, and a deeper document would overflow the reader's stack (docs/design.md §5.13).
nlohmann::json from_cbor(std::string_view bytes);

} // namespace radial::isolation
