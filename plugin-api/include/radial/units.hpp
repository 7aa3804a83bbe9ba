// radial/units.hpp — parsing of the sizes and durations operators write in config and on the
// command line ("512m", "2g", "90s", "1500ms"). Header-only; shared by radiald and plugins so that
// "2g" means the same bytes everywhere.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace radial::units {

namespace detail {
// Splits "<digits>[.<digits>]<suffix>" into a value in thousandths and a lower-case suffix.
inline std::optional<std::pair<std::uint64_t, std::string>> split(std::string_view s) {
    std::size_t i = 0;
    std::uint64_t whole = 0;
    if (s.empty() || s[0] < '0' || s[0] > '9') return std::nullopt;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
        if (whole > (std::numeric_limits<std::uint64_t>::max() / 10'000)) return std::nullopt;
        whole = whole * 10 + std::uint64_t(s[i] - '0');
    }
    std::uint64_t frac = 0, scale = 1000;
    if (i < s.size() && s[i] == '.') {
        ++i;
        std::size_t digits = 0;
        for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits)
            if (digits < 3) frac += std::uint64_t(s[i] - '0') * (scale /= 10);
        if (digits == 0) return std::nullopt;
    }
    std::string suffix;
    for (; i < s.size(); ++i) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
        suffix.push_back(c);
    }
    return std::make_pair(whole * 1000 + frac, suffix);
}

inline std::optional<std::uint64_t> scale_milli(std::uint64_t milli, std::uint64_t unit) {
    if (milli != 0 && unit > std::numeric_limits<std::uint64_t>::max() / milli) {
        // multiply first would overflow; divide first where exact enough
        if (milli / 1000 > std::numeric_limits<std::uint64_t>::max() / unit) return std::nullopt;
        return (milli / 1000) * unit + ((milli % 1000) * unit) / 1000;
    }
    return milli * unit / 1000;
}
} // namespace detail

// Parses a byte size: a plain number of bytes, or a number with b, k/kb/kib, m/mb/mib, g/gb/gib,
// t/tb/tib (binary multiples, as docker reads them). Fractions allowed ("1.5g").
// Returns nullopt for anything else, including an empty string or overflow.
inline std::optional<std::uint64_t> parse_size_bytes(std::string_view text) {
    auto parts = detail::split(text);
    if (!parts) return std::nullopt;
    const auto& [milli, suffix] = *parts;
    std::uint64_t unit = 0;
    if (suffix.empty() || suffix == "b")
        unit = 1;
    else if (suffix == "k" || suffix == "kb" || suffix == "kib")
        unit = 1ull << 10;
    else if (suffix == "m" || suffix == "mb" || suffix == "mib")
        unit = 1ull << 20;
    else if (suffix == "g" || suffix == "gb" || suffix == "gib")
        unit = 1ull << 30;
    else if (suffix == "t" || suffix == "tb" || suffix == "tib")
        unit = 1ull << 40;
    else
        return std::nullopt;
    return detail::scale_milli(milli, unit);
}

// Parses a duration into milliseconds: ms, s, m, h, or a plain number of seconds ("90" = 90 s).
// Fractions allowed ("1.5s"). Returns nullopt for anything else.
inline std::optional<std::uint64_t> parse_duration_ms(std::string_view text) {
    auto parts = detail::split(text);
    if (!parts) return std::nullopt;
    const auto& [milli, suffix] = *parts;
    std::uint64_t unit = 0;
    if (suffix == "ms")
        unit = 1;
    else if (suffix.empty() || suffix == "s")
        unit = 1000;
    else if (suffix == "m" || suffix == "min")
        unit = 60'000;
    else if (suffix == "h")
        unit = 3'600'000;
    else
        return std::nullopt;
    return detail::scale_milli(milli, unit);
}

// The longest duration any key or flag takes, and the largest size (docs/design.md §7.3): 30 days
// ("720h") and 1024 TiB ("1024t"). A value beyond them is a typo, not a plan, and well past them a
// value no longer fits the signed 64-bit millisecond or byte counts the boxes' tools read (a
// timeout of "2600000000000h" would reach radial-init as a number it cannot parse).
inline constexpr std::uint64_t kMaxDurationMs = 30ull * 24 * 3'600'000;
inline constexpr const char* kMaxDurationText = "720h (30 days)";
inline constexpr std::uint64_t kMaxSizeBytes = 1ull << 50;
inline constexpr const char* kMaxSizeText = "1024t";

// Parses a CPU count ("2", "0.5") into thousandths of a CPU. Returns nullopt for anything else.
inline std::optional<std::uint64_t> parse_cpus_milli(std::string_view text) {
    auto parts = detail::split(text);
    if (!parts || !parts->second.empty()) return std::nullopt;
    return parts->first;
}

} // namespace radial::units
