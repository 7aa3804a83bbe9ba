// host/cli/unknown_flags.h — finds the flag (or command) radiald does not know on a command line
// before CLI11 parses it. CLI11 moves an unknown flag aside and lets its value fall into the
// positional arguments, so a typo surfaces as an unrelated complaint ("--image is required", "not
// expected: hi echo"); this check names the word the operator mistyped and the nearest known one
// (docs/design.md §7.2).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace radial::cli {

// What check_unknown_flags found: the command it was in ("radiald turn") and one line for the
// operator, e.g. "radiald turn: unknown flag '--imgae'; did you mean --image? (see 'radiald turn
// --help')". `in_box_command` is true when that command is `turn` or `check`, whose failures
// before the box exit 125 (docs/design.md §14.4).
struct UnknownWord {
    std::string command;
    std::string message;
    bool in_box_command = false;
};

// Walks argv[1..argc) through `app`'s subcommands up to the first `--`: a word starting with '-'
// that names no option of the command it is in (one of a command above it is reported as
// misplaced: CLI11 takes it only before the subcommand), or a word where a command expects one of
// its subcommands and names none, is returned. Values of options that take
// one are skipped. Only the flag's name is quoted, never a value given with '=' (it may be a
// secret). nullopt when every word is known.
std::optional<UnknownWord> check_unknown_flags(const CLI::App& app, int argc,
                                               const char* const* argv);

} // namespace radial::cli
