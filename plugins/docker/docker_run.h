// plugins/docker/docker_run.h — one box, from `docker run` to the box being gone: output
// streaming, the runner-side timeout, kill, and the removal that follows every ending.
#pragma once

#include <radial/container_spec.hpp>
#include <radial/plugin/runtime.hpp>
#include <string_view>

#include "docker_cli.h"
#include "support/run_registry.h"

namespace radial::docker {

using plugin_support::ActiveRun;

// Name prefix of a run's private directory (plugin_support::TempDir) under $TMPDIR or /tmp: it
// holds the --cidfile. Those a killed host left behind are swept when the runtime is created.
inline constexpr std::string_view kRunDirPrefix = "radial-docker-";

// Runs `spec` as one hardened `docker run` (docker_run_argv) and blocks until the box is gone.
//
// Output: stdout and stderr of the box arrive on two pipes and are passed to `out` chunk by chunk
// (at most 64 KiB each) as they arrive, so memory stays bounded whatever the box prints. Before
// the container exists, the CLI's own chatter (pull progress, errors) is held back (at most
// 64 KiB) and dropped if docker fails before the container starts; once it exists, stderr is held
// until the box's first stdout, or for one second at most, so that docker's "could not start"
// message is not mistaken for the workload's. `out` is only ever called from the calling thread,
// and never after this returns.
//
// Values of client-sensitive env variables reach docker through an env-file on the client's
// stdin, a sealed memfd (docker_env.h); the client's environment never carries them.
//
// Endings: the workload's exit → RADIAL_RUN_EXITED with docker's exit code (128+n for a command
// killed by signal n, e.g. 137), plus RADIAL_RUN_OOM_KILLED when the engine reports the memory cap
// killed a process of the box. spec.timeout_ms elapsed → RADIAL_RUN_TIMED_OUT (a timeout too
// large for the clock means none). `active` killed (RunRegistry::request_kill, also before the
// client started: then nothing starts) → RADIAL_RUN_KILLED. `out` returned non-zero →
// RADIAL_RUN_KILLED | RADIAL_RUN_OUTPUT_ABORTED.
// A supervisor thread watches the deadline, kills and aborts, so they take effect even while `out`
// blocks. To end a box early it runs `docker rm -f` of its container (by the id from a --cidfile
// in a private 0700 directory) once a second until the client exits, while this thread keeps
// draining the client's output; the client is SIGKILLed after settings.killGrace, always reaped,
// and the box's absence is then verified by an exact label lookup. A box that exited on its own
// is inspected (`docker inspect`) and then removed with `docker rm -f`. `duration_ms` runs from
// the call to the box being gone.
//
// Throws radial::plugin::Error: RADIAL_E_INVALID (naming the field) for a spec docker cannot
// express; RADIAL_E_NOT_FOUND naming a mount source that does not exist; RADIAL_E_UNAVAILABLE
// when the CLI cannot be started; "docker run failed before the container started: <docker's
// message>" (RADIAL_E_NOT_FOUND for a missing image, RADIAL_E_UNAVAILABLE for an unreachable
// engine, RADIAL_E_INTERNAL otherwise) when the container never existed, and RADIAL_E_INTERNAL
// "docker created the container but could not start it: <the engine's reason>" when it existed
// but its process never ran (C-09); RADIAL_E_UNAVAILABLE when an ended box cannot be removed.
// [thread-safe] for distinct labels.
// Source: docs/design.md §5.6 (timeoutMs, onOutput), docs/design.md §8.3 (unconditional removal),
// docs/design.md §13.1, C-06, C-09.
radial::plugin::RunResult run_box(const DockerCli& cli, const radial::plugin::Host& host,
                                  const ContainerSpec& spec, radial::plugin::Output& out,
                                  ActiveRun& active);

} // namespace radial::docker
