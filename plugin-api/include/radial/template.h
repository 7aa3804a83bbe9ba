/*
 * radial/template.h — the template extension of the runtime ABI, "radial.template/1"
 * (docs/design.md §13.2), reached through the descriptor's get_extension.
 *
 * Some runtimes keep an image store of their own (Docker Sandboxes' templates), which a locally
 * built Docker image does not reach by itself. `radiald template export IMAGE` saves the image
 * from the Docker Engine to an archive and hands the archive to the selected runtime through this
 * extension; a runtime that runs the engine's images directly does not offer it, and the command
 * then says so instead of guessing the runtime from its id.
 *
 * Growth rules, threading tags and strings as in radial/runtime_plugin.h. C99; includes only that.
 */
#ifndef RADIAL_TEMPLATE_H
#define RADIAL_TEMPLATE_H

#include <radial/runtime_plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RADIAL_TEMPLATE_EXTENSION_ID "radial.template/1"

typedef struct radial_template_ext {
    uint32_t struct_size;
    uint32_t reserved;

    /* [thread-safe] Loads the image archive at `archive` (an absolute path to a `docker image
     * save` tar, readable by the host's uid; the host removes it once the call returned) into the
     * runtime's image store, so that a spec may name the images it holds. Returns within
     * `timeout_ms` (0: the runtime's own bound): past it, whatever the call started is ended and
     * the result is RADIAL_E_TIMEOUT. RADIAL_E_INVALID (key "archive") when `archive` is not an
     * absolute path to a regular file; RADIAL_E_UNAVAILABLE when the store cannot be reached or
     * refuses the archive. The message says what the store answered and what to do. */
    int32_t (*load)(radial_runtime* rt, radial_str archive, uint64_t timeout_ms,
                    const radial_error_sink* err);
} radial_template_ext;

#ifdef __cplusplus
}
#endif

#endif /* RADIAL_TEMPLATE_H */
