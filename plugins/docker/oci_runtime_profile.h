// plugins/docker/oci_runtime_profile.h — what each OCI runtime the engine may run a box under
// really enforces of the spec's resource bounds: one small table keyed by the engine's runtime
// name (run.docker.ociRuntime), so that describe() and the create body read the same facts
// instead of scattered ifs (docs/design.md §13.9).
#pragma once

#include <radial/runtime_plugin.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace radial::docker {

// One field's disposition under a runtime, with the note describe() reports.
struct FieldTruth {
    std::uint32_t disposition = RADIAL_DISP_HONOURED;
    const char* note = ""; // why it is not HONOURED; empty when it is
};

// What one OCI runtime enforces, as observed on it (docs/design.md §13.9 gives the probes).
struct OciRuntimeProfile {
    const char* name = ""; // the engine's name ("" for the engine's default runtime, runc)
    // The binary's file name, as the engine's runtime path ends ("runsc"); "" for the default.
    const char* binary = "";
    FieldTruth memory;     // the memory bound (HostConfig.Memory)
    FieldTruth pids_limit; // the pids cap (HostConfig.PidsLimit)
    // The smallest PidsLimit the box starts under (the runtime's own host threads count against
    // it); a smaller value is raised to it. 0: no floor.
    std::int64_t min_pids_limit = 0;
    // Whether a bind mount with slave propagation ("rslave") shows the box a mount the host makes
    // below its source after the box started (RADIAL_CAP_MOUNT_PROPAGATION): runc's boxes share
    // the host's kernel mount tree; gVisor's gofer serves files from a mount tree fixed at start,
    // so it is not claimed there.
    bool mount_propagation = true;
};

// The profile of `oci_runtime` (run.docker.ociRuntime; empty: the engine's default). A name the
// table does not know gets runc's profile (everything honoured), the engine's own semantics for
// an OCI runtime of its kind. Pure; [thread-safe]. Source: docs/design.md §13.9.
const OciRuntimeProfile& oci_runtime_profile(std::string_view oci_runtime) noexcept;

// The PidsLimit the create body carries for a box asking for `wanted` under `profile`: `wanted`,
// raised to profile.min_pids_limit. Pure.
// The profile whose binary `engine_path` (a runtime's path as GET /info lists it, e.g.
// "/usr/bin/runsc") names by its last component, or nullptr when the table knows no such binary.
// Pure; [thread-safe].
const OciRuntimeProfile* oci_runtime_profile_by_binary(std::string_view engine_path) noexcept;

constexpr std::int64_t host_pids_limit(const OciRuntimeProfile& profile,
                                       std::int64_t wanted) noexcept {
    return wanted < profile.min_pids_limit ? profile.min_pids_limit : wanted;
}

} // namespace radial::docker
