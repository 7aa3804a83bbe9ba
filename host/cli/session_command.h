// host/cli/session_command.h — `radiald session create | rm | ls | snapshot | snapshots |
// snapshot-rm` (docs/design.md §13.12): a box that lives for a session, its turns run in it with
// `radiald turn --session ID`, and snapshots of it that start new sessions.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "config/host_config.h"

namespace radial::cli {

class Instance;

struct SessionOptions {
    std::optional<std::string> config_file;
    std::optional<std::string> runtime;
    std::string id; // create: --session-id (default generated); rm, snapshot: the positional id
    std::string from_snapshot; // create: --from-snapshot
    std::string snapshot;      // snapshot-rm: the snapshot's tag or image name
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
    CLI::App* snapshot;
    CLI::App* snapshots;
    CLI::App* snapshot_rm;
};
SessionCommands add_session_commands(CLI::App& app, SessionOptions& o);

// `session create`: prints the new session's id. 0 done; 125 nothing was created (the message says
// why: the runtime has no sessions, the image is not local, a bad flag, ...); 130 a stop signal
// came, and what was made is undone (command_signals.h).
int run_session_create(const SessionOptions& o);
// `session rm ID`: removes the session's box and everything radiald kept of it. 0 done; 1 no such
// session; 125 the runtime could not remove its box. A stop signal lets it finish.
int run_session_rm(const SessionOptions& o);
// `session ls [--json]`: this state directory's sessions, and whether each one's box still exists.
int run_session_ls(const SessionOptions& o);

// The instance every session command runs in: config, redacted log, claim, checked runtime
// (instance.h), the state directory held shared. `who` names the command in messages.
std::unique_ptr<Instance> open_session_instance(const SessionOptions& o, const char* who);

// The config a session command runs with (its instance id settled), for the readers (`session
// ls`, `session snapshots`), which take no lock and so run beside a daemon.
config::HostConfig load_session_config(const SessionOptions& o);

// Snapshots (snapshot_command.cpp).
// Adds `snapshot ID`, `snapshots [--json]` and `snapshot-rm NAME` to the `session` command.
void add_snapshot_commands(CLI::App& session, SessionOptions& o, SessionCommands& out);
// `session snapshot ID`: commits the session's box to its content-addressed image (reused when it
// exists) and prints the image's name. 0 done; 1 the session refuses one (a turn runs in it, or a
// turn left a secret in it: the message names which and where); 125 the runtime failed; 130 a stop
// signal came, and a snapshot not yet recorded complete is removed.
int run_session_snapshot(const SessionOptions& o);
// `session snapshots [--json]`: this state directory's snapshots, oldest first.
int run_session_snapshots(const SessionOptions& o);
// `session snapshot-rm NAME`: removes the snapshot's image and record. 0 done; 1 no such
// snapshot, or a session box still runs from it; 125 the runtime failed. A stop signal lets it
// finish.
int run_session_snapshot_rm(const SessionOptions& o);

} // namespace radial::cli
