/* tests/conformance/c11_plugin.c — a runtime plugin in plain C11, as a third party without C++
 * would write one against radial/runtime_plugin.h alone: built with the pkg-config file's C flags
 * and put through the harness's checks that need no box (c11_plugin_out_of_tree.sh). It runs
 * nothing: run refuses every spec. */
#include <radial/runtime_plugin.h>
#include <string.h>

#define LIT(s) \
    { s, sizeof(s) - 1 }

static int32_t c_create(const radial_host* host, const radial_config* config, radial_runtime** out,
                        const radial_error_sink* err) {
    static int instance;
    (void)host;
    if (config != NULL && config->entries.count > 0) {
        const radial_config_entry* e = (const radial_config_entry*)config->entries.items;
        static const radial_str msg = LIT("unknown key in the c11 runtime's section; it has none");
        err->report(err->ctx, RADIAL_E_INVALID, e->key, msg);
        return RADIAL_E_INVALID;
    }
    *out = (radial_runtime*)&instance;
    return RADIAL_OK;
}

static void c_destroy(radial_runtime* rt) { (void)rt; }

static int32_t c_describe(radial_runtime* rt, const radial_spec* spec,
                          const radial_disposition_sink* out, const radial_error_sink* err) {
    static const radial_str none = {NULL, 0};
    static const radial_str refused = LIT("the c11 runtime runs nothing");
    uint32_t f;
    (void)rt;
    (void)err;
    /* onOutput is always carried; the rest only when set. */
    for (f = RADIAL_FIELD_LABEL; f <= RADIAL_FIELD_COUNT_1_0; ++f) {
        int carried = 0;
        switch (f) {
            case RADIAL_FIELD_LABEL: carried = spec->label.size > 0; break;
            case RADIAL_FIELD_IMAGE: carried = spec->image.size > 0; break;
            case RADIAL_FIELD_MOUNTS: carried = spec->mounts.count > 0; break;
            case RADIAL_FIELD_ARGV: carried = spec->argv.count > 0; break;
            case RADIAL_FIELD_ENV: carried = spec->env.count > 0; break;
            case RADIAL_FIELD_WORKDIR: carried = spec->workdir.size > 0; break;
            case RADIAL_FIELD_TIMEOUT_MS: carried = spec->timeout_ms > 0; break;
            case RADIAL_FIELD_HOST_PORTS: carried = spec->host_ports.count > 0; break;
            case RADIAL_FIELD_PIDS_LIMIT: carried = spec->pids_limit != 0; break;
            case RADIAL_FIELD_READ_ONLY_ROOTFS:
                carried = spec->read_only_rootfs != RADIAL_UNSET;
                break;
            case RADIAL_FIELD_USER: carried = spec->user.size > 0; break;
            case RADIAL_FIELD_TMPFS: carried = spec->tmpfs.count > 0; break;
            case RADIAL_FIELD_EXTRA_HOSTS: carried = spec->extra_hosts.count > 0; break;
            case RADIAL_FIELD_MEMORY: carried = spec->memory_bytes > 0; break;
            case RADIAL_FIELD_NETWORK: carried = spec->network.size > 0; break;
            case RADIAL_FIELD_CPUS: carried = spec->cpus_milli > 0; break;
            case RADIAL_FIELD_ON_OUTPUT: carried = 1; break;
            default: break;
        }
        if (!carried) continue;
        if (f == RADIAL_FIELD_LABEL)
            out->field(out->ctx, f, RADIAL_DISP_HONOURED, none);
        else
            out->field(out->ctx, f, RADIAL_DISP_REFUSED, refused);
    }
    return RADIAL_OK;
}

static int32_t c_run(radial_runtime* rt, const radial_spec* spec, const radial_output_sink* out,
                     radial_run_result* result, const radial_error_sink* err) {
    static const radial_str key = LIT("argv");
    static const radial_str msg = LIT("the c11 runtime runs nothing");
    (void)rt;
    (void)spec;
    (void)out;
    (void)result;
    err->report(err->ctx, RADIAL_E_REFUSED, key, msg);
    return RADIAL_E_REFUSED;
}

static int32_t c_list(radial_runtime* rt, radial_str prefix, const radial_name_sink* names,
                      const radial_error_sink* err) {
    (void)rt;
    (void)prefix;
    (void)names;
    (void)err;
    return RADIAL_OK;
}

static int32_t c_kill(radial_runtime* rt, radial_str label, const radial_error_sink* err) {
    (void)rt;
    (void)label;
    (void)err;
    return RADIAL_OK;
}

RADIAL_RT_EXPORT const radial_runtime_descriptor* radial_runtime_plugin_entry(void) {
    static radial_runtime_descriptor d;
    static int ready;
    if (!ready) {
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        d.abi_major = RADIAL_RT_ABI_MAJOR;
        d.abi_minor = 0;
        d.id = (radial_str)LIT("c11");
        d.name = (radial_str)LIT("A plain C11 runtime (runs nothing)");
        d.version = (radial_str)LIT("0.0.1");
        d.create = c_create;
        d.destroy = c_destroy;
        d.describe_spec = c_describe;
        d.run = c_run;
        d.list_by_label = c_list;
        d.kill = c_kill;
        ready = 1;
    }
    return &d;
}
