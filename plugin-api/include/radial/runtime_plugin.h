/*
 * radial/runtime_plugin.h — the stable C ABI between radiald and a runtime plugin.
 *
 * A runtime plugin is a shared object that exports exactly one symbol,
 * `radial_runtime_plugin_entry`, returning a descriptor. The descriptor names the plugin and
 * carries the function table of the runner seam (docs/design.md §5.1 "ContainerRunner": run /
 * listByLabel / kill, plus preflight). Everything that crosses this boundary is plain C: no C++
 * type, no exception, no allocator. This header includes only <stdint.h> and <stddef.h> and is C99.
 *
 * ABI history (one line per minor; details in plugin-api/CHANGES.md):
 *   1.0  create, destroy, preflight, capabilities, describe_spec, run, list_by_label, kill,
 *        get_extension, tcp_route.
 *   1.1  inspect (optional): how a box of a given label ended, for reconciliation.
 *
 * Growth rules (stated once, apply everywhere):
 *   - Every struct that may grow starts with `uint32_t struct_size`, set by whoever allocates the
 *     struct to its own sizeof. The other side reads or writes only fields wholly below that size
 *     (RADIAL_HAS_FIELD) and treats fields beyond it as zero.
 *   - Fields are only ever appended. Zero always means "unset / the 1.0 behaviour".
 *   - Arrays carry `elem_size`; readers step by it, never by their own sizeof.
 *   - Enumerations are uint32_t; an unknown value is "unsupported", never undefined behaviour.
 *   - A breaking change is a new major (the host refuses it) or a new extension id.
 *
 * Threading tags used below:
 *   [control]      never concurrent with another call on the same instance; the host serialises.
 *   [thread-safe]  any thread, concurrently with anything except destroy.
 *   [any-thread]   a host callback the plugin may call from any of its threads, concurrently,
 *                  and never after the call that received it has returned.
 *   [any-thread, serialised per run]  as [any-thread], but never concurrently for one run.
 *   [any-thread, one call at a time]  as [any-thread], but never concurrently with itself.
 *
 * Process rules (a plugin is a guest in the host's process; radial-conformance checks each):
 *   - It exports only `radial_runtime_plugin_entry` (exports-only-entry).
 *   - It leaves signal dispositions to the host, returns from every call (and from its load)
 *     with the calling thread's signal mask as it found it, and waits only for the pids of
 *     children it started itself, never waitpid(-1) (no-signal-tampering).
 *   - Every descriptor it holds is close-on-exec, and destroy closes all of them
 *     (descriptor-hygiene).
 *   - It writes nothing to the process's stdout or stderr, nor lets a child it starts inherit them:
 *     diagnostics go through radial_host.log (no-stdio).
 */
#ifndef RADIAL_RUNTIME_PLUGIN_H
#define RADIAL_RUNTIME_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RADIAL_RT_ABI_MAJOR 1
#define RADIAL_RT_ABI_MINOR 1

/* The one symbol a plugin exports. */
#define RADIAL_RT_ENTRY_SYMBOL "radial_runtime_plugin_entry"

#if defined(__GNUC__)
#define RADIAL_RT_EXPORT __attribute__((visibility("default")))
#else
#define RADIAL_RT_EXPORT
#endif

/* True when the struct at `p` (of type T, sized by its `struct_size`) contains field `f`. */
#define RADIAL_HAS_FIELD(p, T, f) (offsetof(T, f) + sizeof(((T*)0)->f) <= (size_t)(p)->struct_size)

/* ---------------------------------------------------------------------------------------------
 * Strings and arrays
 * ------------------------------------------------------------------------------------------- */

/* A byte string, UTF-8 by convention but not required to be valid UTF-8. Borrowed: valid only for
 * the duration of the call that passes it. `data` may be NULL only when `size` is 0. Strings the
 * host passes are also NUL-terminated (data[size] == 0) as a courtesy for exec-style APIs; a
 * plugin must still honour `size`, because a value may itself contain NUL bytes. */
typedef struct radial_str {
    const char* data;
    size_t size;
} radial_str;

/* A borrowed array of `count` items, each `elem_size` bytes apart. */
typedef struct radial_array {
    const void* items;
    uint32_t count;
    uint32_t elem_size;
} radial_array;

