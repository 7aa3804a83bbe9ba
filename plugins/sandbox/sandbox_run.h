// plugins/sandbox/sandbox_run.h — one box as one sandbox, from `sbx create` to the sandbox being
// gone: the per-sandbox policy rules, the streamed exec, the runner-side timeout, kill, and the
// removal that follows every ending (docs/design.md §8.3).
#pragma once

#include <radial/container_spec.hpp>
#include <radial/plugin/runtime.hpp>

#include "sbx_cli.h"
#include "support/run_registry.h"

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
// (counted from the call, so create and policy count too) → RADIAL_RUN_TIMED_OUT. `active` killed
// (RunRegistry::request_kill; before step 1 nothing is created) → RADIAL_RUN_KILLED; `out`
// returned non-zero → RADIAL_RUN_KILLED | RADIAL_RUN_OUTPUT_ABORTED. To end a run early the
// sandbox is removed (rm --force), which ends the exec; the exec client is SIGKILLed after
// settings.kill_grace_ms and always reaped. A kill or timeout during create or policy interrupts
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

} // namespace radial::sandbox
