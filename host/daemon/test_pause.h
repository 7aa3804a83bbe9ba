// host/daemon/test_pause.h — the test hooks of radiald's processes: the daemon's crash-test hook
// (docs/design.md §12 "Tests": SIGKILL the daemon at chosen moments), and a shorter host timeout
// grace (§3.7) for tests of a run that never returns. Test-only; inert unless the variables below
// are set.
#pragma once

#include <chrono>

#include "turn/turn_session.h"

namespace radial::daemon {

// The environment variable naming the checkpoint to stop at: "claimed", "started", "output",
// "terminal" (turn::CheckpointFn) or "retire" (daemon.h).
inline constexpr const char* kPauseAtEnvForTest = "RADIAL_PAUSE_AT_FOR_TEST";

// A checkpoint function that, at the named point, logs "turn <id>: paused at '<point>' for a test"
// and then blocks that thread for good: the test SIGKILLs the process there, so the crash happens
// at a known place instead of a lucky one. Empty (no hook at all) when the variable is unset.
turn::CheckpointFn pause_point_from_env_for_test();

// The environment variable that sets the host's timeout grace (turn::kHostTimeoutGrace), in
// milliseconds: a test of the real `radiald turn` or daemon reaches the watchdog's kills and its
// give-up on a run that never returns in moments rather than a minute.
inline constexpr const char* kHostGraceEnvForTest = "RADIAL_HOST_GRACE_MS_FOR_TEST";

// That grace when the variable holds a number of milliseconds from 1 to 60000 (logged); the
// production grace otherwise.
std::chrono::milliseconds host_grace_from_env_for_test();

} // namespace radial::daemon
