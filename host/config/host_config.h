// host/config/host_config.h — the operator's config file: the [run] keys radiald itself reads,
// and the selected runtime's own section, flattened for the plugin (docs/design.md §7).
//
// Rules: keys are spelled as docs/configuration.md spells them (run.containerRuntime,
// run.pluginDir, …); an unknown key is an error, not a silently ignored setting; a settings block
// for a runtime that is not selected is refused (docs/design.md §7.4); every error names
// file:line:column and the key.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <radial/host/runtime_client.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "egress/egress_policy.h"
#include "egress/workspace_net.h"

namespace radial::config {

// A config the operator must fix. what() is one line: "<file>:<line>:<col>: <key>: <problem>".
class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A well-formed setting this host refuses (a run.boxIdRange something on the host already uses):
// a refusal like a runtime's at startup, exit 1 rather than a usage error's 2
// (docs/design.md §14.4).
class HostRefusalError : public ConfigError {
public:
    using ConfigError::ConfigError;
};

// [redact]: secrets the operator adds to every turn's secret set (docs/design.md §10.1).
struct RedactConfig {
    std::vector<std::string> env_names; // envNames: radiald's env vars whose values are secret
    std::vector<std::string> values;    // values: literal secret values
    std::size_t min_length = 6;         // minLength: shorter secrets are refused, in bytes
};

// [run.pool] (docs/design.md §13.14): boxes started before turns arrive, one class per image.
struct PoolConfig {
    // The images whose turns the pool serves; with each of `modes`, a class with run.memory,
    // run.cpus, run.pidsLimit and a workspace at /work.
    std::vector<std::string> images;
    // The workspace modes it serves them in ("workspace-write", "read-only"); empty: run.mode.
    std::vector<std::string> modes;
    // Idle, started boxes kept per class (image and mode); 0: no pool.
    std::size_t size = 0;
    // The longest an idle box lives, enforced in the box (its idle timeout) and by the pool.
    std::uint64_t max_age_ms = 10 * 60'000;
    // Boxes created at once while refilling: the pool's share of the engine's CPU.
    std::size_t refill_concurrency = 1;
    // The most memory the idle boxes may be bounded to in all (each run.memory); 0: size alone.
    std::uint64_t memory_budget_bytes = 0;
};

struct HostConfig {
    std::string file; // the config file read; empty when none was
    // The runtime ids found in plugin_dirs when the runtime was opened (empty before): what a
    // reload, which loads no plugin, checks run.containerRuntime against.
    std::vector<std::string> runtimes_found;
    // Its bytes as this load read and parsed them (the reload compares them; nothing reads the
    // path twice, where a file replaced between two reads gives two versions).
    std::string file_text;
    std::string container_runtime = "docker"; // run.containerRuntime
    // What chose container_runtime, for messages: "--runtime" or "run.containerRuntime"
    // (docs/design.md §7.2).
    std::string runtime_selected_by = "run.containerRuntime";
    std::vector<std::string> plugin_dirs; // run.pluginDir, absolute
    // run.instanceId: [a-z0-9]{1,32}. Empty when the file sets none: settle_instance_id()
    // (config/instance_id.h) then uses the id generated once and persisted in the state directory.
    std::string instance_id;
    std::string network; // run.network: empty = no network
    // run.user: "uid[:gid]", "workspace-owner", or empty = the first id of run.boxIdRange
    // (config/box_identity.h).
    std::string user;
    // run.boxIdRange: ids reserved for boxes, no host account or process may use them.
    std::uint32_t box_id_first = 2'000'000'000;
    std::uint32_t box_id_last = 2'000'065'535;
    bool codex_auth = false; // run.codexAuth (docs/design.md §8.7): managed Codex auth
    // run.sharedWorkspaces: turns may run side by side on one workspace (default: one at a time,
    // turn/workspace_lock.h).
    bool shared_workspaces = false;
    // Not read from the file: the state directories of the other radiald instances on this host
    // (daemon::claimed_state_dirs), which no request may mount any more than its own
    // (turn/request_policy.h). Set by the commands that run boxes once they hold their claim.
    std::vector<std::string> other_state_dirs;
    // Not read from the file: the host uid and gid of a box's root when the runtime runs boxes as
    // root in a user namespace of their own (radial/box_root.h; docs/design.md §8.8), found at
    // startup (cli::resolve_box_root) where the box ids are the default. Every box then runs as
    // "0:0" and no id is leased; empty: boxes run as ids of run.boxIdRange.
    std::optional<std::pair<std::uint32_t, std::uint32_t>> box_root;
    // run.codexAuthFile: absolute; empty = $CODEX_HOME/auth.json or ~/.codex/auth.json
    // (turn/box_user_env.h codex_auth_path)
    std::string codex_auth_file;
    std::string turn_transport = "auto"; // run.turnTransport: "auto" | "unix" | "tcp"
    std::string turn_socket_host;        // run.turnSocketHost: tcp bind host; empty = runtime's
    std::string state_dir;               // run.stateDir, absolute: journal and per-turn sockets
    std::uint64_t max_record_bytes = 1 << 20; // run.maxRecordBytes: turn socket body limit
    // run.minFreeBytes: a turn is not started while the state directory's file system has less
    // free space than this (its journal writes and terminal record must fit)
    std::uint64_t min_free_bytes = 16ull << 20;
    // run.maxSnapshots: how many session snapshots (local images) this state directory keeps; a
    // snapshot beyond it is refused until one is removed (radiald session snapshot-rm)
    std::size_t max_snapshots = 16;
    // run.maxSnapshotBytes: the most bytes one snapshot may write, by the apparent size of the
    // box's changed files (sparse files' holes count); 0: no bound (docs/design.md §13.12)
    std::uint64_t max_snapshot_bytes = 4ull << 30;
    // run.outputStall: how long a turn's output waits for a reader that takes none of it before
    // it is dropped and counted (docs/design.md §3.6); 0: never waits.
    std::uint64_t output_stall_ms = 10'000;
    // run.maxRecordsPerTurn / run.maxRecordBytesPerTurn: what one turn may post, in records and in
    // bytes of their bodies (docs/design.md §9.6); 0: no cap.
    std::uint64_t max_records_per_turn = 10'000;
    std::uint64_t max_record_bytes_per_turn = 16ull << 20;
    // run.journalMaxAge / run.journalMaxBytes: finished turns older than this, and the oldest ones
    // while the journal holds more than this, are pruned (docs/design.md §11.6); 0: no bound.
    std::uint64_t journal_max_age_ms = 720ull * 3'600'000;
    std::uint64_t journal_max_bytes = 256ull << 20;
    // run.turnLogMaxBytes: the most bytes of a turn's output its log keeps, the head
    // (docs/design.md §11.7); 0: no log. run.turnLogsMaxBytes: the most all turns' logs may hold
    // together, the logs of ended turns modified longest ago removed first; 0: no bound.
    std::uint64_t turn_log_max_bytes = 16ull << 20;
    std::uint64_t turn_logs_max_bytes = 1ull << 30;
    std::size_t max_concurrent_turns = 4; // run.maxConcurrentTurns: the daemon's parallel turns
    // run.logLevel: the lowest level `radiald run` logs, "debug" | "info" | "warn" | "error"
    // (--verbose overrides it with debug)
    std::string log_level = "info";
    // run.defaultTimeout: the timeout of a turn or check whose request names none; 0: none (then
    // run.maxTimeout's, if set). run.maxTimeout: the longest timeout a request may name; 0: the
    // hard limit of 720h alone. In milliseconds.
    std::uint64_t default_timeout_ms = 0;
    std::uint64_t max_timeout_ms = 0;
    // run.stopGrace: on a turn's timeout or interrupt, SIGTERM to its command and this long to end
    // by itself before the kill (docs/design.md §13.1); 0: killed at once.
    std::uint64_t stop_grace_ms = 10'000;
    std::uint64_t shutdown_grace_ms = 30'000; // run.shutdownGrace: how long running turns may
                                              // finish after SIGTERM before their boxes are killed
    // run.workspaceRoots: absolute host directories a request's workspace and mount sources must
    // lie under (after symlinks are resolved).
    std::vector<std::string> workspace_roots{"/home", "/srv", "/tmp", "/var/tmp"};
    // run.allowedImages: shell patterns (fnmatch) an image reference must match.
    std::vector<std::string> allowed_images{"*"};
    // run.secretNames: shell patterns (fnmatch) every secret a request names must match: the
    // variables of radiald's environment a request may take as its secrets (docs/design.md §7.5).
    std::vector<std::string> secret_names{"*"};
    // run.protectedPaths: absolute host paths no request may name, added to the built-in ones.
    std::vector<std::string> protected_paths;
    std::uint64_t plugin_call_timeout_ms = 120'000; // run.pluginCallTimeout: the longest any
                                                    // plugin call but run may take
    // run.pluginIsolation: "in-process" (the plugin is loaded into radiald) or "process" (into a
    // radial-plugin-host process of its own, so that its crash ends only its own calls:
    // docs/design.md §5.13).
    bool plugin_in_process = true;
    // run.metrics: where `radiald run` serves Prometheus metrics, "unix:/path" or a loopback
    // "HOST:PORT" (config/metrics_endpoint.h, docs/design.md §12.6); empty: not served.
    std::string metrics;
    host::ConfigSection runtime_section; // [run.<containerRuntime>], flattened
    RedactConfig redact;                 // [redact]
    // [run.egress]: the most a turn's egress may reach through its broker (docs/design.md §9.7);
    // without allow rules, no turn gets one and every box has no network.
    egress::EgressCeiling egress;
    // [run.workspaces]: workspace identities and the services their turns may offer and reach
    // (docs/design.md §9.7, "Between boxes"); empty: no turn has an identity, no edge exists.
    egress::WorkspaceNet workspaces;
    PoolConfig pool; // [run.pool]