/* ---------------------------------------------------------------------------------------------
 * Status codes and error reporting
 * ------------------------------------------------------------------------------------------- */

/* Every fallible function returns one of these. Unknown non-zero values mean RADIAL_E_INTERNAL. */
enum {
    RADIAL_OK = 0,
    RADIAL_E_INVALID = 1, /* bad config or spec; `key` names the offending key or field    */
    RADIAL_E_REFUSED = 2, /* the spec carries a field this runtime refuses (docs/design.md §5.6) */
    RADIAL_E_UNSUPPORTED = 3, /* the call is not implemented by this plugin                    */
    RADIAL_E_NOT_FOUND = 4,   /* a named thing (image, template) does not exist                */
    RADIAL_E_UNAVAILABLE = 5, /* the engine or CLI behind the runtime cannot be reached        */
    RADIAL_E_CANCELLED = 6,   /* killed before anything started                                */
    RADIAL_E_TIMEOUT = 7,     /* a call into the engine exceeded its own budget                */
    RADIAL_E_INTERNAL = 8     /* anything else, including an exception caught at the boundary  */
};

/* Where a plugin reports why a call failed. The host copies inside `report`.
 * [any-thread] May be called zero or more times before the function that received it returns;
 * never after. `key`: optional dotted name of what the error is about — a config key relative to
 * the plugin's section ("binary", "defaults.memory") or a spec field ("network", "mounts[2]");
 * empty when none. `message`: human text naming what was being done, the cause and the fix, no
 * trailing newline. */
typedef struct radial_error_sink {
    uint32_t struct_size;
    void* ctx;
    void (*report)(void* ctx, int32_t code, radial_str key, radial_str message);
} radial_error_sink;

/* A list of names going from plugin to host (capability ids, box labels). The host copies each
 * name inside `add`. [any-thread] Never called after the function that received it returns. */
typedef struct radial_name_sink {
    uint32_t struct_size;
    void* ctx;
    void (*add)(void* ctx, radial_str name);
} radial_name_sink;

/* Capability ids a plugin may report (strings, so third parties can add "com.example.cap.x"). */
#define RADIAL_CAP_UNIX_SOCKET_MOUNTS \
    "radial.cap.unix-socket-mounts" /* a host AF_UNIX socket bind-mounted into the box works */
#define RADIAL_CAP_NAMED_NETWORKS \
    "radial.cap.named-networks" /* spec.network may name an engine network */
#define RADIAL_CAP_HOST_UID_MOUNTS \
    "radial.cap.host-uid-mounts" /* files keep the host uid across mounts */
/* The box runs radial-init, which serves a loopback endpoint carrying connections to the unix
 * socket named by the box's RADIAL_EGRESS_SOCKET variable (the egress broker, docs/design.md §9.7);
 * needs radial.cap.unix-socket-mounts too. */
#define RADIAL_CAP_EGRESS_ENDPOINT "radial.cap.egress-endpoint"
/* The runtime enforces a turn's egress destinations itself, with a policy of its own scoped to the
 * box (the sandbox runtime's sbx policy rules): the host sends them in a radial_spec_egress
 * chained to the spec's `next`, and only to a runtime that reports this. Receipts, quotas and
 * address checks stay the runtime's (docs/design.md §9.7). */
#define RADIAL_CAP_EGRESS_POLICY "radial.cap.egress-policy"
/* The runtime honours a radial_spec_stop: a timeout or kill first sends SIGTERM to the box's
 * command and gives it the grace to end by itself (docs/design.md §13.1, run.stopGrace). */
#define RADIAL_CAP_STOP_GRACE "radial.cap.stop-grace"
/* The runtime honours a radial_spec_propagation: a mount the host makes below a listed mount's
 * source after the box was created appears inside the box (docs/design.md §13.13, the warm pool:
 * a box started before its turn receives the workspace at claim time). */
#define RADIAL_CAP_MOUNT_PROPAGATION "radial.cap.mount-propagation"

/* ---------------------------------------------------------------------------------------------
 * Host services
 * ------------------------------------------------------------------------------------------- */

enum { RADIAL_LOG_DEBUG = 0, RADIAL_LOG_INFO = 1, RADIAL_LOG_WARN = 2, RADIAL_LOG_ERROR = 3 };

