// plugins/support/engine_api/stream_frames.h — the Docker Engine API's multiplexed stream framing
// (container attach and logs, service logs without a TTY): each frame is an 8-byte header — one
// byte stream id (0 stdin, 1 stdout, 2 stderr), three zero bytes, a big-endian uint32 payload
// length — followed by the payload. Pure; no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace radial::engine_api {

// The bytes an engine sent are not a multiplexed stream (docs/design.md §14.2: the framing's own
// error type). what(): the offending header's bytes and what was expected.
class StreamFormatError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Splits a multiplexed byte stream, fed in arbitrary pieces, into payload pieces per stream.
// A payload may be delivered in several pieces (as its bytes arrive), never merged with the next
// frame's. Not thread-safe: one feeder.
class FrameDemux {
public:
    // stream: 1 stdout, 2 stderr (stdin's 0 is delivered as stdout: the engine only echoes it
    // back with a TTY-less attach, where it means output). data/size: at least one byte.
    // Return false to stop: feed() then returns at once.
    using Sink = std::function<bool(std::uint32_t stream, const char* data, std::size_t size)>;

    // Told each frame's stream id and payload length (bytes) as its header completes, before any
    // of its payload reaches the sink: for a reader whose frames carry a prefix of their own (the
    // timestamps of a log stream).
    using FrameStart = std::function<void(std::uint32_t stream, std::uint32_t size)>;

    explicit FrameDemux(Sink sink, FrameStart on_frame = {})
        : sink_(std::move(sink)), on_frame_(std::move(on_frame)) {}

    // Consumes `bytes`. Returns false when the sink asked to stop. Throws StreamFormatError
    // naming the offending header when a header is malformed (a stream id above 2, or non-zero
    // padding): the bytes are then not a multiplexed stream (e.g. a TTY's raw output).
    bool feed(std::string_view bytes);

    // True between frames (no partial header or payload pending): a stream that ends now ended
    // cleanly.
    bool at_frame_boundary() const noexcept { return header_fill_ == 0 && payload_left_ == 0; }

private:
    Sink sink_;
    FrameStart on_frame_;
    unsigned char header_[8]{};
    std::size_t header_fill_ = 0;
    std::uint32_t stream_ = 0;
    std::uint32_t payload_left_ = 0;
};

// One frame with the given stream id and payload, as the engine writes it (for tests and for
// writing to an attached stdin). Pure.
std::string encode_frame(std::uint8_t stream, std::string_view payload);

} // namespace radial::engine_api
