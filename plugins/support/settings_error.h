// plugins/support/settings_error.h — the one way a runtime refuses a key of its own config table
// ([run.<id>]): a RADIAL_E_INVALID error that carries the key, so radiald can show the file, line
// and column it was set at (docs/design.md §7.3), and says what was read and why it is refused;
// and the refusal of a program the table names that others could replace.
#pragma once

#include <radial/internal/file_trust.h>

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

// Refuses `key`, a program radiald will run as its own user (a runtime's CLI), when whoever is
// not root or radiald's user may replace it: the file, a link to it, or a directory above it
// (radial/internal/file_trust.h; docs/design.md §5.9, §15.1). `harm` says what they could do
// ("replace the docker CLI"). Only a path is judged: a bare name is found in radiald's PATH when
// it runs, which is radiald's environment, not the config's.
inline void refuse_untrusted_program(const radial::plugin::Config& config, std::string_view key,
                                     const std::string& program, std::string_view harm) {
    if (program.find('/') == std::string::npos) return;
    if (auto problem = radial::internal::untrusted_file(program, harm); !problem.empty())
        refuse_setting(config, key, problem);
}

} // namespace radial::plugin_support
