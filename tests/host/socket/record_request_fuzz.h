// tests/host/socket/record_request_fuzz.h — what the record-request fuzz target and its bounded
// driver share: the turn settings the target uses, so seeds can carry the right token and type,
// and the outcome counts the driver checks (docs/design.md §9).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace radial::socket::fuzz {

inline constexpr std::string_view kToken =
    "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
inline constexpr std::string_view kType = "turn.result";
inline constexpr std::size_t kMaxBodyBytes = 512;
// A payload containing this makes the target's sink throw, to reach the 500 path.
inline constexpr std::string_view kSinkThrowsMarker = "sink-throws";

// How many inputs ended in each outcome. Indexes: see outcome_index() in the target.
struct Stats {
    std::uint64_t incomplete = 0; // input ended before a full request (no response)
    std::array<std::uint64_t, 600> by_status{};
};

// The counts so far (the target is single-threaded, as libFuzzer runs it).
const Stats& stats();

} // namespace radial::socket::fuzz
