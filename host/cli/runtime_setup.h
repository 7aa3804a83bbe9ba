// host/cli/runtime_setup.h — from config to a live runtime instance: load the plugins, select
// run.containerRuntime, create it with its own config section, preflight it. Shared by every
// radiald command that runs boxes.
#pragma once

#include <cstdint>
#include <optional>
#include <radial/host/runtime_client.hpp>
#include <stdexcept>
#include <string>
#include <utility>

#include "config/host_config.h"
#include "loader/plugin_loader.h"
#include "turn/turn_transport.h"

namespace radial::cli {

// A startup failure: one line for the operator, radiald exits non-zero.
class StartupError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// "radiald <version>".
std::string host_version();

// The directory holding the running radiald executable.
std::string executable_dir();

// Loads and creates the selected runtime; runs its preflight unless `preflight` is false. Plugin
// log lines go to the host log tagged "plugin:<id>". Throws StartupError with the loader's,
// the config's or the plugin's message (a config key the plugin names is shown with its
// file:line:column). `installed`, when given, receives the ids of the runtimes found in
// cfg.plugin_dirs.
host::RuntimeClient open_runtime(const config::HostConfig& cfg, bool preflight = true,
                                 std::vector<std::string>* installed = nullptr);

// Resolves run.turnTransport against the runtime's capabilities and tcp route (docs/design.md
// §9.1). Throws StartupError for an impossible combination, naming both keys.
turn::ResolvedTransport resolve_turn_transport(const config::HostConfig& cfg,
                                               const host::RuntimeClient& client);

// Refuses, at startup, a config the runtime cannot honour (docs/design.md §7.4), from the plugin's
// own dispositions and capabilities and never from its id: run.network or run.user the runtime
// refuses for every box, run.codexAuth without radial.cap.host-uid-mounts, and a [run.pool] the
// runtime cannot serve (pool::pool_refusal). Throws
// StartupError naming the key and the runtime's reason.
void check_config_against_runtime(const config::HostConfig& cfg, const host::RuntimeClient& client);

// Whether boxes run as root in a user namespace of their own (docs/design.md §8.8): the host ids
// of that root, or why not (one sentence: the runtime's reason, or that run.user is set).
struct BoxRootAnswer {
    std::optional<std::pair<std::uint32_t, std::uint32_t>> ids;
    std::string why_not;
};

// Asks `client` (preflighted) through radial.box-root/1 when the boxes' ids are the default ones
// (run.user unset) and logs the answer once at info: what a workspace-write turn can install, and
// why. Throws StartupError when the runtime fails to answer (e.g. its engine is gone).
BoxRootAnswer resolve_box_root(const config::HostConfig& cfg, const host::RuntimeClient& client);

// Throws StartupError naming run.pool.size when the pool's idle boxes and the turns at once need
// more ids of run.boxIdRange than it holds (config::pool_id_shortfall); nothing under a box root
// (`box_root`, resolve_box_root's answer), where no id is leased.
void check_pool_ids(const config::HostConfig& cfg, const BoxRootAnswer& box_root);

// The selected runtime, created, checked against the config and preflighted.
struct CheckedRuntime {
    host::RuntimeClient client;
    turn::ResolvedTransport transport;
    // Asked only after a preflight (open_checked_runtime with preflight).
    BoxRootAnswer box_root;
    // The ids of the runtimes found in cfg.plugin_dirs (a reload checks run.containerRuntime
    // against them without loading a plugin).
    std::vector<std::string> installed;
};

// The startup validation every command that runs or queues boxes shares (turn, run, reconcile,
// submit), so that no command serves a config another refuses: loads and creates the runtime
// (open_runtime without preflight), refuses what it cannot honour (check_config_against_runtime),
// resolves the turn transport (resolve_turn_transport), and only then runs the runtime's
// preflight, unless `preflight` is false (submit starts no box). The refusals therefore come
// before any contact with the engine. Throws StartupError naming the key.
CheckedRuntime open_checked_runtime(const config::HostConfig& cfg, bool preflight = true);

// The journal file under the state directory.
std::string journal_path(const config::HostConfig& cfg);

// Throws StartupError naming run.stateDir when a unix socket radiald binds under the state
// directory for a turn with a generated id — a one-shot turn's, or a session's turn when the
// session's id was generated — would not fit a socket address (107 bytes): every such turn would
// fail at its socket, while `run`, `config check` and `session create` said nothing.
void check_socket_paths_fit(const config::HostConfig& cfg);

// Throws RequestError naming --session-id and run.stateDir when the sockets of the turns of a
// session of id `id` (<stateDir>/sessions/<id>.run/) would not fit a socket address; checked by
// `session create` before any box.
void check_session_socket_fits(const config::HostConfig& cfg, const std::string& id);

} // namespace radial::cli
