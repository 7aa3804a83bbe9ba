// plugins/sandbox/sandbox_settings.h — the sandbox runtime's settings: the operator's
// [run.sandbox] section, validated, plus the time budget of every sbx call.
#pragma once

#include <cstdint>
#include <radial/plugin/runtime.hpp>
#include <string>
#include <vector>

namespace radial::sandbox {

// The parsed [run.sandbox] section (docs/design.md §7.4: binary, template, agent, kits, createArgs)
// and the budgets of the calls into sbx. The budgets are not configuration keys (the operator's
// [run.sandbox] keys are the five above) but every external call has one (docs/design.md §5.3),
// and tests shorten them through the C++ constructor.
struct SandboxSettings {
    std::string binary = "sbx";    // the CLI: a name looked up in PATH, or a path
    std::string template_image;    // --template; empty: the spec's image (docs/design.md §5.6)
    std::string agent = "claude";  // create's agent positional (docs/design.md §13.5)
    std::vector<std::string> kits; // one --kit each
    std::vector<std::string> create_args;      // appended to `sbx create` before the agent
    std::uint64_t memory_bytes = 4ull << 30;   // --memory of a spec that carries none: the VM's
                                               // memory bound (docs/design.md §5.6's floor), never
                                               // sbx's default of half the host
    std::uint64_t cpus_milli = 2000;           // --cpus of a spec that carries none, whole CPUs;
                                               // capped at the host's online CPUs
    std::uint64_t probe_timeout_ms = 30'000;   // preflight: version, --help probes, ls
    std::uint64_t command_timeout_ms = 30'000; // ls, policy, rm
    std::uint64_t create_timeout_ms = 600'000; // create: boots a microVM and applies kits
    std::uint64_t kill_grace_ms = 10'000;      // after `rm --force`, how long the exec client
                                               // may take to exit before it is SIGKILLed
    std::uint64_t removal_timeout_ms = 60'000; // removing one sandbox, retries included
    friend bool operator==(const SandboxSettings&, const SandboxSettings&) = default;
};

// Reads the [run.sandbox] keys through the helper's typed getters: binary, template, agent (a
// string each), kits and createArgs (arrays of strings), memory (a size, at least 512m) and cpus
// (a whole number of CPUs, at least 1). `online_cpus` (0: unknown) caps the default cpus; more
// than that is refused, as docker's runtime does. Unknown keys are left for
// Config::finish() to refuse; run.codexAuth, run.network and a [run.docker] table beside this
// runtime are the host's to refuse. Throws radial::plugin::Error(RADIAL_E_INVALID, <key>,
// "reading run.sandbox.<key>: <cause>; <fix>") for an empty value, a NUL byte, whitespace or a
// leading '-' where sbx would read an option, and a createArgs element naming --name (the name is
// the only ownership mark a sandbox has, docs/design.md §8.3). Not thread-safe (Config is not);
// call from the constructor only. Source: docs/design.md §7.4.
SandboxSettings parse_sandbox_settings(radial::plugin::Config& config, unsigned online_cpus);

// parse_sandbox_settings with this host's online CPU count.
SandboxSettings parse_sandbox_settings(radial::plugin::Config& config);

} // namespace radial::sandbox
