// host/config/box_identity.h — who a box runs as (uid:gid), and the check that nobody on the host
// already is that.
//
// A box's identity must be its own: a host process with the box's uid may read the box's
// /proc/<pid>/environ (the turn token, every secret) and reach its turn socket through
// /proc/<pid>/root. So by default every box runs as an id of run.boxIdRange leased for it alone
// (turn/box_id_lease.h), a range no host account (passwd, group) and no host process may use,
// checked at startup.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "config/host_config.h"

namespace radial::config {

// run.user's one non-numeric value: the box runs as the workspace directory's owner (with the
// box gid, never the workspace's group). An explicit operator choice: that host user can read the
// turn's secrets.
inline constexpr const char* kWorkspaceOwnerUser = "workspace-owner";

// The first id of run.boxIdRange, as uid and gid: what a ContainerSpec says before its turn leases
// the box its own ids (turn/box_id_lease.h), and what the startup probe runs as.
std::pair<uid_t, gid_t> default_box_ids(const HostConfig& cfg) noexcept;

// Whether boxes use run.boxIdRange under `cfg` (run.user unset or "workspace-owner").
bool uses_box_id_range(const HostConfig& cfg) noexcept;

// Throws HostRefusalError naming run.boxIdRange (with the file position when the file set it)
// when a passwd entry (uid or primary gid), a group, or a process in radiald's own pid namespace
// (real, effective, saved or filesystem uid or gid) uses an id of the range. Processes in other
// pid namespaces are other containers, the boxes among them, and are not looked at. Does nothing
// unless uses_box_id_range(cfg). check_box_id_range_accounts, then
// check_box_id_range_processes.
void check_box_id_range(const HostConfig& cfg);

// The host's accounts half: passwd and group, through NSS. Not thread-safe (getpwent), and kept
// off threads that run beside the loading of plugins: NSS loads its modules with dlopen while
// holding its own locks.
void check_box_id_range_accounts(const HostConfig& cfg);

// The host's processes half: every process's status in /proc, nothing else. Safe on any thread.
void check_box_id_range_processes(const HostConfig& cfg);

// Whether the procfs mounted last at /proc in `mountinfo` (the text of /proc/self/mountinfo), the
// one in effect, hides other users' processes (hidepid=1, 2, noaccess, invisible, ptraceable).
// Without it every local user reads every process's arguments, a box's among them, and a box can
// publish there whatever it holds (docs/design.md §15.3). Never throws.
bool proc_hides_other_users(std::string_view mountinfo) noexcept;

// proc_hides_other_users of this process's /proc/self/mountinfo; false when it cannot be read.
bool host_proc_hides_other_users() noexcept;

} // namespace radial::config
