// host/config/config_text.h — the operator's config file read whole, or why it cannot be: every
// way a file the operator named, or the packaged default, can fail to be one is said, never taken
// for "no file" (docs/design.md §7.7).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace radial::config {

// Why `path` cannot be a config file, and what to do about it.
struct PathProblem {
    std::string why; // "no such file", "it is a directory, not a file", "it is a link to 'x',
                     // which leads nowhere", "it is a fifo, not a regular file", an errno's text
    std::string fix; // "pass an existing file with --config", "remove the link", ...
};

// Why `path` cannot be a config file, or nullopt when it is a regular file (links followed).
// Whether it can be opened is read_config_text's to say. [thread-safe]
std::optional<PathProblem> config_path_problem(const std::string& path);

// The whole text of the config file `path`. Throws ConfigError "reading config '<path>': <why>;
// <fix>" when it is no regular file (config_path_problem), cannot be opened or read (the errno),
// or may be changed by anyone but root and radiald's user: the file, a link to it, or a directory
// above it, judged as a plugin is (radial/internal/file_trust.h; docs/design.md §5.9, §15.1).
// [thread-safe]
std::string read_config_text(const std::string& path);

// toml++'s description of a parse error (`parse_error::description()`) in radiald's words: a table
// or key given twice is named with the fix ("the table [run] appears twice; ..."), anything else
// is "not valid TOML (<what was read>): <toml++'s words>". Used for the config file and turn files
// alike. Pure.
std::string toml_problem(std::string_view description);

} // namespace radial::config