/* What the host offers a plugin instance. Passed to `create`; the struct, its strings and its
 * functions stay valid until `destroy` returns. A plugin never links against host symbols and
 * never writes to fd 1 or 2: diagnostics go through `log`, which the host redacts and stores. */
typedef struct radial_host {
    uint32_t struct_size;
    uint16_t abi_major; /* the host's RADIAL_RT_ABI_MAJOR */
    uint16_t abi_minor; /* the host's RADIAL_RT_ABI_MINOR */
    void* ctx;
    radial_str host_version; /* e.g. "radiald 0.1.0" */
    radial_str plugin_path;  /* absolute path the plugin was loaded from */
    /* [thread-safe] level: RADIAL_LOG_*. message: one line, no trailing newline. */
    void (*log)(void* ctx, uint32_t level, radial_str message);
} radial_host;

/* ---------------------------------------------------------------------------------------------
 * Configuration: the plugin's own section of the operator's config, flattened
 * ------------------------------------------------------------------------------------------- */

enum {
    RADIAL_CONFIG_STRING = 1,
    RADIAL_CONFIG_INT = 2,
    RADIAL_CONFIG_BOOL = 3,        /* int_value is 0 or 1 */
    RADIAL_CONFIG_FLOAT = 4,       /* float_value */
    RADIAL_CONFIG_STRING_ARRAY = 5 /* items: radial_str */
};

/* One key of the plugin's section. Nested tables are flattened to dotted keys ("defaults.memory").
 * An array of anything but strings, or a table inside an array, is refused by the host before the
 * plugin sees it. */
typedef struct radial_config_entry {
    radial_str key; /* relative to the section: "binary", not "run.docker.binary" */
    uint32_t kind;  /* RADIAL_CONFIG_* */
    uint32_t reserved;
    radial_str string_value;
    int64_t int_value;
    double float_value;
    radial_array items; /* of radial_str, for RADIAL_CONFIG_STRING_ARRAY */
} radial_config_entry;

typedef struct radial_config {
    uint32_t struct_size;
    uint32_t reserved;
    radial_str section;   /* "run.docker": for messages only */
    radial_array entries; /* of radial_config_entry; empty when the section is absent */
} radial_config;

/* ---------------------------------------------------------------------------------------------
 * ContainerSpec (docs/design.md §5.6 table, plus `cpus` from the Docker backend document)
 * ------------------------------------------------------------------------------------------- */

typedef struct radial_mount {
    radial_str source;  /* absolute host path */
    radial_str target;  /* absolute path inside the box */
    uint32_t read_only; /* 0 or 1 */
    uint32_t reserved;
} radial_mount;

typedef struct radial_env_var {
    radial_str name;  /* [A-Za-z_][A-Za-z0-9_]* */
    radial_str value; /* any bytes but NUL */
    /* 1: never on any argv, never logged, and in no file the plugin leaves on the host once `run`
     * returns: a file that must carry it (an OCI bundle's config.json) is the plugin's to remove
     * before then (docs/design.md §6.3). */
    uint32_t secret;
    uint32_t reserved;
} radial_env_var;

typedef struct radial_tmpfs {
    radial_str target;   /* absolute path inside the box */
    uint64_t size_bytes; /* 0: the runtime's default bound */
} radial_tmpfs;

/* Tri-state for boolean spec fields: unset means "the runtime's hardened default". */
enum { RADIAL_UNSET = 0, RADIAL_YES = 1, RADIAL_NO = 2 };

/* What to run and how to contain it. Host-allocated, read-only for the plugin, valid for the whole
 * call it is passed to. A field "is carried" when it is non-empty / non-zero; only carried fields
 * get a disposition (describe_spec). Units are in the field names. */
