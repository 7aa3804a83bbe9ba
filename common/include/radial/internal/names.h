// radial/internal/names.h — the one definition of each character rule for the names radiald and
// the runtime plugins check (docs/design.md §14.7): instance ids, turn ids, record types,
// decimal fields and one-word values. The rules a plugin author needs (environment variable
// names, runtime ids) are in the plugin API (radial/names.hpp); box labels are
// radial::plugin::valid_label. All functions are pure, byte-wise (a byte >= 0x80 is never a letter
// or a digit), noexcept and thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

namespace radial::internal {

namespace detail {

constexpr bool lower_or_digit(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
constexpr bool ascii_alnum(char c) noexcept { return lower_or_digit(c) || (c >= 'A' && c <= 'Z'); }

} // namespace detail

// The longest turn id and record type, in bytes (docs/design.md §6.1).
inline constexpr std::size_t kMaxTurnIdBytes = 64;
inline constexpr std::size_t kMaxRecordTypeBytes = 64;

// True when every byte of `s` is an ASCII digit and there are 1..`max_digits` of them.
constexpr bool is_decimal(std::string_view s,
                          std::size_t max_digits = std::string_view::npos) noexcept {
    if (s.empty() || s.size() > max_digits) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

// An instance id (run.instanceId, the persisted <stateDir>/instance-id): [a-z0-9]{1,32}. No '-':
// box labels are "radial-turn-<instanceId>-<turnId>", and a dash would make another instance's
// prefix ("inst1-" of "inst1-a") ours.
constexpr bool is_instance_id(std::string_view s) noexcept {
    if (s.empty() || s.size() > 32) return false;
    for (char c : s)
        if (!detail::lower_or_digit(c)) return false;
    return true;
}

// A turn id: 1..kMaxTurnIdBytes of [a-z0-9-], not starting with '-' (it is part of box labels,
// file names and command lines).
constexpr bool is_turn_id(std::string_view s) noexcept {
    if (s.empty() || s.size() > kMaxTurnIdBytes || s.front() == '-') return false;
    for (char c : s)
        if (!detail::lower_or_digit(c) && c != '-') return false;
    return true;
}

// A record type (recordType, the one type a turn's socket accepts): 1..kMaxRecordTypeBytes of
// [A-Za-z0-9._:/-].
constexpr bool is_record_type(std::string_view s) noexcept {
    if (s.empty() || s.size() > kMaxRecordTypeBytes) return false;
    for (char c : s)
        if (!detail::ascii_alnum(c) && c != '.' && c != '_' && c != ':' && c != '/' && c != '-')
            return false;
    return true;
}

// True when `s` has a space, an ASCII control byte or DEL: such a value is not one word on a
// command line. Bytes >= 0x80 (UTF-8) are allowed. False for the empty string.
constexpr bool has_space_or_control(std::string_view s) noexcept {
    for (char c : s) {
        const auto b = static_cast<unsigned char>(c);
        if (b <= ' ' || b == 0x7f) return true;
    }
    return false;
}

} // namespace radial::internal
