// host/config/bounded_units.cpp — see bounded_units.h.
#include "config/bounded_units.h"

#include <fmt/format.h>

#include <algorithm>

namespace radial::config {

std::string duration_text(std::uint64_t ms) {
    if (ms == 0) return "0s";
    if (ms % 3'600'000 == 0) return fmt::format("{}h", ms / 3'600'000);
    if (ms % 60'000 == 0) return fmt::format("{}m", ms / 60'000);
    if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
    return fmt::format("{}ms", ms);
}

std::string size_text(std::uint64_t bytes) {
    constexpr std::pair<std::uint64_t, const char*> kUnits[] = {
        {1ull << 40, "t"}, {1ull << 30, "g"}, {1ull << 20, "m"}, {1ull << 10, "k"}};
    for (const auto& [unit, suffix] : kUnits)
        if (bytes != 0 && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, suffix);
    return fmt::format("{}", bytes);
}

namespace {

template <class Parse, class Text>
std::string problem(std::string_view text, std::uint64_t& out, std::uint64_t min, std::uint64_t max,
                    std::string_view kind, std::string_view example, Parse parse, Text spell) {
    const std::string range =
        fmt::format("a {} from {} to {}, such as {}", kind, spell(min), spell(max), example);
    const auto value = parse(text);
    if (!value) return fmt::format("must be {}; '{}' is not one", range, text);
    if (*value > max)
        return fmt::format("must be {}; '{}' is more than the limit of {}", range, text,
                           spell(max));
    if (*value < min)
        return fmt::format("must be {}; '{}' is less than {}", range, text, spell(min));
    out = *value;
    return {};
}

} // namespace

std::string bare_number_problem(std::string_view text) {
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (text.empty() ||
        !std::all_of(text.begin(), text.end(), [&](char c) { return digit(c) || c == '.'; }))
        return {};
    // Zero is zero in every unit: "0" is no guess.
    if (std::all_of(text.begin(), text.end(), [](char c) { return c == '0' || c == '.'; }))
        return {};
    return fmt::format("\"{}\" is a bare number (\"{}s\" says its unit)", text, text);
}

std::string duration_problem(std::string_view text, std::uint64_t& ms, std::uint64_t min_ms,
                             std::uint64_t max_ms, std::string_view example) {
    return problem(
        text, ms, min_ms, max_ms, "duration", example,
        [](std::string_view t) { return units::parse_duration_ms(t); }, duration_text);
}

std::string size_problem(std::string_view text, std::uint64_t& bytes, std::uint64_t min_bytes,
                         std::uint64_t max_bytes, std::string_view example) {
    return problem(
        text, bytes, min_bytes, max_bytes, "size", example,
        [](std::string_view t) { return units::parse_size_bytes(t); }, size_text);
}

} // namespace radial::config
