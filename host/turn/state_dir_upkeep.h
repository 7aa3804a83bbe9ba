// host/turn/state_dir_upkeep.h — what keeps the state directory able to hold every turn's outcome:
// the free-space check before a box starts (docs/design.md §11.5) and the journal's retention
// once a turn ended (docs/design.md §11.6).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/host_config.h"
#include "journal/journal.h"
#include "turn/retention_clock.h"

namespace radial::turn {

// Why a turn must not start for lack of space on the state directory's file system (less than
// `reserve` bytes free, naming run.minFreeBytes), if it must not; nullopt when it may or
// `reserve` is 0.
std::optional<std::string> free_space_problem(const std::string& state_dir, std::uint64_t reserve);

// Applies run.journalMaxAge and run.journalMaxBytes to `journal`, keeping `finished_turn` (the
// turn that just ended) and every turn whose request is still in the spool, removes the output
// logs of the turns it removed and applies run.turnLogsMaxBytes to the rest (turn_output_log.h);
// a failure is logged and otherwise ignored: it costs no turn anything. Ages are measured on the
// state directory's retention clock (retention_clock.h), which `clocks` reads.
void prune_journal(journal::Journal& journal, const config::HostConfig& cfg,
                   const std::string& finished_turn,
                   const RetentionClocks& clocks = RetentionClocks::system());

} // namespace radial::turn
