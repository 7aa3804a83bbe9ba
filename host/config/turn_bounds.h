// host/config/turn_bounds.h — the [run] keys that keep one turn from holding or starving the
// others: how long radiald's output waits for a reader (docs/design.md §3.6), the per-turn caps on
// posted records, the journal's retention (docs/design.md §11.6) and the turn logs' (§11.7).
#pragma once

#include <toml++/toml.h>

#include <functional>
#include <string>

#include "config/host_config.h"

namespace radial::config {

// Reads run.<name> into `cfg` when it is one of these keys: outputStall, maxRecordsPerTurn,
// maxRecordBytesPerTurn, journalMaxAge, journalMaxBytes, turnLogMaxBytes, turnLogsMaxBytes. Returns
// false for any other name. `fail` is called with the problem (it must throw) for a value out of
// range.
bool read_turn_bound(const std::string& name, const toml::node& value, HostConfig& cfg,
                     const std::function<void(const std::string& problem)>& fail);

} // namespace radial::config
