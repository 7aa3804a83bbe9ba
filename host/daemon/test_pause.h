// host/daemon/test_pause.h — the daemon's crash-test hook (docs/design.md §12 "Tests": SIGKILL the
// daemon at chosen moments). Test-only; inert unless the variable below is set.
#pragma once

#include "turn/turn_session.h"

namespace radial::daemon {

// The environment variable naming the checkpoint to stop at: "claimed", "started", "output",
// "terminal" (turn::CheckpointFn) or "retire" (daemon.h).
inline constexpr const char* kPauseAtEnvForTest = "RADIAL_PAUSE_AT_FOR_TEST";

// A checkpoint function that, at the named point, logs "turn <id>: paused at '<point>' for a test"
// and then blocks that thread for good: the test SIGKILLs the process there, so the crash happens
// at a known place instead of a lucky one. Empty (no hook at all) when the variable is unset.
turn::CheckpointFn pause_point_from_env_for_test();

} // namespace radial::daemon
