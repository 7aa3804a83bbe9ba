// plugins/docker/docker_settings.h — the docker runtime's settings: the operator's [run.docker]
// section, validated, with the hardened defaults of the Docker backend document.
#pragma once

#include <cstdint>
#include <optional>
#include <radial/plugin/runtime.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace radial::docker {

// The parsed [run.docker] section. Defaults are docs/design.md §13.1's caps ("memory 2g, cpus 2,
// 256 PIDs") and the non-root user. A spec value, when carried, overrides memory, cpus, pidsLimit
// and user for its own box (docs/design.md §5.6 table).
struct DockerSettings {
    std::string binary = "docker"; // the CLI, for `docker pull` only: a name in PATH, or a path
    std::string
        host; // the engine (unix:// or tcp://); empty: $DOCKER_HOST, else the default socket
    std::uint64_t memory_bytes = 2ull << 30;       // --memory and --memory-swap (no swap)
    std::uint64_t cpus_milli = 2000;               // --cpus, thousandths of a CPU; the default
                                                   // is clamped to host_cpus_milli
    std::uint64_t host_cpus_milli = 0;             // this host's online CPUs, in thousandths: the
                                                   // most --cpus docker accepts; 0: unknown
    std::int64_t pids_limit = 256;                 // --pids-limit
    std::string user = "65534:65534";              // --user: numeric uid:gid, neither 0
    std::uint64_t tmpfs_size_bytes = 256ull << 20; // size of the default /tmp tmpfs and of spec
                                                   // tmpfs entries that carry no size
    std::string pull = "missing";                  // --pull: "missing", "never" or "always"
    std::uint64_t kill_grace_ms = 10'000;          // after a box's removal was asked for, how
                                                   // long its attach stream may stay open
    std::uint64_t preflight_timeout_ms = 10'000;   // budget of the preflight probe
    std::uint64_t command_timeout_ms = 30'000;     // deadline of each Engine API call
    // startTimeout: how long the engine may take to start a created box (POST .../start) before
    // the run fails and the box is force-removed (docs/design.md §13.1)
    std::uint64_t start_timeout_ms = 60'000;
    // writableLayerSize: the bound of the box's writable root layer (HostConfig.StorageOpt size),
    // in bytes; 0: unbounded (docs/design.md §13.1)
    std::uint64_t writable_layer_bytes = 0;
    // boxInit: the static init run as every box's PID 1 (it ends the box at the turn's deadline
    // even with no host left to); empty: docker's own --init, without that deadline
    std::string init_path;
    // ociRuntime: the engine's name of the OCI runtime every box runs under (the create body's
    // HostConfig.Runtime), e.g. "runsc" for gVisor (docs/design.md §13.9); empty: the engine's
    // default
    std::string oci_runtime;
    friend bool operator==(const DockerSettings&, const DockerSettings&) = default;
};

// Reads the [run.docker] keys through the helper's typed getters: binary, host, memory, cpus,
// pidsLimit, user, tmpfsSize, pull, killGrace, preflightTimeout, commandTimeout, startTimeout,
// writableLayerSize, boxInit (an absolute path without ':' to a readable executable), ociRuntime
// (a name matching [A-Za-z0-9][A-Za-z0-9_.-]{0,127}; whether the engine knows it is the
// preflight's question, oci_runtime_refusal). A pidsLimit below the least the chosen ociRuntime
// starts a box with (oci_runtime_profile.h: 128 under runsc) is refused. Sizes take "2g"
// or bytes, durations "10s"/"1500ms" or milliseconds (radial/units.hpp). Unknown keys are left
// for Config::finish() to refuse. `online_cpus` is the host's CPU count (0: unknown): the default
// cpus (2) is lowered to it, because docker refuses --cpus above the engine host's count, while
// an explicit cpus above it is an error. user must be numeric uid:gid, neither 0 (box_user.h).
// Throws radial::plugin::Error(RADIAL_E_INVALID, <key>, message) for a value of the wrong type or
// out of range. Not thread-safe (Config is not); call from the constructor only.
// Source: docs/design.md §7.4 (run.docker.*), docs/design.md §13.1 and "Configuration".
DockerSettings parse_docker_settings(radial::plugin::Config& config, unsigned online_cpus);

// parse_docker_settings with this host's online CPU count (online_cpu_count()).
DockerSettings parse_docker_settings(radial::plugin::Config& config);

// Why the engine cannot run boxes under settings.oci_runtime, given the names of the runtimes it
// lists (`docker info`'s Runtimes; `engine` names it in the message): nullopt when oci_runtime is
// empty (the engine's default runtime) or listed, else the message naming run.docker.ociRuntime
// and the fix. Pure; [thread-safe]. Source: docs/design.md §13.9, docs/design.md §7.4.
std::optional<std::string> oci_runtime_refusal(const DockerSettings& settings,
                                               const std::vector<std::string>& engine_runtimes,
                                               std::string_view engine);

// Why the runtime cannot tell the truth about settings.oci_runtime, given the path the engine runs
// it as (GET /info `Runtimes.<name>.path`): the path names a binary the profile table knows
// (oci_runtime_profile_by_binary: runsc) under another runtime name, whose dispositions would then
// be runc's and false. nullopt when oci_runtime is empty, or the binary is unknown, or the name
// is the table's. Pure; [thread-safe]. Source: docs/design.md §13.9.
std::optional<std::string> oci_runtime_alias_refusal(const DockerSettings& settings,
                                                     std::string_view engine_path,
                                                     std::string_view engine);

// Why the engine's runtime at `engine_path`, started with `engine_args` (GET /info `Runtimes`
// `runtimeArgs`), cannot give a box its turn socket, or nullopt: gVisor's runsc refuses a box's
// connect to a host unix socket unless started with --host-uds=open (or all), and the turn would
// then end with no record (docs/design.md §13.9). Pure.
std::optional<std::string> turn_socket_refusal(const DockerSettings& settings,
                                               std::string_view engine_path,
                                               const std::vector<std::string>& engine_args,
                                               std::string_view engine);

// Why the engine cannot bound the writable layer as settings.writable_layer_bytes asks, given its
// storage driver and that driver's backing filesystem (GET /info `Driver`, `DriverStatus`
// "Backing Filesystem"): nullopt when no bound is asked for, or when the engine may honour it
// (overlay2 only over xfs, which must also be mounted with pquota — then the create's answer
// says so; btrfs, zfs, devicemapper and others are left to the engine as well), else the message
// naming run.docker.writableLayerSize and the fix. Pure; [thread-safe].
// Source: docs/design.md §13.1.
std::optional<std::string> writable_layer_refusal(const DockerSettings& settings,
                                                  std::string_view driver,
                                                  std::string_view backing_filesystem,
                                                  std::string_view engine);

// The number of online CPUs (sysconf(_SC_NPROCESSORS_ONLN)), or 0 when the system cannot say.
// Rationale: the engine is normally local (a unix socket), so its CPU count is this host's; with
// a remote run.docker.host, set cpus explicitly. [thread-safe]
unsigned online_cpu_count() noexcept;

} // namespace radial::docker
