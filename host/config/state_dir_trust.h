// host/config/state_dir_trust.h — radiald uses a state directory only when nobody but it (and
// root) can change it or the directories above it.
#pragma once

#include <string>

namespace radial::config {

// Throws HostRefusalError unless `state_dir` and every directory above it can be changed by
// radiald's own uid (or root) alone, as ssh's StrictModes asks of a home: the state directory must
// be owned by radiald's euid and writable by nobody else; each parent owned by root or that uid,
// and not writable by group or others unless sticky (as /tmp is: nobody else can then rename or
// remove what is ours in it). The message names the path, its owner and mode, and the fix. Another
// user's directory would let that user swap the journal or plant links that radiald, as root,
// then follows (docs/design.md §15). `state_dir` must exist.
void check_state_dir_trust(const std::string& state_dir);

} // namespace radial::config
