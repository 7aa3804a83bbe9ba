// plugins/sandbox/sandbox_run.h — one box as one sandbox, from `sbx create` to the sandbox being
// gone: the per-sandbox policy rules, the streamed exec, the runner-side timeout, kill, and the
// removal that follows every ending (docs/design.md §8.3).
#pragma once

#include <radial/support/run_registry.h>

#include <radial/container_spec.hpp>
#include <radial/plugin/runtime.hpp>

#include "sbx_cli.h"

namespace radial::sandbox {

using plugin_support::ActiveRun;

// Runs `spec` in a new sandbox named sandbox_name(spec.label) and blocks until it is gone:
//   1. sbx create (sbx_create_args), within the create budget;
//   2. one sbx policy allow network --sandbox NAME localhost:PORT per spec.host_ports
//   (docs/design.md §9.1);
//   3. sbx exec -i NAME sh -s with the exec script (sbx_exec_script) on stdin — a memfd, so the
//      turn's environment is on no argv and on no disk (docs/design.md §6.3) — its stdout and
//      stderr passed to `out` chunk by chunk (at most 64 KiB each) as they arrive, from the calling
//      thread only, never after this returns;
//   4. finally, whatever happened: sbx policy rm network --sandbox NAME --resource
//      localhost:PORT for every rule step 2 asked for (SbxCli::revoke: a rule already gone is
//      fine, another failure is a warning), then sbx rm --force NAME, retried within the removal
//      budget, and when create was interrupted, `sbx ls` twice (a create already under way can
//      still land).
// Everything that can be refused (spec fields, config) is refused before step 1.
//
// Endings: the workload's exit → RADIAL_RUN_EXITED with the exec's exit code. spec.timeout_ms
// (the command's: counted from the exec's start; create, the port rules and the removal have
// budgets of their own, and the time create took is logged) → RADIAL_RUN_TIMED_OUT. `active` killed
// (RunRegistry::request_kill; before step 1 nothing is created) → RADIAL_RUN_KILLED; `out`
// returned non-zero → RADIAL_RUN_KILLED | RADIAL_RUN_OUTPUT_ABORTED. To end a run early the
// sandbox is removed (rm --force), which ends the exec; the exec client is SIGKILLed after
// settings.kill_grace_ms and always reaped. A kill during create or policy interrupts
// that call. `duration_ms` runs from the call to the sandbox being gone.
//
// Throws radial::plugin::Error: RADIAL_E_REFUSED / RADIAL_E_INVALID naming the field (builders);
// RADIAL_E_NOT_FOUND naming a mount source that does not exist or a template sbx does not have;
// RADIAL_E_UNAVAILABLE when sbx cannot be started, does not answer, or reports a problem
// diagnose_sbx_message recognises, and when the sandbox cannot be removed (then naming the
// workload's outcome too); RADIAL_E_INTERNAL for other create, policy or exec failures, with
// sbx's message. [thread-safe] for distinct labels. Source: docs/design.md §5.1, §5.3, §6,
// §13.2–§13.4; C-11.
radial::plugin::RunResult run_sandbox(SbxCli& cli, const radial::plugin::Host& host,
                                      const ContainerSpec& spec, radial::plugin::Output& out,
                                      ActiveRun& active);

// Makes the session's sandbox (docs/design.md §13.12): `sbx create` as run_sandbox's step 1 for
// `spec` (no argv), then the setup script (sbx_session_setup_script: the bridges, the session's
// state and its keeper, which ends the session's processes once idle for `idle_timeout_ms` or at
// `max_lifetime_ms`, 0: none) over `sbx exec -i NAME sh -s`. The sandbox is kept when both
// succeeded and removed otherwise. Throws as run_sandbox; RADIAL_E_INTERNAL with the script's
// stderr when the setup failed; RADIAL_E_CANCELLED when `active` was killed; RADIAL_E_UNAVAILABLE
// when the create budget ran out. [thread-safe] for distinct labels.
void create_sandbox_session(SbxCli& cli, const radial::plugin::Host& host,
                            const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                            std::uint64_t max_lifetime_ms, ActiveRun& active);

// One exec in the session's sandbox named after `exec.label`: refused with RADIAL_E_NOT_FOUND
// when `sbx ls` does not list it; then run_sandbox's steps 2 and 3 with the session exec script
// (sbx_session_exec_script: the exec's own deadline, what it leaves ended), and step 4's revokes
// only — the sandbox is kept. Endings: the command's exit code; the script's 124 at the deadline
// → RADIAL_RUN_TIMED_OUT; the session's keeper ending the session under it (the sandbox says so)
// → RADIAL_RUN_KILLED and the sandbox removed; the script's refusal because the session has
// ended → the sandbox removed and Error(RADIAL_E_NOT_FOUND). A kill, an aborting sink, or a
// client still running kill grace + 10 s past the deadline removes the sandbox, as for a
// one-shot box, and the session is over. [thread-safe] for distinct labels.
radial::plugin::RunResult exec_in_sandbox_session(SbxCli& cli, const radial::plugin::Host& host,
                                                  const ContainerSpec& exec,
                                                  radial::plugin::Output& out, ActiveRun& active);

} // namespace radial::sandbox
