// radial/support/run_ending.h — how a run ended and the run result that follows from it, the
// same for every CLI-driven runtime (ABI: radial_run_result flags).
#pragma once

#include <radial/support/child_process.h>

#include <radial/plugin/runtime.hpp>
#include <string>

namespace radial::plugin_support {

// Why a run was ended early; none: the workload ended on its own.
enum class Ending { none, killed, timed_out, aborted };

// For log lines: "kill requested", "timeout reached", "the output sink asked to stop", or
// "running" for none. Pure; thread-safe.
const char* ending_text(Ending e) noexcept;

// Sets `result.flags` and `result.exit_code` from how the run ended. A kill or an aborting sink
// gives RADIAL_RUN_KILLED, a timeout RADIAL_RUN_TIMED_OUT, a run that ended on its own
// RADIAL_RUN_EXITED with the client's exit code (the CLI relays the workload's). Adds
// RADIAL_RUN_OUTPUT_ABORTED when `output_aborted`. Other flags already in `result.flags` (e.g.
// RADIAL_RUN_OOM_KILLED) are kept for Ending::none. Throws Error(RADIAL_E_INTERNAL) when a run
// that ended on its own has no exit code — its CLI client was killed by a signal nobody in the
// plugin sent, or its status was lost — with a message naming `box`, `client` ("the docker
// client") and `after`, what was cleaned up ("the box was removed"). Thread-safe.
void set_run_outcome(radial::plugin::RunResult& result, Ending ending, const ExitStatus& status,
                     bool output_aborted, const std::string& box, const std::string& client,
                     const std::string& after);

} // namespace radial::plugin_support
