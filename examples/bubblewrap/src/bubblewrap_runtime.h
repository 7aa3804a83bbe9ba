// examples/bubblewrap/src/bubblewrap_runtime.h — the bubblewrap runtime: each box is a `bwrap`
// sandbox (unprivileged user, mount, pid, network, ipc and uts namespaces; no daemon) over a
// root filesystem directory. Issue 7.
//
// Dispositions (what it honours and what it cannot; describe() reports them per spec):
//   label, argv, env, workdir, timeoutMs, mounts, tmpfs, onOutput   HONOURED
//   image            BRIDGED: a root filesystem directory (absolute path, or under imageRoot),
//                    bound read-only — not an OCI image reference
//   user             BRIDGED: uid:gid inside a user namespace; on the host, the box's files
//                    belong to whoever runs radiald. Root (uid or gid 0) is REFUSED
//   readOnlyRootfs   yes HONOURED (also the default); no REFUSED (bubblewrap 0.8 has no overlay,
//                    and a writable bind of the image would change it for every later box)
//   network          "none" HONOURED (the box always has its own empty network namespace);
//                    any named network REFUSED
//   hostPorts, extraHosts   REFUSED: the box has no network to reach the host by
//   pidsLimit, memory, cpus REFUSED: enforcing them needs cgroups, which bwrap does not manage
// Capabilities: radial.cap.unix-socket-mounts (a bind-mounted AF_UNIX socket works across the
// network namespace).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <radial/plugin/runtime.hpp>

#include "box_process.h"
#include "box_registry.h"
#include "bwrap_args.h"

namespace radial::bubblewrap {

class BubblewrapRuntime final : public plugin::Runtime {
public:
    static constexpr plugin::Info info{"bubblewrap", "Bubblewrap (unprivileged namespaces)",
                                       "0.1.0"};

    // Reads [run.bubblewrap]: binary, stateDir, imageRoot, user, tmpSize. No process, no I/O.
    BubblewrapRuntime(const plugin::Host& host, plugin::Config& config);

    void preflight() override;
    std::vector<std::string> capabilities() override;
    std::vector<plugin::Disposition> describe(const ContainerSpec& spec) override;
    plugin::RunResult run(const ContainerSpec& spec, plugin::Output& out) override;
    std::vector<std::string> list_by_label(std::string_view prefix) override;
    void kill(std::string_view label) override;

private:
    // SIGKILLs the processes of the box of `label` named in its registry entry until none is
    // left; throws plugin::Error(RADIAL_E_TIMEOUT) once `deadline` passed.
    void kill_recorded(const std::string& label, std::chrono::steady_clock::time_point deadline);

    plugin::Host host_;
    Settings settings_;
    BoxRegistry registry_;
    std::mutex mutex_;
    plugin_support::RunRegistry runs_; // this instance's runs in flight (mutex_ orders entry)
    // Labels killed before their run started (a run of one never starts), with when.
    std::map<std::string, std::chrono::steady_clock::time_point> early_kills_;
};

} // namespace radial::bubblewrap
