/* Broken plugins written against the raw C ABI, one per ZOO_* define, for loader tests:
 *   ZOO_WRONG_MAJOR   descriptor says ABI 2.<this minor>
 *   ZOO_NEWER_MINOR   descriptor needs host minor 99
 *   ZOO_NULL          entry returns NULL
 *   ZOO_NO_RUN        the required function `run` is NULL
 *   ZOO_NO_ENTRY      the entry function is misspelt, so the entry symbol is absent
 *   ZOO_HUGE_NAME     the name's declared size is 2^40 bytes
 *   ZOO_HUGE_ID       the id's declared size is 2^40 bytes */
#include <radial/runtime_plugin.h>
#include <string.h>

#define STR(s) \
    { s, sizeof(s) - 1 }

static int32_t z_create(const radial_host* h, const radial_config* c, radial_runtime** out,
                        const radial_error_sink* e) {
    (void)h;
    (void)c;
    (void)e;
    static int instance;
    *out = (radial_runtime*)&instance;
    return RADIAL_OK;
}
static void z_destroy(radial_runtime* rt) { (void)rt; }
static int32_t z_run(radial_runtime* rt, const radial_spec* s, const radial_output_sink* o,
                     radial_run_result* r, const radial_error_sink* e) {
    (void)rt;
    (void)s;
    (void)o;
    (void)e;
    r->flags = RADIAL_RUN_EXITED;
    return RADIAL_OK;
}
static int32_t z_list(radial_runtime* rt, radial_str p, const radial_name_sink* n,
                      const radial_error_sink* e) {
    (void)rt;
    (void)p;
    (void)n;
    (void)e;
    return RADIAL_OK;
}
static int32_t z_kill(radial_runtime* rt, radial_str l, const radial_error_sink* e) {
    (void)rt;
    (void)l;
    (void)e;
    return RADIAL_OK;
}

#ifdef ZOO_NO_ENTRY
#define ZOO_ENTRY radial_runtime_plugin_entr
#else
#define ZOO_ENTRY radial_runtime_plugin_entry
#endif

static radial_runtime_descriptor make(void) {
    radial_runtime_descriptor d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.abi_major = RADIAL_RT_ABI_MAJOR;
    d.abi_minor = RADIAL_RT_ABI_MINOR;
    d.id = (radial_str)STR(ZOO_ID);
    d.name = (radial_str)STR("zoo");
    d.version = (radial_str)STR("0.0.1");
    d.create = z_create;
    d.destroy = z_destroy;
    d.run = z_run;
    d.list_by_label = z_list;
    d.kill = z_kill;
#ifdef ZOO_WRONG_MAJOR
    d.abi_major = 2;
#endif
#ifdef ZOO_NEWER_MINOR
    d.abi_minor = 99;
#endif
#ifdef ZOO_NO_RUN
    d.run = 0;
#endif
#if defined(ZOO_HUGE_NAME) || defined(ZOO_HUGE_ID)
    /* A declared size of a terabyte over a buffer of 300 bytes: the host may read no more of it
     * than it allows a name (256 bytes), or it ends (bad_alloc) or reads past the buffer. */
    static char text[300];
    memset(text, 'z', sizeof text);
#endif
#ifdef ZOO_HUGE_NAME
    d.name.data = text;
    d.name.size = (size_t)1 << 40;
#endif
#ifdef ZOO_HUGE_ID
    d.id.data = text;
    d.id.size = (size_t)1 << 40;
#endif
    return d;
}

RADIAL_RT_EXPORT const radial_runtime_descriptor* ZOO_ENTRY(void) {
#ifdef ZOO_NULL
    (void)make;
    return 0;
#else
    static radial_runtime_descriptor d;
    static int ready;
    if (!ready) {
        d = make();
        ready = 1;
    }
    return &d;
#endif
}
