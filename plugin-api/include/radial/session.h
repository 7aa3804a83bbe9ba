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

/* Kinds of a changed entry of a session's box (radial_change_sink.entry). */
enum {
    RADIAL_CHANGE_FILE = 1,    /* a regular file: its bytes follow through `data`             */
    RADIAL_CHANGE_SYMLINK = 2, /* a symbolic link: its target follows through `data`          */
    RADIAL_CHANGE_OTHER = 3    /* a directory, device, fifo or socket: no bytes follow        */
};

/* What a session's box changed in its own file system (not its mounts), going from plugin to host
 * so that the host can look for what must not be kept (docs/design.md §13.12). For each entry:
 * `entry` once, with the entry's path in the box and its kind, then `data` zero or more times
 * with the entry's bytes (a file's contents, a link's target) followed by the values of its
 * extended attributes. A regular file whose bytes this walk gave already under another name (a
 * hard link) may be given by its name alone, with no `data`: its bytes were seen. Every call
 * returns 0 to go on; non-zero stops the walk, and the function
 * that received the sink then returns RADIAL_E_CANCELLED. [any-thread, one call at a time] Never
 * called after that function returns. */
typedef struct radial_change_sink {
    uint32_t struct_size;
    void* ctx;
    int32_t (*entry)(void* ctx, radial_str path, uint32_t kind);
    int32_t (*data)(void* ctx, const uint8_t* data, size_t size);
} radial_change_sink;

typedef struct radial_session_ext {
    uint32_t struct_size;
    uint32_t reserved;

    /* [thread-safe; distinct labels] Creates the session's box from `spec` and starts it idle.
     * The spec's argv must be empty, its env may hold no secret (each exec gets its own), and its
     * timeout_ms is unused. The box ends by itself once no exec has run in it for
     * `idle_timeout_ms`, or `max_lifetime_ms` after it started (0: no such limit), also with no
     * host left — or, for a box that cannot remove itself (a VM that only its manager removes),
     * every process of its execs ends then, no later exec runs in it, and the host's next call
     * removes it. RADIAL_E_REFUSED naming a field the runtime cannot honour, before anything is
     * created; RADIAL_E_INVALID naming "label" when a box of that label exists. Nothing is left
     * behind on failure. */
    int32_t (*create)(radial_runtime* rt, const radial_spec* spec, uint64_t idle_timeout_ms,
                      uint64_t max_lifetime_ms, const radial_error_sink* err);

    /* [thread-safe; one exec per session at a time] Runs `exec->argv` in the session labelled
     * `exec->label`, with `exec->env` (secrets included: given to this exec only, never kept in
     * the box's configuration), `exec->workdir` (empty: the box's) and `exec->timeout_ms`, enforced
     * inside the box as well, so that it holds with no host left, and `exec->host_ports` (the
     * host ports this exec may reach, as for `run`; a runtime that needs no rule for them ignores
     * them). Only those fields of `exec` are read. Blocks until the exec ended and its output is
     * delivered; `result` as `run` gives it (exit code, signal, timed out, killed).
     * RADIAL_E_NOT_FOUND when the session's box is gone (removed, or ended) before anything of
     * the exec ran; a box that ends under a running exec is RADIAL_RUN_KILLED, not an error.
     * RADIAL_E_REFUSED only when nothing of the exec ran (the box cannot take one now, e.g.
     * paused, or the engine could not be asked to make it). After either the host takes the box
     * to be as the last exec left it. When the exec cannot
     * be ended otherwise (its deadline passed and the box does not end it), the session's box is
     * destroyed. */
    int32_t (*exec)(radial_runtime* rt, const radial_spec* exec, const radial_output_sink* out,
                    radial_run_result* result, const radial_error_sink* err);

    /* [thread-safe] Postcondition: no box labelled `label` exists (an unknown label is RADIAL_OK).
     * An exec in flight in it returns with RADIAL_RUN_KILLED. */
    int32_t (*destroy)(radial_runtime* rt, radial_str label, const radial_error_sink* err);

    /* Since 1.1 (NULL or absent: the runtime keeps no snapshots; the host refuses them). */

    /* [thread-safe] The content digest of the local image `image` ("sha256:<hex>"), through
     * `digest`, once. A session's box is created from the digest, so that the image a session
     * runs cannot change under it. RADIAL_E_NOT_FOUND when the image is not present. */
    int32_t (*resolve_image)(radial_runtime* rt, radial_str image, const radial_name_sink* digest,
                             const radial_error_sink* err);

    /* [thread-safe; not during an exec of that session] Every entry of the session box's own file
     * system changed (its content, metadata or name, or its full path: a directory above it
     * renamed) at or after `since_ms` (Unix epoch) goes to `changes`, one whose path alone is new
     * with no bytes; entries the box removed are not given. RADIAL_E_UNSUPPORTED (naming why) when
     * the runtime cannot see the box's changes; RADIAL_E_NOT_FOUND when the box is gone. */
    int32_t (*changes)(radial_runtime* rt, radial_str label, uint64_t since_ms,
                       const radial_change_sink* changes, const radial_error_sink* err);

    /* [thread-safe; not during an exec of that session] Commits the session box's own file system
     * (not its mounts, not its configuration's environment or labels) to the local image named
     * `image` ("repository:tag") and gives the new image's content digest through `digest`. When an
     * image of that name exists already nothing is committed and its digest is given: a
     * content-addressed name names one content. The host waits 15 minutes beyond its call
     * deadline for it; the plugin bounds its commit within that. */
    int32_t (*snapshot)(radial_runtime* rt, radial_str label, radial_str image,
                        const radial_name_sink* digest, const radial_error_sink* err);

    /* [thread-safe] Postcondition: no local image named `image` exists (an unknown name is
     * RADIAL_OK). RADIAL_E_INVALID when a box still runs from it. */
    int32_t (*remove_snapshot)(radial_runtime* rt, radial_str image, const radial_error_sink* err);

    /* Since 1.2 (NULL or absent: the runtime cannot tell how much a snapshot would write before
     * it takes one; the host then refuses snapshots while it bounds their bytes). */

    /* [thread-safe; not during an exec of that session] Whether a snapshot of the session's box
     * fits, asked before `snapshot`: RADIAL_E_REFUSED (naming the biggest files and the bound they
     * pass) when the regular files of the box's own file system come to more than `max_bytes`
     * (0: no such bound) or to more than the free bytes where the runtime would write the image,
     * each counted by its apparent size (a sparse file's holes too: a commit may write them out
     * as zeros); RADIAL_OK when it fits. Reads names and sizes, never contents. RADIAL_E_NOT_FOUND
     * when the box is gone; RADIAL_E_UNSUPPORTED (naming why) when the runtime cannot see them. */
    int32_t (*check_snapshot_size)(radial_runtime* rt, radial_str label, uint64_t max_bytes,
                                   const radial_error_sink* err);
} radial_session_ext;

#ifdef __cplusplus
}
#endif

#endif /* RADIAL_SESSION_H */
