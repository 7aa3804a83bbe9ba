/*
 * radial/session.h — the session extension of the runtime ABI, "radial.session/1"
 * (docs/design.md §13.12), reached through the descriptor's get_extension.
 *
 * A session's box lives longer than one command: created once from a ContainerSpec, started idle,
 * it runs each of the session's turns as an exec, and is destroyed when the session ends. What a
 * turn installs outside the workspace is there for the session's next turn, and a turn costs an
 * exec rather than a box start. The box ends by itself — with no host left to end it — once it was
 * idle for its idle timeout or at its maximum lifetime.
 *
 * Growth rules, threading tags and strings as in radial/runtime_plugin.h. C99; includes only that.
 */
#ifndef RADIAL_SESSION_H
#define RADIAL_SESSION_H

#include <radial/runtime_plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RADIAL_SESSION_EXTENSION_ID "radial.session/1"

typedef struct radial_session_ext {
    uint32_t struct_size;
    uint32_t reserved;

    /* [thread-safe; distinct labels] Creates the session's box from `spec` and starts it idle.
     * The spec's argv must be empty, its env may hold no secret (each exec gets its own), and its
     * timeout_ms is unused. The box ends by itself once no exec has run in it for
     * `idle_timeout_ms`, or `max_lifetime_ms` after it started (0: no such limit), also with no
     * host left. RADIAL_E_REFUSED naming a field the runtime cannot honour, before anything is
     * created; RADIAL_E_INVALID naming "label" when a box of that label exists. Nothing is left
     * behind on failure. */
    int32_t (*create)(radial_runtime* rt, const radial_spec* spec, uint64_t idle_timeout_ms,
                      uint64_t max_lifetime_ms, const radial_error_sink* err);

    /* [thread-safe; one exec per session at a time] Runs `exec->argv` in the session labelled
     * `exec->label`, with `exec->env` (secrets included: given to this exec only, never kept in
     * the box's configuration), `exec->workdir` (empty: the box's) and `exec->timeout_ms`, enforced
     * inside the box as well, so that it holds with no host left. Only those fields of `exec` are
     * read. Blocks until the exec ended and its output is delivered; `result` as `run` gives it
     * (exit code, signal, timed out, killed). RADIAL_E_NOT_FOUND when the session's box is gone.
     * When the exec cannot be ended otherwise (its deadline passed and the box does not end it),
     * the session's box is destroyed. */
    int32_t (*exec)(radial_runtime* rt, const radial_spec* exec, const radial_output_sink* out,
                    radial_run_result* result, const radial_error_sink* err);

    /* [thread-safe] Postcondition: no box labelled `label` exists (an unknown label is RADIAL_OK).
     * An exec in flight in it returns with RADIAL_RUN_KILLED. */
    int32_t (*destroy)(radial_runtime* rt, radial_str label, const radial_error_sink* err);
} radial_session_ext;

#ifdef __cplusplus
}
#endif

#endif /* RADIAL_SESSION_H */
