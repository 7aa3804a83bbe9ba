// plugins/support/cli_text.h — turning what a runtime's CLI printed into one-line message text,
// and an argv into one loggable line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace radial::plugin_support {

// The lines of `text` that say something, joined with " / " into one line: blank lines and the
// CLI's usage hints ("Run 'docker run --help' for more information", "Run 'sbx ls --help' for
// usage") are dropped, and when the result is longer than `max_bytes` only its last `max_bytes`
// bytes are kept (the cause is printed last). Pure; thread-safe.
std::string cli_message(std::string_view text, std::size_t max_bytes = 2048);

// The first line of cli_message(text), or `fallback` when there is none. Pure; thread-safe.
std::string first_cli_line(std::string_view text, std::string_view fallback);

// One log line for an argv: plain words as they are, others single-quoted, and an element with a
// control byte written $'...' with escapes, so the line never breaks and reads back unambiguously.
// For argvs that carry no secret (no runtime puts one on an argv). Pure; thread-safe.
std::string argv_for_log(const std::vector<std::string>& argv);

} // namespace radial::plugin_support