typedef struct radial_spec {
    uint32_t struct_size;
    uint32_t reserved;
    radial_str label;    /* [A-Za-z0-9][A-Za-z0-9_.-]{0,127}: the box's name and ownership mark */
    radial_str image;    /* image reference or template */
    radial_array mounts; /* of radial_mount */
    radial_array argv;   /* of radial_str; at least one element */
    radial_array env;    /* of radial_env_var */
    radial_str workdir;  /* absolute path inside the box; empty: the image's default */
    uint64_t timeout_ms; /* 0: no timeout. Enforced by the plugin (RADIAL_RUN_TIMED_OUT) */
    radial_array host_ports;   /* of uint32_t: host TCP ports the box must be able to reach */
    int64_t pids_limit;        /* 0: runtime default; >0: the cap */
    uint32_t read_only_rootfs; /* RADIAL_UNSET / RADIAL_YES / RADIAL_NO */
    uint32_t reserved2;
    radial_str user;          /* "uid[:gid]" or a name; empty: runtime default (never root) */
    radial_array tmpfs;       /* of radial_tmpfs */
    radial_array extra_hosts; /* of radial_str, "name:address" */
    uint64_t memory_bytes;    /* 0: runtime default */
    radial_str network;       /* empty: no network (loopback only) */
    uint64_t cpus_milli;      /* thousandths of a CPU; 0: runtime default */
    const void* next;         /* NULL, or the first radial_spec_ext chained to this spec */
} radial_spec;

/* The head of every addition chained to a spec's `next`; a plugin steps over a `type` it does not
 * know (only additions it asked for by a capability are sent). */
typedef struct radial_spec_ext {
    uint32_t struct_size;
    uint32_t type;    /* RADIAL_SPEC_EXT_* */
    const void* next; /* the next addition, or NULL */
} radial_spec_ext;

enum { RADIAL_SPEC_EXT_EGRESS = 1, RADIAL_SPEC_EXT_STOP = 2, RADIAL_SPEC_EXT_PROPAGATION = 3 };

/* The destinations the box may reach, for a runtime that reports RADIAL_CAP_EGRESS_POLICY:
 * "host:port", or "*.suffix:port" for every name under a suffix; already within the operator's
 * ceiling (run.egress.allow). Anything else stays unreachable. */
typedef struct radial_spec_egress {
    uint32_t struct_size;
    uint32_t type; /* RADIAL_SPEC_EXT_EGRESS */
    const void* next;
    radial_array destinations; /* of radial_str */
} radial_spec_egress;

/* How a box is stopped (RADIAL_CAP_STOP_GRACE): on its timeout or a kill, SIGTERM to its command
 * first, then up to `grace_ms` for the box to end by itself before it is killed; the box's own
 * init applies the same grace at the deadline when no host is left. A result then carries
 * RADIAL_RUN_STOPPED_IN_GRACE when the box ended within it. */
typedef struct radial_spec_stop {
    uint32_t struct_size;
    uint32_t type; /* RADIAL_SPEC_EXT_STOP */
    const void* next;
    uint64_t grace_ms; /* 0: killed at once */
} radial_spec_stop;

/* Mounts that receive the host's later mounts (RADIAL_CAP_MOUNT_PROPAGATION): each entry is the
 * target of one of the spec's mounts, which the runtime makes with slave propagation ("rslave"):
 * a mount the host makes below that mount's source after the box started appears at the same
 * place below the target, and an unmount there disappears; nothing mounted inside the box reaches
 * the host. The host makes each such source a mount point with shared propagation before it
 * creates the box. A runtime that cannot honour it for this spec refuses the spec (field
 * "mounts") before any box exists: a box that would never see its workspace must not start. A
 * target that names no mount of the spec is an error too (radial::from_c reads it as a receiving
 * mount with an empty source, which a runtime's mount checks refuse). */
typedef struct radial_spec_propagation {
    uint32_t struct_size;
    uint32_t type; /* RADIAL_SPEC_EXT_PROPAGATION */
    const void* next;
    radial_array targets; /* of radial_str: targets of entries of spec.mounts */
} radial_spec_propagation;

