// plugins/support/box_init.h — where a runtime finds radial-init (plugins/box-init/), the box's
// PID 1, and the one reading of the `boxInit` key that names it in a runtime's settings.
#pragma once

#include <optional>
#include <radial/plugin/runtime.hpp>
#include <string>
#include <string_view>

namespace radial::plugin_support {

// Where every box sees radial-init: mounted read-only at this path.
inline constexpr std::string_view kBoxInitPath = "/.radial/init";
// What radial-init --say-ready writes to its stdout once no other process of the box can have
// opened its stdin (plugins/box-init/radial_init.c): a runtime sends the secrets after it.
inline constexpr std::string_view kInitReadyLine = "radial-init: ready\n";

// radial-init where the build and the package put it: lib/radial/, beside the runtimes directory
// holding the plugin this code is linked into. Empty when the code is not in a plugin there (a
// unit test) or the file is missing or not executable. Thread-safe.
std::string default_box_init();

// `configured` (a runtime's boxInit), else default_box_init(); when neither names one, warns
// through `host` that radial-init was not found beside the `runtime` plugin and what follows
// (`without`), and returns "".
std::string box_init_or_default(std::string configured, const radial::plugin::Host& host,
                                std::string_view runtime, std::string_view without);

// The `boxInit` key of `config` when set: an absolute path without ':' to a readable executable
// file. Throws radial::plugin::Error(RADIAL_E_INVALID, "boxInit") naming the key and the fix.
std::optional<std::string> box_init_setting(radial::plugin::Config& config);

} // namespace radial::plugin_support
