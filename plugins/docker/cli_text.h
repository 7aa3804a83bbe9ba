// plugins/docker/cli_text.h — turning what the docker CLI printed into one-line message text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace radial::docker {

// The lines of `text` that say something, joined with " / " into one line: blank lines and the
// CLI's "Run 'docker ... --help' for more information" hints are dropped, and when the result is
// longer than `max_bytes` only its last `max_bytes` bytes are kept (the cause is printed last).
// Pure; thread-safe.
std::string cli_message(std::string_view text, std::size_t max_bytes = 2048);

// The first line of cli_message(text), or `fallback` when there is none. Pure; thread-safe.
std::string first_cli_line(std::string_view text, std::string_view fallback);

} // namespace radial::docker
