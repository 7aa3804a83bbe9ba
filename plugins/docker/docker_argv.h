// plugins/docker/docker_argv.h — what the docker runtime asks of the engine, built by pure
// functions (docs/design.md §5.10): the create body of a box, the one CLI call left (pull), and
// the parsers of what the engine answers.
//
// Nothing here starts a process or reads the process environment; all functions are thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <radial/container_spec.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "docker_env.h"
#include "docker_settings.h"
#include "support/box_init.h"

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
using plugin_support::kBoxInitPath;

// What radial-init --env-from-stdin reads before it runs the command: "radial-env <bytes>\n" and
// then, for each secret variable of `spec`, NAME=VALUE and a NUL (values hold no NUL: the create
// body refuses one). Empty when `spec` has no secret variable. The only place the values go when
// radial-init runs the box; written to the attach stream after start (docs/design.md §13.8).
std::string secret_env_block(const ContainerSpec& spec);

// [binary] or [binary, --host, H]: how every invocation starts (run.docker.binary, .host; C-07).
std::vector<std::string> docker_client_argv(const DockerSettings& settings);

// The body of POST /containers/create for `spec` (the box's name, its label, goes in the query):
// the hardened box as docs/design.md §13.1 describes it, one pure function so that every field's
// mapping is pinned by unit tests (docs/design.md §5.10):
//   Image, Labels {radial.label: L}, User U, AttachStdout/AttachStderr (no stdin, no TTY),
//   [WorkingDir DIR], [Env ["NAME=value", ...]], Cmd, and HostConfig {Init true | Binds
//   [INIT:/.radial/init:ro], LogConfig none, CapDrop [ALL], SecurityOpt [no-new-privileges],
//   PidsLimit N, Memory B, MemorySwap B, NanoCpus cpus×10⁶, ReadonlyRootfs, Tmpfs {/tmp:
//   "rw,exec,nosuid,nodev,size=B", T: ...}, NetworkMode none|NET, [ExtraHosts], [Binds
//   ["SRC:DST[:ro]", ...]]}.
// There is no AutoRemove: the runtime inspects the ended container (did it start, was it
// OOM-killed) and then removes it itself, unconditionally (run_box). Spec values override the
// settings' memory, cpus, pidsLimit and user. ReadonlyRootfs is false only when
// spec.read_only_rootfs is `no`. A spec tmpfs at /tmp replaces the default one; every other spec
// tmpfs is the box user's
// (",uid=U,gid=G,mode=0700" appended: the box's home, docs/design.md §8.7).
// Env values travel only in this body, over the engine's socket (docs/design.md §6.3, C-02): no
// process, command line or file ever holds them.
// With settings.init_path set, Init is replaced by the init bound read-only at /.radial/init and
// made the Entrypoint, and Cmd is `TIMEOUT_MS KILL_GRACE_MS -- ENTRYPOINT... ARGV...`
// (`image_entrypoint`: the image's own ENTRYPOINT, which the init replaces): the box's PID 1 then
// ends it at the turn's deadline whether or not any host is left to (docs/design.md §13.8).
// Throws radial::plugin::Error(RADIAL_E_INVALID, <field>, message) naming the spec field
// ("mounts[1]", "env[0]", "user", ...) when a value cannot be expressed safely: a mount source or
// target that is not absolute or contains ':' (the Binds separator); an env name not matching
// [A-Za-z_][A-Za-z0-9_]* or repeated (the message names the variable, never the value); a user
// that is not numeric uid:gid or is root (box_user.h); cpus above settings.host_cpus_milli; a NUL
// byte anywhere; an image or network starting with '-'; a mount that must receive the host's later
// mounts under an OCI runtime that does not pass them on (runsc, docs/design.md §13.13). With
// `namespaced_root` (the engine remaps user namespaces: DockerEngine::namespaced_root) the user
// "0:0" is accepted, a root that is an unprivileged id on the host (docs/design.md §8.8). Throws
// RADIAL_E_REFUSED naming "env[i]" for a secret variable when settings.init_path is empty: it
// could only go in this body, which the engine keeps on disk (docs/design.md §6.3). Source:
// docs/design.md §13.1, §5.6.
nlohmann::json docker_create_body(const ContainerSpec& spec, const DockerSettings& settings,
                                  const std::vector<std::string>& image_entrypoint = {},
                                  bool namespaced_root = false);

// `binary [--host H] pull --quiet IMAGE`: the one CLI call left, so that the user's registry
// credential helpers apply (docs/design.md §13.1).
std::vector<std::string> docker_pull_argv(const DockerSettings& settings, std::string_view image);

// Parses the JSON value of an image's Config.Entrypoint: null is no entrypoint (an empty list);
// nullopt for anything but null or an array of strings.
std::optional<std::vector<std::string>> parse_entrypoint(std::string_view output);

// The runtime names (the object's keys, sorted) of GET /info's `Runtimes`: the OCI runtimes the
// engine knows, asked by the preflight when run.docker.ociRuntime is set; nullopt unless
// `runtimes` is one JSON object. Source: docs/design.md §13.9.
std::optional<std::vector<std::string>> parse_runtime_names(const nlohmann::json& runtimes);

// The host ids a box's uid 0 and gid 0 are on an engine that remaps user namespaces.
struct UsernsRoot {
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
    friend bool operator==(const UsernsRoot&, const UsernsRoot&) = default;
};

// From GET /info: nullopt unless `SecurityOptions` lists "name=userns" (dockerd --userns-remap) and
// `DockerRootDir` ends in the directory "<uid>.<gid>" dockerd makes for the remapped root, both
// plain decimal and non-zero. Pure. Source: docs/design.md §8.8.
std::optional<UsernsRoot> parse_userns_root(const nlohmann::json& info);

// What GET /containers/{id}/json reports about a container (its State object).
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

// Parses a container's State object (JSON text), or nullopt when it is not one with a string
// StartedAt. StartedAt "0001-01-01T00:00:00Z" (Go's zero time) means never started.
std::optional<ContainerState> parse_container_state(std::string_view output);

// Parses GET /containers/json: the containers carrying a radial.label label, with its exact
// value. Entries without an id of hex digits or without a string label are skipped (they cannot be
// radial boxes), so odd input never yields a wrong label; nullopt when the body is not a JSON
// array. Source: C-04.
std::optional<std::vector<ListedBox>> parse_container_list(std::string_view body);

} // namespace radial::docker
