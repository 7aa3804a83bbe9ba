// plugins/docker/docker_run.h — one box, from `docker run` to the box being gone: output
// streaming, the runner-side timeout, kill, and the removal that follows every ending.
#pragma once

#include <radial/container_spec.hpp>
#include <radial/plugin/runtime.hpp>

#include "docker_cli.h"
#include "run_registry.h"

namespace radial::docker {

// Runs `spec` as one hardened `docker run` (docker_run_argv) and blocks until the box is gone.
//
// Output: stdout and stderr of the box arrive on two pipes and are passed to `out` chunk by chunk
// (at most 64 KiB each) as they arrive, so memory stays bounded whatever the box prints. Before
// the container exists, the CLI's own chatter (pull progress, errors) is held back (at most
// 64 KiB) and dropped if docker fails before the container starts. `out` is only ever called from
// the calling thread, and never after this returns.
//
// Endings: the workload's exit → RADIAL_RUN_EXITED with docker's exit code (128+n for a command
// killed by signal n, e.g. 137). spec.timeout_ms elapsed → RADIAL_RUN_TIMED_OUT. `active` killed
// (RunRegistry::request_kill, also before the client started: then nothing starts) →
// RADIAL_RUN_KILLED. `out` returned non-zero → RADIAL_RUN_KILLED | RADIAL_RUN_OUTPUT_ABORTED.
// To end a box early, `docker rm -f` removes its container (by the id from a --cidfile in a private
// 0700 directory) once a second until the client exits; the client is SIGKILLed after
// settings.killGrace, always reaped, and the box's absence is then verified by an exact label
// lookup. `duration_ms` runs from the call to the box being gone.
//
// Throws radial::plugin::Error: RADIAL_E_INVALID (naming the field) for a spec docker cannot
// express; RADIAL_E_NOT_FOUND naming a mount source that does not exist; RADIAL_E_UNAVAILABLE
// when the CLI cannot be started; "docker run failed before the container started: <docker's
// message>" (RADIAL_E_NOT_FOUND for a missing image, RADIAL_E_UNAVAILABLE for an unreachable
// engine, RADIAL_E_INTERNAL otherwise) when the container never existed (C-09);
// RADIAL_E_UNAVAILABLE when an ended box cannot be removed. [thread-safe] for distinct labels.
// Source: ADR §4 (timeoutMs, onOutput), ADR §6 (unconditional removal), 003 Design 4, C-06, C-09.
radial::plugin::RunResult run_box(const DockerCli& cli, const radial::plugin::Host& host,
                                  const ContainerSpec& spec, radial::plugin::Output& out,
                                  ActiveRun& active);

} // namespace radial::docker
