// plugins/docker/docker_argv.h — every docker CLI invocation the runtime makes, built by pure
// functions (docs/design.md §5.1: "every invocation is built by a pure exported function ...
// mirroring dockerRunArgs"), plus the parsers of what the CLI prints back and the client's
// environment.
//
// Nothing here starts a process or reads the process environment; all functions are thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <radial/container_spec.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "docker_env.h"
#include "docker_settings.h"

namespace radial::docker {

// The docker label that marks a box as radial's; its value is the box's label. Ownership is this
// label's exact value, never the container name (C-04).
inline constexpr std::string_view kLabelKey = "radial.label";

// One container as `docker ps` listed it.
struct ListedBox {
    std::string id;    // full container id (64 hex digits)
    std::string label; // the value of its radial.label label, byte-exact
    friend bool operator==(const ListedBox&, const ListedBox&) = default;
};

// `cpus_milli` as docker's --cpus wants it: 2000 → "2", 500 → "0.5", 1250 → "1.25".
// Source: docs/design.md §13.1 ("cpus 2").
std::string format_cpus(std::uint64_t cpus_milli);

// Where the box sees settings.init_path (mounted read-only) when a box init is configured.
inline constexpr std::string_view kBoxInitPath = "/.radial/init";

// [binary] or [binary, --host, H]: how every invocation starts (run.docker.binary, .host; C-07).
std::vector<std::string> docker_client_argv(const DockerSettings& settings);

// The hardened `docker run` for `spec`, argv[0] = settings.binary:
//   binary [--host H] run --name L --label radial.label=L [--runtime R] --init --log-driver none
//   --pull P --cap-drop=ALL --security-opt no-new-privileges --pids-limit N --memory B
//   --memory-swap B --cpus X --user U [--read-only] --tmpfs /tmp:rw,exec,nosuid,nodev,size=B
//   [--tmpfs T:rw,exec,nosuid,nodev,size=B ...] --network none|NET [--add-host H ...]
//   [-v SRC:DST[:ro] ...] [-w DIR] [--env-file /proc/self/fd/0] [-e NAME ...] [--cidfile F]
//   IMAGE ARGV...
// There is no --rm: the runtime inspects the ended container (did it start, was it OOM-killed)
// and then removes it itself, unconditionally (run_box). Spec values override the settings'
// memory, cpus, pidsLimit and user. --read-only is left out only when spec.read_only_rootfs is
// `no`. A spec tmpfs at /tmp replaces the default one.
// Env values never appear (docs/design.md §6.3, C-02): an ordinary variable is `-e NAME`, its value
// in the client's environment (docker_client_env); a client-sensitive one (client_sensitive_env) is
// a line of the env-file on the client's stdin (docker_env_file), announced by one --env-file.
// --runtime is settings.oci_runtime when set (docs/design.md §13.9). `cidfile` empty: no --cidfile.
// Every value is one argv element, passed through unchanged. With settings.init_path set, `--init`
// becomes `-v INIT:/.radial/init:ro --entrypoint /.radial/init`, and IMAGE is followed by
// `TIMEOUT_MS KILL_GRACE_MS -- ENTRYPOINT... ARGV...`
// (`image_entrypoint`: the image's own ENTRYPOINT, which --entrypoint replaces): the box's PID 1
// then ends it at the turn's deadline whether or not any host is left to.
// Throws radial::plugin::Error(RADIAL_E_INVALID, <field>, message) naming the spec field
// ("mounts[1]", "env[0]", "user", ...) when a value cannot be expressed safely: a mount source or
// target that is not absolute or contains ':' (the -v separator); an env name not matching
// [A-Za-z_][A-Za-z0-9_]*, repeated, or client-sensitive with a value the env-file cannot carry
// (the message names the variable, never the value); a user that is not numeric uid:gid or is
// root (box_user.h); cpus above settings.host_cpus_milli; a NUL byte anywhere; a value starting
// with '-' where docker would read it as an option. Source: docs/design.md §13.1, docs/design.md
// §5.6.
std::vector<std::string> docker_run_argv(const ContainerSpec& spec, const DockerSettings& settings,
                                         std::string_view cidfile = {},
                                         const std::vector<std::string>& image_entrypoint = {});

// `binary [--host H] image inspect --format '{{json .Config.Entrypoint}}' IMAGE`.
std::vector<std::string> docker_image_entrypoint_argv(const DockerSettings& settings,
                                                      std::string_view image);

// Parses docker_image_entrypoint_argv's output: null is no entrypoint (an empty list); nullopt
// for anything but null or an array of strings.
std::optional<std::vector<std::string>> parse_entrypoint(std::string_view output);

// `binary [--host H] rm --force --volumes ID...`: removes the containers and their anonymous
// volumes, stopping them with SIGKILL first. Source: docs/design.md §8.3 (removal is
// unconditional).
std::vector<std::string> docker_rm_argv(const DockerSettings& settings,
                                        const std::vector<std::string>& ids);

// `binary [--host H] ps --all --no-trunc --filter label=radial.label --format
// '{{.ID}}\t{{json (.Label "radial.label")}}'`: every radial box in any state (created, running,
// exited), one per line, the label JSON-quoted so no byte of it can break the line format.
// Filtered by the label's presence only; the value is compared in C++ (C-04: docker's name
// filter is an unanchored regex, never an ownership test). Source: docs/design.md §8.3
// (reconciliation), C-04.
std::vector<std::string> docker_list_argv(const DockerSettings& settings);

// `binary [--host H] info --format '{{json .ServerVersion}}'`: the preflight probe.
// Source: docs/design.md §7.4 (startup fail-fast), docs/design.md §7.4.
std::vector<std::string> docker_info_argv(const DockerSettings& settings);

// `binary [--host H] info --format '{{json .Runtimes}}'`: the OCI runtimes the engine knows, asked
// by the preflight when run.docker.ociRuntime is set. Source: docs/design.md §13.9.
std::vector<std::string> docker_runtimes_argv(const DockerSettings& settings);

// The runtime names (the object's keys, sorted) from docker_runtimes_argv's output, or nullopt
// unless it is one JSON object.
std::optional<std::vector<std::string>> parse_runtime_names(std::string_view output);

// `binary [--host H] inspect --type container --format '{{json .State}}' ID`: how one container
// ended. Source: docs/design.md §8.3, C-09 (start failures), ABI RADIAL_RUN_OOM_KILLED.
std::vector<std::string> docker_inspect_argv(const DockerSettings& settings, std::string_view id);

// What docker_inspect_argv reports about a container.
struct ContainerState {
    bool started = false;    // State.StartedAt is set: the workload's process ran
    bool oom_killed = false; // State.OOMKilled: the memory cap killed a process of the box
    int exit_code = 0;       // State.ExitCode
    std::string error;       // State.Error: why the engine could not start it, if it said
    // State.Status "removing" or State.Dead: a removal is under way. The plugin inspects before it
    // removes, so that removal is someone else's.
    bool being_removed = false;
    friend bool operator==(const ContainerState&, const ContainerState&) = default;
};

// Parses docker_inspect_argv's output (one JSON object), or nullopt when it is not one with a
// string StartedAt. StartedAt "0001-01-01T00:00:00Z" (Go's zero time) means never started.
std::optional<ContainerState> parse_container_state(std::string_view output);

// Parses docker_list_argv's output. Lines that are not `<hex id>\t<JSON string>` are skipped
// (they cannot be radial boxes), so odd or truncated input never yields a wrong label.
// Source: docs/design.md §5.10 (the CLI's output is parsed in exactly one place), C-04.
std::vector<ListedBox> parse_docker_list(std::string_view output);

// The engine version from docker_info_argv's output, or nullopt unless the output is one
// non-empty JSON string. Health is judged from this, not from the exit status: against a dead
// socket the CLI may print "" and still exit 0. Source: C-07.
std::optional<std::string> parse_server_version(std::string_view output);

} // namespace radial::docker
