// plugins/docker/docker_run.h — one box, from its creation to its being gone: output streaming,
// the runner-side timeout, kill, and the removal that follows every ending.
#pragma once

#include <radial/support/run_registry.h>

#include <radial/container_spec.hpp>
#include <radial/plugin/runtime.hpp>
#include <string_view>

#include "docker_engine.h"

namespace radial::docker {

using plugin_support::ActiveRun;

// Runs `spec` as one hardened box through the Engine API and blocks until the box is gone:
// the image inspected (and pulled with the CLI where run.docker.pull says so), then create
// (docker_create_body) → attach → start → wait → inspect → remove (docs/design.md §13.1).
//
// Output: the attach stream's frames are demultiplexed (engine_api::FrameDemux) and passed to
// `out` chunk by chunk (at most 64 KiB each) as they arrive, each stream's bytes in order and all
// of them up to the end of the stream, so memory stays bounded whatever the box prints. `out` is
// only ever called from the calling thread, and never after this returns. Environment values are
// only in the create request's body (docs/design.md §6.3).
//
// Endings: the workload's exit → RADIAL_RUN_EXITED with the engine's exit code (128+n for a
// command killed by signal n, e.g. 137), plus RADIAL_RUN_OOM_KILLED when the engine reports the
// memory cap killed a process of the box and the workload did not exit 0. spec.timeout_ms elapsed →
// RADIAL_RUN_TIMED_OUT (a timeout too large for the clock means none). `active` killed
// (RunRegistry::request_kill, also before the box exists: then nothing is created) →
// RADIAL_RUN_KILLED. `out` returned non-zero → RADIAL_RUN_KILLED | RADIAL_RUN_OUTPUT_ABORTED. A
// supervisor thread runs the shared run pump (plugin_support::RunPump, docs/design.md §5.12), which
// watches the deadline, kills and aborts, so they take effect even while `out` blocks. To end a box
// early it asks the engine to remove the container (forced) once a second until the attach stream
// ends, while this thread keeps draining the stream; the stream is closed from this side after
// settings.killGrace, and the box's absence is then verified by an exact label lookup. A box that
// exited on its own is waited for, inspected and removed. Every engine call has commandTimeout as
// its deadline. `duration_ms` runs from the call to the box being gone.
//
// Throws radial::plugin::Error: RADIAL_E_INVALID (naming the field) for a spec docker cannot
// express; RADIAL_E_NOT_FOUND naming a mount source that does not exist; "the engine's create
// failed, before the container existed: <the engine's message>" (RADIAL_E_NOT_FOUND for a missing
// image, RADIAL_E_UNAVAILABLE for an unreachable engine, RADIAL_E_INTERNAL otherwise) when the
// container never existed, and RADIAL_E_INTERNAL "docker created the container but could not start
// it: <the engine's reason>" when it existed but its process never ran (C-09); RADIAL_E_UNAVAILABLE
// "the engine stopped answering" when the engine was lost mid-run; RADIAL_E_UNAVAILABLE naming
// the box, the OCI runtime and run.docker.startTimeout when the engine did not answer the start
// within startTimeout (cut to the turn's timeout; a timeout or kill meanwhile is that ending
// instead, so a kill during a hung start takes effect by then), the box then force-removed within
// max(killGrace, 1 s) or, failing that, said to be left to reconciliation by label;
// RADIAL_E_INTERNAL when the box was removed by someone else while it ran. [thread-safe] for
// distinct labels. Source: docs/design.md §5.6 (timeoutMs, onOutput), docs/design.md §8.3
// (unconditional removal), docs/design.md §13.1, C-06, C-09.
radial::plugin::RunResult run_box(const DockerEngine& engine, const radial::plugin::Host& host,
                                  const ContainerSpec& spec, radial::plugin::Output& out,
                                  ActiveRun& active);

} // namespace radial::docker
