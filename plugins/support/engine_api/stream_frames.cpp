#include "engine_api/stream_frames.h"

#include <algorithm>

namespace radial::engine_api {

bool FrameDemux::feed(std::string_view bytes) {
    while (!bytes.empty()) {
        if (payload_left_ == 0) {
            std::size_t take = std::min(bytes.size(), sizeof(header_) - header_fill_);
            std::copy_n(bytes.data(), take, header_ + header_fill_);
            header_fill_ += take;
            bytes.remove_prefix(take);
            if (header_fill_ < sizeof(header_)) return true;
            header_fill_ = 0;
            if (header_[0] > 2 || header_[1] != 0 || header_[2] != 0 || header_[3] != 0)
                throw StreamFormatError(
                    "the engine's output stream is not multiplexed: frame header starts with "
                    "bytes " +
                    std::to_string(header_[0]) + "," + std::to_string(header_[1]) + "," +
                    std::to_string(header_[2]) + "," + std::to_string(header_[3]) +
                    " (a stream id 0-2 and three zero bytes expected)");
            stream_ = header_[0] == 2 ? 2u : 1u;
            payload_left_ = (std::uint32_t(header_[4]) << 24) | (std::uint32_t(header_[5]) << 16) |
                            (std::uint32_t(header_[6]) << 8) | std::uint32_t(header_[7]);
            if (on_frame_) on_frame_(stream_, payload_left_);
            continue;
        }
        std::size_t take = std::min<std::size_t>(bytes.size(), payload_left_);
        payload_left_ -= static_cast<std::uint32_t>(take);
        if (!sink_(stream_, bytes.data(), take)) return false;
        bytes.remove_prefix(take);
    }
    return true;
}

std::string encode_frame(std::uint8_t stream, std::string_view payload) {
    std::string out(8, '\0');
    out[0] = static_cast<char>(stream);
    auto n = static_cast<std::uint32_t>(payload.size());
    out[4] = static_cast<char>((n >> 24) & 0xff);
    out[5] = static_cast<char>((n >> 16) & 0xff);
    out[6] = static_cast<char>((n >> 8) & 0xff);
    out[7] = static_cast<char>(n & 0xff);
    out.append(payload);
    return out;
}

} // namespace radial::engine_api
