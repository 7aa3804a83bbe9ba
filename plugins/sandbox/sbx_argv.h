// plugins/sandbox/sbx_argv.h — every sbx invocation the runtime makes, built by pure functions
// (docs/design.md §5.1: sbxCreateArgs, sbxExecArgs, sbxPolicyArgs, sbxRemoveArgs). Each returns the
// arguments after the binary. Docker documents the CLI's surface as subject to change, so a
// re-spelling is a one-file edit here against tests that say what each argv means.
//
// Nothing here starts a process or reads the environment; all functions are thread-safe.
#pragma once

#include <cstdint>
#include <radial/container_spec.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox_settings.h"

namespace radial::sandbox {

// What the installed sbx understands beyond the oldest documented surface, as detected from its
// help output (SbxCli::features): `no_input` — the global --no-input flag ("never prompt;
// commands that need an answer fail with the command to run instead"); `ls_json` — `ls --json`.
struct SbxFeatures {
    bool no_input = false;
    bool ls_json = false;
    friend bool operator==(const SbxFeatures&, const SbxFeatures&) = default;
};

// A workspace passed to `sbx create`: a host path that appears at the same path in the sandbox.
struct Workspace {
    std::string path;
    bool read_only = false;
    friend bool operator==(const Workspace&, const Workspace&) = default;
};

// The workspaces for `spec.mounts`, in mount order, one per distinct source. Throws
// radial::plugin::Error(RADIAL_E_INVALID, "mounts[i]", ...) for a source or target that is not an
// absolute path, contains a NUL byte or (source) a ':' — the positional's ":ro" syntax cannot
// carry it — and for one source mounted both read-only and read-write. Source: docs/design.md
// §13.2, §4 mounts.
std::vector<Workspace> sbx_workspaces(const ContainerSpec& spec);

// `memory_bytes` as sbx's --memory wants it (binary units): whole GiB as "<n>g", else rounded up
// to whole MiB as "<n>m". Source: peers-and-sbx §1.3.
std::string format_sbx_memory(std::uint64_t memory_bytes);

// create [--no-input] --name NAME [--template T] [--memory M] [--cpus N] [--kit K ...]
//        [createArgs ...] AGENT [WS[:ro] ...]
// NAME is sandbox_name(spec.label); T is settings.template_image, else spec.image, else absent
// (the agent's own image); M is format_sbx_memory of spec.memory_bytes, else of
// settings.memory_bytes; N is spec.cpus_milli, else settings.cpus_milli, rounded up to whole CPUs
// (each left out only when both are 0); AGENT is settings.agent; the workspaces
// are sbx_workspaces(spec). No environment value ever appears (docs/design.md §6.3). Throws
// radial::plugin::Error(RADIAL_E_REFUSED, "network") when spec.network is set (a sandbox has no
// docker network to join; docs/design.md §5.6), RADIAL_E_INVALID naming the field for an image with
// whitespace or a leading '-' and for bad mounts. Source: docs/design.md §5.1, §4; peers-and-sbx
// §1.3.
std::vector<std::string> sbx_create_args(const ContainerSpec& spec, const SandboxSettings& settings,
                                         const SbxFeatures& features);

// exec [--no-input] -i NAME sh -s: runs the exec script (sbx_exec_script) read from stdin.
// Source: docs/design.md §6.3.
std::vector<std::string> sbx_exec_args(std::string_view name, const SbxFeatures& features);

// policy allow network [--no-input] --sandbox NAME localhost:PORT: one rule, scoped to that
// sandbox so the grant dies with it, naming localhost because that is what the host proxy sees
// after rewriting host.docker.internal. Never a global rule (C-11). Throws
// radial::plugin::Error(RADIAL_E_INVALID, "hostPorts") for a port outside 1..65535. Source:
// docs/design.md §9.1.
std::vector<std::string> sbx_policy_args(std::string_view name, std::uint32_t port,
                                         const SbxFeatures& features);

// policy rm network [--no-input] --sandbox NAME --resource localhost:PORT: revokes the rule
// sbx_policy_args granted, scoped the same way so no other sandbox's rule (nor a global one) can
// match. Throws radial::plugin::Error(RADIAL_E_INVALID, "hostPorts") for a port outside 1..65535.
// Source: docs/design.md §9.1; peers-and-sbx §1.6 (`sbx policy rm network --resource`).
std::vector<std::string> sbx_policy_revoke_args(std::string_view name, std::uint32_t port,
                                                const SbxFeatures& features);

// policy allow network [--no-input] --sandbox NAME RESOURCE / policy rm network [--no-input]
// --sandbox NAME --resource RESOURCE: the same scoped rule for one egress destination of the turn
// (host:port or *.suffix:port, RADIAL_CAP_EGRESS_POLICY; docs/design.md §9.7). Throws
// radial::plugin::Error(RADIAL_E_INVALID, "egress") for anything but one host:port resource.
std::vector<std::string> sbx_policy_resource_args(std::string_view name, std::string_view resource,
                                                  const SbxFeatures& features);
std::vector<std::string> sbx_policy_revoke_resource_args(std::string_view name,
                                                         std::string_view resource,
                                                         const SbxFeatures& features);

// rm [--no-input] --force NAME: stops and deletes the sandbox without a prompt. Source:
// docs/design.md §8.3.
std::vector<std::string> sbx_remove_args(std::string_view name, const SbxFeatures& features);

// ls [--no-input] [--json]: every sandbox. Source: docs/design.md §5.10, peers-and-sbx §1.4.
std::vector<std::string> sbx_list_args(const SbxFeatures& features);

// version: the preflight probe. Source: docs/design.md §7.4.
std::vector<std::string> sbx_version_args();

// --help and ls --help: what SbxCli::features reads the flags from. Help never prompts.
std::vector<std::string> sbx_help_args();
std::vector<std::string> sbx_list_help_args();

} // namespace radial::sandbox
