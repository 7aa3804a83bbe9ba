// host/config/pool_keys.h — [run.pool]: the warm pool's classes, size, age and budgets
// (docs/design.md §13.14; docs/configuration.md is the reference).
#pragma once

#include <toml++/toml.h>

#include <optional>
#include <string>
#include <vector>

#include "config/config_reader.h"
#include "config/host_config.h"
#include "config/key_table.h"

namespace radial::config {

// The readers of [run.pool]'s keys, into `out`.
std::vector<KeyReader> pool_readers(Reader& r, PoolConfig& out);

// Refuses a pool the rest of the file makes meaningless: images without a size or a size without
// images, or a memory budget too small for one box of run.memory. Throws ConfigError naming the
// key.
void check_pool(Reader& r, const HostConfig& cfg);

// Why the pool's idle boxes and run.maxConcurrentTurns's turns, each holding an id of
// run.boxIdRange from its start to its removal (turn/box_id_lease.h), cannot fit that range, or
// nullopt. A least count: a box being removed, or a class settled anew, holds its id a moment
// longer. Only for boxes that lease ids: the caller leaves it out under a box root (the runtime's
// answer, docs/design.md §8.8), and it is nullopt with a fixed run.user. [thread-safe]
std::optional<std::string> pool_id_shortfall(const HostConfig& cfg);

// Without a pool: why a daemon's run.maxConcurrentTurns turns cannot each have an id of
// run.boxIdRange, or nullopt. A warning, not a refusal: a one-shot `radiald turn` needs one id
// whatever the limit, and sessions hold ids too, so the range is the operator's to size. Same
// callers' rules as pool_id_shortfall. [thread-safe]
std::optional<std::string> turn_id_shortfall(const HostConfig& cfg);

} // namespace radial::config