/* Spec field ids, for dispositions and error keys. */
enum {
    RADIAL_FIELD_LABEL = 1,
    RADIAL_FIELD_IMAGE = 2,
    RADIAL_FIELD_MOUNTS = 3,
    RADIAL_FIELD_ARGV = 4,
    RADIAL_FIELD_ENV = 5,
    RADIAL_FIELD_WORKDIR = 6,
    RADIAL_FIELD_TIMEOUT_MS = 7,
    RADIAL_FIELD_HOST_PORTS = 8,
    RADIAL_FIELD_PIDS_LIMIT = 9,
    RADIAL_FIELD_READ_ONLY_ROOTFS = 10,
    RADIAL_FIELD_USER = 11,
    RADIAL_FIELD_TMPFS = 12,
    RADIAL_FIELD_EXTRA_HOSTS = 13,
    RADIAL_FIELD_MEMORY = 14,
    RADIAL_FIELD_NETWORK = 15,
    RADIAL_FIELD_CPUS = 16,
    RADIAL_FIELD_ON_OUTPUT = 17,
    RADIAL_FIELD_COUNT_1_0 = 17 /* highest field id known in ABI 1.0 */
};

/* docs/design.md §5.6: how a runtime treats a field the spec carries. */
enum {
    RADIAL_DISP_HONOURED = 1,   /* done as asked                                         */
    RADIAL_DISP_BRIDGED = 2,    /* achieved by other means (e.g. symlinked mount targets) */
    RADIAL_DISP_SUPERSEDED = 3, /* made moot by a stronger boundary; logged per run      */
    RADIAL_DISP_REFUSED = 4     /* cannot be honoured; `run` fails before any box starts */
};

/* [any-thread] `note` says why (required for BRIDGED, SUPERSEDED and REFUSED). */
typedef struct radial_disposition_sink {
    uint32_t struct_size;
    void* ctx;
    void (*field)(void* ctx, uint32_t field, uint32_t disposition, radial_str note);
} radial_disposition_sink;

/* ---------------------------------------------------------------------------------------------
 * Running
 * ------------------------------------------------------------------------------------------- */

enum { RADIAL_STREAM_STDOUT = 1, RADIAL_STREAM_STDERR = 2 };

/* Where the box's output goes while it runs.
 * [any-thread, serialised per run] `data` is borrowed for the call; chunks are at least one byte,
 * in order per stream, not NUL-terminated, and delivered as they arrive (not at the end). The
 * callback may block; the plugin keeps the box's pipes drained meanwhile or lets the box stall,
 * but never deadlocks. Return 0 to continue; non-zero asks the plugin to end the run as if
 * `kill(label)` had been called (RADIAL_RUN_OUTPUT_ABORTED). Never called after `run` returns.
 * Rationale: a plugin naturally pumps stdout and stderr on its own threads; serialising instead
 * of pinning to one thread spares every plugin a marshalling queue. */
typedef struct radial_output_sink {
    uint32_t struct_size;
    void* ctx;
    int32_t (*write)(void* ctx, uint32_t stream, const uint8_t* data, size_t size);
} radial_output_sink;

/* How the workload ended (flags may combine, e.g. TIMED_OUT | SIGNALED). */
enum {
    RADIAL_RUN_EXITED = 1u << 0,         /* exit_code is valid                       */
    RADIAL_RUN_SIGNALED = 1u << 1,       /* term_signal is valid                     */
    RADIAL_RUN_TIMED_OUT = 1u << 2,      /* spec.timeout_ms elapsed; the box is gone */
    RADIAL_RUN_KILLED = 1u << 3,         /* kill(label) ended it; the box is gone    */
    RADIAL_RUN_OOM_KILLED = 1u << 4,     /* the memory bound ended it                */
    RADIAL_RUN_OUTPUT_ABORTED = 1u << 5, /* the output sink returned non-zero        */
    /* with TIMED_OUT or KILLED: after SIGTERM the box ended by itself within the stop grace
     * (radial_spec_stop), rather than being killed */
    RADIAL_RUN_STOPPED_IN_GRACE = 1u << 6,
    /* create_ms and remove_ms are valid */
    RADIAL_RUN_PHASE_TIMES = 1u << 7
};

/* Host-allocated and zeroed, `struct_size` set by the host; the plugin writes fields below it. */
typedef struct radial_run_result {
    uint32_t struct_size;
    uint32_t flags;       /* RADIAL_RUN_* */
    int32_t exit_code;    /* valid with RADIAL_RUN_EXITED */
    int32_t term_signal;  /* valid with RADIAL_RUN_SIGNALED */
    uint64_t duration_ms; /* from box start to box gone, as the plugin measured it */
    /* Appended (a host's older, smaller struct has no room for them: RADIAL_HAS_FIELD). Valid
     * with RADIAL_RUN_PHASE_TIMES: how long making the box took before its command started
     * (create, start, setup) and removing it after its command ended, in milliseconds. Neither
     * counts against spec.timeout_ms, which is the command's (docs/design.md §13.2). */
    uint64_t create_ms;
    uint64_t remove_ms;
} radial_run_result;

