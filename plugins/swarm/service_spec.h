// plugins/swarm/service_spec.h — the swarm runtime's settings ([run.swarm]) and the pure mapping
// from a ContainerSpec to an Engine API service spec (POST /services/create), with the
// disposition of every carried field (docs/design.md §5.6).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <radial/plugin/runtime.hpp>
#include <string>
#include <vector>

namespace radial::swarm {

// The parsed [run.swarm] section. Caps default to the docker runtime's hardened ones.
struct SwarmSettings {
    // The engine of a swarm manager; empty: $DOCKER_HOST, else the docker context, else
    // unix:///var/run/docker.sock (engine_api::resolve_engine, docs/design.md §13.10).
    std::string host;
    std::uint64_t memory_bytes = 2ull << 30;       // Resources.Limits.MemoryBytes
    std::uint64_t cpus_milli = 2000;               // Resources.Limits.NanoCPUs / 1e6
    std::int64_t pids_limit = 256;                 // Resources.Limits.Pids
    std::string user = "65534:65534";              // numeric uid:gid, neither 0
    std::uint64_t tmpfs_size_bytes = 256ull << 20; // /tmp and spec tmpfs without a size
    std::string pull = "never"; // "never": pin the manager's local image id; "always": nodes pull
    std::vector<std::string> constraints;   // Placement.Constraints, e.g. "node.role==worker"
    std::uint64_t reserve_memory_bytes = 0; // Resources.Reservations.MemoryBytes; 0: none
    std::uint64_t reserve_cpus_milli = 0;   // Resources.Reservations.NanoCPUs / 1e6; 0: none
    bool host_network = false;              // tasks may join the node's host network to reach
                                            // hostPorts (the tcp turn socket)
    // run.swarm.noDefaultBridge: the operator's word that every node's dockerd runs with
    // --bridge=none, so a task without a network attachment has loopback only.
    bool no_default_bridge = false;
    std::uint64_t command_timeout_ms = 30'000;       // budget of each Engine API call
    std::uint64_t stop_grace_ms = 2'000;             // StopGracePeriod when a service is removed
    std::uint64_t log_max_size_bytes = 256ull << 20; // the task's log file size before rotation
    // radial-init on every node (run.swarm.boxInit; default: beside the runtimes directory). Empty:
    // none was found, and tasks run under docker's init with their output line by line.
    std::string init_path;
};

// Reads [run.swarm]: host, memory, cpus, pidsLimit, user, tmpfsSize, pull, constraints,
// reserveMemory, reserveCpus, hostNetwork, noDefaultBridge, commandTimeout, stopGrace, logMaxSize,
// boxInit. Throws
// radial::plugin::Error(RADIAL_E_INVALID, <key>) naming the key and the fix. Constructor only.
SwarmSettings parse_swarm_settings(radial::plugin::Config& config);

// Why `user` may not be a box user (a name, no gid, or uid/gid 0), or nullopt when it is numeric
// uid:gid with neither 0. Pure.
std::optional<std::string> user_problem(const std::string& user);

// The disposition of every field `spec` carries under `settings` (docs/design.md §5.6). Pure.
std::vector<radial::plugin::Disposition> describe_for_swarm(const ContainerSpec& spec,
                                                            const SwarmSettings& settings);

// A swarm secret made for one secret env variable: the id POST /secrets/create returned, its name,
// and the file it is mounted as under /run/secrets.
struct SecretRef {
    std::string env_name;
    std::string id;
    std::string name;
    std::string file;
};

// The service's name: the label itself when swarm accepts it as a name (at most 63 of
// [a-zA-Z0-9_.-], starting alphanumeric), else as much of the label as fits ("r" in front when it
// would not start alphanumeric) and a hash of all of it. Named by the runtime, not left to the
// engine: the engine's random names collide now and then among services created at once, and the
// create then fails with 409. Pure.
std::string service_name(const std::string& label);

// The file a secret env variable is mounted as under /run/secrets, by its position. Pure.
std::string secret_file_name(std::size_t index);

// The entry step that exports each secret file as its variable, byte for byte (a trailing newline
// kept), then execs "$@": a `sh -c` script naming only variables and files, never values. Pure.
std::string entry_script(const std::vector<SecretRef>& secrets);

// The service spec for `spec`: `image_ref` is what the task runs (the local image id under
// pull = "never"), `entrypoint` the image's own entrypoint (kept in front of argv when the entry
// step or the box init replaces it), `secrets` the swarm secrets made for the secret variables.
// With `under_init` (settings.init_path set), the task's PID 1 is radial-init, mounted read-only
// from settings.init_path, which ends the task at spec.timeout_ms by itself and escapes its output
// (--escape-output: a log record per piece read instead of per line, docs/design.md §13.11);
// without, docker's init. The spec's secret values appear nowhere in it. Pure.
nlohmann::json service_spec(const ContainerSpec& spec, const SwarmSettings& settings,
                            const std::string& image_ref,
                            const std::vector<std::string>& entrypoint,
                            const std::vector<SecretRef>& secrets, bool under_init);

// The label every service and secret of a box carries; its value is the box's label.
inline constexpr const char* kLabelKey = "radial.label";

} // namespace radial::swarm
