// host/turn/output_drain.h — the end of a turn's output on its way to the caller (docs/design.md
// §3.6): once the box is gone, what its reader did not take within run.outputStall is dropped,
// never waited for, and the terminal record counts it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "turn/terminal_record.h"

namespace radial::turn {

// Called once the box is gone and every byte of its output was handed on; returns what of it
// could not reach the reader. Set by the caller that writes the output (radiald turn).
using OutputDrainFn = std::function<TerminalRecord::OutputDropped()>;

// Runs `drain` when there is one; when it dropped anything, `rec.output_dropped` says how much and
// a warning naming run.outputStall (`stall_ms`) is logged for turn `id`. Not thread-safe: the
// turn's own thread, after its last output.
void drain_output(const OutputDrainFn& drain, const std::string& id, std::uint64_t stall_ms,
                  TerminalRecord& rec);

} // namespace radial::turn
