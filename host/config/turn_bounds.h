// host/config/turn_bounds.h — the [run] keys that keep one turn from holding or starving the
// others: how long radiald's output waits for a reader (docs/design.md §3.6), the per-turn caps on
// posted records, the journal's retention (docs/design.md §11.6) and the turn logs' (§11.7).
#pragma once

#include <toml++/toml.h>

#include <functional>
#include <string>
#include <vector>

#include "config/host_config.h"
#include "config/key_table.h"

namespace radial::config {

// Adds the readers of these [run] keys to `readers`: outputStall, maxRecordsPerTurn,
// maxRecordBytesPerTurn, journalMaxAge, journalMaxBytes, turnLogMaxBytes and turnLogsMaxBytes. A
// reader stores into `cfg` (which must outlive `readers`) or calls `fail` (which must throw) with
// the key and the problem for a value out of range.
void add_turn_bound_readers(
    std::vector<KeyReader>& readers, HostConfig& cfg,
    const std::function<void(const std::string& key, const std::string& problem)>& fail);

} // namespace radial::config
