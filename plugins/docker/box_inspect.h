// plugins/docker/box_inspect.h — `inspect` for the docker runtime (ABI 1.1): what became of the box
// of one label, read through the Engine API (plugins/support/engine_api), never changing it. Used
// by reconciliation after a crash (docs/design.md §8.4).
#pragma once

#include <memory>
#include <optional>
#include <radial/plugin/runtime.hpp>
#include <string>
#include <string_view>

#include "docker_settings.h"

namespace radial::engine_api {
class EngineClient;
struct EngineAddress;
} // namespace radial::engine_api

namespace radial::docker {

// How one container's State (GET /containers/{id}/json) reads as a box state: created, running,
// paused and restarting are RADIAL_BOX_RUNNING; exited and dead are RADIAL_BOX_ENDED with
// RADIAL_RUN_EXITED and State.ExitCode, plus RADIAL_RUN_OOM_KILLED when State.OOMKilled and the
// exit code is not 0 (the bound killed some other process of the box); anything
// else (removing) is RADIAL_BOX_UNKNOWN. No RADIAL_RUN_SIGNALED: the engine records an exit code
// only, and 137 may be `exit 137`. Pure.
radial::plugin::BoxState box_state_from_json(std::string_view state_json);

// Reads box states through one Engine API client. Holds no connection between calls.
// [thread-safe]
class BoxInspector {
public:
    // Speaks to `address`, the runtime's own engine (DockerEngine::resolved(), docs/design.md
    // §13.10); TLS material that does not load makes every inspect() answer RADIAL_E_UNSUPPORTED
    // saying why. No engine contact. `budget_ms`: the deadline of each engine call.
    BoxInspector(const engine_api::EngineAddress& address, std::uint64_t budget_ms);
    ~BoxInspector();

    // The box labelled exactly `label` (docker label radial.label): RADIAL_BOX_GONE when no
    // container carries it; RADIAL_BOX_RUNNING when one has not ended; else the first ended one
    // (by container id). Throws radial::plugin::Error: RADIAL_E_UNSUPPORTED (see above),
    // RADIAL_E_UNAVAILABLE when the engine cannot be reached, RADIAL_E_TIMEOUT past the budget,
    // RADIAL_E_INTERNAL for any other engine answer.
    radial::plugin::BoxState inspect(std::string_view label) const;

private:
    std::unique_ptr<engine_api::EngineClient> engine_; // null when unsupported
    std::string unsupported_;                          // why, when engine_ is null
};

} // namespace radial::docker
