/* plugins/box-init/session_idle.h — radial-init as the PID 1 of a session's box
 * (docs/design.md §13.12): it runs no command of its own; the session's turns are execs, each under
 * radial-init's ordinary mode. It ends the box by itself — with no radiald left to do it — once no
 * process but itself has run in the box for IDLE_MS, or MAX_MS after it started, or when the
 * engine stops the box (SIGTERM from outside the box; the box's own processes cannot end it so):
 * every process gets SIGTERM, those left GRACE_MS later SIGKILL. A process that comes to it (its
 * exec's radial-init was killed by the command under it) is killed at once, with what descends from
 * it: nothing would end it otherwise with no radiald left, and the box would never be idle. Where
 * the kernel refuses child subreapers (gVisor), an exec's radial-init cannot adopt what its command
 * orphans, which then comes to PID 1 while its turn runs: there it is killed only once no process
 * that entered the box from outside (an exec) runs. An exec's radial-init found stopped is killed:
 * only its own command stops one, which would hold its turn's deadline and what it adopted still
 * forever.
 *
 *   radial-init --session IDLE_MS MAX_MS GRACE_MS       (0: no such limit)
 *   radial-init --sweep */
#pragma once

/* Runs the session's PID 1 until one of its ends; returns radial-init's exit status: 0 for the
 * idle timeout or a stop, 124 for the maximum lifetime. */
int run_session(long long idle_ms, long long max_ms, long long grace_ms);

/* `radial-init --sweep`, an exec after each of a session's turns: kills every process of the box
 * but PID 1 and itself (an exec's radial-init is not PID 1, so its command — the same uid — can
 * kill it and leave children running past the turn), and returns 0 once PID 1 has reaped them,
 * 1 when some were still there 10 s later. */
int run_sweep(void);

/* Kills every process of the box but PID 1 and the caller (kill(-1, SIGKILL)) and waits, at most
 * `wait_ms`, until PID 1 has reaped them; 0 once none is left, 1 otherwise. An exec's radial-init
 * does this before it starts its command: one turn runs in a session at a time, so what runs then
 * is left from a turn whose host was killed, and must not see the new turn (its environment, its
 * token). */
int end_the_others(long long wait_ms);
