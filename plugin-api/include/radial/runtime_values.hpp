// radial/runtime_values.hpp — the value types a runtime's answers carry, defined once for both
// sides of the ABI: the C++ helper's plugins return them (radial::plugin), radiald reads them
// (radial::host). Plain aggregates of radial/runtime_plugin.h's fields. Header-only; no state.
#pragma once

#include <radial/runtime_plugin.h>

#include <cstdint>
#include <string>

namespace radial {

// How the runtime treats one spec field (radial_disposition): RADIAL_FIELD_* and RADIAL_DISP_*,
// with why (a note for every disposition but HONOURED).
struct Disposition {
    std::uint32_t field = 0;       // RADIAL_FIELD_*
    std::uint32_t disposition = 0; // RADIAL_DISP_*
    std::string note;
};

// How a run's workload ended (radial_run_result): RADIAL_RUN_* flags, the exit code with EXITED,
// the signal with SIGNALED, and the plugin's measured duration in milliseconds.
struct RunResult {
    std::uint32_t flags = 0; // RADIAL_RUN_*
    std::int32_t exit_code = 0;
    std::int32_t term_signal = 0;
    std::uint64_t duration_ms = 0;
    // With RADIAL_RUN_PHASE_TIMES in flags: making the box before its command, removing it after,
    // in milliseconds.
    std::uint64_t create_ms = 0;
    std::uint64_t remove_ms = 0;
};

// How a box reaches a tcp turn socket on the host (the descriptor's tcp_route); an empty string
// leaves that address to the host's default (bind 127.0.0.1; the box dials the bind address).
struct TcpRoute {
    std::string bind_host;
    std::string box_host;
};

} // namespace radial
