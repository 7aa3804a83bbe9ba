// tests/fakes/zoo/zoo_defect.h — which defect a conformance-zoo plugin has (docs/design.md §5.11).
// zoo_plugin.cpp is compiled once for every zoo plugin; each plugin's own zoo_identity.cpp
// (compiled with ZOO_DEFECT and ZOO_ID) defines the two constants below, the only difference
// between them.
#pragma once

namespace radial::zoo {

// One per ZOO_* name in CMakeLists.txt, lower case; zoo_plugin.cpp's header says what each does.
enum class Defect {
    good,
    create_throws,
    hang_run,
    deaf,
    late_output,
    list_everything,
    leaky_kill,
    extra_exports,
    signal_tamper,
    reap_any,
    leaky_fd,
    chatty,
    ignore_sigchld,
    versioned,
    keep_exited,
    kill_own_only,
    squash_exit_codes,
    kill_noop,
    hang_destroy,
    hang_list,
    no_describe,
    hang_create,
    claim_confinement,
    leak_session_env,
    keep_session,
    linger_thread,
    crash_after_destroy,
    stray_process,
    secret_file,
    constructor_thread,
    block_signals,
    reset_signals,
    oom_exit_zero,
    secret_shm,
    load_fd,
};

extern const Defect kDefect; // this plugin's defect
extern const char kId[];     // this plugin's runtime id: "zoo-" and the defect, dashed

} // namespace radial::zoo