    // run.mode: a turn's mode unless it names one, "workspace-write" | "read-only"
    // (turn/workspace_mode.h)
    std::string mode = "workspace-write";
    // run.workspaceMount: where the workspace appears, "/work" | "same-path"
    std::string workspace_mount = "/work";
    // run.homeSize: the bound of the box user's home tmpfs (docs/design.md §8.7), in bytes
    std::uint64_t home_size_bytes = 256ull << 20;
    // run.memory / run.cpus / run.pidsLimit: the bounds radiald puts in every box's spec, so a
    // runtime without defaults of its own still bounds a box (docs/design.md §6.4: the Docker
    // backend document's "memory 2g, cpus 2, 256 PIDs"). 0: no host bound, the runtime's own
    // default applies — also what load() leaves when the selected runtime's section sets the key of
    // the same name (the operator's word for that runtime). The default cpus is lowered to this
    // host's online CPUs.
    std::uint64_t memory_bytes = 2ull << 30;
    std::uint64_t cpus_milli = 2000;
    std::int64_t pids_limit = 256;

    // "file:line:col: " for a dotted key the file set ("run.docker.memory"), or "file: " / ""
    // when it has no known position.
    std::string where(const std::string& key) const;

    std::map<std::string, std::string> positions; // dotted key -> "file:line:col"
};

// The state directory used when run.stateDir is not set: /var/lib/radial for root, else
// $XDG_STATE_HOME/radial or ~/.local/state/radial.
std::string default_state_dir();

// The runtime ids installed in `plugin_dirs`; empty when it cannot tell.
using KnownRuntimes = std::function<std::vector<std::string>(const std::vector<std::string>&)>;

// "<where><selector> '<id>' names no installed runtime; did you mean 'a'? The known runtimes are
// 'a', 'b' (plugins in …); …": the refusal of a runtime id that is none of `known`, naming the
// flag or key that selected it and the directories searched.
std::string unknown_runtime_message(const HostConfig& cfg, const std::vector<std::string>& known);

// This host's online CPUs in thousandths (sysconf), or 0 when the system cannot say: the most
// run.cpus may be, since an engine refuses a CPU bound above what its host has. [thread-safe]
std::uint64_t online_cpus_milli() noexcept;

// Reads `file` (nullopt: no file, defaults only). `runtime_override` replaces
// run.containerRuntime (the --runtime flag) before sections are checked. `exe_dir` is the
// directory of the radiald executable: the default plugin directory is
// exe_dir/../lib/radial/runtimes, and a relative run.pluginDir is taken relative to the config
// file's directory. A [run.<id>] table of a runtime other than the selected one is refused; when
// `known_runtimes` is given and the selected id is none of those it lists, the refusal is of the
// id instead (a mistyped --runtime is not a reason to remove a table). Throws ConfigError.
HostConfig load(const std::optional<std::string>& file,
                const std::optional<std::string>& runtime_override, const std::string& exe_dir,
                const KnownRuntimes& known_runtimes = {});

// As load(), of `text` already read from `file` (read_config_text). Throws ConfigError.
HostConfig load_text(const std::string& file, std::string text,
                     const std::optional<std::string>& runtime_override, const std::string& exe_dir,
                     const KnownRuntimes& known_runtimes = {});

} // namespace radial::config
