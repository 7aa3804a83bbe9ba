/* plugins/box-init/session_idle.h — radial-init as the PID 1 of a session's box
 * (docs/design.md §13.12): it runs no command of its own; the session's turns are execs, each under
 * radial-init's ordinary mode. It ends the box by itself — with no radiald left to do it — once no
 * process but itself has run in the box for IDLE_MS, or MAX_MS after it started, or when the
 * engine stops the box (SIGTERM): every process gets SIGTERM, those left GRACE_MS later SIGKILL.
 *
 *   radial-init --session IDLE_MS MAX_MS GRACE_MS       (0: no such limit) */
#pragma once

/* Runs the session's PID 1 until one of its ends; returns radial-init's exit status: 0 for the
 * idle timeout or a stop, 124 for the maximum lifetime. */
int run_session(long long idle_ms, long long max_ms, long long grace_ms);
