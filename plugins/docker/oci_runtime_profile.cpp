#include "oci_runtime_profile.h"

#include <array>

namespace radial::docker {

namespace {

// gVisor (Debian's runsc 20221219, platform ptrace, cgroup v1, Docker 20.10), as probed in
// docs/design.md §13.9: the engine's cgroups hold the whole sandbox (the Sentry, the gofer, the
// ptrace stubs), not the box's processes one by one, which live in gVisor's own kernel.
constexpr OciRuntimeProfile kRunsc{
    "runsc",
    "runsc",
    {RADIAL_DISP_BRIDGED,
     "under run.docker.ociRuntime 'runsc' the memory cgroup bounds the whole gVisor sandbox (its "
     "user-space kernel and the workload, whose kernel sees the bound as its MemTotal): a workload "
     "that exceeds it ends the box (exit 137), but the engine does not always report OOMKilled"},
    {RADIAL_DISP_SUPERSEDED,
     "under run.docker.ociRuntime 'runsc' the box's processes live in gVisor's user-space kernel, "
     "not the host's: the engine's pids cap bounds the sandbox's own host threads instead (the "
     "value, raised to at least 128), and exhausting it ends the whole box rather than failing a "
     "fork"},
    128,
    false};

constexpr OciRuntimeProfile kDefault{};

constexpr std::array kProfiles{&kRunsc};

} // namespace

const OciRuntimeProfile& oci_runtime_profile(std::string_view oci_runtime) noexcept {
    for (const OciRuntimeProfile* p : kProfiles)
        if (oci_runtime == p->name) return *p;
    return kDefault;
}

const OciRuntimeProfile* oci_runtime_profile_by_binary(std::string_view engine_path) noexcept {
    const auto slash = engine_path.rfind('/');
    const std::string_view file =
        slash == std::string_view::npos ? engine_path : engine_path.substr(slash + 1);
    for (const OciRuntimeProfile* p : kProfiles)
        if (!file.empty() && file == p->binary) return p;
    return nullptr;
}

} // namespace radial::docker
