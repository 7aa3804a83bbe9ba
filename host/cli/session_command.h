// host/cli/session_command.h — `radiald session create | rm | ls` (docs/design.md §13.12): a box
// that lives for a session, its turns run in it with `radiald turn --session ID`.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace radial::cli {

struct SessionOptions {
    std::optional<std::string> config_file;
    std::optional<std::string> runtime;
    std::string id; // create: --session-id (default generated); rm: the positional id
    std::string image;
    std::string workspace;
    std::string mode;
    std::string idle_timeout = "30m";
    std::string max_lifetime = "8h";
    bool json = false;
};

// Adds `session` and its subcommands to `app`; returns {create, rm, ls}.
struct SessionCommands {
    CLI::App* create;
    CLI::App* rm;
    CLI::App* ls;
};
SessionCommands add_session_commands(CLI::App& app, SessionOptions& o);

// `session create`: prints the new session's id. 0 done; 125 nothing was created (the message says
// why: the runtime has no sessions, the image is not local, a bad flag, ...).
int run_session_create(const SessionOptions& o);
// `session rm ID`: removes the session's box and everything radiald kept of it. 0 done; 1 no such
// session; 125 the runtime could not remove its box.
int run_session_rm(const SessionOptions& o);
// `session ls [--json]`: this state directory's sessions, and whether each one's box still exists.
int run_session_ls(const SessionOptions& o);

} // namespace radial::cli
