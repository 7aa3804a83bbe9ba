// plugins/docker/docker_session.h — sessions under the docker runtime (radial/session.h,
// docs/design.md §13.12): a container whose PID 1 is radial-init in its session mode, started idle,
// and one Engine API exec per turn, each under radial-init's ordinary mode.
#pragma once

#include <radial/plugin/runtime.hpp>

#include "docker_engine.h"

namespace radial::docker {

// Creates and starts the session's box: the hardened container of a one-shot box
// (docker_create_body), whose command is `radial-init --session IDLE MAX GRACE`, so it ends by
// itself once idle for `idle_timeout_ms` or `max_lifetime_ms` after its start. Needs a box init
// (run.docker.boxInit) and the image present locally (sessions do not pull). Throws
// Error(RADIAL_E_INVALID, "label") when a box of that label exists; removes what it made when
// anything fails.
void create_docker_session(const DockerEngine& engine, const radial::plugin::Host& host,
                           const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                           std::uint64_t max_lifetime_ms);

// Runs one exec in the session box labelled `exec.label`: POST /containers/{id}/exec of
// `radial-init [--env-from-stdin --say-ready] TIMEOUT GRACE -- ARGV` (as `docker exec`, without
// the image's entrypoint), plain variables in the exec's Env, secret ones written to
// radial-init's stdin (never in any configuration the engine keeps) once radial-init said it is
// ready (kInitReadyLine, kept out of the output; other bytes first: Error(RADIAL_E_INTERNAL), the
// secrets unsent), output demultiplexed to `out`. radial-init ends
// the exec at its deadline (exit 124, reported as timed out); should the exec's stream still be
// open `kill grace` + 10 s after it, or the sink abort, the session's box is removed.
radial::plugin::RunResult exec_in_docker_session(const DockerEngine& engine,
                                                 const radial::plugin::Host& host,
                                                 const ContainerSpec& exec,
                                                 radial::plugin::Output& out);

} // namespace radial::docker
