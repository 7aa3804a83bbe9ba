// plugins/support/settings_error.h — the one way a runtime refuses a key of its own config table
// ([run.<id>]): a RADIAL_E_INVALID error that carries the key, so radiald can show the file, line
// and column it was set at (docs/design.md §7.3), and says what was read and why it is refused.
#pragma once

#include <radial/plugin/runtime.hpp>
#include <string>
#include <string_view>

namespace radial::plugin_support {

// Throws radial::plugin::Error(RADIAL_E_INVALID, key, "reading <section>.<key>: <why>"). `why`
// says what is wrong and what to do; it must not quote a secret value.
[[noreturn]] inline void refuse_setting(const radial::plugin::Config& config, std::string_view key,
                                        const std::string& why) {
    const std::string k(key);
    throw radial::plugin::Error(RADIAL_E_INVALID, k,
                                "reading " + config.section() + "." + k + ": " + why);
}

} // namespace radial::plugin_support
