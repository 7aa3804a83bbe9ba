// plugins/sandbox/sbx_names.h — a box label as a sandbox name, and back. Sandboxes carry no labels
// (sbx-releases#457), so the name is the only ownership mark (docs/design.md §5.6 `label`, §6).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace radial::sandbox {

// The sandbox name for `label`. sbx names allow letters, digits, '.' and '-' (an underscore is
// rejected), so letters, digits and '-' stay as they are and every other byte — '_', '.' (the
// escape character itself) and anything else — becomes '.' and two lowercase hex digits:
// "radial-turn-local-7" stays "radial-turn-local-7", "radial-turn-my_host-7" becomes
// "radial-turn-my.5fhost-7". Deterministic and injective (every escape has one fixed length, so
// decoding is unambiguous): two distinct labels never share a name. A valid label
// ([A-Za-z0-9][A-Za-z0-9_.-]*) always yields a name that starts with a letter or digit. Pure;
// thread-safe.
std::string sandbox_name(std::string_view label);

// The label whose sandbox_name() is exactly `name`, or nullopt when no label maps to it (a
// sandbox radiald did not name: a bad escape, a byte outside the name alphabet, or a
// non-canonical escape such as ".41" for "A"). Pure; thread-safe.
std::optional<std::string> label_of_sandbox(std::string_view name);

} // namespace radial::sandbox