/* ---------------------------------------------------------------------------------------------
 * Inspecting a box (ABI 1.1)
 * ------------------------------------------------------------------------------------------- */

/* What `inspect` found of the box of one label (radial_box_state.state). */
enum {
    RADIAL_BOX_UNKNOWN = 0, /* the runtime cannot say (the 1.0 behaviour: nothing is known)      */
    RADIAL_BOX_GONE = 1,    /* no box with that label exists                                     */
    RADIAL_BOX_RUNNING = 2, /* the box exists and its workload has not ended (created, running,
                               paused): only kill can end it                                     */
    RADIAL_BOX_ENDED = 3    /* the box exists and its workload ended; `flags` says how           */
};

/* Host-allocated and zeroed, `struct_size` set by the host; the plugin writes fields below it.
 * With RADIAL_BOX_ENDED, `flags` carries the RADIAL_RUN_* flags that describe the workload's own
 * end — RADIAL_RUN_EXITED (exit_code valid), RADIAL_RUN_SIGNALED (term_signal valid),
 * RADIAL_RUN_OOM_KILLED — and only what the runtime recorded: never derived from an exit code
 * (137 may be `exit 137`). The other flags (TIMED_OUT, KILLED, OUTPUT_ABORTED) are about a run
 * and are never set here. */
typedef struct radial_box_state {
    uint32_t struct_size;
    uint32_t state;      /* RADIAL_BOX_* */
    uint32_t flags;      /* RADIAL_RUN_EXITED | RADIAL_RUN_SIGNALED | RADIAL_RUN_OOM_KILLED */
    int32_t exit_code;   /* valid with RADIAL_RUN_EXITED */
    int32_t term_signal; /* valid with RADIAL_RUN_SIGNALED */
    uint32_t reserved;
} radial_box_state;

/* ---------------------------------------------------------------------------------------------
 * The descriptor
 * ------------------------------------------------------------------------------------------- */

typedef struct radial_runtime radial_runtime; /* an opaque, plugin-owned instance */

