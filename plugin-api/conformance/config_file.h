// plugin-api/conformance/config_file.h — the plugin's config section read from a TOML file, as
// radiald reads it (docs/design.md §5.11): `[run.<id>]` flattened, nested tables to dotted keys.
#pragma once

#include <radial/host/runtime_client.hpp>
#include <stdexcept>
#include <string>

namespace radial::conformance {

// A config file that cannot be used; the message names the file, line and column.
class ConfigFileError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Reads `[run.<runtime_id>]` from the TOML file at `path` and flattens it the way radiald does
// (host/config/host_config.cpp): a nested table becomes dotted keys ("defaults.memory"), strings,
// integers, booleans, floats and arrays of strings keep their kind; anything else is refused.
// A file without that table gives an empty section. Throws ConfigFileError.
host::ConfigSection load_config_section(const std::string& path, const std::string& runtime_id);

// An empty section named `run.<runtime_id>`, for runs without --config.
host::ConfigSection empty_config_section(const std::string& runtime_id);

} // namespace radial::conformance
