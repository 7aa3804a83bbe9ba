// plugins/sandbox/sandbox_runtime.h — the sandbox runtime: the runner seam (docs/design.md §5.1
// ContainerRunner: run / listByLabel / kill, plus preflight) implemented with Docker Sandboxes'
// sbx CLI, one microVM per box.
#pragma once

#include <radial/support/run_registry.h>

#include <memory>
#include <mutex>
#include <radial/plugin/runtime.hpp>
#include <radial/plugin/session.hpp>
#include <radial/plugin/templates.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox_settings.h"
#include "sbx_cli.h"
#include "sbx_executor.h"
#include "support/early_kills.h"

#ifndef RADIAL_SANDBOX_PLUGIN_VERSION
#define RADIAL_SANDBOX_PLUGIN_VERSION "0.0.0"
#endif

namespace radial::sandbox {

// One instance per radiald runtime; holds no process, thread or descriptor between calls.
// Threading as in radial/runtime_plugin.h: every method but the constructors may be called from
// several threads at once.
class SandboxRuntime final : public radial::plugin::Runtime,
                             public radial::plugin::Sessions,
                             public radial::plugin::Templates {
public:
    static constexpr radial::plugin::Info info{"sandbox", "Docker Sandboxes (sbx microVMs)",
                                               RADIAL_SANDBOX_PLUGIN_VERSION};

    // Reads [run.sandbox] (parse_sandbox_settings) and drives the real sbx. No process, no sbx
    // contact. Throws radial::plugin::Error(RADIAL_E_INVALID, <key>) for a bad value. [control]
    SandboxRuntime(const radial::plugin::Host& host, radial::plugin::Config& config);

    // With given settings and executor (docs/design.md §5.1: the CLI is injectable, so tests script
    // it).
    SandboxRuntime(const radial::plugin::Host& host, SandboxSettings settings,
                   std::shared_ptr<SbxExecutor> executor);

    // `sbx version`, then the help probes (SbxCli::features), then `sbx ls`, each within the
    // probe budget; never a command that may prompt, never `sbx login`. Throws
    // Error(RADIAL_E_UNAVAILABLE) with sbx's message and, when recognised, what it means and
    // what to do (not signed in, policy not initialised, daemon not running:
    // diagnose_sbx_message). Nothing is cached but the detected flags. [thread-safe]
    // Source: docs/design.md §7.4 (startup fail-fast).
    void preflight() override;

    // None: a microVM cannot share the host's AF_UNIX socket (so the host resolves `auto` to tcp
    // and refuses `unix`), has no docker network to join, and files cross a filesystem
    // passthrough rather than a uid-preserving bind mount. [thread-safe] Source: docs/design.md
    // §9.1, §7.
    std::vector<std::string> capabilities() override;

    // docs/design.md §5.6: label, image, argv, env, workdir, timeoutMs, hostPorts, memory, cpus,
    // onOutput HONOURED; mounts BRIDGED; pidsLimit, readOnlyRootfs, user, tmpfs, extraHosts
    // SUPERSEDED by the hypervisor boundary (each with its reason); network REFUSED. Pure;
    // [thread-safe].
    std::vector<radial::plugin::Disposition> describe(const ContainerSpec& spec) override;

    // run_sandbox() under this instance's kill registry. Throws Error(RADIAL_E_INVALID, "label")
    // when a run of the same label is already in flight. [thread-safe] for distinct labels.
    radial::plugin::RunResult run(const ContainerSpec& spec, radial::plugin::Output& out) override;

    // The labels (each once, sorted) of every sandbox whose name decodes (label_of_sandbox) to a
    // label starting with exactly the bytes of `prefix`, whoever created it; sandboxes radiald
    // did not name are never listed. Throws Error(RADIAL_E_UNAVAILABLE) with sbx's message.
    // [thread-safe] Source: docs/design.md §8.3 (reconciliation), C-04.
    std::vector<std::string> list_by_label(std::string_view prefix) override;

    // Postcondition: no sandbox named sandbox_name(label) exists. Signals a run of that label in
    // flight (it returns RADIAL_RUN_KILLED; one that has not created its sandbox never does),
    // removes the sandbox with `sbx rm --force` (idempotent: an unknown label is success), then
    // waits (bounded) for that run's teardown, unless called from inside that run's output
    // callback. Throws Error(RADIAL_E_UNAVAILABLE) with sbx's message when the sandbox remains.
    // [thread-safe; also from inside the output callback] Source: docs/design.md §8.3 ("kill() is
    // sbx rm
    // --force rather than a stop").
    void kill(std::string_view label) override;

    // Bind the turn socket on 127.0.0.1; the box connects to host.docker.internal, which the
    // sandbox's proxy rewrites to localhost (docs/design.md §9.1). [thread-safe]
    radial::plugin::TcpRoute tcp_route() override;

    // radial.session/1 without snapshots (radial/session.h; sbx keeps no image of a sandbox the
    // engine could name by digest). [thread-safe]
    // radial.template/1 too: sandboxes keep an image store of their own (load_template).
    const void* extension(std::string_view id) override {
        if (id == RADIAL_SESSION_EXTENSION_ID)
            return radial::plugin::session_extension_without_snapshots();
        if (id == RADIAL_TEMPLATE_EXTENSION_ID) return radial::plugin::template_extension();
        return nullptr;
    }
    // `sbx template load ARCHIVE` within `budget` (0: 30 minutes, an image of
    // several GiB);
    // past it sbx is killed and the call throws Error(RADIAL_E_TIMEOUT); sbx's failure is thrown
    // with its message and fix (SbxCli::failure). [thread-safe] Source: docs/design.md §13.2.
    void load_template(const std::string& archive, std::chrono::milliseconds budget) override;
    // create_sandbox_session (sandbox_run.h) under the kill registry. [thread-safe] for distinct
    // labels.
    void create_session(const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                        std::uint64_t max_lifetime_ms) override;
    // exec_in_sandbox_session (sandbox_run.h) under the kill registry: one exec per session at a
    // time (a second one is refused, naming the label). [thread-safe]
    radial::plugin::RunResult exec(const ContainerSpec& exec, radial::plugin::Output& out) override;
    // kill(label): the session's sandbox is removed, an exec in it ends. [thread-safe]
    void destroy_session(std::string_view label) override { kill(label); }

private:
    // Registers a run, create or exec of `label`; one a kill overtook (remembered in early_kills_)
    // is registered killed, so it starts nothing.
    plugin_support::RunRegistry::Registration enter(std::string_view label);

    radial::plugin::Host host_;
    SbxCli cli_;
    plugin_support::RunRegistry runs_;
    std::mutex kill_mutex_; // makes "is a run in flight?" and "remember the kill" one step
    plugin_support::EarlyKills early_kills_;
};

} // namespace radial::sandbox
