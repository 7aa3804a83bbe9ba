// host/cli/count_option.h — the check for a flag that takes a count (`-n 20`): a negative one is
// refused by name. CLI11 would wrap it into a huge unsigned count (all of them), and its own range
// check prints the largest double.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace radial::cli {

inline CLI::Validator count_of(const std::string& what) {
    return CLI::Validator(
        [what](std::string& text) -> std::string {
            if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
                return "'" + text + "' is not a number of " + what + "; give 0 or more";
            return {};
        },
        "COUNT");
}

} // namespace radial::cli
