/*
 * radial/box_root.h — the box-root extension of the runtime ABI, "radial.box-root/1"
 * (docs/design.md §8.8), reached through the descriptor's get_extension.
 *
 * Under workspace-write a package manager must write the image's system directories, which only
 * root may. A runtime whose boxes get a user namespace of their own (an engine with user-namespace
 * remapping) can run a box as uid 0 that is root only inside that namespace: on the host its files
 * and processes belong to an unprivileged id. This extension says whether that holds for an
 * instance, and which host ids the box's root is, so that the host can hand the workspace, the
 * socket directory and the box's files to those ids.
 *
 * Growth rules, threading tags and strings as in radial/runtime_plugin.h. C99; includes only that.
 */
#ifndef RADIAL_BOX_ROOT_H
#define RADIAL_BOX_ROOT_H

#include <radial/runtime_plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RADIAL_BOX_ROOT_EXTENSION_ID "radial.box-root/1"

/* Host-allocated and zeroed, `struct_size` set by the host; the plugin writes fields below it. */
typedef struct radial_box_root_ids {
    uint32_t struct_size;
    uint32_t host_uid; /* the host uid a box's uid 0 is; never 0 */
    uint32_t host_gid; /* the host gid a box's gid 0 is; never 0 */
    uint32_t reserved;
} radial_box_root_ids;

typedef struct radial_box_root_ext {
    uint32_t struct_size;
    uint32_t reserved;

    /* [thread-safe] Asks the runtime (read-only; it may ask its engine, after preflight). RADIAL_OK
     * with `ids` filled: a box whose spec.user is "0:0" is root only inside a user namespace of its
     * own, and on the host it is `host_uid`:`host_gid` (both non-zero), without any capability
     * there; the runtime then honours user "0:0". RADIAL_E_UNSUPPORTED with a message saying why
     * not and what would make it so (e.g. "the engine does not remap user namespaces; start
     * dockerd with --userns-remap"): a box's uid 0 would be the host's. RADIAL_E_UNAVAILABLE when
     * the engine cannot be asked. */
    int32_t (*root_ids)(radial_runtime* rt, radial_box_root_ids* ids, const radial_error_sink* err);
} radial_box_root_ext;

#ifdef __cplusplus
}
#endif

#endif /* RADIAL_BOX_ROOT_H */
