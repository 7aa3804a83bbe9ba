// radial/names.hpp — the character rules a plugin author needs, each defined once
// (docs/design.md §14.7): environment variable names, runtime ids and capability ids. Box labels
// are radial::plugin::valid_label (radial/plugin/runtime.hpp). Header-only; used by radiald, the
// plugins and the conformance harness. Byte-wise: a byte >= 0x80 is never a letter or a digit.
#pragma once

#include <cstddef>
#include <string_view>

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

} // namespace radial
