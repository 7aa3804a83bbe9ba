// host/config/bounded_units.h — every duration and size an operator or a request writes, parsed
// and range-checked in one place (docs/design.md §7.3): a value out of range is refused where it is
// read, with a message naming the limit, never passed on to a runtime or radial-init.
#pragma once

#include <cstdint>
#include <radial/units.hpp>
#include <string>
#include <string_view>

namespace radial::config {

// "720h", "90s", "1500ms": the shortest exact spelling of a duration, for messages.
std::string duration_text(std::uint64_t ms);
// "1t", "256m", "100": the shortest exact spelling of a size (binary multiples), for messages.
std::string size_text(std::uint64_t bytes);

// Empty, or why `text` (a duration in a file) is refused for being a bare number: "30" is
// "a bare number (\"30s\" says its unit)". Zero ("0") says nothing a unit would change: taken.
std::string bare_number_problem(std::string_view text);

// Why `text` is not a duration from `min_ms` to `max_ms` — "must be a duration from 0s to 1h,
// such as \"10s\"; '3h' is more than 1h" — or empty, with `ms` set. `example` is a valid value
// for the key. The caller prefixes the key or flag.
std::string duration_problem(std::string_view text, std::uint64_t& ms, std::uint64_t min_ms,
                             std::uint64_t max_ms, std::string_view example);
// The same for a size in bytes.
std::string size_problem(std::string_view text, std::uint64_t& bytes, std::uint64_t min_bytes,
                         std::uint64_t max_bytes, std::string_view example);

} // namespace radial::config
