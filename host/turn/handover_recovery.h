// host/turn/handover_recovery.h — whether a killed radiald's box may still write into the
// workspace it was handed (turn/workspace_handover.h, docs/design.md §3.9).
#pragma once

#include <radial/host/runtime_client.hpp>

#include "journal/journal.h"
#include "turn/workspace_handover.h"

namespace radial::turn {

// WorkspaceHandover::recover's question, answered from the journal (the box the turn ran in: its
// own, a session's or a pool's) and the runtime (whether that box still runs). A box the runtime
// says is gone or ended writes no more; so does a turn the journal does not know or whose box was
// never named; a runtime that cannot tell (no inspect) is taken at that word too, as before. A box
// still running, one in any other state, or an engine that cannot be asked keeps the note.
// The returned function refers to `client` and `journal`, which must outlive it. Thread-safe as
// they are.
WorkspaceHandover::BoxMayWrite box_may_write(const host::RuntimeClient& client,
                                             journal::Journal& journal);

} // namespace radial::turn
