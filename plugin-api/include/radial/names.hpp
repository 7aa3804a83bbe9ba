// radial/names.hpp — the character rules a plugin author needs, each defined once
// (docs/design.md §14.7): environment variable names, runtime ids and capability ids; and the
// known name a mistyped one was probably meant to be, for a refusal's "did you mean …?". Box labels
// are radial::plugin::valid_label (radial/plugin/runtime.hpp). Header-only; used by radiald, the
// plugins and the conformance harness. Byte-wise: a byte >= 0x80 is never a letter or a digit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace radial {

// True when `name` is a variable name the ABI carries: [A-Za-z_][A-Za-z0-9_]* (radial_env_var in
// runtime_plugin.h). The one check of it: radiald applies it to every request (CLI, request file,
// spool), and the plugins to every spec they are given. [thread-safe]
inline bool is_env_name(std::string_view name) noexcept {
    if (name.empty()) return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        if (!alpha && (i == 0 || c < '0' || c > '9')) return false;
    }
    return true;
}

// True when `id` is a runtime id, the descriptor's `id` and the value operators write in
// run.containerRuntime: [a-z0-9-]{1,32}. radiald refuses a config or a plugin whose id is not
// one; the conformance harness checks the descriptor with it. [thread-safe]
inline bool is_runtime_id(std::string_view id) noexcept {
    if (id.empty() || id.size() > 32) return false;
    for (char c : id)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    return true;
}

// True when `id` is a capability id as `capabilities` reports it: a dotted name of
// [A-Za-z0-9._/-] with at least one '.', such as "radial.cap.unix-socket-mounts". [thread-safe]
inline bool is_capability_id(std::string_view id) noexcept {
    if (id.find('.') == std::string_view::npos) return false;
    for (char c : id)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_' || c == '/'))
            return false;
    return true;
}

// Optimal string alignment distance between `a` and `b`: insertions, deletions, substitutions
// and swaps of neighbours each count one. Time |a|·|b|, memory 3·|b| words. [thread-safe]
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
    // Three rows: the one before the last (for a swap), the last, and this one.
    std::vector<std::size_t> before(b.size() + 1), last(b.size() + 1), row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) last[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            row[j] = std::min({last[j] + 1, row[j - 1] + 1, last[j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                row[j] = std::min(row[j], before[j - 2] + 1);
        }
        std::swap(before, last);
        std::swap(last, row);
    }
    return last[b.size()];
}

// The candidate nearest to `word` when it is close enough to be a typo of it: an edit distance of
// at most 2 (edit_distance) and less than half of `word`'s length. The first of equally near
// candidates wins; nullopt when none is close. `candidates` is any range of strings.
// [thread-safe]
template <class Names>
std::optional<std::string> nearest_name(std::string_view word, const Names& candidates) {
    std::optional<std::string> best;
    std::size_t best_distance = 3;
    for (const auto& c : candidates) {
        // The distance is at least the difference in length: a word far longer or shorter than
        // every candidate (a megabyte-long key) costs nothing.
        const std::string_view cv(c);
        if ((word.size() > cv.size() ? word.size() - cv.size() : cv.size() - word.size()) > 2)
            continue;
        const std::size_t d = edit_distance(word, cv);
        if (d < best_distance && d * 2 < word.size()) {
            best = std::string(c);
            best_distance = d;
        }
    }
    return best;
}

} // namespace radial