typedef struct radial_runtime_descriptor {
    /* --- frozen header: these three fields never move, in any major --- */
    uint32_t struct_size; /* sizeof(radial_runtime_descriptor) the plugin was built with */
    uint16_t abi_major;   /* RADIAL_RT_ABI_MAJOR the plugin was built against */
    uint16_t abi_minor;   /* the lowest host minor this plugin needs */

    /* --- identity; strings are static for the life of the loaded library --- */
    radial_str id;      /* [a-z0-9-]{1,32}: the value of run.containerRuntime, e.g. "docker" */
    radial_str name;    /* human name, e.g. "Docker (hardened docker run)" */
    radial_str version; /* the plugin's own version, e.g. "0.1.0" */

    /* --- the runner seam; function pointers are appended only --- */

    /* [control] Validate `config` (errors by key: RADIAL_E_INVALID) and make an instance. No
     * process, no engine contact. On success *out is set and `destroy` must be called once. */
    int32_t (*create)(const radial_host* host, const radial_config* config, radial_runtime** out,
                      const radial_error_sink* err);

    /* [control] Never fails. No `run` is in flight (the host guarantees it). Joins every plugin
     * thread and closes every plugin fd before returning. */
    void (*destroy)(radial_runtime* rt);

    /* [thread-safe] Probe the engine, read-only. Fails closed with RADIAL_E_UNAVAILABLE and a
     * message naming what is missing and what to do. Never prompts, never caches a failure as
     * health. Optional: NULL means "nothing to probe". */
    int32_t (*preflight)(radial_runtime* rt, const radial_error_sink* err);

    /* [thread-safe] Capability ids this instance can honour under its config, e.g.
     * "radial.cap.unix-socket-mounts", "radial.cap.named-networks". Optional: NULL means none. */
    int32_t (*capabilities)(radial_runtime* rt, const radial_name_sink* caps,
                            const radial_error_sink* err);

    /* [thread-safe] One disposition for every field `spec` carries (docs/design.md §5.6), and none
     * for the fields it does not carry. Pure. The host treats a carried field with no disposition
     * as REFUSED. Optional, but fails closed: NULL means the host treats label, image, argv and
     * onOutput as HONOURED and every other carried field as REFUSED. */
    int32_t (*describe_spec)(radial_runtime* rt, const radial_spec* spec,
                             const radial_disposition_sink* out, const radial_error_sink* err);

    /* [thread-safe; concurrent runs carry distinct labels] Run the box to its end. Blocks until
     * the box is gone. RADIAL_OK when the workload ran and its end was observed — `result` says
     * how it ended (exit, signal, timeout, kill). An error when it could not start or the runtime
     * failed; RADIAL_E_REFUSED (naming the field) before anything is created. The box is removed
     * whatever happens (docs/design.md §8.3). `out` is never called after `run` returns. */
    int32_t (*run)(radial_runtime* rt, const radial_spec* spec, const radial_output_sink* out,
                   radial_run_result* result, const radial_error_sink* err);

    /* [thread-safe] Every box whose label starts with exactly the bytes of `prefix`, including
     * boxes this instance did not create (reconciliation after a crash), and nothing else. */
    int32_t (*list_by_label)(radial_runtime* rt, radial_str prefix, const radial_name_sink* names,
                             const radial_error_sink* err);

    /* [thread-safe; also from inside the output sink] Postcondition: no box with that label
     * exists. An unknown label is RADIAL_OK. A `run` of that label in flight returns within 10 s
     * (after its radial_spec_stop grace, when the runtime honours one) with RADIAL_RUN_KILLED; a
     * `run` of that label that has not created its box yet never does. */
    int32_t (*kill)(radial_runtime* rt, radial_str label, const radial_error_sink* err);

    /* [thread-safe] An extension table by exact, versioned id ("radial.session/1"); NULL when
     * unknown. The table lives until `destroy`. Optional: NULL means no extensions. */
    const void* (*get_extension)(radial_runtime* rt, const char* id);

    /* [thread-safe] How a box reaches a tcp turn socket on the host (docs/design.md §9.1): the host
     * address to bind (`bind_host`, e.g. "127.0.0.1") and the host name the box connects to
     * (`box_host`, e.g. "host.docker.internal" when a proxy rewrites it to loopback). The plugin
     * calls each sink at most once; an address it does not report is left to the host: bind
     * 127.0.0.1, and the box uses the bind address. The operator's run.turnSocketHost replaces the
     * bind address. Optional: NULL means the host's defaults. */
    int32_t (*tcp_route)(radial_runtime* rt, const radial_name_sink* bind_host,
                         const radial_name_sink* box_host, const radial_error_sink* err);

    /* --- ABI 1.1 --- */

    /* [thread-safe] Read-only: what became of the box labelled exactly `label` — gone, still
     * running, or ended and how (exit code, signal, OOM kill) — without changing it. Used by
     * reconciliation after a crash, on boxes this instance did not run (docs/design.md §8.4). A
     * box that ended is reported as ENDED until it is removed. RADIAL_OK with `state` filled;
     * RADIAL_E_UNAVAILABLE when the engine cannot be asked; RADIAL_E_UNSUPPORTED (or a NULL
     * entry, or a descriptor too short to hold it) when the runtime cannot tell: the host then
     * records that it does not know. Optional. */
    int32_t (*inspect)(radial_runtime* rt, radial_str label, radial_box_state* state,
                       const radial_error_sink* err);
} radial_runtime_descriptor;

/* The only exported symbol. Pure: no threads, no processes, no I/O; callable any number of times
 * from any thread; returns the same pointer every time, valid until the library is unloaded. */
typedef const radial_runtime_descriptor* (*radial_runtime_plugin_entry_fn)(void);

/* The entry a plugin defines, exactly so (C: as written; C++: inside extern "C"). */
RADIAL_RT_EXPORT const radial_runtime_descriptor* radial_runtime_plugin_entry(void);

#ifdef __cplusplus
}
#endif

#endif /* RADIAL_RUNTIME_PLUGIN_H */
