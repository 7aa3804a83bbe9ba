// host/turn/handover_recovery.h — whether a killed radiald's box may still write into the
// workspace it was handed (turn/workspace_handover.h, docs/design.md §3.9).
#pragma once

#include <radial/host/runtime_client.hpp>

#include "config/host_config.h"
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

// The turn whose box, left running by a killed radiald, may still write into `workspace`: a
// hand-over note in `marker_dir` for that very directory (device and inode), which no live
// radiald holds, and whose box `may_write` says runs (a throw counts as running). Empty when
// none. A turn must not start on such a workspace: the box would keep writing beside it, and the
// hand-over would take the box's uid for the owner (docs/design.md §3.9). Never throws.
std::string orphan_writing_into(const std::string& marker_dir, const std::string& workspace,
                                const WorkspaceHandover::BoxMayWrite& may_write) noexcept;

// Why a turn does not start on `workspace`, which the box `label` of turn `turn_id` (found by
// orphan_writing_into) still writes into, and what ends that box: a session's box is kept by
// reconciliation, so `radiald reconcile` alone does nothing for it. Pure.
std::string orphan_refusal(const std::string& workspace, const std::string& turn_id,
                           const std::string& label, const config::HostConfig& cfg);

// After a turn of the session whose box is labelled `session_label` has ended its exec and handed
// the workspace back whole: removes the hand-over notes (in `marker_dir`, other than
// `own_turn_id`'s) that earlier turns of that session left when their radiald was killed. Their
// box is this one, and its exec is over — its radial-init ends whatever an exec leaves, and a
// box that could not be swept is removed — so nothing writes as its ids that this hand-back did
// not reach; kept, each note's "may still write" line came back at every start until the session
// ended. A note still locked (its turn running), of another box, or whose first line is not
// `note_ids` (WorkspaceHandover::note_ids: another directory, other ids) is left. Returns how many
// were removed; never throws (a journal error keeps the note). [thread-safe as the journal]
std::size_t forget_earlier_session_notes(const std::string& marker_dir,
                                         const std::string& own_turn_id,
                                         const std::string& session_label,
                                         const std::string& note_ids,
                                         journal::Journal& journal) noexcept;

} // namespace radial::turn
