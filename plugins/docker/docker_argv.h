// plugins/docker/docker_argv.h — every docker CLI invocation the runtime makes, built by pure
// functions (ADR §2: "every invocation is built by a pure exported function ... mirroring
// dockerRunArgs"), plus the parsers of what the CLI prints back and the client's environment.
//
// Nothing here starts a process or reads the process environment; all functions are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <radial/container_spec.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "docker_settings.h"

namespace radial::docker {

// The docker label that marks a box as radial's; its value is the box's label. Ownership is this
// label's exact value, never the container name (C-04).
inline constexpr std::string_view kLabelKey = "radial.label";

// The environment variables of the parent process the docker client inherits, if set: what the
// CLI needs to find itself, its config and its engine. Nothing else of the parent's reaches it.
inline constexpr std::string_view kClientPassthroughEnv[] = {"PATH",
                                                             "HOME",
                                                             "DOCKER_HOST",
                                                             "DOCKER_CONTEXT",
                                                             "DOCKER_CONFIG",
                                                             "DOCKER_CERT_PATH",
                                                             "DOCKER_TLS_VERIFY",
                                                             "XDG_RUNTIME_DIR"};

using EnvMap = std::map<std::string, std::string>;

// One container as `docker ps` listed it.
struct ListedBox {
    std::string id;    // full container id (64 hex digits)
    std::string label; // the value of its radial.label label, byte-exact
    friend bool operator==(const ListedBox&, const ListedBox&) = default;
};

// `cpus_milli` as docker's --cpus wants it: 2000 → "2", 500 → "0.5", 1250 → "1.25".
// Source: 003 Design 4 ("cpus 2").
std::string format_cpus(std::uint64_t cpus_milli);

// [binary] or [binary, --host, H]: how every invocation starts (run.docker.binary, .host; C-07).
std::vector<std::string> docker_client_argv(const DockerSettings& settings);

// The hardened `docker run` for `spec`, argv[0] = settings.binary:
//   binary [--host H] run --rm --name L --label radial.label=L --init --log-driver none
//   --pull P --cap-drop=ALL --security-opt no-new-privileges --pids-limit N --memory B
//   --memory-swap B --cpus X --user U [--read-only] --tmpfs /tmp:rw,nosuid,nodev,size=B
//   [--tmpfs T:rw,nosuid,nodev,size=B ...] --network none|NET [--add-host H ...]
//   [-v SRC:DST[:ro] ...] [-w DIR] [-e NAME ...] [--cidfile F] IMAGE ARGV...
// Spec values override the settings' memory, cpus, pidsLimit and user. --read-only is left out
// only when spec.read_only_rootfs is `no`. A spec tmpfs at /tmp replaces the default one.
// Env values never appear: each variable is `-e NAME` and its value reaches docker only through
// the client's environment (docker_client_env; ADR §4.1, C-02). `cidfile` empty: no --cidfile.
// Every value is one argv element, passed through unchanged (no shell is involved).
// Throws radial::plugin::Error(RADIAL_E_INVALID, <field>, message) naming the spec field
// ("mounts[1]", "env[0]", "user", ...) when a value cannot be expressed safely: a mount source or
// target that is not absolute or contains ':' (the -v separator); an env name not matching
// [A-Za-z_][A-Za-z0-9_]* or starting with DOCKER_ (the client inherits the box's environment,
// so it would redirect the client itself); a root user; a NUL byte anywhere; a value starting
// with '-' where docker would read it as an option. Source: 003 Design 1-5, ADR §4.
std::vector<std::string> docker_run_argv(const ContainerSpec& spec, const DockerSettings& settings,
                                         std::string_view cidfile = {});

// `binary [--host H] rm --force --volumes ID...`: removes the containers and their anonymous
// volumes, stopping them with SIGKILL first. Source: ADR §6 (removal is unconditional).
std::vector<std::string> docker_rm_argv(const DockerSettings& settings,
                                        const std::vector<std::string>& ids);

// `binary [--host H] ps --all --no-trunc --filter label=radial.label --format
// '{{.ID}}\t{{json (.Label "radial.label")}}'`: every radial box in any state (created, running,
// exited), one per line, the label JSON-quoted so no byte of it can break the line format.
// Filtered by the label's presence only; the value is compared in C++ (C-04: docker's name
// filter is an unanchored regex, never an ownership test). Source: ADR §6 (reconciliation), C-04.
std::vector<std::string> docker_list_argv(const DockerSettings& settings);

// `binary [--host H] info --format '{{json .ServerVersion}}'`: the preflight probe.
// Source: ADR §7 (startup fail-fast), 003 Design 6.
std::vector<std::string> docker_info_argv(const DockerSettings& settings);

// Parses docker_list_argv's output. Lines that are not `<hex id>\t<JSON string>` are skipped
// (they cannot be radial boxes), so odd or truncated input never yields a wrong label.
// Source: ADR §8.4 (the CLI's output is parsed in exactly one place), C-04.
std::vector<ListedBox> parse_docker_list(std::string_view output);

// The engine version from docker_info_argv's output, or nullopt unless the output is one
// non-empty JSON string. Health is judged from this, not from the exit status: against a dead
// socket the CLI may print "" and still exit 0. Source: C-07.
std::optional<std::string> parse_server_version(std::string_view output);

// The environment of the docker client process for `spec`: the kClientPassthroughEnv variables
// found in `parent`, then every spec env variable (secret or not: this is the only way values
// reach the box). When the spec sets HOME and `parent` has no DOCKER_CONFIG, DOCKER_CONFIG is set
// to the parent's $HOME/.docker so the CLI keeps reading the operator's config. Note that spec
// variables are also seen by the CLI itself (e.g. HTTPS_PROXY for a tcp:// engine), which is why
// DOCKER_* names are refused. Source: ADR §4.1 ("-e NAME and inheriting the value"), C-02.
EnvMap docker_client_env(const ContainerSpec& spec, const EnvMap& parent);

} // namespace radial::docker
