#include "turn/output_drain.h"

#include "log/logger.h"

namespace radial::turn {

void drain_output(const OutputDrainFn& drain, const std::string& id, std::uint64_t stall_ms,
                  TerminalRecord& rec) {
    if (!drain) return;
    const auto dropped = drain();
    if (dropped.stdout_bytes == 0 && dropped.stderr_bytes == 0) return;
    rec.output_dropped = dropped;
    log::warn("turn",
              "turn {}: {} byte(s) of stdout and {} of stderr were not delivered and were dropped "
              "(the reader left, a write failed, or it took nothing within run.outputStall, {} "
              "ms)",
              id, dropped.stdout_bytes, dropped.stderr_bytes, stall_ms);
}

} // namespace radial::turn
