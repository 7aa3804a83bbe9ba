/* Working plugins written against the raw C ABI whose tables end early, one per define, for the
 * plugin host's reading of struct_size (run.pluginIsolation = "process"):
 *   SHORT_DESCRIPTOR  the descriptor's struct_size ends before get_extension, which is set to a
 *                     function that aborts: a host that calls it read past struct_size
 *   SHORT_BOX_ROOT    get_extension answers radial.box-root/1 with a table whose struct_size ends
 *                     before root_ids, which is set to a function that aborts
 * Every run prints "short\n" on stdout and exits 0. */
#include <radial/box_root.h>
#include <radial/runtime_plugin.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define STR(s) \
    { s, sizeof(s) - 1 }

static int32_t s_create(const radial_host* h, const radial_config* c, radial_runtime** out,
                        const radial_error_sink* e) {
    (void)h;
    (void)c;
    (void)e;
    static int instance;
    *out = (radial_runtime*)&instance;
    return RADIAL_OK;
}
static void s_destroy(radial_runtime* rt) { (void)rt; }
static int32_t s_run(radial_runtime* rt, const radial_spec* s, const radial_output_sink* o,
                     radial_run_result* r, const radial_error_sink* e) {
    (void)rt;
    (void)s;
    (void)e;
    static const uint8_t line[] = "short\n";
    o->write(o->ctx, RADIAL_STREAM_STDOUT, line, sizeof line - 1);
    r->flags = RADIAL_RUN_EXITED;
    r->exit_code = 0;
    return RADIAL_OK;
}
static int32_t s_list(radial_runtime* rt, radial_str p, const radial_name_sink* n,
                      const radial_error_sink* e) {
    (void)rt;
    (void)p;
    (void)n;
    (void)e;
    return RADIAL_OK;
}
static int32_t s_kill(radial_runtime* rt, radial_str l, const radial_error_sink* e) {
    (void)rt;
    (void)l;
    (void)e;
    return RADIAL_OK;
}
/* Honours every field, as the fake runtime does. */
static int32_t s_describe(radial_runtime* rt, const radial_spec* s,
                          const radial_disposition_sink* d, const radial_error_sink* e) {
    (void)rt;
    (void)s;
    (void)e;
    for (uint32_t f = RADIAL_FIELD_LABEL; f <= RADIAL_FIELD_COUNT_1_0; ++f)
        d->field(d->ctx, f, RADIAL_DISP_HONOURED, (radial_str)STR(""));
    return RADIAL_OK;
}
/* Past a table's struct_size: never to be called. */
static int32_t s_root_ids(radial_runtime* rt, radial_box_root_ids* ids,
                          const radial_error_sink* e) {
    (void)rt;
    (void)ids;
    (void)e;
    abort();
}
static const void* s_get_extension(radial_runtime* rt, const char* id) {
    (void)rt;
#ifdef SHORT_DESCRIPTOR
    (void)id;
    abort();
#else
    static radial_box_root_ext box_root;
    box_root.struct_size = (uint32_t)offsetof(radial_box_root_ext, root_ids);
    box_root.root_ids = s_root_ids;
    return strcmp(id, RADIAL_BOX_ROOT_EXTENSION_ID) == 0 ? &box_root : NULL;
#endif
}

RADIAL_RT_EXPORT const radial_runtime_descriptor* radial_runtime_plugin_entry(void) {
    static radial_runtime_descriptor d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
#ifdef SHORT_DESCRIPTOR
    d.struct_size = (uint32_t)offsetof(radial_runtime_descriptor, get_extension);
#endif
    d.abi_major = RADIAL_RT_ABI_MAJOR;
    d.abi_minor = RADIAL_RT_ABI_MINOR;
    d.id = (radial_str)STR("short");
    d.name = (radial_str)STR("short tables");
    d.version = (radial_str)STR("0.0.1");
    d.create = s_create;
    d.destroy = s_destroy;
    d.run = s_run;
    d.list_by_label = s_list;
    d.kill = s_kill;
    d.describe_spec = s_describe;
    d.get_extension = s_get_extension;
    (void)s_root_ids;
    return &d;
}
