// plugins/support/spec_key.h — how a runtime names one element of a ContainerSpec field in an
// error's key and message: "mounts[2]", "env[0]" (the key radiald shows the user).
#pragma once

#include <cstddef>
#include <string>

namespace radial::plugin_support {

// "<field>[<i>]"; i is the element's zero-based index. Pure; thread-safe.
inline std::string spec_key(const char* field, std::size_t i) {
    return std::string(field) + "[" + std::to_string(i) + "]";
}

} // namespace radial::plugin_support
