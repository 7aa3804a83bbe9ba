// host/turn/handover_recovery.cpp — see handover_recovery.h.
#include "turn/handover_recovery.h"

namespace radial::turn {

WorkspaceHandover::BoxMayWrite box_may_write(const host::RuntimeClient& client,
                                             journal::Journal& journal) {
    return [&client, &journal](const std::string& turn_id) {
        const auto turn = journal.turn(turn_id); // a journal error: thrown, so the note is kept
        if (!turn || turn->entry.label.empty()) return false;
        const host::BoxState st = client.inspect(turn->entry.label);
        if (!st.supported) return false;
        return st.state != RADIAL_BOX_GONE && st.state != RADIAL_BOX_ENDED;
    };
}

} // namespace radial::turn
